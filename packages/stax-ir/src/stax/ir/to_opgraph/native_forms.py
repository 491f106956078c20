"""Calls without a capture rule that still compile natively, as one op: a view of an operand
(``view``: an affine read of its memory, no call made; ``x[i, j]``, one element, is a 0-d one),
a gather by an integer array (``take``), basic indexing where some indices are traced integers
(``x[:, i]``, ``x[i, j]``: a view for the constant part, then a ``take`` of one position per
traced index), a short constant list of positions (``take_const``), a C-order reshape NumPy made
as a copy (``reshape``). Any other call without a rule runs as NumPy (``extern``, in ``driver``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..graph import Node, Opcode
from ..meta import contiguous_strides
from ..sizes import Size, is_symbolic
from ..views import rebase_view
from .context import LoweringContext, dense_meta
from .registry import RULES

#: the ops a native form emits
NATIVE_FORM_OPS = frozenset({"view", "take", "take_const", "reshape", "dynamic_slice", "full",
                             "cast", "sub", "lt", "gt", "ne", "logical_or", "decline_if",
                             "ge", "add", "mul", "where"})
RESHAPES = frozenset({("method", "reshape"), ("method", "ravel"), ("method", "flatten"),
                      ("function", "numpy.reshape"), ("function", "numpy.ravel")})


def lower_native_form(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Node | None:
    """The op a call without a rule compiles to natively, or None. A view of its first operand
    that the function does not return becomes a ``view`` op; a returned view stays NumPy's own
    view object (``read_natively``)."""
    view = node.meta.get("view")
    if view is not None and isinstance(args[0], Node) and args[0].tensor is not None and \
            (read_natively(node) or _private_base(node)):
        base = args[0].tensor
        mapped = rebase_view(view["offset"], view["strides"], node.tensor.shape, base.shape,
                             view.get("base_strides", base.strides), base.strides)
        if mapped is not None:  # else NumPy's call reads the operand, whatever its layout
            return ctx.emit("view", (args[0],), {"offset": mapped[0], "strides": mapped[1],
                                                 "shape": node.tensor.shape}, name=node.target)
    form = native_form(node, args, kwargs)
    if form == "element":  # x[i, j]: a NumPy scalar read at a fixed place of x's memory
        meta = args[0].tensor
        offset = sum(_position(k, n) * stride
                     for k, n, stride in zip(_element_key(args[1]), meta.shape, meta.strides))
        return ctx.emit("view", (args[0],), {"offset": offset, "strides": (), "shape": ()},
                        name=node.target)
    if form == "take":
        return ctx.emit("take", (args[0], args[1]), {"axis": 0})
    if form == "take_pairs":
        return _take_pairs(ctx, node, args[0], args[1])
    if form == "take_axis":  # x[:, idx]: one index array among full slices
        axis = gather_axis(args[0], args[1])
        return ctx.emit("take", (args[0], args[1][axis]), {"axis": axis})
    if form == "traced_basic":
        return _traced_basic(ctx, node, args[0], args[1])
    if form == "take_const":
        return ctx.emit("take_const", (args[0],), {"axis": 0, "indices": constant_indices(args)})
    if form == "reshape":
        return ctx.emit("reshape", (args[0],), {"shape": tuple(node.tensor.shape)})
    return None


def native_form(node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """How a call without a rule still compiles natively, if it does: ``take``, ``take_const``
    or ``reshape``. Views are decided apart (``read_natively``): whether NumPy's own view object
    is needed depends on the view's users."""
    if node.target == "operator.getitem" and node.op is not Opcode.CALL_METHOD and len(args) == 2:
        if element_read(args):
            return "element"
        if gatherable(args[0], args[1]):
            return "take"
        if gather_axis(args[0], args[1]) is not None:
            return "take_axis"
        if paired_indices(args[0], args[1]):
            return "take_pairs"
        if traced_basic_key(args[0], args[1]) is not None:
            return "traced_basic"
        if constant_indices(args) is not None:
            return "take_const"
    if node.meta.get("view") is None and copying_reshape(node, args, kwargs):
        return "reshape"
    return None


def _private_base(node: Node) -> bool:
    """Whether ``node`` is the one use of a value the function made itself and sees only
    through it (``np.bincount(...).reshape(n, n)`` returned): NumPy's view of it and a fresh
    array of its elements differ only in ``.base``, as nothing else holds that memory."""
    base, view = node.args[0], node.meta.get("view") or {}
    meta = node.tensor
    # laid out as a fresh array (no broadcast, reversal or step: those are NumPy's own layout,
    # and a broadcast is read-only)
    fresh = meta is not None and not any(isinstance(n, Size) for n in meta.shape) and \
        all(n <= 1 or s == c for n, s, c in zip(meta.shape, view.get("strides", ()),
                                                contiguous_strides(tuple(meta.shape)))) and \
        len(view.get("strides", ())) == len(meta.shape)
    return fresh and isinstance(base, Node) and base.op is Opcode.CALL_FUNCTION and \
        list(base.users) == [node] and base.meta.get("view") is None and \
        not base.meta.get("aliases") and base.target not in _ARGUMENT_VIEWS


#: calls whose result may share an argument's memory without a recorded view relation
_ARGUMENT_VIEWS = frozenset({"numpy.asarray", "numpy.asanyarray", "numpy.ascontiguousarray"})


def read_natively(node: Node) -> bool:
    """Whether every user of a view compiles natively (so none needs NumPy's view object): not
    the output, not an extern call — views of views are followed."""
    for user in node.users:
        if user.op is Opcode.OUTPUT:
            return False
        kind = "method" if user.op is Opcode.CALL_METHOD else "function"
        if (kind, user.target) in RULES or native_form(user, user.args, user.kwargs):
            continue
        if user.meta.get("view") is not None and user.args and user.args[0] is node and \
                read_natively(user):
            continue
        return False
    return True


def _position(k: Any, n: Any) -> Any:
    """Index ``k`` of a dimension of ``n`` (in bounds), negative ones counted from the end; in
    sizes where either is one (whether ``k`` is negative: a guard)."""
    if isinstance(k, Size) or is_symbolic(n):
        return k + n if k < 0 else k
    return int(k) % n


def _element_key(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def element_read(args: tuple[Any, ...]) -> bool:
    """``x[i]``, ``x[i, j]``: one integer per dimension (in bounds: NumPy raised eagerly
    otherwise), so the result is one element of x; ``x[()]`` of a 0-d x is its element."""
    x, key = args
    if not isinstance(x, Node) or x.tensor is None:
        return False
    key = _element_key(key)
    return len(key) == x.tensor.ndim and all(
        isinstance(k, (int, np.integer, Size)) and not isinstance(k, (bool, np.bool_)) and
        -n <= k and k < n for k, n in zip(key, x.tensor.shape))


def gatherable(x: Any, indices: Any) -> bool:
    """``x[indices]`` with an integer index array: a gather along axis 0."""
    return isinstance(x, Node) and x.tensor is not None and x.tensor.ndim >= 1 and \
        isinstance(indices, Node) and indices.tensor is not None and \
        np.dtype(indices.tensor.dtype).kind in "iu"


def gather_axis(x: Any, key: Any) -> int | None:
    """The axis of ``x[:, ..., idx]``: a tuple key of full slices (``:``) and one integer index
    array, no more entries than ``x`` has axes — NumPy keeps the index's axes in its place, as
    ``np.take(x, idx, axis)`` does. None for any other key."""
    if not isinstance(key, tuple) or not isinstance(x, Node) or x.tensor is None or \
            not 0 < len(key) <= x.tensor.ndim:
        return None
    arrays = [k for k, entry in enumerate(key) if isinstance(entry, Node)]
    if len(arrays) != 1 or not gatherable(x, key[arrays[0]]):
        return None
    full = slice(None)
    if not all(entry == full for k, entry in enumerate(key) if k != arrays[0]):
        return None
    return arrays[0]


def paired_indices(x: Any, key: Any) -> bool:
    """``x[rows, cols]``: one integer index array per axis of ``x`` (a static shape), all of
    one shape (``logp[np.arange(n), y]``, a loss's picked entries)."""
    if not isinstance(key, tuple) or not isinstance(x, Node) or x.tensor is None or \
            len(key) != x.tensor.ndim or len(key) < 2 or \
            any(is_symbolic(n) for n in x.tensor.shape):
        return False
    if not all(isinstance(k, Node) and k.tensor is not None and  # (a bool array is a mask)
               np.dtype(k.tensor.dtype).kind in "iu" for k in key):
        return False
    shapes = {tuple(k.tensor.shape) for k in key}
    return len(shapes) == 1 and not any(is_symbolic(n) for n in next(iter(shapes)))


def _take_pairs(ctx: LoweringContext, node: Node, x: Node, key: tuple[Node, ...]) -> Node:
    """``x[rows, cols]`` as one gather from x's elements in C order: each index checked in its
    axis's bounds (NumPy raises IndexError otherwise: such a call declines, and NumPy raises),
    a negative one counted from the end, then the flat position ``sum(i_k * stride_k)``."""
    shape = tuple(int(n) for n in x.tensor.shape)
    positions = tuple(key[0].tensor.shape)
    index, bool_meta = dense_meta(positions, "int64"), dense_meta(positions, "bool")
    flat = bad = None
    for k, (entry, n) in enumerate(zip(key, shape)):
        i = entry if entry.tensor.dtype == "int64" else \
            ctx.emit("cast", (entry,), {"dtype": "int64"}, meta=index)
        out = ctx.emit("logical_or", (ctx.emit("lt", (i, -n), meta=bool_meta),
                                      ctx.emit("ge", (i, n), meta=bool_meta)), meta=bool_meta)
        bad = out if bad is None else ctx.emit("logical_or", (bad, out), meta=bool_meta)
        i = ctx.emit("where", (ctx.emit("lt", (i, 0), meta=bool_meta),
                               ctx.emit("add", (i, n), meta=index), i), meta=index)
        stride = int(np.prod(shape[k + 1:], dtype=np.int64))
        term = i if stride == 1 else ctx.emit("mul", (i, stride), meta=index)
        flat = term if flat is None else ctx.emit("add", (flat, term), meta=index)
    flat = ctx.emit("decline_if", (flat, bad), {"why": "an index out of bounds: NumPy raises "
                                                       "IndexError"}, meta=index)
    whole = ctx.emit("reshape", (x,), {"shape": (int(np.prod(shape, dtype=np.int64)),)},
                     meta=dense_meta((int(np.prod(shape, dtype=np.int64)),), x.tensor.dtype))
    return ctx.emit("take", (whole, flat), {"axis": 0})


def constant_indices(args: tuple[Any, ...]) -> tuple[int, ...] | None:
    """``x[[0, 2, -1]]``: a short list of Python ints, all in bounds (NumPy raises otherwise,
    and does so eagerly), normalized to non-negative positions."""
    if len(args) != 2 or not isinstance(args[0], Node) or args[0].tensor is None or \
            not args[0].tensor.ndim or not isinstance(args[1], list) or not 0 < len(args[1]) <= 64:
        return None
    extent = args[0].tensor.shape[0]
    if not all(isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) and
               -extent <= k < extent for k in args[1]):
        return None
    return tuple(int(k) % extent for k in args[1])


def copying_reshape(node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """A C-order reshape, ravel or flatten whose result NumPy made as a copy (the operand's
    layout does not allow a view): computed natively by reading the operand at the positions
    the flat index gives."""
    kind = "method" if node.op is Opcode.CALL_METHOD else "function"
    if (kind, node.target) not in RESHAPES or not args or not isinstance(args[0], Node) or \
            args[0].tensor is None or node.tensor is None:
        return False
    order = kwargs.get("order", "C")
    if node.target in ("numpy.reshape", "reshape") and len(args) > 2 and kind == "function":
        order = args[2]
    if node.target in ("flatten", "ravel", "numpy.ravel"):  # order may be positional there
        if len(args) > 2:
            return False
        if len(args) == 2:
            order = args[1]
    return order == "C" and set(kwargs) <= {"order", "shape", "newshape"}


def traced_basic_key(x: Any, key: Any) -> tuple[Any, ...] | None:
    """``key`` as a tuple when it is basic indexing (integers, slices, ``None``, one ``...``)
    with at least one traced 0-d integer among the integers or the bounds of a slice of step
    one (a lifted loop's item: NumPy sees a Python int there; such a slice has the same length
    inside the array for every item: ``stax.runtime.item_uses``), else None."""
    if not isinstance(x, Node) or x.tensor is None:
        return None
    key = key if isinstance(key, tuple) else (key,)
    traced = False
    for k in key:
        if isinstance(k, Node):
            if not _traced_integer(k):
                return None
            traced = True
        elif isinstance(k, slice) and traced_slice(k):
            if not all(b is None or isinstance(b, (int, np.integer)) or _traced_integer(b)
                       for b in (k.start, k.stop)) or k.step not in (None, 1):
                return None
            traced = True
        elif not ((isinstance(k, (int, np.integer, slice)) and not isinstance(k, (bool, np.bool_)))
                  or k is None or k is Ellipsis):
            return None
    if not traced or sum(k is Ellipsis for k in key) > 1 or \
            sum(k is not None and k is not Ellipsis for k in key) > x.tensor.ndim:
        return None
    return key


def traced_slice(k: slice) -> bool:
    """Whether a slice has a traced bound (a lifted loop's ``x[i * bs:(i + 1) * bs]``)."""
    return any(isinstance(b, Node) for b in (k.start, k.stop, k.step))


def _traced_integer(k: Node) -> bool:
    return k.tensor is not None and k.tensor.shape == () and \
        np.dtype(k.tensor.dtype).kind in "iu"


_WHY_SLICE = "a slice at the loop's item leaves the array or changes length"


def checked_start(ctx: LoweringContext, k: slice, extent: int, length: int) -> Node:
    """The traced start of ``k`` (step one) as an int64 node, the call declined where NumPy's
    slice would not be ``length`` elements from it: the start below 0 or past ``extent -
    length`` (NumPy counts a negative bound from the end and clips one past the end), or
    ``stop - start`` not ``length``."""
    start = k.start if k.start is not None else 0
    stop = k.stop if k.stop is not None else extent
    scalar, flag = dense_meta((), "int64"), dense_meta((), "bool")
    bounds = [b if isinstance(b, Node) else ctx.emit(
        "full", (), {"shape": (), "value": int(b), "dtype": "int64"}, meta=scalar)
        for b in (start, stop)]
    bounds = [b if b.tensor.dtype == "int64" else
              ctx.emit("cast", (b,), {"dtype": "int64"}, meta=scalar) for b in bounds]
    span = ctx.emit("sub", (bounds[1], bounds[0]), {}, meta=scalar)
    bad = ctx.emit("logical_or", (
        ctx.emit("logical_or", (ctx.emit("lt", (bounds[0], 0), {}, meta=flag),
                                ctx.emit("gt", (bounds[0], extent - length), {}, meta=flag)),
                 {}, meta=flag),
        ctx.emit("ne", (span, length), {}, meta=flag)), {}, meta=flag)
    return ctx.emit("decline_if", (bounds[0], bad), {"why": _WHY_SLICE}, meta=scalar)


def _slice_at(ctx: LoweringContext, value: Node, k: slice, axis: int, length: int) -> Node:
    """``value[..., start:stop, ...]`` (step one) along ``axis`` with a traced bound: a
    ``dynamic_slice`` of the ``length`` capture saw, from its checked start."""
    start = checked_start(ctx, k, value.tensor.shape[axis], length)
    shape = tuple(length if d == axis else e for d, e in enumerate(value.tensor.shape))
    return ctx.emit("dynamic_slice", (value, start), {"axis": axis, "length": length},
                    meta=dense_meta(shape, value.tensor.dtype))


def _traced_basic(ctx: LoweringContext, node: Node, x: Node, key: tuple[Any, ...]) -> Node:
    """``x[key]``: the view of ``x`` that the key's constant part selects (each traced index
    and traced slice kept as a whole axis), then one ``take`` per traced index, last axis
    first, each dropping its axis (``np.take`` with a 0-d index: NumPy's bounds and negative
    positions), or keeping it (a traced slice: the positions it selects, ``_positions``)."""
    key = key if isinstance(key, tuple) else (key,)
    ndim = x.tensor.ndim
    fill = ndim - sum(k is not None and k is not Ellipsis for k in key)
    expanded = []
    for k in key:
        expanded.extend([slice(None)] * fill if k is Ellipsis else [k])
    expanded.extend([slice(None)] * (ndim - sum(k is not None for k in expanded)))
    static, traced, position = [], [], 0
    for k in expanded:
        if isinstance(k, Node) or (isinstance(k, slice) and traced_slice(k)):
            static.append(slice(None))
            traced.append((position, k))
            position += 1
        else:
            static.append(k)
            position += k is None or isinstance(k, slice)
    # the view's place in x's memory: the static key applied to a 1-byte stand-in whose byte
    # strides are x's element strides (metadata only: nothing is read)
    stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), x.tensor.shape,
                                               x.tensor.strides)
    part = stand_in[tuple(static)]
    offset = part.__array_interface__["data"][0] - stand_in.__array_interface__["data"][0]
    value = ctx.view(x, offset, tuple(part.strides), tuple(part.shape))
    shape, lengths = list(part.shape), list(node.tensor.shape)
    for k, (axis, index) in enumerate(reversed(traced)):
        if isinstance(index, slice):  # the axis stays, of the length the node has there
            dropped = sum(a < axis and not isinstance(i, slice) for a, i in traced)
            length = lengths[axis - dropped]
            shape[axis] = length
            value = _slice_at(ctx, value, index, axis, length)
            continue
        del shape[axis]
        meta = dense_meta(tuple(shape), x.tensor.dtype)
        if k == len(traced) - 1 and node.tensor.scalar:  # NumPy's scalar, as eager gives it
            meta = replace(meta, scalar=True)
        value = ctx.emit("take", (value, index), {"axis": axis}, meta=meta)
    return value
