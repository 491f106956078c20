"""Emitters of the arithmetic loop operators: ``+ - * /``, negation, absolute value, maximum and
minimum, copysign, and the correctly rounded IEEE operations (sqrt, floor, ceil, trunc, rint),
which LLVM widens to vector instructions (no libm call). User arithmetic carries no fast-math
flags: NaN, Inf and -0.0 behave as NumPy's."""

from __future__ import annotations

from llvmlite import ir

from stax.loop import Binary, Ternary, Unary

from .registry import Emitter, binary, ternary, unary
from .types import is_float, is_signed


@binary("add", "sub", "mul")
def add_sub_mul(em: Emitter, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
    b = em.builder
    if is_float(e.dtype):
        return {"add": b.fadd, "sub": b.fsub, "mul": b.fmul}[e.op](a, c)
    return {"add": b.add, "sub": b.sub, "mul": b.mul}[e.op](a, c)


@binary("truediv")
def truediv(em: Emitter, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
    """Float division (the loop layer casts integer operands of ``/`` to a float first)."""
    if not is_float(e.dtype):
        raise NotImplementedError(f"no CPU emitter for truediv in {e.dtype}")
    return em.builder.fdiv(a, c)


def extreme(em: Emitter, op: str, a: ir.Value, c: ir.Value, dtype: str) -> ir.Value:
    """``maximum``/``minimum`` as NumPy: NaN in ``a`` wins, then NaN in ``c`` (``c`` is
    returned), ties return ``c`` (signed zeros)."""
    b = em.builder
    if is_float(dtype):
        wins = em.ordered(">" if op == "maximum" else "<", a, c)
        wins = b.or_(wins, b.fcmp_unordered("uno", a, a))
    else:
        cmp = b.icmp_signed if is_signed(dtype) else b.icmp_unsigned
        wins = cmp(">" if op == "maximum" else "<", a, c)
    return b.select(wins, a, c)


@binary("maximum", "minimum")
def maximum_minimum(em: Emitter, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
    return extreme(em, e.op, a, c, e.dtype)


@binary("copysign")
def copysign(em: Emitter, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
    fn = em.fn.module.declare_intrinsic("llvm.copysign", [a.type],
                                        ir.FunctionType(a.type, [a.type] * 2))
    return em.builder.call(fn, [a, c])


@ternary("fma")
def fma(em: Emitter, e: Ternary, a: ir.Value, c: ir.Value, d: ir.Value) -> ir.Value:
    """``a * c + d`` rounded once: LLVM's fma, one instruction with the host's FMA (else libm's
    fma, as exact): NumPy's complex loops multiply with it."""
    fn = em.fn.module.declare_intrinsic("llvm.fma", [a.type], ir.FunctionType(a.type, [a.type] * 3))
    return em.builder.call(fn, [a, c, d])


@unary("neg")
def neg(em: Emitter, e: Unary, x: ir.Value) -> ir.Value:
    """``-x``; a float's sign bit flipped by an xor with a mask LLVM cannot see: it folds
    ``fneg(x * 3)`` into ``x * -3`` (and ``a + -b`` into ``a - b``), exact for numbers but not for
    a NaN, whose sign NumPy's negative flips (``-(nan * 3)`` is 0xffc00000 in float32)."""
    b = em.builder
    if not is_float(e.dtype):
        return b.sub(ir.Constant(x.type, 0), x)
    bits = ir.IntType(_FLOAT_BITS[type(x.type)])
    mask = em.hide(ir.Constant(bits, 1 << (bits.width - 1)))
    return b.bitcast(b.xor(b.bitcast(x, bits), mask), x.type)


_FLOAT_BITS = {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}


@unary("abs")
def absolute(em: Emitter, e: Unary, x: ir.Value) -> ir.Value:
    b = em.builder
    if is_float(e.dtype):
        return b.call(em.fn.module.declare_intrinsic("llvm.fabs", [x.type]), [x])
    if not is_signed(e.dtype):
        return x
    return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)),
                    b.sub(ir.Constant(x.type, 0), x), x)  # wraps at INT_MIN, as NumPy


#: correctly rounded IEEE operations, by loop operator
INTRINSICS = {"sqrt": "llvm.sqrt", "floor": "llvm.floor", "ceil": "llvm.ceil",
              "trunc": "llvm.trunc", "rint": "llvm.rint"}


@unary(*INTRINSICS)
def ieee(em: Emitter, e: Unary, x: ir.Value) -> ir.Value:
    fn = em.fn.module.declare_intrinsic(INTRINSICS[e.op], [x.type])
    return em.builder.call(fn, [x])
