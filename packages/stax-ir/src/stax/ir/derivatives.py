"""Reverse-mode rules of the ops (issue 16): each op's declaration in ``ops.py`` names its rule
here (``OpDef.vjp``), written as a ``decompose`` rule is, with ``emit(op, operands, attrs,
meta)``.

A rule ``vjp(emit, node, g)`` takes an op-graph node and the cotangent ``g`` of its result (a
node of the result's shape and dtype) and returns one cotangent per operand of ``node.args``,
each of that operand's shape and dtype, or None where the operand is a constant, an integer or
boolean value, or has a zero derivative (comparisons, ``floor``). Broadcasting is transposed by
a sum over the broadcast axes (``unbroadcast``), a reduction by a broadcast back
(``broadcast_back``), a view by a scatter of the cotangent into the operand's memory.

Subgradients follow JAX: ``maximum``/``minimum`` give each operand half the cotangent where the
two are equal; a ``max``/``min`` reduction splits it evenly among the elements equal to the
result; ``abs`` has derivative ``sign(x)`` (0 at 0); ``sqrt`` at 0 is infinite, as ``1 / (2 *
sqrt(0))`` computes.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .meta import TensorMeta, contiguous_strides

Emit = Callable[..., Any]
#: which operands want a cotangent (None: every differentiable one): the joint program computes
#: none for an input it does not differentiate by (``x @ w`` by ``w`` alone: no ``g @ w.T``)
Need = Callable[[Any], bool] | None
Rule = Callable[..., tuple[Any, ...]]


def meta(shape: tuple[int, ...], dtype: str) -> TensorMeta:
    return TensorMeta(tuple(shape), dtype, contiguous_strides(tuple(shape)))


def _is_node(value: Any) -> bool:
    return hasattr(value, "tensor") and hasattr(value, "users")


def differentiable(value: Any) -> bool:
    """Whether a cotangent flows to ``value``: a node of a float dtype."""
    return _is_node(value) and value.tensor is not None and \
        np.dtype(value.tensor.dtype).kind == "f"


def wants(need: Need, value: Any) -> bool:
    """Whether the rule computes ``value``'s cotangent: differentiable, and wanted."""
    return differentiable(value) and (need is None or need(value))


def shape_of(value: Any) -> tuple[int, ...]:
    return tuple(value.tensor.shape) if _is_node(value) else ()


def unbroadcast(emit: Emit, g: Any, like: Any) -> Any:
    """``g`` (a broadcast result's cotangent) summed over the axes ``like`` was broadcast along,
    in ``like``'s shape and dtype; None where ``like`` is not differentiable."""
    if not differentiable(like):
        return None
    shape, dtype = shape_of(like), like.tensor.dtype
    gshape = tuple(g.tensor.shape)
    lead = len(gshape) - len(shape)
    axes = (*range(lead), *(lead + i for i, n in enumerate(shape) if n == 1 and
                            gshape[lead + i] != 1))
    if axes:
        kept = tuple(1 if d in axes else n for d, n in enumerate(gshape))
        g = emit("sum", (g,), {"axis": tuple(axes), "keepdims": True, "dtype": dtype},
                 meta(kept, dtype))
        g = emit("view", (g,), {"offset": 0, "strides": contiguous_strides(shape),
                               "shape": shape}, meta(shape, dtype))
    if g.tensor.dtype != dtype:
        g = emit("cast", (g,), {"dtype": dtype}, meta(shape, dtype))
    return g


def broadcast_back(emit: Emit, g: Any, shape: tuple[int, ...], axes: tuple[int, ...],
                   keepdims: bool) -> Any:
    """A reduction's cotangent ``g`` read at every element of the operand's ``shape`` (a view
    whose reduced axes have stride 0)."""
    kept = tuple(1 if d in axes else n for d, n in enumerate(shape))
    strides = contiguous_strides(kept)
    return emit("view", (g,), {"offset": 0, "shape": tuple(shape),
                               "strides": tuple(0 if d in axes else s
                                                for d, s in enumerate(strides))},
                meta(shape, g.tensor.dtype))


def elem(emit: Emit, op: str, *operands: Any, like: Any) -> Any:
    """An element-wise op of ``like``'s shape and dtype."""
    return emit(op, operands, {}, meta(shape_of(like), like.tensor.dtype))


# -- element-wise ---------------------------------------------------------------------------------

def add(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    x, y = node.args
    return (unbroadcast(emit, g, x) if wants(need, x) else None,
            unbroadcast(emit, g, y) if wants(need, y) else None)


def sub(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    x, y = node.args
    return (unbroadcast(emit, g, x) if wants(need, x) else None,
            unbroadcast(emit, elem(emit, "neg", g, like=g), y) if wants(need, y) else None)


def mul(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    x, y = node.args
    return (unbroadcast(emit, elem(emit, "mul", g, y, like=g), x) if wants(need, x) else None,
            unbroadcast(emit, elem(emit, "mul", g, x, like=g), y) if wants(need, y) else None)


def truediv(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    x, y = node.args
    gx = unbroadcast(emit, elem(emit, "truediv", g, y, like=g), x) if wants(need, x) else None
    gy = None
    if wants(need, y):  # d(x / y)/dy = -(x / y) / y
        ratio = elem(emit, "truediv", node, y, like=g)
        gy = unbroadcast(emit, elem(emit, "neg", elem(emit, "mul", g, ratio, like=g), like=g), y)
    return gx, gy


def neg(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    return (elem(emit, "neg", g, like=g),) if wants(need, node.args[0]) else (None,)


def unary(derivative: Callable[[Emit, Any, Any], Any]) -> Rule:
    """The rule of ``y = f(x)``: ``g * f'(x)``, ``derivative(emit, node, like)`` building f'."""
    def rule(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
        x = node.args[0]
        if not wants(need, x):
            return (None,)
        return (elem(emit, "mul", g, derivative(emit, node, g), like=g),)
    return rule


def _const(value: float) -> float:
    return float(value)


exp = unary(lambda emit, node, g: node)
expm1 = unary(lambda emit, node, g: elem(emit, "add", node, 1.0, like=g))
log = unary(lambda emit, node, g: elem(emit, "reciprocal", node.args[0], like=g))
log1p = unary(lambda emit, node, g: elem(emit, "reciprocal",
                                        elem(emit, "add", node.args[0], 1.0, like=g), like=g))
log2 = unary(lambda emit, node, g: elem(emit, "reciprocal", elem(
    emit, "mul", node.args[0], _const(math.log(2.0)), like=g), like=g))
log10 = unary(lambda emit, node, g: elem(emit, "reciprocal", elem(
    emit, "mul", node.args[0], _const(math.log(10.0)), like=g), like=g))
sqrt = unary(lambda emit, node, g: elem(emit, "truediv", 0.5, node, like=g))
tanh = unary(lambda emit, node, g: elem(emit, "sub", 1.0, elem(emit, "mul", node, node, like=g),
                                       like=g))
sin = unary(lambda emit, node, g: elem(emit, "cos", node.args[0], like=g))
cos = unary(lambda emit, node, g: elem(emit, "neg", elem(emit, "sin", node.args[0], like=g),
                                      like=g))
sinh = unary(lambda emit, node, g: elem(emit, "cosh", node.args[0], like=g))
cosh = unary(lambda emit, node, g: elem(emit, "sinh", node.args[0], like=g))
arctan = unary(lambda emit, node, g: elem(emit, "reciprocal", elem(
    emit, "add", 1.0, elem(emit, "mul", node.args[0], node.args[0], like=g), like=g), like=g))
abs = unary(lambda emit, node, g: elem(emit, "sign", node.args[0], like=g))
reciprocal = unary(lambda emit, node, g: elem(emit, "neg", elem(emit, "mul", node, node, like=g),
                                             like=g))


def positive(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    return (g,) if wants(need, node.args[0]) else (None,)


def pow(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """``x ** y``: ``y * x ** (y - 1)`` for x, ``x ** y * log(x)`` for y."""
    x, y = node.args
    gx = gy = None
    if wants(need, x):
        lower = emit("pow", (x, y - 1.0 if not _is_node(y) else elem(emit, "sub", y, 1.0,
                                                                    like=y)),
                     {}, meta(shape_of(node), node.tensor.dtype))
        gx = unbroadcast(emit, elem(emit, "mul", g, elem(emit, "mul", lower, y, like=g), like=g), x)
    if wants(need, y):
        gy = unbroadcast(emit, elem(emit, "mul", g, elem(emit, "mul", node, elem(
            emit, "log", x, like=g) if _is_node(x) else math.log(x), like=g), like=g), y)
    return gx, gy


def _extreme(op: str) -> Rule:
    """``maximum``/``minimum``: the cotangent to the operand chosen, half to each on a tie."""
    def rule(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
        x, y = node.args
        flags = meta(shape_of(node), "bool")
        wins = emit(op, (x, y), {}, flags)
        tie = emit("eq", (x, y), {}, flags)
        half = elem(emit, "mul", g, 0.5, like=g)
        zero_or_half = emit("where", (tie, half, 0.0), {}, g.tensor)
        to_x = emit("where", (wins, g, zero_or_half), {}, g.tensor)
        loses = emit("gt" if op == "lt" else "lt", (x, y), {}, flags)
        to_y = emit("where", (loses, g, zero_or_half), {}, g.tensor)
        return (unbroadcast(emit, to_x, x) if wants(need, x) else None,
                unbroadcast(emit, to_y, y) if wants(need, y) else None)
    return rule


maximum = _extreme("gt")
minimum = _extreme("lt")


def where(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    cond, a, b = node.args
    return (None,
            unbroadcast(emit, emit("where", (cond, g, 0.0), {}, g.tensor), a)
            if wants(need, a) else None,
            unbroadcast(emit, emit("where", (cond, 0.0, g), {}, g.tensor), b)
            if wants(need, b) else None)


def cast(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    x = node.args[0]
    if not wants(need, x):
        return (None,)
    return (emit("cast", (g,), {"dtype": x.tensor.dtype}, meta(shape_of(x), x.tensor.dtype)),)


def zero(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """Comparisons, predicates, rounding, ``sign``: a zero derivative (as JAX has it)."""
    return tuple(None for _ in node.args)


# -- reductions -----------------------------------------------------------------------------------

def sum(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    x = node.args[0]
    if not wants(need, x):
        return (None,)
    back = broadcast_back(emit, g, shape_of(x), tuple(node.kwargs["axis"]),
                          node.kwargs["keepdims"])
    return (cast_to(emit, back, x),)


def mean(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    x = node.args[0]
    if not wants(need, x):
        return (None,)
    axes = tuple(node.kwargs["axis"])
    count = math.prod(shape_of(x)[a] for a in axes)
    back = broadcast_back(emit, g, shape_of(x), axes, node.kwargs["keepdims"])
    return (cast_to(emit, elem(emit, "truediv", back, float(count), like=back), x),)


def _extreme_reduction(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """``max``/``min`` over ``axis``: the cotangent split evenly among the elements equal to
    the result (JAX's rule)."""
    x = node.args[0]
    if not wants(need, x):
        return (None,)
    axes, shape, dtype = tuple(node.kwargs["axis"]), shape_of(x), x.tensor.dtype
    result = broadcast_back(emit, node, shape, axes, node.kwargs["keepdims"])
    chosen = emit("eq", (x, result), {}, meta(shape, "bool"))
    ones = emit("cast", (chosen,), {"dtype": dtype}, meta(shape, dtype))
    kept = tuple(1 if d in axes else n for d, n in enumerate(shape))
    count = emit("sum", (ones,), {"axis": axes, "keepdims": True, "dtype": dtype},
                 meta(kept, dtype))
    share = broadcast_back(emit, count, shape, axes, True)
    back = broadcast_back(emit, g, shape, axes, node.kwargs["keepdims"])
    return (emit("where", (chosen, elem(emit, "truediv", back, share, like=ones), 0.0), {},
                 meta(shape, dtype)),)


max = _extreme_reduction
min = _extreme_reduction


def var(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """``2 (x - mean) / (n - ddof)`` times the cotangent."""
    x = node.args[0]
    if not wants(need, x):
        return (None,)
    axes, shape, dtype = tuple(node.kwargs["axis"]), shape_of(x), x.tensor.dtype
    kept = tuple(1 if d in axes else n for d, n in enumerate(shape))
    centre = emit("mean", (x,), {"axis": axes, "keepdims": True, "dtype": dtype},
                  meta(kept, dtype))
    deviation = emit("sub", (x, broadcast_back(emit, centre, shape, axes, True)), {},
                     meta(shape, dtype))
    n = math.prod(shape[a] for a in axes) - node.kwargs["ddof"]
    back = broadcast_back(emit, g, shape, axes, node.kwargs["keepdims"])
    return (emit("mul", (back, emit("mul", (deviation, 2.0 / n), {}, meta(shape, dtype))), {},
                 meta(shape, dtype)),)


def std(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """The variance's rule with the cotangent ``g / (2 std)``."""
    half = elem(emit, "truediv", elem(emit, "mul", g, 0.5, like=g), node, like=g)
    return var(emit, node, half)


def cast_to(emit: Emit, g: Any, like: Any) -> Any:
    """``g`` in ``like``'s dtype (a cast where it differs)."""
    if g.tensor.dtype == like.tensor.dtype:
        return g
    return emit("cast", (g,), {"dtype": like.tensor.dtype}, meta(shape_of(like), like.tensor.dtype))


# -- data movement ------------------------------------------------------------------------------

def view(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """A view reads the operand's memory at ``offset + sum(i * strides)``: its transpose adds
    each element of the cotangent at that place (a scatter that sums, for broadcast views),
    into zeros laid out as the operand's memory, then read as the operand (its strides)."""
    x = node.args[0]
    if not wants(need, x):
        return (None,)
    shape, dtype = shape_of(x), x.tensor.dtype
    strides = tuple(x.tensor.strides)
    vshape, vstrides = tuple(node.kwargs["shape"]), tuple(node.kwargs["strides"])
    offset = node.kwargs["offset"]
    orders = _memory_orders(shape, strides, vshape, vstrides, offset)
    if orders is not None:  # a transpose, a reshape: g's axes in memory order, then x's
        vorder, xorder = orders
        gshape = tuple(vshape[d] for d in vorder)
        gstrides = tuple(g.tensor.strides[d] for d in vorder)
        permuted = emit("view", (g,), {"offset": 0, "shape": gshape, "strides": gstrides},
                        TensorMeta(gshape, g.tensor.dtype, gstrides))
        dense = tuple(shape[e] for e in xorder)
        flat = emit("reshape", (permuted,), {"shape": dense}, meta(dense, g.tensor.dtype))
        if xorder != list(range(len(shape))):
            back = contiguous_strides(dense)
            at = {e: k for k, e in enumerate(xorder)}
            xstrides = tuple(back[at[e]] for e in range(len(shape)))
            flat = emit("view", (flat,), {"offset": 0, "shape": shape, "strides": xstrides},
                        TensorMeta(shape, g.tensor.dtype, xstrides))
        return (cast_to(emit, flat, x),)
    # a view may run backwards (``np.flip``, ``x[::-1]``): its positions, offset plus a
    # negative ramp, still lie in the operand's memory; an operand laid out backwards is not
    # taken (its memory would start before its first element)
    if not shape or math.prod(shape) == 0 or any(s < 0 for s in strides):
        raise NotImplementedError("the transpose of a view of an operand with negative strides")
    extent = 1 + builtins.sum((n - 1) * s for n, s in zip(shape, strides))
    positions = None
    for d, (n, s) in enumerate(zip(vshape, vstrides)):
        ramp_shape = tuple(n if k == d else 1 for k in range(len(vshape)))
        ramp = emit("arange", (), {"start": 0, "step": s, "n": n, "dtype": "int64"},
                    meta((n,), "int64"))
        ramp = emit("view", (ramp,), {"offset": 0, "strides": contiguous_strides(ramp_shape),
                                      "shape": ramp_shape}, meta(ramp_shape, "int64"))
        positions = ramp if positions is None else emit(
            "add", (positions, ramp), {},
            meta(tuple(np.broadcast_shapes(shape_of(positions), ramp_shape)), "int64"))
    if positions is None:  # a 0-d view: one element
        positions = emit("full", (), {"shape": (), "value": offset, "dtype": "int64"},
                         meta((), "int64"))
    elif offset:
        positions = emit("add", (positions, offset), {}, meta(shape_of(positions), "int64"))
    if shape_of(positions) != vshape:
        positions = emit("view", (positions,), {
            "offset": 0, "shape": vshape, "strides": tuple(
                0 if m == 1 and n != 1 else st for m, n, st in zip(
                    shape_of(positions), vshape, contiguous_strides(shape_of(positions))))},
            meta(vshape, "int64"))
    flat = emit("full", (), {"shape": (extent,), "value": 0.0, "dtype": dtype},
                meta((extent,), dtype))
    summed = emit("scatter", (flat, positions, cast_to(emit, g, x)),
                  {"count": 1, "accumulate": True, "scalar": None}, meta((extent,), dtype))
    return (emit("view", (summed,), {"offset": 0, "strides": strides, "shape": shape},
                 TensorMeta(shape, dtype, strides)),)


def _memory_orders(shape: tuple[int, ...], strides: tuple[int, ...], vshape: tuple[int, ...],
                   vstrides: tuple[int, ...], offset: int) -> tuple[list[int], list[int]] | None:
    """The view's axes and x's axes, each in the order of memory, when both lay the same
    memory out densely (the view a bijection onto x's elements: a transpose, a reshape, a split
    or merge of axes, of any dense layout of x): read in those orders, both list the elements
    in memory order. Else None."""
    if offset or math.prod(vshape) != math.prod(shape) or \
            any(s < 0 for s in (*vstrides, *strides)):
        return None
    orders = []
    for extents, steps in ((vshape, vstrides), (shape, strides)):
        order = sorted((d for d, n in enumerate(extents) if n != 1), key=lambda d: -steps[d])
        expected = 1
        for d in reversed(order):
            if steps[d] != expected:
                return None
            expected *= extents[d]
        orders.append(order + [d for d, n in enumerate(extents) if n == 1])
    return orders[0], orders[1]


def reshape(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    x = node.args[0]
    if not wants(need, x):
        return (None,)
    return (emit("reshape", (g,), {"shape": shape_of(x)}, meta(shape_of(x), x.tensor.dtype)),)


# -- building arrays ----------------------------------------------------------------------------

def part(emit: Emit, g: Any, axis: int, start: int, length: int, drop: bool = False) -> Any:
    """Elements ``start .. start + length`` of ``g`` along ``axis`` (a view; ``drop``: the one
    element, without its axis)."""
    shape, strides = list(shape_of(g)), list(g.tensor.strides)
    offset = start * strides[axis]
    if drop:
        del shape[axis], strides[axis]
    else:
        shape[axis] = length
    return emit("view", (g,), {"offset": offset, "strides": tuple(strides), "shape": tuple(shape)},
                TensorMeta(tuple(shape), g.tensor.dtype, tuple(strides)))


def concatenate(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """Each operand's slice of the cotangent along the axis."""
    axis, out, at = node.kwargs["axis"], [], 0
    for x in node.args:
        length = shape_of(x)[axis]
        out.append(cast_to(emit, part(emit, g, axis, at, length), x) if wants(need, x)
                   else None)
        at += length
    return tuple(out)


def stack(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """Each operand's element of the cotangent along the new axis."""
    axis = node.kwargs["axis"]
    return tuple(cast_to(emit, part(emit, g, axis, k, 1, drop=True), x) if wants(need, x)
                 else None for k, x in enumerate(node.args))


def pad(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """The operand's region of the cotangent (the padding's constant has none)."""
    x = node.args[0]
    if not wants(need, x):
        return (None,)
    for axis, (before, _) in enumerate(node.kwargs["pad_width"]):
        g = part(emit, g, axis, before, shape_of(x)[axis])
    return (cast_to(emit, g, x),)


def take(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """``np.take(x, indices, axis)``: the cotangent added at each index (``np.add.at``: a
    repeated index sums), into zeros of x's shape. Along another axis than the first, the
    same scatter along the first axis of views with that axis moved first (x's and, for the
    cotangent, the index's axes), its result viewed back."""
    x, indices = node.args
    if not wants(need, x):
        return (None, None)
    axis, dtype = node.kwargs["axis"], x.tensor.dtype
    shape = shape_of(x)
    g = cast_to(emit, g, x)
    if axis:
        order = (axis, *range(axis), *range(axis + 1, len(shape)))
        taken = len(shape_of(indices))
        g = permuted(emit, g, (*range(axis, axis + taken), *range(axis),
                                *range(axis + taken, len(shape_of(g)))))
        shape = tuple(shape[d] for d in order)
    zeros = emit("full", (), {"shape": shape, "value": 0.0, "dtype": dtype}, meta(shape, dtype))
    summed = emit("scatter", (zeros, indices, g), {"count": 1, "accumulate": True,
                                                    "scalar": None}, meta(shape, dtype))
    if axis:  # back: the moved axis to its place
        summed = permuted(emit, summed, tuple(order.index(d) for d in range(len(shape))))
    return (summed, None)


def permuted(emit: Emit, v: Any, order: tuple[int, ...]) -> Any:
    """A view of ``v`` with its axes in ``order`` (``np.transpose(v, order)``)."""
    shape = tuple(shape_of(v)[d] for d in order)
    strides = tuple(v.tensor.strides[d] for d in order)
    return emit("view", (v,), {"offset": 0, "strides": strides, "shape": shape},
                TensorMeta(shape, v.tensor.dtype, strides))


def flipped(emit: Emit, v: Any, axis: int) -> Any:
    """``v`` reversed along ``axis``: a view with that stride negated."""
    shape, strides = shape_of(v), list(v.tensor.strides)
    offset = (shape[axis] - 1) * strides[axis]
    strides[axis] = -strides[axis]
    return emit("view", (v,), {"offset": offset, "strides": tuple(strides), "shape": shape},
                TensorMeta(shape, v.tensor.dtype, tuple(strides)))


def later_sums(emit: Emit, v: Any, axis: int) -> Any:
    """``sum(v[k] for k >= i)`` along ``axis``: a running sum of ``v`` reversed, reversed."""
    running = emit("cumsum", (flipped(emit, v, axis),), {"axis": axis, "dtype": v.tensor.dtype},
                   meta(shape_of(v), v.tensor.dtype))
    return flipped(emit, running, axis)


def cumsum(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """The cotangent summed from the end: ``flip(cumsum(flip(g)))`` along the axis."""
    x = node.args[0]
    if not wants(need, x):
        return (None,)
    return (cast_to(emit, later_sums(emit, g, node.kwargs["axis"]), x),)


def take_const(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """``x[[i, j, ...]]`` along the first axis: ``take``'s rule with the positions as an array."""
    x = node.args[0]
    if not wants(need, x):
        return (None,)
    parts = tuple(emit("full", (), {"shape": (), "value": int(i), "dtype": "int64"},
                       meta((), "int64")) for i in node.kwargs["indices"])
    positions = emit("stack", parts, {"axis": 0}, meta((len(parts),), "int64"))
    zeros = emit("full", (), {"shape": shape_of(x), "value": 0.0, "dtype": x.tensor.dtype},
                 meta(shape_of(x), x.tensor.dtype))
    return (emit("scatter", (zeros, positions, cast_to(emit, g, x)),
                 {"count": 1, "accumulate": True, "scalar": None},
                 meta(shape_of(x), x.tensor.dtype)),)
