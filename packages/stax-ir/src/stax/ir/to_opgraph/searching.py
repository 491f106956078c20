"""Capture rules for searching a sorted array: ``np.searchsorted`` and ``np.interp``.

On a sorted array a binary search's answer is a count: ``side="left"`` finds how many elements
are below the value, ``side="right"`` how many are at or below it (NumPy orders NaN last, so a
NaN value counts every number before it, or everything). A short array is counted whole, a
comparison of every element against every value that vectorizes; a longer one is searched by
binary lifting, one gather and one comparison per bit of its length. Both equal NumPy's result
only on a sorted array, which the compiled program checks (``decline_if``): on an unsorted one
the call declines and NumPy runs it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..graph import Node
from .arguments import bind, cast_to
from .context import LoweringContext, dense_meta
from .registry import NotNative, rule

#: arrays up to this length are counted whole (one comparison per element and value, which
#: vectorizes); longer ones by binary lifting. np.searchsorted of 30000 values on a Xeon with
#: AVX-512: counting beats NumPy's search 3-10x up to 256 elements and ties lifting near 128;
#: lifting beats NumPy's search 2-3x from 500 elements to 10^6.
COUNT_LIMIT = 128
#: np.interp counts the same way: whole up to COUNT_LIMIT sample points, by binary lifting beyond.
#: 20000 random points on a Zen 5 with 2 threads: 3.2x NumPy's search with a guess at 200
#: samples, 3.8x at 500, 3.0x at 20000; without alias scopes (``cpu/alias_scopes.py``) its
#: kernels ran 2.5x slower, and a limit of 128 measured then (Xeon) sent longer ones to NumPy.
_INDEX = "int64"


def _is_float(node: Node) -> bool:
    return np.dtype(node.tensor.dtype).kind == "f"


def _vector(value: Any) -> Node:
    """A 1-D numeric array operand (the array searched, or interp's values)."""
    if not isinstance(value, Node) or value.tensor is None or value.tensor.ndim != 1 or \
            np.dtype(value.tensor.dtype).kind not in "iuf":
        raise NotNative
    return value


def _unsorted(ctx: LoweringContext, a: Node, nan_allowed: bool) -> Node:
    """Per neighbour pair, whether ``a`` steps down there in NumPy's sort order (NaN last: a
    number after a NaN is out of order); with ``nan_allowed`` false any NaN counts too."""
    n, stride = a.tensor.shape[0], a.tensor.strides[0]
    pair = dense_meta((n - 1,), "bool")
    low = ctx.view(a, 0, (stride,), (n - 1,))
    high = ctx.view(a, stride, (stride,), (n - 1,))
    bad = ctx.emit("lt", (high, low), meta=pair)
    if _is_float(a):
        if nan_allowed:
            after_nan = ctx.emit("logical_and", (ctx.emit("ne", (low, low), meta=pair),
                                                 ctx.emit("eq", (high, high), meta=pair)),
                                 meta=pair)
        else:
            after_nan = ctx.emit("logical_or", (ctx.emit("ne", (low, low), meta=pair),
                                                ctx.emit("ne", (high, high), meta=pair)),
                                 meta=pair)
        bad = ctx.emit("logical_or", (bad, after_nan), meta=pair)
    return bad


def _checked_sorted(ctx: LoweringContext, result: Node, a: Node, nan_allowed: bool,
                    why: str) -> Node:
    """``result``, on the condition that ``a`` is sorted (checked at run time)."""
    if a.tensor.shape[0] < 2:
        return result
    bad = _unsorted(ctx, a, nan_allowed)
    return ctx.emit("decline_if", (result, bad), {"why": why}, meta=result.tensor)


def _count_whole(ctx: LoweringContext, a: Node, v: Node, compare: str) -> Node:
    """For each element of ``v``, how many ``k`` have ``compare(a[k], v)``: ``a`` read along a
    new last axis, ``v`` broadcast along it, the comparisons summed."""
    shape, n = tuple(v.tensor.shape), a.tensor.shape[0]
    wide = (n, *shape)
    rows = ctx.view(a, 0, (a.tensor.strides[0],) + (0,) * len(shape), wide)
    values = ctx.view(v, 0, (0, *v.tensor.strides), wide)
    hits = ctx.emit(compare, (rows, values), meta=dense_meta(wide, "bool"))
    return ctx.emit("sum", (hits,), {"axis": (0,), "keepdims": False, "dtype": _INDEX},
                    meta=dense_meta(shape, _INDEX))


def _count_lifting(ctx: LoweringContext, a: Node, v: Node, compare: str) -> Node:
    """The same count by binary lifting over a sorted ``a`` (``compare(a[k], v)`` holds on a
    prefix): ``pos`` grows by each power of two ``h``, largest first, while ``a[pos + h - 1]``
    still compares true. The first probe is at a constant position: a broadcast read."""
    shape, n = tuple(v.tensor.shape), a.tensor.shape[0]
    flags, positions = dense_meta(shape, "bool"), dense_meta(shape, _INDEX)
    h = 1 << (n.bit_length() - 1)
    first = ctx.view(a, (h - 1) * a.tensor.strides[0], (0,) * len(shape), shape)
    pos = ctx.emit("where", (ctx.emit(compare, (first, v), meta=flags), h, 0), meta=positions)
    while h > 1:
        h //= 2
        probe = ctx.emit("add", (pos, h - 1), meta=positions)
        inside = ctx.emit("lt", (probe, n), meta=flags)
        at = ctx.emit("minimum", (probe, n - 1), meta=positions)
        probed = ctx.emit("take", (a, at), {"axis": 0}, meta=dense_meta(shape, a.tensor.dtype))
        step = ctx.emit("logical_and", (inside, ctx.emit(compare, (probed, v), meta=flags)),
                        meta=flags)
        pos = ctx.emit("add", (pos, ctx.emit("where", (step, h, 0), meta=positions)),
                       meta=positions)
    return pos


def _count_sorted(ctx: LoweringContext, a: Node, v: Node, compare: str) -> Node:
    """How many elements of a sorted ``a`` compare true against each element of ``v``."""
    counter = _count_whole if a.tensor.shape[0] <= COUNT_LIMIT else _count_lifting
    return counter(ctx, a, v, compare)


def _count(ctx: LoweringContext, a: Node, v: Node, side: str) -> Node:
    """``np.searchsorted(a, v, side)`` of a sorted ``a``, as a count (int64, of ``v``'s shape).
    NaN in ``v`` sorts last: ``left`` counts the numbers of ``a``, ``right`` all of it."""
    n = a.tensor.shape[0]
    count = _count_sorted(ctx, a, v, "lt" if side == "left" else "le")
    if not _is_float(v) and not _is_float(a):
        return count
    shape = tuple(v.tensor.shape)
    if side == "left":
        numbers = ctx.emit("eq", (a, a), meta=dense_meta((n,), "bool"))
        last = ctx.emit("sum", (numbers,), {"axis": (0,), "keepdims": False, "dtype": _INDEX},
                        meta=dense_meta((), _INDEX))
    else:
        last = n
    missing = ctx.emit("ne", (v, v), meta=dense_meta(shape, "bool"))
    return ctx.emit("where", (missing, last, count), meta=dense_meta(shape, _INDEX))


_SEARCHSORTED_OPS = ("view", "lt", "le", "eq", "ne", "logical_and", "logical_or", "sum", "where",
                     "add", "minimum", "take", "decline_if")


@rule("numpy.searchsorted", "method:searchsorted", emits=_SEARCHSORTED_OPS)
def _searchsorted(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Node:
    """``np.searchsorted(a, v, side)`` of a 1-D numeric ``a`` and an array ``v`` (a sorter, a
    Python scalar ``v``, or a complex or bool dtype: NumPy's call). NumPy compares in the
    common dtype of ``a`` and ``v``, as the comparison ops do."""
    params = bind(lambda a, v, side="left", sorter=None: None, args, kwargs)
    a, v, side = _vector(params["a"]), params["v"], params.get("side", "left")
    if params.get("sorter") is not None or side not in ("left", "right") or \
            not isinstance(v, Node) or v.tensor is None or \
            np.dtype(v.tensor.dtype).kind not in "iuf" or node.tensor.dtype != _INDEX:
        raise NotNative
    count = _count(ctx, a, v, side)
    return _checked_sorted(ctx, count, a, True, "np.searchsorted of an array that is not sorted")


def _fill(value: Any) -> float | None:
    """``left``/``right`` as NumPy reads them (``PyFloat_AsDouble``); None: the default."""
    if value is None:
        return None
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return float(value)
    raise NotNative


def _element(ctx: LoweringContext, vector: Node, k: int, shape: tuple[int, ...]) -> Node:
    """``vector[k]`` broadcast to ``shape``."""
    return ctx.view(vector, k * vector.tensor.strides[0], (0,) * len(shape), shape)


def _interpolate(ctx: LoweringContext, x: Node, xp: Node, fp: Node, count: Node) -> Node:
    """NumPy's formula between the points around each ``x`` (``arr_interp``): the slope of the
    segment ``j`` (count - 1, kept in [0, n - 2]), ``slope * (x - xp[j]) + fp[j]``, from the
    other end where that is NaN, ``fp[j]`` where both are NaN and the segment is flat, and
    ``fp[j]`` where ``x == xp[j]``."""
    shape, n = tuple(x.tensor.shape), xp.tensor.shape[0]
    values, flags = dense_meta(shape, "float64"), dense_meta(shape, "bool")
    positions = dense_meta(shape, _INDEX)
    j = ctx.emit("minimum", (ctx.emit("maximum", (ctx.emit("sub", (count, 1), meta=positions),
                                                  0), meta=positions), n - 2), meta=positions)
    j1 = ctx.emit("add", (j, 1), meta=positions)
    x0, x1, f0, f1 = (ctx.emit("take", (vector, at), {"axis": 0}, meta=values)
                      for vector, at in ((xp, j), (xp, j1), (fp, j), (fp, j1)))
    slope = ctx.emit("truediv", (ctx.emit("sub", (f1, f0), meta=values),
                                 ctx.emit("sub", (x1, x0), meta=values)), meta=values)

    def line(through: Node, at: Node) -> Node:
        offset = ctx.emit("mul", (slope, ctx.emit("sub", (x, through), meta=values)), meta=values)
        return ctx.emit("add", (offset, at), meta=values)
    forward, backward = line(x0, f0), line(x1, f1)
    flat = ctx.emit("logical_and", (ctx.emit("ne", (backward, backward), meta=flags),
                                    ctx.emit("eq", (f0, f1), meta=flags)), meta=flags)
    backward = ctx.emit("where", (flat, f0, backward), meta=values)
    result = ctx.emit("where", (ctx.emit("ne", (forward, forward), meta=flags), backward, forward),
                      meta=values)
    return ctx.emit("where", (ctx.emit("eq", (x0, x), meta=flags), f0, result), meta=values)


_INTERP_OPS = (*_SEARCHSORTED_OPS, "cast", "sub", "maximum", "mul", "truediv", "gt")


@rule("numpy.interp", emits=_INTERP_OPS)
def _interp(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
            kwargs: dict[str, Any]) -> Node:
    """``np.interp(x, xp, fp, left, right)`` of real arrays without a period, in float64 as
    NumPy computes it: ``left`` below ``xp[0]``, ``right`` above ``xp[-1]``, ``fp[-1]`` at it, x
    itself where x is NaN, NumPy's formula between (``_interpolate``). A single point gives
    ``left``, ``right`` or ``fp[0]`` by comparison alone (a NaN x gets ``fp[0]``, as NumPy)."""
    params = bind(lambda x, xp, fp, left=None, right=None, period=None: None, args, kwargs)
    x, xp, fp = params["x"], _vector(params["xp"]), _vector(params["fp"])
    if params.get("period") is not None or not isinstance(x, Node) or x.tensor is None or \
            np.dtype(x.tensor.dtype).kind not in "iuf" or node.tensor.dtype != "float64":
        raise NotNative
    n = xp.tensor.shape[0]
    if n == 0 or fp.tensor.shape[0] != n or not math.prod(x.tensor.shape):
        raise NotNative  # NumPy's errors, or an empty result: its call
    x, xp, fp = (cast_to(ctx, value, "float64") for value in (x, xp, fp))
    shape = tuple(x.tensor.shape)
    values, flags = dense_meta(shape, "float64"), dense_meta(shape, "bool")
    first, last = _element(ctx, fp, 0, shape), _element(ctx, fp, n - 1, shape)
    left, right = _fill(params.get("left")), _fill(params.get("right"))
    below = first if left is None else left
    above = last if right is None else right
    point = _element(ctx, xp, n - 1, shape)
    beyond = ctx.emit("where", (ctx.emit("gt", (x, point), meta=flags), above, last), meta=values)
    if n == 1:
        return ctx.emit("where", (ctx.emit("lt", (x, point), meta=flags), below, beyond),
                        meta=node.tensor)
    count = _count_sorted(ctx, xp, x, "le")  # a NaN x is x itself, whatever its count
    inner = _interpolate(ctx, x, xp, fp, count)
    result = ctx.emit("where", (ctx.emit("eq", (count, n), meta=flags), beyond, inner),
                      meta=values)
    result = ctx.emit("where", (ctx.emit("eq", (count, 0), meta=flags), below, result),
                      meta=values)
    result = ctx.emit("where", (ctx.emit("ne", (x, x), meta=flags), x, result), meta=node.tensor)
    return _checked_sorted(ctx, result, xp, False, "np.interp with sample points that are not "
                                                   "increasing, or NaN")
