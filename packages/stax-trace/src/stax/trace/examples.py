"""The example values capture computes on: read-only views of the caller's arrays, or private
copies that keep their layout."""

from __future__ import annotations

import ctypes

import numpy as np


def example_view(array: np.ndarray) -> np.ndarray:
    """A read-only view of the caller's ``array``: what capture computes on.

    In-place updates are functionalized at capture (they make new arrays), so a traced program
    never needs to write into an argument's memory; a call that tries (``x.fill(0)`` say) meets
    NumPy's read-only error, which capture turns into an unsupported construct — the caller's
    array is never touched. A view instead of a private copy saves touching a fresh copy of
    every argument (for large inputs, the biggest part of a first compile).
    """
    view = array.view()
    view.flags.writeable = False
    return view


def example_copy(array: np.ndarray) -> np.ndarray:
    """A private copy of ``array`` with the same strides (spec §2.2: the stand-in keeps the layout).

    Capture runs every call on these copies, so nothing a traced program does can touch the
    caller's arrays, and the traced layout is the argument's layout.
    """
    if array.flags.c_contiguous:
        return array.copy(order="C")
    if array.flags.f_contiguous:
        return array.copy(order="F")
    itemsize = array.itemsize
    low = sum(s * (d - 1) for s, d in zip(array.strides, array.shape) if s < 0)
    high = sum(s * (d - 1) for s, d in zip(array.strides, array.shape) if s > 0) + itemsize
    span = (ctypes.c_char * (high - low)).from_address(array.ctypes.data + low)
    storage = np.frombuffer(span, dtype=np.uint8).copy()
    return np.ndarray(array.shape, array.dtype, buffer=storage, offset=-low, strides=array.strides)


def root_array(array: np.ndarray) -> np.ndarray:
    """The array whose memory ``array`` views (itself if none): an empty view shares no memory
    by ``np.may_share_memory``, but it is still a view of that array."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array
