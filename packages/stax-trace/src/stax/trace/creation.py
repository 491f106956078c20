"""Capturing NumPy's array-creation functions (``np.ones(shape)``, ``np.arange(n)``...).

They take no array, so NumPy's dispatch protocols never show them to a proxy, and their result
would look like an array from outside the function (which capture must refuse: it could be a
global that changes). During capture the module attributes are replaced by recorders that call
NumPy as usual, return the real array (C code that calls ``np.zeros`` must get an ndarray), and
remember how it was made. When such an array meets a traced call unchanged, the tracer records the
creation call as a node; if it was modified in place first, capture refuses it. Outside capture,
and in other threads, the recorders only call NumPy.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .patching import Patches
from .proxy import Proxy
from .source import user_source

if TYPE_CHECKING:
    from .tracer import Tracer

CREATION_FUNCTIONS = ("zeros", "ones", "full", "arange", "linspace", "logspace", "geomspace",
                      "eye", "identity", "tri")

@dataclass
class Created:
    """An array a creation function returned during capture, and how to make it again."""

    array: np.ndarray
    target: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    snapshot: np.ndarray
    source: str | None
    node: Any = None

    def unchanged(self) -> bool:
        return bool(np.array_equal(self.array, self.snapshot, equal_nan=self.array.dtype.kind == "f"))


_active = threading.local()


def _recorder(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def record(*args: Any, **kwargs: Any) -> Any:
        array = original(*args, **kwargs)
        tracer = getattr(_active, "tracer", None)
        if tracer is not None and type(array) is np.ndarray:
            tracer.created[id(array)] = Created(array, f"numpy.{name}", args, kwargs,
                                                array.copy(), user_source())
        return array
    record.__stax_original__ = original  # type: ignore[attr-defined]
    return record


# -- conversions: np.asarray(x) and its kin on a traced array --------------------------------------
# They take no __array_function__ dispatch, so on a proxy NumPy would ask for its data
# (``__array__``: refused). Yet on an array they are the identity, a cast or a copy, a common
# defensive idiom at the top of a function: answered here from the proxy, as NumPy would.

def _layout_kept(value: np.ndarray, order: Any) -> bool:
    return order in (None, "K", "A") or (order == "C" and value.flags.c_contiguous) or (
        order == "F" and value.flags.f_contiguous)


def _as_array(x: Proxy, dtype: Any = None, order: Any = None, *, device: Any = None,
              copy: Any = None, like: Any = None) -> Any:
    """``np.asarray``/``np.asanyarray``: x itself when nothing changes, else a cast or copy."""
    if device not in (None, "cpu") or like is not None or order not in (None, "K", "A", "C", "F"):
        return NotImplemented
    cast = dtype is not None and np.dtype(dtype) != x.value.dtype
    if copy is False and (cast or not _layout_kept(x.value, order)):
        return NotImplemented  # NumPy's own error for a copy it may not make
    if cast:
        return x.astype(dtype, order=order or "K")
    if copy or not _layout_kept(x.value, order):
        return np.copy(x, order=order or "K")
    return x


def _array(x: Proxy, dtype: Any = None, *, copy: Any = True, order: Any = "K", subok: Any = False,
           ndmin: int = 0, ndmax: int = 0, like: Any = None) -> Any:
    """``np.array``: a copy unless ``copy`` is False or None."""
    if ndmin > x.value.ndim or ndmax:
        return NotImplemented
    return _as_array(x, dtype, order, copy=True if copy is True else copy, like=like)


def _contiguous(order: str) -> Callable[..., Any]:
    def convert(x: Proxy, dtype: Any = None, *, like: Any = None) -> Any:
        """``np.ascontiguousarray`` / ``np.asfortranarray``: a copy only when needed."""
        if x.value.ndim == 0:
            return NotImplemented  # NumPy makes a 1-d array of it
        return _as_array(x, dtype, order, like=like)
    return convert


_CONVERSIONS: dict[str, Callable[..., Any]] = {
    "asarray": _as_array, "asanyarray": _as_array, "array": _array,
    "ascontiguousarray": _contiguous("C"), "asfortranarray": _contiguous("F"),
}


def _converter(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    convert = _CONVERSIONS[name]

    @functools.wraps(original)
    def conversion(*args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], Proxy) and type(args[0].value) is np.ndarray:
            try:
                result = convert(*args, **kwargs)
            except TypeError:  # arguments NumPy would refuse: its own error below
                result = NotImplemented
            if result is not NotImplemented:
                return result
        return original(*args, **kwargs)
    conversion.__stax_original__ = original  # type: ignore[attr-defined]
    return conversion


_PATCHES = Patches(lambda: [
    *((np, name, functools.partial(_recorder, name)) for name in CREATION_FUNCTIONS),
    *((np, name, functools.partial(_converter, name)) for name in _CONVERSIONS),
])


@contextmanager
def _routed_to(tracer: Tracer | None) -> Iterator[None]:
    """This thread's creation calls go to ``tracer`` (None: to NumPy only) while the block runs."""
    previous = getattr(_active, "tracer", None)
    _active.tracer = tracer
    try:
        yield
    finally:
        _active.tracer = previous


def not_recording() -> Any:
    """NumPy's own calls while it computes a recorded call's value are not the user's: suspend."""
    return _routed_to(None)


@contextmanager
def recording_creation(tracer: Tracer) -> Iterator[None]:
    """Route this thread's ``np.<creation>`` calls to ``tracer`` while the block runs."""
    with _PATCHES.applied(), _routed_to(tracer):
        yield
