"""Emitters of division with a remainder as NumPy computes it: integer ``//`` and ``%`` (the
quotient rounded toward minus infinity, 0 for a zero divisor, with their events), and float
``//`` and ``%`` by NumPy's npy_divmod (``py_floordiv``, ``py_mod``)."""

from __future__ import annotations

from llvmlite import ir

from stax.loop import Binary

from .registry import Emitter, binary
from .types import is_signed


@binary("py_floordiv", "py_mod")
def float_divmod(em: Emitter, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
    """NumPy's npy_divmod in the operands' precision. fmod first, exactly: n = trunc(a / c)
    is off by at most one for the quotients the call's check admits, a - n c is exact with a
    fused multiply-add, and an n one too large shows as a remainder of the wrong sign."""
    b = em.builder
    typ = a.type
    module = em.fn.module
    fn = lambda name, n: module.declare_intrinsic(name, [typ],  # noqa: E731
                                                  ir.FunctionType(typ, [typ] * n))
    fma, trunc, floor, fabs = fn("llvm.fma", 3), fn("llvm.trunc", 1), fn("llvm.floor", 1), \
        fn("llvm.fabs", 1)
    copysign = fn("llvm.copysign", 2)
    zero, one = ir.Constant(typ, 0.0), ir.Constant(typ, 1.0)
    inf, nan = ir.Constant(typ, float("inf")), ir.Constant(typ, float("nan"))
    n = b.call(trunc, [b.fdiv(a, c)])
    r = b.call(fma, [b.fneg(n), c, a])
    wrong_sign = b.and_(b.fcmp_ordered("!=", r, zero),
                        b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", a, zero)))
    r = b.select(wrong_sign, b.fadd(r, b.call(copysign, [b.call(fabs, [c]), a])), r)
    # C's fmod at the edges: a zero a keeps its sign, an infinite c leaves a finite a as is,
    # an infinite a, a zero c or a NaN gives NaN
    finite_a = b.fcmp_ordered("<", b.call(fabs, [a]), inf)
    r = b.select(b.fcmp_ordered("==", a, zero), a, r)
    r = b.select(b.and_(finite_a, b.fcmp_ordered("==", b.call(fabs, [c]), inf)), a, r)
    invalid = b.or_(b.xor(finite_a, ir.Constant(ir.IntType(1), 1)),
                    b.fcmp_unordered("==", c, zero))  # c == 0 or either is NaN
    mod = b.select(invalid, nan, r)
    # npy_divmod
    div = b.fdiv(b.fsub(a, mod), c)
    nonzero_mod = b.fcmp_unordered("!=", mod, zero)  # NaN counts as nonzero, as in C
    adjust = b.and_(nonzero_mod, b.xor(b.fcmp_ordered("<", c, zero),
                                       b.fcmp_ordered("<", mod, zero)))
    mod2 = b.select(adjust, b.fadd(mod, c), mod)
    div = b.select(adjust, b.fsub(div, one), div)
    mod2 = b.select(nonzero_mod, mod2, b.call(copysign, [zero, c]))
    snapped = b.call(floor, [div])
    snapped = b.select(b.fcmp_ordered(">", b.fsub(div, snapped), ir.Constant(typ, 0.5)),
                       b.fadd(snapped, one), snapped)
    floordiv = b.select(b.fcmp_unordered("!=", div, zero), snapped,
                        b.call(copysign, [zero, b.fdiv(a, c)]))
    by_zero = b.fcmp_ordered("==", c, zero)
    if e.op == "py_mod":
        return b.select(by_zero, mod, mod2)  # fmod's NaN
    return b.select(by_zero, b.fdiv(a, c), floordiv)

@binary("floordiv", "mod")
def integer_divmod(em: Emitter, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
    """Integer ``a // c`` or ``a % c`` as NumPy: the quotient rounded toward minus infinity,
    the remainder with the divisor's sign; 0 for both when ``c == 0``; ``MIN // -1`` wraps
    to MIN (remainder 0). The divisor is made safe before dividing (LLVM's division by zero
    or of MIN by -1 is undefined)."""
    b = em.builder
    typ = a.type
    zero, one = ir.Constant(typ, 0), ir.Constant(typ, 1)
    em.integer_division_events(a, c, e.op, e.dtype)
    by_zero = b.icmp_unsigned("==", c, zero)
    if not is_signed(e.dtype):
        safe = b.select(by_zero, one, c)
        value = b.udiv(a, safe) if e.op == "floordiv" else b.urem(a, safe)
        return b.select(by_zero, zero, value)
    by_minus_one = b.icmp_signed("==", c, ir.Constant(typ, -1))
    safe = b.select(b.or_(by_zero, by_minus_one), one, c)
    q, r = b.sdiv(a, safe), b.srem(a, safe)
    # truncation -> floor: a nonzero remainder whose sign differs from the divisor's
    adjust = b.and_(b.icmp_signed("!=", r, zero),
                    b.icmp_signed("<", b.xor(r, c), zero))
    if e.op == "floordiv":
        value = b.select(adjust, b.sub(q, one), q)
        value = b.select(by_minus_one, b.sub(zero, a), value)
    else:
        value = b.select(adjust, b.add(r, c), r)
        value = b.select(by_minus_one, zero, value)
    return b.select(by_zero, zero, value)
