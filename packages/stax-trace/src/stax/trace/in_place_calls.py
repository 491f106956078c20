"""NumPy functions that write into a traced array, captured as the pure values they leave there
(spec §4.9): ``np.copyto(dst, src, casting=, where=)``, ``np.putmask(a, mask, values)``,
``np.place(a, mask, values)``, ``np.fill_diagonal(a, value)``. Each first runs NumPy's own
call on a copy of the example, so that a call NumPy refuses (a cast its rule forbids, a mask of
another size) raises NumPy's own error at capture, as eager's would; then the array is updated
in place with a select (``Proxy._update_in_place``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def in_place_call(target: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                  plain: Callable[[Any], Any]) -> bool:
    """Capture ``target(*args, **kwargs)``, whose first argument is traced, where it is one of
    these functions in a form captured here; False otherwise (``plain``: a value's example)."""
    from .proxy import Proxy

    if target == "numpy.copyto" and 2 <= len(args) <= 4 and set(kwargs) <= {"where", "casting"}:
        (dst, src), kwargs = args[:2], {**dict(zip(("casting", "where"), args[2:])), **kwargs}
        where = kwargs.get("where", True)  # dst[...] = src where ``casting`` allows it
        casting, example = kwargs.get("casting", "same_kind"), plain(src)
        if casting == "unsafe" and np.iscomplexobj(example) and \
                not np.iscomplexobj(dst.value):  # (its ComplexWarning: the assignment's)
            example = np.real(example)
        with np.errstate(all="ignore"):  # its errors (the assignment's are its events)
            np.copyto(np.copy(dst.value, order="K"), example, where=plain(where),
                      casting=casting)
        if where is True:
            dst[...] = src
        else:  # only where the mask is True: a select, the source cast as copyto casts
            value = _cast(src, dst, Proxy, plain)
            dst._update_in_place("np.copyto(..., where=)", lambda: np.where(where, value, dst))
        return True
    if target == "numpy.putmask" and not kwargs and len(args) == 3:
        return _putmask(*args, plain, Proxy)
    if target == "numpy.place" and not kwargs and len(args) == 3:
        return _place(*args, plain, Proxy)
    if target == "numpy.fill_diagonal" and np.ndim(args[0].value) == 2 and \
            np.ndim(plain(args[1] if len(args) > 1 else kwargs.get("val"))) == 0 and \
            not (args[2:] and args[2]) and not kwargs.get("wrap"):
        a, value = args[0], (args[1] if len(args) > 1 else kwargs["val"])
        np.fill_diagonal(np.copy(a.value), plain(value))  # eager's own errors
        diagonal = np.eye(*a.value.shape, dtype=bool)  # the main diagonal (no wrap)
        a._update_in_place("np.fill_diagonal", lambda: np.where(diagonal, value, a))
        return True
    return False


def _putmask(a: Any, mask: Any, values: Any, plain: Callable[[Any], Any], proxy: type) -> bool:
    """``np.putmask(a, mask, values)``: ``a.flat[n] = values.flat[n % values.size]`` where
    ``mask.flat[n]`` (both in C order over their own shapes, whatever the memory layout), so a
    select of ``values`` repeated to ``a``'s shape (a short pattern tiled) where ``mask``, read
    in ``a``'s shape, is True."""
    shape, size = np.shape(a.value), np.size(a.value)
    example = plain(values)
    np.putmask(np.copy(a.value, order="K"), plain(mask), example)  # its errors (its casts)
    if np.size(example) == 0:  # (NumPy: nothing to write from; eager's call wrote nothing)
        return True
    mask = _in_shape(mask, shape, plain, proxy)
    if np.shape(example) not in ((), shape):  # repeated cyclically over a's elements
        pattern = _pattern(a, values, plain, proxy)
        values = np.tile(pattern, -(-size // pattern.size))[:size].reshape(shape)
    a._update_in_place("np.putmask", lambda: np.where(mask, _cast(values, a, proxy, plain), a))
    return True


def _place(a: Any, mask: Any, values: Any, plain: Callable[[Any], Any], proxy: type) -> bool:
    """``np.place(a, mask, values)``: the ``k``-th True of ``mask`` (C order, read in ``a``'s
    shape) takes ``values.flat[k % values.size]``: a select of one value, or of ``values``
    gathered at the mask's running count less one. Empty ``values``: not captured (NumPy
    raises on a call whose mask holds a True)."""
    example = plain(values)
    np.place(np.copy(a.value, order="K"), plain(mask), example)  # its errors (its casts)
    if np.size(example) == 0:
        return False
    shape = np.shape(a.value)
    mask = _in_shape(mask, shape, plain, proxy)
    if np.size(example) == 1:
        values = values.ravel()[0] if isinstance(values, proxy) else np.ravel(example)[0]
    else:
        pattern = _pattern(a, values, plain, proxy)
        rank = np.cumsum(mask.ravel() if isinstance(mask, proxy) else np.ravel(mask)) - 1
        values = pattern[rank % pattern.size].reshape(shape)
    a._update_in_place("np.place", lambda: np.where(mask, _cast(values, a, proxy, plain), a))
    return True


def _in_shape(mask: Any, shape: tuple[int, ...], plain: Callable[[Any], Any], proxy: type) -> Any:
    """A mask of an array's size (NumPy checked) read in the array's shape, in C order."""
    if np.shape(plain(mask)) == shape:
        return mask
    return mask.reshape(shape) if isinstance(mask, proxy) else np.reshape(mask, shape)


def _pattern(a: Any, values: Any, plain: Callable[[Any], Any], proxy: type) -> Any:
    """``values`` as a traced 1-D array (a constant one recorded as ``np.array(...)``)."""
    if isinstance(values, proxy):
        return values.ravel()
    pattern = np.ravel(np.asarray(plain(values)))
    return a.tracer.created_array("numpy.array", (pattern.tolist(),), {
        "dtype": pattern.dtype.name}, np.array(pattern), None)


def _cast(values: Any, a: Any, proxy: type, plain: Callable[[Any], Any]) -> Any:
    """``values`` in ``a``'s dtype, as NumPy writes them (an unsafe cast, which its own call
    allowed): a select in a wider type would round the elements it keeps (int64 through
    float64). A constant whose cast warns (overflow, NaN into an integer, a complex part
    dropped) stays as it is: the program's cast reports it on every call, as NumPy's does."""
    dtype = a.value.dtype
    if isinstance(values, proxy):
        return values if values.value.dtype == dtype else values.astype(dtype)
    number = plain(values) if not isinstance(values, np.ndarray) else None
    if type(number) in (bool, int, float, complex) and _weak_in(dtype, number):
        return values  # a Python number NumPy takes in a's dtype (weak): as it is, so that a
        # scalar argument stays a run-time input of a generic version
    array = np.asarray(values)
    if array.dtype.kind == "c" and dtype.kind != "c":
        return values
    try:
        with np.errstate(all="raise"):
            cast = array.astype(dtype)
    except (FloatingPointError, OverflowError, ValueError, TypeError):
        return values
    return cast[()] if cast.ndim == 0 else cast.tolist()


def _weak_in(dtype: np.dtype[Any], number: Any) -> bool:
    """Whether NumPy takes the Python ``number`` beside ``dtype`` values in ``dtype`` itself."""
    try:
        return np.result_type(dtype, number) == dtype
    except (OverflowError, TypeError, ValueError):
        return False
