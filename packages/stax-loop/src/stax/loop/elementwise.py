"""Loop lowerings of the arithmetic element-wise ops: every op named as a loop operator is that
operator over its operands (``lower_operator``, derived from ``operators.OPERATORS``), in a dtype
the operator computes, else NumPy's call; comparisons compute in the operands' common dtype.
Rules of their own: NumPy's float // and %, composed from an exact fmod with a check; sin, cos
and tan, with a check of the argument's range; ``where`` and casts."""

from __future__ import annotations

import numpy as np

from stax.ir import Node, TensorMeta, elementwise_ops
from stax.ir.sizes import Size

from .context import Lazy, Loader, LoopLowering, checked_float_to_int, trig_range_check
from .expr import Binary, Const, Expr, Select, Ternary, Unary
from .externs import extern_call, op_as_extern
from .index import Affine
from .operators import OPERATORS, get_operator
from .registry import lowers

#: On bool, NumPy's add/mul/maximum/minimum are logical or/and, and abs is the operand (None).
BOOL_FORMS: dict[str, str | None] = {"add": "or", "mul": "and", "maximum": "or", "minimum": "and",
                                     "abs": None}


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


def _comparison_dtype(ctx: LoopLowering, node: Node) -> str:
    """Comparisons compute in the operands' common dtype (NEP 50: a Python scalar takes the
    array's dtype)."""
    operands = node.args
    # a size (a generic version's ``x < n``) takes part as the Python int it stands for
    common = np.result_type(*(v.tensor.np_dtype if isinstance(v, Node) else
                              0 if isinstance(v, Size) else v for v in operands)).name
    if not ctx.native(common):
        raise ctx.unsupported(f"comparison in dtype {common}")
    for value in operands:
        if isinstance(value, Size) and np.dtype(common).kind in "iub" and \
                np.dtype(common).itemsize < 8:
            raise ctx.unsupported(f"comparison of a size with {common} values")
        if isinstance(value, int) and not isinstance(value, bool) and not _fits(value, common):
            raise ctx.unsupported(f"comparison with the Python int {value}, which {common} "
                                  "cannot hold")
    return common


#: the ops named as loop operators whose operands share the operator's dtype: each lowers to its
#: operator unless a rule of its own lowers it (``registry.lowers(fallback=True)``)
OPERATOR_OPS = tuple(name for name, op in OPERATORS.items()
                     if op.uniform and name in elementwise_ops())


@lowers(*OPERATOR_OPS, fallback=True)
def lower_operator(ctx: LoopLowering, node: Node) -> Lazy:
    """The op's loop operator over its operands, in the result's dtype (a comparison's: the
    operands' common dtype). On bool, NumPy's add/mul/maximum/minimum are logical (``BOOL_FORMS``)
    and abs is the operand; in a dtype of another kind than the operator's (``kinds``: integer
    pow, float ``%``) NumPy computes it."""
    op, meta = node.target, node.tensor
    operator = get_operator(op)
    answer = _beyond_the_dtype(node) if operator.result == "bool" else None
    if answer is not None:
        return Lazy(meta.shape, meta.dtype, lambda i: Const(answer, "bool"))
    dtype = _comparison_dtype(ctx, node) if operator.result == "bool" else meta.dtype
    operands = [ctx.operand(value, meta.shape, dtype) for value in node.args]
    name = BOOL_FORMS.get(op, op) if dtype == "bool" else op
    if name is None:
        return Lazy(meta.shape, meta.dtype, operands[0])
    if np.dtype(dtype).kind not in get_operator(name).kinds:
        return op_as_extern(ctx, node)
    if operator.arity == 1:
        (x,) = operands
        return Lazy(meta.shape, meta.dtype, lambda i: Unary(name, x(i), meta.dtype))
    a, b = operands
    return Lazy(meta.shape, meta.dtype, lambda i: Binary(name, a(i), b(i), meta.dtype))


@lowers("floordiv", "mod")
def lower_divmod(ctx: LoopLowering, node: Node) -> Lazy:
    """Integers: the operator. Floats: NumPy's npy_divmod from an exact fmod (``py_floordiv``,
    ``py_mod``), or NumPy's call where the options give no exact quotient bound."""
    op, meta = node.target, node.tensor
    if np.dtype(meta.dtype).kind != "f":
        return lower_operator(ctx, node)
    a = ctx.operand(node.args[0], meta.shape, meta.dtype)
    b = ctx.operand(node.args[1], meta.shape, meta.dtype)
    limit = ctx.options.fmod_exact_quotient.get(meta.dtype)
    if limit is None:
        return op_as_extern(ctx, node)
    return _float_divmod(ctx, op, meta, a, b, limit)


#: ``x OP k`` for a Python int ``k`` above every value of ``x``'s integer dtype (below: the
#: mirror), as NumPy 2 answers it (``x_u8 < 300`` is all True, ``x_u8 == 300`` all False)
_ABOVE = {"lt": True, "le": True, "ne": True, "gt": False, "ge": False, "eq": False}
_BELOW = {"lt": False, "le": False, "ne": True, "gt": True, "ge": True, "eq": False}
_MIRRORED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _beyond_the_dtype(node: Node) -> bool | None:
    """The constant answer of a comparison of an integer array with a Python int its dtype
    cannot hold (``u8 < 300``), else None."""
    (a, b), op = node.args, node.target
    if isinstance(a, int) and isinstance(b, Node):
        a, b, op = b, a, _MIRRORED[op]
    if not isinstance(a, Node) or type(b) is not int or a.tensor is None or \
            np.dtype(a.tensor.dtype).kind not in "iu":
        return None
    info = np.iinfo(a.tensor.dtype)
    return _ABOVE[op] if b > info.max else _BELOW[op] if b < info.min else None


def _fits(value: int, dtype: str) -> bool:
    kind = np.dtype(dtype).kind
    if kind == "b":
        return value in (0, 1)
    if kind in "iu":
        info = np.iinfo(dtype)
        return info.min <= value <= info.max
    return kind in "fc"


_TRIG = frozenset({"sin", "cos", "tan"})


@lowers(*_TRIG)
def lower_trig(ctx: LoopLowering, node: Node) -> Lazy:
    """The operator, with a check of the argument's range in a float dtype that has a limit."""
    meta = node.tensor
    if np.dtype(meta.dtype).kind == "f":
        limit = ctx.options.trig_reduction_limit.get(meta.dtype)
        if limit is not None:
            trig_range_check(ctx, meta.shape, meta.dtype,
                             ctx.operand(node.args[0], meta.shape, meta.dtype), limit)
    return lower_operator(ctx, node)


@lowers("where")
def lower_where(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    cond = ctx.operand(node.args[0], meta.shape, "bool")
    a = ctx.operand(node.args[1], meta.shape, meta.dtype)
    b = ctx.operand(node.args[2], meta.shape, meta.dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: Select(cond(i), a(i), b(i), meta.dtype))


#: float -> integer casts computed natively: C's truncation, where the value fits (every
#: integer type: a value that does not fit fails the check, ``checked_float_to_int``)
NATIVE_FLOAT_TO_INT = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                 "uint64"})


@lowers("cast")
def lower_cast(ctx: LoopLowering, node: Node) -> Lazy:
    """Casts; from floats to integers natively where the value fits (truncation, C's and
    NumPy's: above -1 for an unsigned type), with a check flagging NaN or a value outside the
    type's range: NumPy's answer there (its C compiler's, and "invalid value encountered in
    cast") comes from its own call. A float type the kernels do not compute in runs as NumPy."""
    meta = node.tensor
    src = node.args[0].tensor.dtype if isinstance(node.args[0], Node) else meta.dtype
    if np.dtype(src).kind == "f" and np.dtype(meta.dtype).kind in "iu":
        if meta.dtype not in NATIVE_FLOAT_TO_INT or not ctx.native(src):
            return extern_call(ctx, node, "astype", True, (node.args[0], meta.dtype), {})
        return checked_float_to_int(ctx, meta.shape, src, meta.dtype,
                                    ctx.operand(node.args[0], meta.shape, src))
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    return Lazy(meta.shape, meta.dtype, x)


#: float32 ``x ** n`` for these constant exponents is computed in float32 lanes from ``x * x``
#: split exactly by an FMA (``small_power32``)
SMALL_POWERS32 = (3, 4)


@lowers("pow")
def lower_pow(ctx: LoopLowering, node: Node) -> Lazy:
    """``pow``; float32 ``x ** 3`` and ``x ** 4`` (a constant exponent) as ``small_power32``."""
    meta = node.tensor
    exponent = node.args[1] if len(node.args) == 2 else None
    if meta is None or meta.dtype != "float32" or isinstance(exponent, (Node, bool)) or \
            not isinstance(exponent, (int, float, np.integer, np.floating)) or \
            float(exponent) not in SMALL_POWERS32:
        return lower_operator(ctx, node)
    x = ctx.operand(node.args[0], meta.shape, "float32")
    n = int(exponent)
    return Lazy(meta.shape, "float32", lambda i: small_power32(x(i), n))


def small_power32(x: Expr, n: int) -> Expr:
    """``x ** n`` (3 or 4) of float32 ``x`` within 0.5 ulp (+2^-23) of the exact power where it
    is at least 2^-100, within 1 ulp nearer the underflow threshold (where ``l * x`` rounds to
    a subnormal step) and below it, in float32 lanes: ``h = x * x`` and its exact error
    ``l = fma(x, x, -h)``, then one rounding, ``fma(h, x, l * x)`` (cube) or
    ``fma(h, h, h * 2 l)``. The double-precision products this replaces ran at half the vector
    width (a float32 GELU with ``x ** 3`` 19-28% behind ``x * x * x``, which itself errs by up
    to 1.5 ulp). Where ``h`` is at least ``2^100`` (cube) or ``2^64`` (fourth power) the power
    overflows whatever the error, and the error itself could overflow with the wrong sign (or
    be an infinity's NaN): the error is taken against ``min(h, 2^100)`` (``2^64``) instead, so it
    is positive there and the power overflows with its own sign; overflow and underflow happen
    where the power's do. The clamp is one unsigned minimum of ``h``'s bits (a nonnegative
    float's bits order as its value; a NaN of either sign is above the limit and the power is
    NaN anyway), which no float event can come from (``fpevents``: a bitcast of bits known to
    be a finite float reports nothing) and no float comparison reads: NaN-propagating
    ``minimum`` took five instructions a vector, a select of ``x`` three and a second square
    (Intel Xeon, 1M-element GELU: ``x ** 3`` 1.17x the time of ``x * x * x`` with those, 1.11x
    with this)."""
    f32 = "float32"
    h = Binary("mul", x, x, f32)
    # h, at most 2^100 (2^64): a nonnegative float's bits order as its value, and a NaN's
    # (either sign) read as unsigned are above the limit; one integer minimum
    limit = Const((127 + (100 if n == 3 else 64)) << 23, "uint32")
    hc = Unary("bitcast", Binary("minimum", Unary("bitcast", h, "uint32"), limit, "uint32"), f32)
    # -hc as a product by -1 (exact: hc is a finite number), which LLVM folds into the FMA
    # (``vfmsub``); ``neg`` is an xor it cannot see through (a NaN's sign flipped for NumPy's
    # negative), one more instruction a vector: GELU with ``x ** 3`` 1.10x its ``x * x * x``
    low = Ternary("fma", x, x, Binary("mul", hc, Const(-1.0, f32), f32), f32)
    if n == 3:
        return Ternary("fma", h, x, Binary("mul", low, x, f32), f32)
    return Ternary("fma", h, h, Binary("mul", h, Binary("add", low, low, f32), f32), f32)
