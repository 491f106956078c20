"""Capture rules for Python operators on NumPy integer scalars (``stax.scalar.add``, ``sub``,
``mul``, ``neg``, ``abs``: ``x[i] * 4`` of an int32 array, ``out[i] = out[i - 1] + x[i]``).

NumPy computes them with its scalar math, which reports integer overflow (``overflow
encountered in scalar multiply``) where its array loops wrap silently (``stax.ir.ops.
SCALAR_OPERATORS``). Natively they are the wrapping op and a test of the exact result's range,
``decline_if``: a call where one overflows runs as NumPy, which warns, raises or wraps as its
error state says. The tests use no wider type than the operands' for 64-bit integers (a
quotient that must give the other factor back) and int64 for narrower ones.

Only where every NumPy scalar operand has the result's type (Python ints are NEP 50's weak
operands): for a mix of types (``np.uint8(1) + np.int8(1)``) NumPy defers to the array loop,
which does not check, and the operator stays NumPy's call."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Node
from .arguments import cast_to
from .context import LoweringContext, dense_meta
from .registry import NotNative, rule

WHY = "an operation on NumPy integer scalars overflows (NumPy's scalar math reports it)"


def _operands(node: Node, args: tuple[Any, ...]) -> tuple[str, list[Any]]:
    """The result's integer dtype and the operands: 0-d nodes of that dtype and Python ints."""
    meta = node.tensor
    if meta is None or meta.ndim or np.dtype(meta.dtype).kind not in "iu":
        raise NotNative
    for a in args:
        if isinstance(a, Node):
            if a.tensor is None or a.tensor.ndim or a.tensor.dtype != meta.dtype:
                raise NotNative
        elif type(a) is not int:  # a NumPy scalar constant, a bool: NumPy's call
            raise NotNative
    return meta.dtype, list(args)


@rule("stax.scalar.add", "stax.scalar.sub", "stax.scalar.mul", "stax.scalar.neg",
      "stax.scalar.abs", emits=("add", "sub", "mul", "neg", "abs", "cast", "bitwise_xor",
                                "bitwise_and", "lt", "gt", "eq", "ne", "logical_or",
                                "logical_and", "floordiv", "where", "full", "decline_if"))
def _scalar_integer(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Node:
    if kwargs:
        raise NotNative
    dtype, operands = _operands(node, args)
    op = node.target.rsplit(".", 1)[1]
    info = np.iinfo(dtype)
    signed = info.min < 0
    if op == "abs" and not signed:
        raise NotNative  # the value itself: NumPy's call is as cheap

    def emit(name: str, *xs: Any, out: str = dtype) -> Node:
        return ctx.emit(name, tuple(xs), meta=dense_meta((), out))

    def nodes(*xs: Any) -> list[Node]:  # Python ints as 0-d values, so every test has nodes
        return [x if isinstance(x, Node) else ctx.emit(
            "full", (), {"shape": (), "value": x, "dtype": dtype}, meta=dense_meta((), dtype)) for x in xs]
    if op in ("neg", "abs"):
        (a,) = nodes(*operands)
        result = emit(op, a)
        overflow = emit("eq", a, int(info.min), out="bool") if signed else \
            emit("ne", a, 0, out="bool")
    elif op in ("add", "sub"):
        a, b = nodes(*operands)
        result = emit(op, a, b)
        if signed:  # the sign of the wrapped result is neither operand's (add) / a's (sub)
            same = emit("bitwise_xor", a, result) if op == "add" else emit("bitwise_xor", a, b)
            other = emit("bitwise_xor", b, result) if op == "add" else \
                emit("bitwise_xor", a, result)
            overflow = emit("lt", emit("bitwise_and", same, other), 0, out="bool")
        else:
            overflow = emit("lt", result, a, out="bool") if op == "add" else \
                emit("lt", a, b, out="bool")
    else:  # mul
        a, b = nodes(*operands)
        if np.dtype(dtype).itemsize <= 4:  # exact in int64
            wide = [cast_to(ctx, v, "int64") for v in (a, b)]
            product = emit("mul", *wide, out="int64")
            overflow = emit("logical_or", emit("lt", product, int(info.min), out="bool"),
                            emit("gt", product, int(info.max), out="bool"), out="bool")
            result = ctx.emit("cast", (product,), {"dtype": dtype}, meta=dense_meta((), dtype))
        else:  # the wrapped product divided by a gives b back unless it overflowed
            result = emit("mul", a, b)
            trivial = emit("eq", a, 0, out="bool")
            if signed:
                trivial = emit("logical_or", trivial, emit("eq", a, -1, out="bool"), out="bool")
            divisor = emit("where", trivial, 1, a)
            overflow = emit("logical_and", emit("eq", trivial, False, out="bool"),
                            emit("ne", emit("floordiv", result, divisor), b, out="bool"),
                            out="bool")
            if signed:  # -1 * MIN
                minus_one = emit("eq", a, -1, out="bool")
                overflow = emit("logical_or", overflow, emit(
                    "logical_and", minus_one, emit("eq", b, int(info.min), out="bool"),
                    out="bool"), out="bool")
    return ctx.emit("decline_if", (result, overflow), {"why": WHY}, meta=node.tensor)
