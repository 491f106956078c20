"""Loop lowerings of NumPy's exact element-wise functions on bits, truth values, predicates and
signs: bitwise and/or/xor/invert and shifts on integers (logical on bool), logical_*, isnan/isinf/
isfinite/signbit, sign, copysign, fmax/fmin, heaviside, positive, reciprocal (floats).

Most are compositions of existing expressions (a comparison, a select); ``xor``, the shifts,
``copysign`` and ``signbit`` are loop-IR operators. Each rule checks the dtypes it was written for
and leaves any other form to NumPy as an extern step — never a different result.
"""

from __future__ import annotations

import numpy as np

from stax.ir import Node

from .expr import Binary, Const, Expr, Select, Unary
from .index import Affine
from .lowering import LOWERINGS, Lazy, LoopLowering, Rule, _op_as_extern

_BITWISE = {"bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor",
            "left_shift": "shl", "right_shift": "shr"}


def _kind(dtype: str) -> str:
    return np.dtype(dtype).kind


def _operand_dtype(node: Node, k: int) -> str:
    value = node.args[k]
    return value.tensor.dtype if isinstance(value, Node) else node.tensor.dtype


def _bitwise(op: str) -> Rule:
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        kind = _kind(meta.dtype)
        if kind not in "iub" or (kind == "b" and op in ("left_shift", "right_shift")):
            return _op_as_extern(ctx, node)
        a = ctx.operand(node.args[0], meta.shape, meta.dtype)
        b = ctx.operand(node.args[1], meta.shape, meta.dtype)
        return Lazy(meta.shape, meta.dtype, lambda i: Binary(_BITWISE[op], a(i), b(i), meta.dtype))
    return lower


def _invert(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    kind = _kind(meta.dtype)
    if kind not in "iub":
        return _op_as_extern(ctx, node)
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    ones = Const(True if kind == "b" else (-1 if kind == "i" else int(np.iinfo(meta.dtype).max)),
                 meta.dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: Binary("xor", x(i), ones, meta.dtype))


def _logical(op: str) -> Rule:
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        operands = [ctx.operand(a, meta.shape, "bool") for a in node.args]  # x != 0, NaN is true
        if op == "logical_not":
            (x,) = operands
            return Lazy(meta.shape, "bool", lambda i: Binary("xor", x(i), Const(True, "bool"),
                                                              "bool"))
        name = {"logical_and": "and", "logical_or": "or", "logical_xor": "xor"}[op]
        a, b = operands
        return Lazy(meta.shape, "bool", lambda i: Binary(name, a(i), b(i), "bool"))
    return lower


def _predicate(op: str) -> Rule:
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        dtype = _operand_dtype(node, 0)
        if _kind(dtype) != "f":
            if _kind(dtype) not in "iub":
                return _op_as_extern(ctx, node)
            answer = Const(op == "isfinite", "bool")  # integers: finite, never NaN/Inf/negative zero
            if op == "signbit" and _kind(dtype) == "i":
                x = ctx.operand(node.args[0], meta.shape, dtype)
                return Lazy(meta.shape, "bool",
                            lambda i: Binary("lt", x(i), Const(0, dtype), "bool"))
            return Lazy(meta.shape, "bool", lambda i: answer)
        x = ctx.operand(node.args[0], meta.shape, dtype)
        inf = Const(float("inf"), dtype)

        def value(i: tuple[Affine, ...]) -> Expr:
            v = x(i)
            if op == "isnan":
                return Binary("ne", v, v, "bool")
            if op == "signbit":
                return Unary("signbit", v, "bool")
            magnitude = Unary("abs", v, dtype)
            return Binary("eq" if op == "isinf" else "lt", magnitude, inf, "bool")
        return Lazy(meta.shape, "bool", value)
    return lower


def _sign(ctx: LoopLowering, node: Node) -> Lazy:
    """1, -1 or 0 (+0.0 for either zero), NaN for NaN: the comparisons decide, the NaN falls
    through to itself."""
    meta = node.tensor
    if _kind(meta.dtype) not in "iuf":
        return _op_as_extern(ctx, node)
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    one, minus, zero = (Const(v, meta.dtype) for v in (1, -1 if _kind(meta.dtype) != "u" else 0, 0))

    def value(i: tuple[Affine, ...]) -> Expr:
        v = x(i)
        rest = Select(Binary("eq", v, zero, "bool"), zero, v, meta.dtype)
        rest = Select(Binary("lt", v, zero, "bool"), minus, rest, meta.dtype)
        return Select(Binary("gt", v, zero, "bool"), one, rest, meta.dtype)
    return Lazy(meta.shape, meta.dtype, value)


def _float_binary(op: str) -> Rule:
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        if _kind(meta.dtype) != "f":
            return _op_as_extern(ctx, node)
        a = ctx.operand(node.args[0], meta.shape, meta.dtype)
        b = ctx.operand(node.args[1], meta.shape, meta.dtype)
        dtype = meta.dtype

        def value(i: tuple[Affine, ...]) -> Expr:
            x, y = a(i), b(i)
            if op == "copysign":
                return Binary("copysign", x, y, dtype)
            if op in ("fmax", "fmin"):
                # NaN ignored; y on a tie, as NumPy's vector loops (its scalar loop for short
                # arrays keeps x: NumPy itself differs on fmax(-0.0, 0.0) by array length)
                keep = Binary("gt" if op == "fmax" else "lt", x, y, "bool")
                keep = Binary("or", keep, Binary("ne", y, y, "bool"), "bool")
                return Select(keep, x, y, dtype)
            zero = Const(0.0, dtype)  # heaviside(x, h): 0 below zero, h at either zero, 1 above
            at_zero = Select(Binary("eq", x, zero, "bool"), y, x, dtype)
            below = Select(Binary("lt", x, zero, "bool"), zero, at_zero, dtype)
            return Select(Binary("gt", x, zero, "bool"), Const(1.0, dtype), below, dtype)
        return Lazy(meta.shape, dtype, value)
    return lower


def _positive(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    if _kind(meta.dtype) not in "iuf":
        return _op_as_extern(ctx, node)
    return Lazy(meta.shape, meta.dtype, ctx.operand(node.args[0], meta.shape, meta.dtype))


def _reciprocal(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    if _kind(meta.dtype) != "f":  # NumPy's integer reciprocal is C division: left to NumPy
        return _op_as_extern(ctx, node)
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    one = Const(1.0, meta.dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: Binary("truediv", one, x(i), meta.dtype))


for _op in _BITWISE:
    LOWERINGS[_op] = _bitwise(_op)
LOWERINGS["invert"] = _invert
for _op in ("logical_and", "logical_or", "logical_xor", "logical_not"):
    LOWERINGS[_op] = _logical(_op)
for _op in ("isnan", "isinf", "isfinite", "signbit"):
    LOWERINGS[_op] = _predicate(_op)
LOWERINGS["sign"] = _sign
for _op in ("copysign", "fmax", "fmin", "heaviside"):
    LOWERINGS[_op] = _float_binary(_op)
LOWERINGS["positive"] = _positive


def _bitwise_count(ctx: LoopLowering, node: Node) -> Lazy:
    """NumPy counts the set bits of |x| (so -1 counts one), as uint8."""
    meta = node.tensor
    dtype = _operand_dtype(node, 0)
    if _kind(dtype) not in "iu":
        return _op_as_extern(ctx, node)
    x = ctx.operand(node.args[0], meta.shape, dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: Unary("popcount", x(i), meta.dtype))


def _ldexp(ctx: LoopLowering, node: Node) -> Lazy:
    """x * 2**n rounded once, as C's ldexp/ldexpf (float32: exact in double with the exponent
    clamped to +-300, past which float32 can only overflow or vanish; float64: by the bits)."""
    meta = node.tensor
    exponent = node.args[1]
    integral = isinstance(exponent, (int, np.integer)) and not isinstance(exponent, bool) if \
        not isinstance(exponent, Node) else _kind(exponent.tensor.dtype) in "iu"
    if meta.dtype not in ("float32", "float64") or not integral:
        return _op_as_extern(ctx, node)
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    n = ctx.operand(node.args[1], meta.shape, "int64")
    return Lazy(meta.shape, meta.dtype, lambda i: Binary("ldexp", x(i), n(i), meta.dtype))


LOWERINGS["bitwise_count"] = _bitwise_count
LOWERINGS["ldexp"] = _ldexp
LOWERINGS["reciprocal"] = _reciprocal
