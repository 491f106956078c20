"""The NumPy references of ops whose semantics take more than a NumPy call (``ops.py`` declares
each op and names its reference here): a view of an operand's memory, the composite operators'
formulas, a slice at a traced start, a precondition, an index reduction over several axes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


class _Memory:
    """Memory of ``owner`` seen through another shape and strides (NumPy keeps this as the
    view's base, and it keeps ``owner`` alive)."""

    def __init__(self, owner: Any, address: int, shape: tuple[int, ...],
                 strides: tuple[int, ...]) -> None:
        self.owner = owner
        self.__array_interface__ = {
            "data": (address, not owner.flags.writeable), "shape": tuple(shape),
            "strides": tuple(strides), "typestr": owner.dtype.str, "version": 3}


def view_reference(x: Any, offset: int, strides: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    x = np.asarray(x)
    byte_strides = tuple(s * x.itemsize for s in strides)
    if x.flags.c_contiguous and all(s >= 0 for s in strides):  # its buffer: 4x cheaper
        try:
            return np.ndarray(shape, x.dtype, buffer=x, offset=offset * x.itemsize,
                              strides=byte_strides)
        except (TypeError, ValueError):  # an extent past the buffer (never for capture's views)
            pass
    address = x.__array_interface__["data"][0] + offset * x.itemsize
    return np.asarray(_Memory(x, address, shape, byte_strides))



def mse_loss_reference(x: Any, y: Any) -> Any:
    d = np.subtract(x, y)
    return np.mean(np.multiply(d, d))


def decompose_mse_loss(emit: Callable[..., Any], node: Any) -> Any:
    """mse_loss(x, y) = mean((x - y) * (x - y)) — spec example 4.3."""
    from .meta import TensorMeta, contiguous_strides

    x, y = node.args
    shape = tuple(np.broadcast_shapes(x.tensor.shape, y.tensor.shape))
    dtype = np.result_type(x.tensor.np_dtype, y.tensor.np_dtype).name
    elementwise = TensorMeta(shape, dtype, contiguous_strides(shape))
    sub = emit("sub", (x, y), {}, elementwise)
    mul = emit("mul", (sub, sub), {}, elementwise)
    return emit("mean", (mul,), {"axis": tuple(range(len(shape))), "keepdims": False,
                                 "dtype": node.tensor.dtype}, node.tensor)


def layer_norm_reference(x: Any, weight: Any, bias: Any, normalized_ndim: int,
                          eps: float) -> Any:
    axes = tuple(range(x.ndim - normalized_ndim, x.ndim))
    mean = np.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    var = np.mean(centered * centered, axis=axes, keepdims=True)
    out = centered / np.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out



def dynamic_slice_reference(x: Any, start: Any, axis: int, length: int) -> Any:
    x = np.asarray(x)
    s = min(max(int(start), 0), x.shape[axis] - length)
    return x[(slice(None),) * axis + (slice(s, s + length),)].copy()  # a new array, as a step gives


def decline_if_reference(x: Any, bad: Any, why: str) -> Any:
    """Raising is how a NumPy step declines the call (``ExternRaised``): NumPy then runs it."""
    if np.any(bad):
        raise ValueError(f"the compiled call declines: {why}")
    return x


def arg_reference(fn: Any, x: Any, axis: tuple[int, ...], keepdims: bool) -> Any:
    x = np.asarray(x)
    if len(axis) == x.ndim and x.ndim != 1:
        return fn(x, axis=None, keepdims=keepdims)
    return fn(x, axis=axis[0] if axis else None, keepdims=keepdims)
