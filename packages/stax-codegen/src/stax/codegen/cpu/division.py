"""Emitters of division with a remainder as NumPy computes it: integer ``//`` and ``%`` (the
quotient rounded toward minus infinity, 0 for a zero divisor, with their events), float ``//``
and ``%`` by NumPy's npy_divmod (``py_floordiv``, ``py_mod``), and the greatest common divisor
and least common multiple of integers (``gcd``, ``lcm``)."""

from __future__ import annotations

import numpy as np
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
    inf = ir.Constant(typ, float("inf"))
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
    # fmod's NaN: the first NaN operand, else the CPU's own (x86's has its sign bit set)
    nan = b.select(b.fcmp_unordered("uno", a, a), a,
                   b.select(b.fcmp_unordered("uno", c, c), c, ir.Constant(typ, _hardware_nan())))
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

def _hardware_nan() -> float:
    """The NaN this CPU makes of an invalid operation (0/0): what C's fmod, hence NumPy's
    remainder and floor division, return for ``inf % 2`` or ``5 % 0.0``."""
    with np.errstate(invalid="ignore"):
        return float(np.divide(np.zeros(1), np.zeros(1))[0])


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



def _binary_gcd(em: Emitter, u: ir.Value, v: ir.Value) -> ir.Value:
    """The greatest common divisor of the unsigned ``u`` and ``v`` (0 for two zeros), by Stein's
    binary algorithm: shifts and subtractions, no division. A loop of at most as many steps as
    the width has bits, on blocks of its own (the element loop goes on in the last one)."""
    b = em.builder
    typ = u.type
    zero = ir.Constant(typ, 0)
    cttz = em.fn.module.declare_intrinsic("llvm.cttz", [typ],
                                          ir.FunctionType(typ, [typ, ir.IntType(1)]))
    defined = ir.Constant(ir.IntType(1), 0)  # cttz(0) is the width, not poison
    either = b.or_(u, v)  # the answer where one of them is zero
    before = b.block
    start, loop, done = (em.fn.append_basic_block(f"gcd_{n}") for n in ("start", "loop", "done"))
    b.cbranch(b.or_(b.icmp_unsigned("==", u, zero), b.icmp_unsigned("==", v, zero)), done, start)
    b.position_at_end(start)  # both nonzero: their common power of two aside, u made odd
    shift = b.call(cttz, [either, defined])
    odd = b.lshr(u, b.call(cttz, [u, defined]))
    b.branch(loop)
    b.position_at_end(loop)  # an odd and a nonzero value: the second made odd, then both
    small, large = b.phi(typ), b.phi(typ)  # replaced by (the smaller, their difference)
    made_odd = b.lshr(large, b.call(cttz, [large, defined]))
    below = b.icmp_unsigned("<", small, made_odd)
    low, high = b.select(below, small, made_odd), b.select(below, made_odd, small)
    difference = b.sub(high, low)
    small.add_incoming(odd, start)
    small.add_incoming(low, loop)
    large.add_incoming(v, start)
    large.add_incoming(difference, loop)
    b.cbranch(b.icmp_unsigned("!=", difference, zero), loop, done)
    b.position_at_end(done)
    found, power = b.phi(typ), b.phi(typ)
    found.add_incoming(either, before)
    found.add_incoming(low, loop)
    power.add_incoming(zero, before)
    power.add_incoming(shift, loop)
    return b.shl(found, power)


@binary("gcd", "lcm")
def gcd_lcm(em: Emitter, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
    """NumPy's npy_gcd and npy_lcm: of the operands' magnitudes as unsigned values (MIN's is
    2^(bits-1), so gcd(MIN, 0) wraps to MIN), gcd(0, 0) = 0, lcm = |a| / gcd * |c| wrapping (0
    where either is 0)."""
    b = em.builder
    zero = ir.Constant(a.type, 0)
    if is_signed(e.dtype):
        a, c = (b.select(b.icmp_signed("<", x, zero), b.sub(zero, x), x) for x in (a, c))
    divisor = _binary_gcd(em, a, c)
    if e.op == "gcd":
        return divisor
    safe = b.select(b.icmp_unsigned("==", divisor, zero), ir.Constant(a.type, 1), divisor)
    return b.mul(b.udiv(a, safe), c)  # two zeros: 0 / 1 * 0
