"""cbrt by Halley and Newton steps, hypot with scaled exact squares, ldexp by the bits."""

from __future__ import annotations

import math

from llvmlite import ir

from .dd import I64, Builder


def cbrt(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """|x| = 2^(3q) m' with m' in [1, 8) (exponent split by an integer division by 3); a guess
    from the bits divided by 3, three Halley steps (cubic convergence: 2^-5 -> 2^-15 -> 2^-45 ->
    past 2^-53), then one Newton step with the residual m' - y^3 from exact products."""
    f = Builder(b, module)

    def i(v: int) -> ir.Constant:
        return ir.Constant(I64, v)

    a = f.abs(x)
    subnormal = f.cmp("<", a, 2.2250738585072014e-308)
    a_s = f.sel(subnormal, f.mul(a, 2.0 ** 54), a)
    bits = f.bits(a_s)
    e = b.sub(b.lshr(bits, i(52)), i(1023))            # a_s = 2^e m, m in [1, 2)
    q = b.sub(b.sdiv(b.add(e, i(3 * 400)), i(3)), i(400))  # floor(e / 3)
    rem = b.sub(e, b.mul(q, i(3)))
    m = f.from_bits(b.or_(b.and_(bits, i((1 << 52) - 1)), b.shl(b.add(rem, i(1023)), i(52))))
    guess = f.from_bits(b.add(b.udiv(b.sub(f.bits(m), i(1023 << 52)), i(3)), i(1023 << 52)))
    y = guess
    for _ in range(3):
        y3 = f.mul(f.mul(y, y), y)
        y = f.mul(y, f.div(f.add(y3, f.mul(m, 2.0)), f.add(f.mul(y3, 2.0), m)))
    sq, sqe = f.two_prod(y, y)
    cube, cubee = f.two_prod(sq, y)
    residual = f.sub(f.sub(f.sub(m, cube), cubee), f.mul(sqe, y))
    y = f.add(y, f.div(residual, f.mul(sq, 3.0)))
    q = b.sub(q, b.select(subnormal, i(18), i(0)))
    value = f.copysign(f.mul(y, f.pow2(q)), x)          # 2^q is normal: |q| <= 358
    special = b.or_(f.cmp("==", a, 0.0), b.or_(f.cmp("==", a, math.inf), f.isnan(x)))
    return f.sel(special, x, value)


def hypot(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    """sqrt(x^2 + y^2) with both scaled by the larger one's power of two (exact), the squares
    and their sum as pairs, and a corrected square root; an infinite operand gives +inf even
    against a NaN (C99)."""
    f = Builder(b, module)

    def i(v: int) -> ir.Constant:
        return ir.Constant(I64, v)

    ax, ay = f.abs(x), f.abs(y)
    big = f.sel(f.cmp(">", ax, ay), ax, ay)
    small = f.sel(f.cmp(">", ax, ay), ay, ax)
    k = b.sub(b.lshr(f.bits(big), i(52)), i(1023))
    k = b.select(b.icmp_signed(">", k, i(1000)), i(1000), k)
    k = b.select(b.icmp_signed("<", k, i(-1000)), i(-1000), k)
    down = f.pow2(b.sub(i(0), k))
    u, v = f.mul(big, down), f.mul(small, down)
    uu, uue = f.two_prod(u, u)
    vv, vve = f.two_prod(v, v)
    sh, sl = f.two_sum(uu, vv)
    sl = f.add(sl, f.add(uue, vve))
    r = f.sqrt(sh)
    rr, rre = f.two_prod(r, r)
    r = f.add(r, f.div(f.add(f.sub(f.sub(sh, rr), rre), sl), f.mul(r, 2.0)))
    value = f.mul(r, f.pow2(k))
    value = f.sel(f.cmp("==", big, 0.0), 0.0, value)
    value = f.sel(b.or_(f.isnan(x), f.isnan(y)), math.nan, value)
    return f.sel(b.or_(f.cmp("==", ax, math.inf), f.cmp("==", ay, math.inf)), math.inf, value)


def ldexp(b: ir.IRBuilder, module: ir.Module, x: ir.Value, n: ir.Value) -> ir.Value:
    """x 2^n for an i64 n, rounded once as C's ldexp: x = 2^e m with m in [1, 2) (subnormal x
    normalized first); E = e + n; a normal result is m 2^E exactly, a subnormal one is
    (m 2^(E + 1074)) 2^-1074 with the first product exact and the second rounding once."""
    f = Builder(b, module)

    def i(v: int) -> ir.Constant:
        return ir.Constant(I64, v)

    def clamp(v: ir.Value, low: int, high: int) -> ir.Value:
        v = b.select(b.icmp_signed(">", v, i(high)), i(high), v)
        return b.select(b.icmp_signed("<", v, i(low)), i(low), v)

    a = f.abs(x)
    subnormal = f.cmp("<", a, 2.2250738585072014e-308)
    xs = f.sel(subnormal, f.mul(x, 2.0 ** 54), x)
    bits = f.bits(xs)
    e = b.sub(b.and_(b.lshr(bits, i(52)), i(0x7FF)), i(1023))
    m = f.from_bits(b.or_(b.and_(bits, i(~(0x7FF << 52))), i(1023 << 52)))   # keeps the sign
    big_e = b.add(b.sub(e, b.select(subnormal, i(54), i(0))), clamp(n, -5000, 5000))
    normal = f.mul(m, f.pow2(clamp(big_e, -1022, 1023)))
    tiny = f.mul(f.mul(m, f.pow2(b.add(clamp(big_e, -2000, -1023), i(1074)))), 5e-324)
    value = f.sel(b.icmp_signed(">=", big_e, i(-1022)), normal, tiny)
    value = f.sel(b.icmp_signed(">", big_e, i(1023)), f.copysign(math.inf, x), value)
    special = b.or_(f.cmp("==", a, 0.0), b.or_(f.cmp("==", a, math.inf), f.isnan(x)))
    return f.sel(special, x, value)


