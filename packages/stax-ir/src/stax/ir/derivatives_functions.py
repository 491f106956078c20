"""Reverse-mode rules of the float functions beyond ``derivatives.py``'s first set (issue 16's
"the float functions"): inverse trigonometric and hyperbolic functions, ``tan``, ``cbrt``,
``exp2``, the two-argument functions (``hypot``, ``arctan2``, ``logaddexp``, ``logaddexp2``,
``copysign``, ``fmax``/``fmin``, ``remainder``, ``nextafter``) and the product reduction.

Written as ``derivatives.py``'s rules are (``emit``, ``node``, cotangent ``g``, ``need``).
Where a function is not differentiable the rule gives JAX's value: ``fmax``/``fmin`` split the
cotangent at a tie as ``maximum`` does; ``copysign(x, y)`` has derivative ``±1`` in ``x`` (the
sign it applies) and 0 in ``y``; ``remainder(x, y) = x - floor(x / y) * y`` has derivatives 1
and ``-floor(x / y)``; ``nextafter(x, y)`` has derivative 1 in ``x``."""

from __future__ import annotations

import math
from typing import Any

from .derivatives import (
    Emit,
    Need,
    broadcast_back,
    elem,
    flipped,
    later_sums,
    meta,
    part,
    shape_of,
    unary,
    unbroadcast,
    wants,
)
from .meta import TensorMeta
from .meta import contiguous_strides as contiguous

#: a partial derivative that is 1: the operand's cotangent is the result's
ONE = "one"


def _x(node: Any) -> Any:
    return node.args[0]


def _one_minus_square(emit: Emit, x: Any, like: Any) -> Any:
    return elem(emit, "sub", 1.0, elem(emit, "mul", x, x, like=like), like=like)


tan = unary(lambda emit, node, g: elem(emit, "add", 1.0, elem(emit, "mul", node, node, like=g),
                                       like=g))
arcsin = unary(lambda emit, node, g: elem(emit, "reciprocal", elem(
    emit, "sqrt", _one_minus_square(emit, _x(node), g), like=g), like=g))
arccos = unary(lambda emit, node, g: elem(emit, "neg", elem(emit, "reciprocal", elem(
    emit, "sqrt", _one_minus_square(emit, _x(node), g), like=g), like=g), like=g))
arctanh = unary(lambda emit, node, g: elem(emit, "reciprocal", _one_minus_square(
    emit, _x(node), g), like=g))
arcsinh = unary(lambda emit, node, g: elem(emit, "reciprocal", elem(emit, "sqrt", elem(
    emit, "add", elem(emit, "mul", _x(node), _x(node), like=g), 1.0, like=g), like=g), like=g))
# 1 / sqrt(x^2 - 1) as 1 / (sqrt(x - 1) sqrt(x + 1)): no cancellation in x^2 near 1
arccosh = unary(lambda emit, node, g: elem(emit, "reciprocal", elem(
    emit, "mul", elem(emit, "sqrt", elem(emit, "sub", _x(node), 1.0, like=g), like=g),
    elem(emit, "sqrt", elem(emit, "add", _x(node), 1.0, like=g), like=g), like=g), like=g))
cbrt = unary(lambda emit, node, g: elem(emit, "reciprocal", elem(
    emit, "mul", elem(emit, "mul", node, node, like=g), 3.0, like=g), like=g))
exp2 = unary(lambda emit, node, g: elem(emit, "mul", node, math.log(2.0), like=g))


def _binary(dx: Any, dy: Any) -> Any:
    """The rule of ``z = f(x, y)`` from its partial derivatives ``dx(emit, node, like)`` and
    ``dy`` (None: zero; ``ONE``: one), each times the cotangent and summed over broadcast
    axes."""
    def rule(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
        x, y = node.args
        out = []
        for operand, partial in ((x, dx), (y, dy)):
            if partial is None or not wants(need, operand):
                out.append(None)
            elif partial == ONE:
                out.append(unbroadcast(emit, g, operand))
            else:
                out.append(unbroadcast(emit, elem(emit, "mul", g, partial(emit, node, g), like=g),
                                       operand))
        return tuple(out)
    return rule


def _args(node: Any) -> tuple[Any, Any]:
    x, y = node.args
    return x, y


hypot = _binary(lambda emit, node, g: elem(emit, "truediv", _args(node)[0], node, like=g),
                lambda emit, node, g: elem(emit, "truediv", _args(node)[1], node, like=g))


def _squares(emit: Emit, node: Any, g: Any) -> Any:
    x, y = _args(node)
    return elem(emit, "add", elem(emit, "mul", x, x, like=g), elem(emit, "mul", y, y, like=g), like=g)


# arctan2(x, y) = atan(x / y) in the right quadrant: y / (x^2 + y^2) and -x / (x^2 + y^2)
arctan2 = _binary(lambda emit, node, g: elem(emit, "truediv", _args(node)[1],
                                             _squares(emit, node, g), like=g),
                  lambda emit, node, g: elem(emit, "neg", elem(emit, "truediv", _args(node)[0],
                                                               _squares(emit, node, g), like=g),
                                             like=g))
# log(e^x + e^y): e^(x - z) and e^(y - z), each at most 1 (no overflow)
logaddexp = _binary(
    lambda emit, node, g: elem(emit, "exp", elem(emit, "sub", _args(node)[0], node, like=g), like=g),
    lambda emit, node, g: elem(emit, "exp", elem(emit, "sub", _args(node)[1], node, like=g), like=g))
logaddexp2 = _binary(
    lambda emit, node, g: elem(emit, "exp2", elem(emit, "sub", _args(node)[0], node, like=g), like=g),
    lambda emit, node, g: elem(emit, "exp2", elem(emit, "sub", _args(node)[1], node, like=g), like=g))
# copysign(x, y) = ±x: the sign it applies to x, copysign(1, x) * copysign(1, y)
copysign = _binary(lambda emit, node, g: elem(
    emit, "mul", elem(emit, "copysign", 1.0, _args(node)[0], like=g),
    elem(emit, "copysign", 1.0, _args(node)[1], like=g), like=g), None)
nextafter = _binary(ONE, None)
mod = _binary(ONE,
              lambda emit, node, g: elem(emit, "neg", elem(emit, "floor", elem(
                  emit, "truediv", _args(node)[0], _args(node)[1], like=g), like=g), like=g))


def _chosen(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """``fmax``/``fmin``: the cotangent to the operand equal to the result (the number, where
    the other is NaN), half to each on a tie."""
    x, y = node.args
    flags = meta(shape_of(node), "bool")
    tie = emit("eq", (x, y), {}, flags)
    half = emit("where", (tie, elem(emit, "mul", g, 0.5, like=g), g), {}, g.tensor)
    out = []
    for operand in (x, y):
        if not wants(need, operand):
            out.append(None)
            continue
        picked = emit("eq", (operand, node), {}, flags)
        out.append(unbroadcast(emit, emit("where", (picked, half, 0.0), {}, g.tensor), operand))
    return tuple(out)


fmax = _chosen
fmin = _chosen


def prod(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """The product over ``axis``: each element's cotangent is ``g`` times the product of the
    others, taken one reduced axis at a time as the product of the elements before it and of
    those after it (running products, no division: zeros are exact)."""
    x = node.args[0]
    if not wants(need, x):
        return (None,)
    axes, dtype = tuple(sorted(node.kwargs["axis"])), node.tensor.dtype
    shape = shape_of(x)
    partials = [x if x.tensor.dtype == dtype else
                emit("cast", (x,), {"dtype": dtype}, meta(shape, dtype))]
    for a in axes:  # the product one axis at a time, kept dims: x, p1, p2, ...
        here = shape_of(partials[-1])
        kept = tuple(1 if d == a else n for d, n in enumerate(here))
        partials.append(emit("prod", (partials[-1],), {"axis": (a,), "keepdims": True,
                                                       "dtype": dtype}, meta(kept, dtype)))
    reduced = tuple(1 if d in axes else n for d, n in enumerate(shape))
    back = g if node.kwargs["keepdims"] else emit(
        "reshape", (g,), {"shape": reduced}, meta(reduced, g.tensor.dtype))
    for a, value in zip(reversed(axes), reversed(partials[:-1])):
        back = _others(emit, value, a, broadcast_back(emit, back, shape_of(value), (a,), True))
    if x.tensor.dtype != dtype:
        back = emit("cast", (back,), {"dtype": x.tensor.dtype}, meta(shape, x.tensor.dtype))
    return (back,)


def _others(emit: Emit, x: Any, axis: int, g: Any) -> Any:
    """``g`` times, at each element of ``x``, the product of the other elements along ``axis``:
    the running product of those before it times that of those after it."""
    shape, dtype = shape_of(x), x.tensor.dtype
    n = shape[axis]
    one = tuple(1 if d == axis else m for d, m in enumerate(shape))
    ones = emit("full", (), {"shape": one, "value": 1.0, "dtype": dtype}, meta(one, dtype))
    before = emit("cumprod", (x,), {"axis": axis, "dtype": dtype}, meta(shape, dtype))
    after = emit("cumprod", (flipped(emit, x, axis),), {"axis": axis, "dtype": dtype},
                 meta(shape, dtype))
    if n > 1:
        before = emit("concatenate", (ones, part(emit, before, axis, 0, n - 1)),
                      {"axis": axis}, meta(shape, dtype))
        after = emit("concatenate", (ones, part(emit, after, axis, 0, n - 1)),
                     {"axis": axis}, meta(shape, dtype))
    else:
        before = after = emit("full", (), {"shape": shape, "value": 1.0, "dtype": dtype},
                              meta(shape, dtype))
    others = elem(emit, "mul", before, flipped(emit, after, axis), like=x)
    return elem(emit, "mul", g, others, like=x)


def roll(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """``np.roll`` by ``shift``: its transpose rolls back by ``-shift``."""
    if not wants(need, _x(node)):
        return (None,)
    shift = node.kwargs["shift"]
    back = tuple(-s for s in shift) if isinstance(shift, tuple | list) else -shift
    return (emit("roll", (g,), {"shift": back, "axis": node.kwargs["axis"]}, g.tensor),)


def _triangle(op: str) -> Any:
    """``np.tril``/``np.triu``: the same triangle of the cotangent (the rest is zeroed)."""
    def rule(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
        if not wants(need, _x(node)):
            return (None,)
        return (emit(op, (g,), {"k": node.kwargs["k"]}, g.tensor),)
    return rule


tril = _triangle("tril")
triu = _triangle("triu")


def setitem(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """``x[key] = value``: ``x``'s cotangent is ``g`` with the region zeroed, the value's the
    region of ``g`` (summed over the axes the value was broadcast along)."""
    x, *value = node.args
    key = node.kwargs["key"]
    gx = emit("setitem", (g,), {"key": key, "scalar": 0.0}, g.tensor) if wants(need, x) \
        else None
    if not value:
        return (gx,)
    v = value[0]
    return gx, unbroadcast(emit, _region(emit, g, key), v) if wants(need, v) else None


def _region(emit: Emit, g: Any, key: Any) -> Any:
    """``g[key]`` (``key`` per leading axis: ``('slice', start, stop, step)`` or
    ``('int', k)``) as a view."""
    shape, strides = shape_of(g), tuple(g.tensor.strides)
    offset, out_shape, out_strides = 0, [], []
    for d, (n, s) in enumerate(zip(shape, strides)):
        entry = key[d] if d < len(key) else ("slice", 0, n, 1)
        if entry[0] == "int":
            offset += (entry[1] % n) * s
            continue
        _, start, stop, step = entry
        offset += start * s
        out_shape.append(len(range(start, stop, step)))
        out_strides.append(s * step)
    region = tuple(out_shape)
    return emit("view", (g,), {"offset": offset, "strides": tuple(out_strides),
                               "shape": region},
                TensorMeta(region, g.tensor.dtype, tuple(out_strides)))


def einsum(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """``np.einsum`` with explicit output subscripts: each operand's cotangent is an einsum of
    ``g`` and the other operands onto its subscripts, broadcast along the letters only it has
    (each summed over by the product). Not taken: the implicit form, ``...``, a letter repeated
    in one operand (a diagonal)."""
    spec, *operands = node.args
    if not isinstance(spec, str) or "->" not in spec or "." in spec or \
            node.kwargs.get("call_kwargs"):
        raise NotImplementedError("np.einsum without explicit output subscripts")
    inputs, output = spec.replace(" ", "").split("->")
    subscripts = inputs.split(",")
    if any(len(set(s)) != len(s) for s in subscripts):
        raise NotImplementedError("np.einsum of a diagonal (a letter repeated in one operand)")
    cotangents: list[Any] = [None]
    for k, (operand, letters) in enumerate(zip(operands, subscripts)):
        if not wants(need, operand):
            cotangents.append(None)
            continue
        others = [(o, s) for j, (o, s) in enumerate(zip(operands, subscripts)) if j != k]
        seen = set(output).union(*(set(s) for _, s in others))
        kept = "".join(c for c in letters if c in seen)
        shape = shape_of(operand)
        kept_shape = tuple(n for c, n in zip(letters, shape) if c in seen)
        dtype = node.tensor.dtype
        product = emit("extern", (f"{','.join([output, *(s for _, s in others)])}->{kept}", g,
                                  *(o for o, _ in others)),
                       # C order: NumPy's default ("K") follows the operands' layouts
                       {"fn": "numpy.einsum", "method": False, "call_kwargs": {"order": "C"}},
                       meta(kept_shape, dtype))
        if kept != letters:  # broadcast along the letters only this operand has
            dense = iter(contiguous(kept_shape))
            strides = tuple(next(dense) if c in seen else 0 for c in letters)
            product = emit("view", (product,), {"offset": 0, "strides": strides, "shape": shape},
                           TensorMeta(shape, dtype, strides))
        if dtype != operand.tensor.dtype:
            product = emit("cast", (product,), {"dtype": operand.tensor.dtype},
                           meta(shape, operand.tensor.dtype))
        cotangents.append(product)
    return tuple(cotangents)


def cumprod(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """The running product ``y`` along ``axis``: ``gx[i] = sum(g[k] y[k] for k >= i) / x[i]``
    before the first zero, where no ``x`` is zero; at the first zero the same sum of the running
    product taken with that zero read as 1 (each later ``y[k]`` holds every factor but it);
    after it 0 (each later term holds that zero). No division by a zero: NumPy's answer at
    zeros, and no floating-point event."""
    x = _x(node)
    if not wants(need, x):
        return (None,)
    axis, dtype = node.kwargs["axis"], node.tensor.dtype
    shape = shape_of(x)
    flags = meta(shape, "bool")
    value = x if x.tensor.dtype == dtype else emit("cast", (x,), {"dtype": dtype},
                                                   meta(shape, dtype))
    zero = emit("eq", (value, 0.0), {}, flags)
    zeros_so_far = emit("cumsum", (emit("cast", (zero,), {"dtype": dtype}, meta(shape, dtype)),),
                        {"axis": axis, "dtype": dtype}, meta(shape, dtype))
    before = emit("eq", (zeros_so_far, 0.0), {}, flags)
    first = emit("logical_and", (zero, emit("eq", (zeros_so_far, 1.0), {}, flags)), {}, flags)
    safe = emit("where", (zero, 1.0, value), {}, meta(shape, dtype))
    skipped = emit("cumprod", (emit("where", (first, 1.0, value), {}, meta(shape, dtype)),),
                   {"axis": axis, "dtype": dtype}, meta(shape, dtype))
    before_zero = elem(emit, "truediv", later_sums(emit, elem(emit, "mul", g, node, like=g), axis),
                     safe, like=g)
    at_zero = later_sums(emit, elem(emit, "mul", g, skipped, like=g), axis)
    back = emit("where", (before, before_zero, emit("where", (first, at_zero, 0.0), {}, g.tensor)),
                {}, g.tensor)
    if dtype != x.tensor.dtype:
        back = emit("cast", (back,), {"dtype": x.tensor.dtype}, meta(shape, x.tensor.dtype))
    return (back,)


def getitem(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """``x[key]`` run as NumPy's (an operand of another NumPy step) with a basic key (integers
    and slices of step 1 or -1): the cotangent written into that region of zeros
    (``setitem``)."""
    x, key = node.args
    if not wants(need, x):
        return (None, None)
    shape, dtype = shape_of(x), x.tensor.dtype
    parts = key if isinstance(key, tuple) else (key,)
    region = []
    for entry, n in zip(parts, shape):
        if isinstance(entry, int) and not isinstance(entry, bool):
            region.append(("int", entry % n))
        elif isinstance(entry, slice) and entry.step in (None, 1, -1):
            region.append(("slice", *entry.indices(n)))
        else:
            raise NotImplementedError(f"the NumPy step operator.getitem with the key {key!r}")
    if len(parts) > len(shape):
        raise NotImplementedError(f"the NumPy step operator.getitem with the key {key!r}")
    region += [("slice", 0, n, 1) for n in shape[len(parts):]]  # every axis named
    zeros = emit("full", (), {"shape": shape, "value": 0.0, "dtype": dtype}, meta(shape, dtype))
    value = g if g.tensor.dtype == dtype else emit("cast", (g,), {"dtype": dtype},
                                                   meta(shape_of(g), dtype))
    return (emit("setitem", (zeros, value), {"key": tuple(region), "scalar": None},
                 meta(shape, dtype)), None)


def layer_norm(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """``nn.layer_norm(x, shape, w, b)`` over its last ``normalized_ndim`` axes, with ``xhat =
    (x - mean) / sqrt(var + eps)``: ``b`` gets ``g`` summed over the other axes, ``w`` ``g *
    xhat`` so summed, and ``x`` ``(gh - mean(gh) - xhat * mean(gh * xhat)) / sqrt(var + eps)``
    with ``gh = g * w`` (means over the normalized axes); the statistics computed again."""
    x, w, b = node.args
    n, eps = node.kwargs["normalized_ndim"], node.kwargs["eps"]
    shape, dtype = shape_of(x), x.tensor.dtype
    axes = tuple(range(len(shape) - n, len(shape)))
    kept = tuple(1 if d in axes else s for d, s in enumerate(shape))

    def mean(v: Any) -> Any:
        return emit("mean", (v,), {"axis": axes, "keepdims": True, "dtype": dtype},
                    meta(kept, dtype))
    like = emit("cast", (x,), {"dtype": dtype}, meta(shape, dtype)) if x.tensor.dtype != dtype \
        else x
    centered = elem(emit, "sub", like, mean(like), like=like)
    spread = mean(elem(emit, "mul", centered, centered, like=like))
    rstd = elem(emit, "truediv", 1.0, elem(emit, "sqrt", elem(emit, "add", spread, float(eps),
                                                              like=spread), like=spread),
                like=spread)
    xhat = elem(emit, "mul", centered, rstd, like=like)
    gw = unbroadcast(emit, elem(emit, "mul", g, xhat, like=g), w) if wants(need, w) else None
    gb = unbroadcast(emit, g, b) if wants(need, b) else None
    gx = None
    if wants(need, x):
        gh = elem(emit, "mul", g, w, like=g) if hasattr(w, "tensor") or \
            isinstance(w, (int, float)) else g
        inner = elem(emit, "sub", elem(emit, "sub", gh, mean(gh), like=gh),
                     elem(emit, "mul", xhat, mean(elem(emit, "mul", gh, xhat, like=gh)),
                          like=gh), like=gh)
        gx = unbroadcast(emit, elem(emit, "mul", inner, rstd, like=gh), x)
    return gx, gw, gb
