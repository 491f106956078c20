"""Loop lowerings of the arithmetic element-wise ops: binary and unary arithmetic, comparisons,
negation, ``where`` and casts — each one loop-IR operator over its operands' loaders, except
NumPy's float // and %, which are composed from an exact fmod with a check."""

from __future__ import annotations

from typing import Any

import numpy as np

from stax.ir import Node, TensorMeta

from .context import Lazy, Loader, LoopLowering
from .expr import Binary, Const, Expr, Select, Unary
from .externs import extern_call, op_as_extern
from .index import Affine
from .options import TRIG_REDUCTION_LIMIT
from .registry import lowers

#: On bool, NumPy's add/mul/maximum/minimum are logical or/and.
BOOL_FORMS = {"add": "or", "mul": "and", "maximum": "or", "minimum": "and"}


def _float_divmod(ctx: LoopLowering, op: str, meta: TensorMeta, a: Loader, b: Loader,
                  limit: float) -> Lazy:
    """NumPy's float floor division and remainder (npy_divmod: from the exact fmod, the
    remainder takes the divisor's sign, the quotient is snapped to an integer). fmod is exact
    here for quotients below ``limit`` (``LoopOptions.fmod_exact_quotient``); a check buffer
    flags larger ones, and such a call runs eagerly."""
    dtype = meta.dtype
    bound = Const(limit, dtype)

    def too_large(i: tuple[Affine, ...]) -> Expr:
        # an infinite quotient counts too when it only overflowed (a finite dividend over a
        # tiny divisor: 1 % 5e-324 is 0.0, not -inf); an infinite dividend or a zero divisor
        # give NumPy's NaN in the kernel
        quotient = Unary("abs", Binary("truediv", a(i), b(i), dtype), dtype)
        inf = Const(float("inf"), dtype)
        return Binary("and", Binary("ge", quotient, bound, "bool"),
                      Binary("and", Binary("lt", Unary("abs", a(i), dtype), inf, "bool"),
                             Binary("ne", b(i), Const(0.0, dtype), "bool"), "bool"), "bool")
    check = ctx.reduce_values(too_large, meta.shape, tuple(range(len(meta.shape))), False, "max",
                              "bool")
    ctx.checks[check.buffer] = "a quotient is too large for an exact fmod"
    name = "py_floordiv" if op == "floordiv" else "py_mod"
    return Lazy(meta.shape, dtype, lambda i: Binary(name, a(i), b(i), dtype))


@lowers("add", "sub", "mul", "truediv", "maximum", "minimum", "floordiv", "mod", "hypot", "pow",
        "arctan2", "logaddexp", "logaddexp2")
def lower_binary(ctx: LoopLowering, node: Node) -> Lazy:
    op, meta = node.target, node.tensor
    a = ctx.operand(node.args[0], meta.shape, meta.dtype)
    b = ctx.operand(node.args[1], meta.shape, meta.dtype)
    if op in ("floordiv", "mod") and np.dtype(meta.dtype).kind == "f":
        limit = ctx.options.fmod_exact_quotient.get(meta.dtype)
        if limit is None:
            return op_as_extern(ctx, node)
        return _float_divmod(ctx, op, meta, a, b, limit)
    if op in ("floordiv", "mod") and np.dtype(meta.dtype).kind not in "iu":
        return op_as_extern(ctx, node)
    if op == "pow" and np.dtype(meta.dtype).kind != "f":
        # integer powers (NumPy's repeated squaring, its error on negative exponents): NumPy's
        return op_as_extern(ctx, node)
    name = BOOL_FORMS.get(op, op) if meta.dtype == "bool" else op
    if meta.dtype == "bool" and name == op:
        raise ctx.unsupported(f"{op} on bool")
    return Lazy(meta.shape, meta.dtype, lambda i: Binary(name, a(i), b(i), meta.dtype))


@lowers("lt", "le", "gt", "ge", "eq", "ne")
def lower_comparison(ctx: LoopLowering, node: Node) -> Lazy:
    """Comparisons compute in the operands' common dtype (NEP 50: a Python scalar takes the
    array's dtype) and produce bool."""
    op, meta = node.target, node.tensor
    operands = node.args
    common = np.result_type(*(v.tensor.np_dtype if isinstance(v, Node) else v
                              for v in operands)).name
    if not ctx.native(common):
        raise ctx.unsupported(f"comparison in dtype {common}")
    for value in operands:
        if isinstance(value, int) and not isinstance(value, bool) and not _fits(value, common):
            raise ctx.unsupported(f"comparison with the Python int {value}, which {common} "
                                  "cannot hold")
    a = ctx.operand(operands[0], meta.shape, common)
    b = ctx.operand(operands[1], meta.shape, common)
    return Lazy(meta.shape, "bool", lambda i: Binary(op, a(i), b(i), "bool"))


def _fits(value: int, dtype: str) -> bool:
    kind = np.dtype(dtype).kind
    if kind == "b":
        return value in (0, 1)
    if kind in "iu":
        info = np.iinfo(dtype)
        return info.min <= value <= info.max
    return kind in "fc"


@lowers("neg")
def lower_neg(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    if meta.dtype == "bool":
        raise ctx.unsupported("neg on bool")
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: Unary("neg", x(i), meta.dtype))


_TRIG = frozenset({"sin", "cos", "tan"})


def _trig_range_check(ctx: LoopLowering, meta: Any, x: Loader, limit: float) -> None:
    """Flags a finite sin/cos/tan argument at or beyond ``limit``
    (``LoopOptions.trig_reduction_limit``): such a call runs as NumPy."""
    bound = Const(limit, meta.dtype)

    def too_large(i: tuple[Affine, ...]) -> Expr:
        magnitude = Unary("abs", x(i), meta.dtype)
        return Binary("and", Binary("ge", magnitude, bound, "bool"),
                      Binary("lt", magnitude, Const(float("inf"), meta.dtype), "bool"), "bool")
    check = ctx.reduce_values(too_large, meta.shape, tuple(range(len(meta.shape))), False, "max",
                              "bool")
    ctx.checks[check.buffer] = ("a sin/cos/tan argument beyond 2^23 pi/2 (the fast reduction's range)"
                                if limit == TRIG_REDUCTION_LIMIT else
                                f"a sin/cos/tan argument of magnitude {limit!r} or more (beyond the "
                                "kernels' argument reduction)")


@lowers("abs", "sqrt", "floor", "ceil", "trunc", "rint", "exp", "log", "tanh", "sin", "cos",
        "log2", "log10", "log1p", "expm1", "exp2", "sinh", "cosh", "cbrt", "arctan", "arcsin",
        "arccos", "arcsinh", "arccosh", "arctanh", "tan")
def lower_unary(ctx: LoopLowering, node: Node) -> Lazy:
    op, meta = node.target, node.tensor
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    if meta.dtype == "bool" and op == "abs":
        return Lazy(meta.shape, meta.dtype, x)
    if meta.dtype == "bool" or (op != "abs" and np.dtype(meta.dtype).kind != "f"):
        return op_as_extern(ctx, node)
    limit = ctx.options.trig_reduction_limit.get(meta.dtype) if op in _TRIG else None
    if limit is not None:
        _trig_range_check(ctx, meta, x, limit)
    return Lazy(meta.shape, meta.dtype, lambda i: Unary(op, x(i), meta.dtype))


@lowers("where")
def lower_where(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    cond = ctx.operand(node.args[0], meta.shape, "bool")
    a = ctx.operand(node.args[1], meta.shape, meta.dtype)
    b = ctx.operand(node.args[2], meta.shape, meta.dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: Select(cond(i), a(i), b(i), meta.dtype))


@lowers("cast")
def lower_cast(ctx: LoopLowering, node: Node) -> Lazy:
    """Casts from floats to integers run as NumPy: NaN and out-of-range values have no LLVM
    meaning (poison), and NumPy's answer is what the contract is."""
    meta = node.tensor
    src = node.args[0].tensor.dtype if isinstance(node.args[0], Node) else meta.dtype
    if np.dtype(src).kind == "f" and np.dtype(meta.dtype).kind in "iu":
        return extern_call(ctx, node, "astype", True, (node.args[0], meta.dtype), {})
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    return Lazy(meta.shape, meta.dtype, x)
