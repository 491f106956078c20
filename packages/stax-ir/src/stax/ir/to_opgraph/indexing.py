"""Capture rules for indexing calls: an update ``x[key] = value`` (functionalized at capture as
``stax.functional.setitem``), ``np.take``, and capture's precondition
``stax.functional.decline_if``. Reads ``x[...]`` without a rule are native forms
(``native_forms``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Node
from ..sizes import Size
from ..view_sizes import slice_bounds
from .arguments import SCALAR_TYPES, axis_arg, bind, scalar
from .building import stacked_numbers
from .context import LoweringContext, dense_meta
from .native_forms import checked_start, gatherable, traced_slice
from .registry import NotNative, rule


@rule("stax.functional.setitem", emits=("where", "setitem", "scatter", "full", "cast", "arange",
                                       "add", "sub", "lt", "gt", "ne", "logical_or",
                                       "decline_if", "stack"))
def _setitem(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Node:
    """``x[key] = value`` (functionalized at capture): a mask of x's shape with a scalar is a
    ``where``; basic keys of slices and integers (Ellipsis expanded) are a ``setitem`` op;
    anything else runs as NumPy."""
    if len(args) != 3 or kwargs or not isinstance(args[0], Node) or args[0].tensor is None:
        raise NotNative
    x, key, value = args
    meta = x.tensor
    if isinstance(value, (list, tuple)):  # ``out[i] = [s.mean(), s.std()]``: one array
        value = _stacked(ctx, value)
    is_scalar = isinstance(value, SCALAR_TYPES)
    if not is_scalar and not (isinstance(value, Node) and value.tensor is not None):
        raise NotNative
    kind = np.dtype(meta.dtype).kind
    source_kind = np.dtype(type(value) if is_scalar and not isinstance(value, np.generic) else
                           (value.dtype if is_scalar else value.tensor.dtype)).kind
    if kind in "iub" and source_kind == "f":
        raise NotNative  # float -> integer assignment: NumPy's cast of NaN and large values
    indices, axes = _index_arrays(key, meta), None
    if indices is None:
        indices, axes = _traced_positions(ctx, key, meta) or (None, None)
    if indices is None:
        indices = _traced_slice_positions(ctx, key, meta, value)
    if indices is not None:  # x[i, j] = value: a scatter
        return ctx.emit("scatter", (x, *indices) if is_scalar else (x, *indices, value),
                        {"count": len(indices), "accumulate": False,
                         "scalar": scalar(value) if is_scalar else None,
                         **({"axes": axes} if axes is not None else {})})
    if isinstance(key, Node):  # x[mask] = scalar (a constant, or a traced 0-d value)
        zero_d = not is_scalar and tuple(value.tensor.shape) == ()
        if not (is_scalar or zero_d) or key.tensor is None or key.tensor.dtype != "bool" or \
                tuple(key.tensor.shape) != tuple(meta.shape):
            raise NotNative
        if zero_d and value.tensor.dtype != meta.dtype:  # NumPy casts it to x's dtype first
            value = ctx.emit("cast", (value,), {"dtype": meta.dtype})
        return ctx.emit("where", (key, value if zero_d else scalar(value), x))
    entries = _basic_key(key, meta.shape)
    operands = (x,) if is_scalar else (x, value)
    return ctx.emit("setitem", operands, {"key": entries,
                                          "scalar": scalar(value) if is_scalar else None})


def _stacked(ctx: LoweringContext, values: list[Any] | tuple[Any, ...]) -> Node:
    """A flat list of traced 0-d values and Python numbers: the array NumPy makes of it,
    stacked. Values of one dtype alone keep it; with numbers, float values of one dtype are
    float64 (a float32 value widens exactly: ``out[1] = s, i, 0.0``, cast by the assignment),
    and so are Python floats alone (``out[2] = [1.5, -0.0]``)."""
    nodes = [v for v in values if isinstance(v, Node)]
    numbers = [v for v in values if not isinstance(v, Node)]
    if not values or any(v.tensor is None or v.tensor.shape != () for v in nodes):
        raise NotNative
    dtypes = {v.tensor.dtype for v in nodes}
    if not numbers:
        dtype = dtypes.pop() if len(dtypes) == 1 else None
    elif nodes:
        dtype = "float64" if len(dtypes) == 1 and dtypes <= {"float64", "float32", "float16"} \
            else None
    else:
        dtype = "float64" if all(type(v) is float for v in numbers) else None
    if dtype is None:
        raise NotNative
    return stacked_numbers(ctx, values, dtype)


def _index_arrays(key: Any, meta: Any) -> tuple[Node, ...] | None:
    """The integer index arrays of a key that is only those, one per leading axis of x
    (``x[i]``, ``x[i, j]``, trailing ``:`` allowed), else None."""
    items = list(key) if isinstance(key, tuple) else [key]
    while items and isinstance(items[-1], slice) and items[-1] == slice(None):
        items.pop()
    if not items or len(items) > len(meta.shape) or not all(
            isinstance(k, Node) and k.tensor is not None and
            np.dtype(k.tensor.dtype).kind in "iu" for k in items):
        return None
    return tuple(items)


def _traced_positions(ctx: LoweringContext, key: Any, meta: Any
                      ) -> tuple[tuple[Node, ...], tuple[int, ...] | None] | None:
    """``x[i, 3] = v`` or ``x[:, i] = v`` with a traced integer ``i`` (a lifted loop's item)
    among integers, the other axes whole: the scatter's index arrays (the constants as 0-d
    ones) and the axes they index (None: the leading ones). NumPy raised eagerly for a
    constant out of bounds; the scatter checks the others."""
    items = list(key) if isinstance(key, tuple) else [key]
    if Ellipsis in items:
        if sum(k is Ellipsis for k in items) > 1:
            return None
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (len(meta.shape) - len(items) + 1)
    items += [slice(None)] * (len(meta.shape) - len(items))
    if len(items) != len(meta.shape) or not any(isinstance(k, Node) for k in items):
        return None
    axes = []
    for axis, (k, extent) in enumerate(zip(items, meta.shape)):
        if isinstance(k, slice) and k == slice(None):
            continue
        if not ((isinstance(k, Node) and k.tensor is not None and k.tensor.shape == () and
                np.dtype(k.tensor.dtype).kind in "iu") or
                (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) and
                -extent <= k < extent)):
            return None
        axes.append(axis)
    indices = tuple(items[a] if isinstance(items[a], Node) else ctx.emit(
        "full", (), {"shape": (), "value": int(items[a]) % meta.shape[a], "dtype": "int64"},
        meta=dense_meta((), "int64")) for a in axes)
    return indices, (None if axes == list(range(len(axes))) else tuple(axes))


def _traced_slice_positions(ctx: LoweringContext, key: Any, meta: Any,
                            value: Any) -> tuple[Node, ...] | None:
    """``x[i * bs:(i + 1) * bs] = v``, ``x[i, s:s + k] = v`` (a lifted loop's item in a slice's
    bounds, step one): the scatter's index arrays for the leading axes, the slice's positions
    from its checked start (``native_forms.checked_start``), the integers 0-d. One traced slice
    among integers, every later axis whole; its length is the value's along that axis (a value
    broadcast along it, of length 1 there or a scalar, is not taken: its length is unknown)."""
    items = list(key) if isinstance(key, tuple) else [key]
    while items and isinstance(items[-1], slice) and items[-1] == slice(None):
        items.pop()
    sliced = [k for k in items if isinstance(k, slice)]
    if len(sliced) != 1 or sliced[0].step not in (None, 1) or \
            len(items) > len(meta.shape) or not isinstance(value, Node) or value.tensor is None:
        return None
    # a constant slice beside a traced integer (``U[n + 1, 1:-1] = v``, a row's interior at the
    # item) too: its positions a constant ramp
    constant = not traced_slice(sliced[0])
    if constant and not (any(isinstance(k, Node) for k in items) and all(
            type(b) in (int, type(None)) for b in (sliced[0].start, sliced[0].stop))):
        return None
    at = items.index(sliced[0])
    if not all((isinstance(k, Node) and k.tensor is not None and k.tensor.shape == () and
                np.dtype(k.tensor.dtype).kind in "iu") or
               (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) and
                -n <= k < n) for k, n in zip(items, meta.shape) if k is not sliced[0]):
        return None
    region = 1 + len(meta.shape) - len(items)  # the slice's axis, then the whole ones
    if value.tensor.ndim != region or value.tensor.shape[0] == 1:
        return None
    length = value.tensor.shape[0]
    scalar = dense_meta((), "int64")
    if constant:
        first, stop, _ = sliced[0].indices(meta.shape[at])
        if type(first) is not int or stop - first != length:
            return None  # (a size-generic extent, or a value NumPy would not broadcast so)
        positions = ctx.emit("arange", (), {"start": first, "step": 1, "n": length,
                                            "dtype": "int64"}, meta=dense_meta((length,), "int64"))
    else:
        start = checked_start(ctx, sliced[0], meta.shape[at], length)
        ramp = ctx.emit("arange", (), {"start": 0, "step": 1, "n": length, "dtype": "int64"},
                        meta=dense_meta((length,), "int64"))
        positions = ctx.emit("add", (start, ramp), {}, meta=dense_meta((length,), "int64"))
    return tuple(positions if k is sliced[0] else k if isinstance(k, Node) else ctx.emit(
        "full", (), {"shape": (), "value": int(k) % n, "dtype": "int64"}, meta=scalar)
        for k, n in zip(items, meta.shape))


#: the scatter op of each ``ufunc.at`` capture records as a pure function
_UFUNC_AT = {"stax.functional.add_at": "scatter", "stax.functional.subtract_at": "scatter",
             "stax.functional.maximum_at": "scatter_maximum",
             "stax.functional.minimum_at": "scatter_minimum"}


@rule(*_UFUNC_AT, emits=("scatter", "scatter_maximum", "scatter_minimum", "ne", "decline_if",
                         "neg"))
def _add_at(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
            kwargs: dict[str, Any]) -> Node:
    """``np.add.at(x, indices, values)`` (captured as a pure function): a scatter that sums,
    for integer index arrays of x's leading axes and integer or float x; ``np.subtract.at`` the
    sum of the negated values; ``np.maximum.at`` and ``np.minimum.at`` the same, keeping the
    extreme."""
    if len(args) != 3 or kwargs or not isinstance(args[0], Node) or args[0].tensor is None:
        raise NotNative
    x, key, value = args
    if np.dtype(x.tensor.dtype).kind not in "iuf":
        raise NotNative
    indices = _index_arrays(key, x.tensor)
    is_scalar = isinstance(value, SCALAR_TYPES)
    if indices is None or not (is_scalar or isinstance(value, Node)):
        raise NotNative
    if is_scalar and isinstance(value, (complex, np.complexfloating)):
        raise NotNative
    # NumPy adds in the dtype of x and the values together, then casts the sum to x's dtype
    # (int x + 0.5 is computed in float64): natively only where that dtype is x's own
    dtype = np.dtype(x.tensor.dtype)
    if np.result_type(dtype, value if is_scalar else value.tensor.np_dtype) != dtype:
        raise NotNative
    op = _UFUNC_AT[node.target]
    if node.target == "stax.functional.subtract_at":  # x - v is x + (-v) mod 2^n for signed
        # integers of x's own dtype (two's complement); a float's NaN would change sign (the
        # subtraction returns v's NaN as it is), an unsigned negation or a narrower value's
        # cast would differ: those run as NumPy's call
        if dtype.kind != "i" or (not is_scalar and value.tensor.dtype != dtype.name) or (
                is_scalar and not np.iinfo(dtype).min <= -int(value) <= np.iinfo(dtype).max):
            raise NotNative
        value = -value if is_scalar else ctx.emit("neg", (value,), {}, meta=dense_meta(
            tuple(value.tensor.shape), value.tensor.dtype))
    if op != "scatter" and is_scalar and dtype.kind == "f" and np.isnan(value):
        raise NotNative  # NumPy warns at every call: its own
    attrs = {"count": len(indices), "scalar": scalar(value) if is_scalar else None}
    if op == "scatter":
        attrs["accumulate"] = True
    result = ctx.emit(op, (x, *indices) if is_scalar else (x, *indices, value), attrs)
    if op != "scatter" and dtype.kind == "f":
        # NumPy's maximum.at reports invalid for every NaN it meets (np.maximum does not):
        # NaN data runs eagerly, so NumPy warns as it does
        for operand in (x, value):
            if isinstance(operand, Node):
                nan = ctx.emit("ne", (operand, operand),
                               meta=dense_meta(tuple(operand.tensor.shape), "bool"))
                result = ctx.emit("decline_if", (result, nan),
                                  {"why": f"a NaN met by np.{op[8:]}.at"}, meta=result.tensor)
    return result


def _basic_key(key: Any, shape: tuple[int, ...]) -> tuple[tuple[Any, ...], ...]:
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise NotNative
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (len(shape) - len(items) + 1)
    items += [slice(None)] * (len(shape) - len(items))
    if len(items) != len(shape):
        raise NotNative
    entries: list[tuple[Any, ...]] = []
    for item, extent in zip(items, shape):
        if isinstance(item, slice):
            bounds = slice_bounds(item, extent)  # any step: x[::2], x[j::40]; in sizes too
            if bounds is None:
                raise NotNative
            start, length, step = bounds
            entries.append(("slice", start, start + length * step, step))
        elif isinstance(item, (int, np.integer, Size)) and not isinstance(item, (bool, np.bool_)):
            if not (-extent <= item and item < extent):
                raise NotNative
            entries.append(("int", item + extent if item < 0 else item))
        else:
            raise NotNative
    return tuple(entries)


@rule("stax.functional.decline_if", emits=("decline_if",))
def _decline_if(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Node:
    """A precondition a capture rewrite relies on (the mean of a masked selection needs a
    selected element): the value, with the call declined where ``bad`` holds anywhere."""
    value, bad = args
    return ctx.emit("decline_if", (value, bad), {"why": kwargs["why"]})


@rule("numpy.take", emits=("take",))
def _take(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    params = bind(lambda a, indices, axis=None, out=None, mode="raise": None, args, kwargs)
    x, indices = params["a"], params["indices"]
    if not gatherable(x, indices) or params.get("out") is not None or \
            params.get("mode", "raise") != "raise" or params.get("axis") is None:
        raise NotNative
    return ctx.emit("take", (x, indices), {"axis": axis_arg(params["axis"], x.tensor.ndim)})
