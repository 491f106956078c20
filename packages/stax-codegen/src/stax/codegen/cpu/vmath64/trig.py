"""sin, cos, tan from a four-chunk reduction by pi/2; arctan, arctan2, arcsin, arccos."""

from __future__ import annotations

import functools
import math
from decimal import Decimal, localcontext

from llvmlite import ir

from .dd import I1, I64, Builder, constants, decimal_pi

# -- sin, cos, tan -------------------------------------------------------------------------------

#: the fast reduction's range: n = rint(|x| 2/pi) < 2^23, so n times a 30-bit chunk is exact;
#: the CPU target's ``limits.trig_reduction``, beyond which the loop layer's check runs the call
#: as NumPy
TRIG_LIMIT = 2.0 ** 23 * math.pi / 2


@functools.cache
def _pio2_chunks() -> list[float]:
    """pi/2 as four 30-bit chunks and a double: 150 bits, past the worst cancellation a double
    below TRIG_LIMIT reaches near a multiple of pi/2."""
    with localcontext() as ctx:
        ctx.prec = 80
        rest = decimal_pi() / 2
        chunks = []
        for _ in range(4):
            exponent = math.frexp(float(rest))[1]
            quantum = Decimal(2) ** (exponent - 30)
            chunk = (rest / quantum).to_integral_value() * quantum
            chunks.append(float(chunk))
            rest -= chunk
        return [*chunks, float(rest)]


SIN_SERIES = [(-1) ** k / math.factorial(2 * k + 1) for k in range(1, 10)]
COS_SERIES = [(-1) ** k / math.factorial(2 * k) for k in range(2, 11)]


def _sin_cos_pairs(f: Builder, x: ir.Value):
    """|x| = n pi/2 + yh + yl; returns (n mod 4, sin y and cos y as pairs)."""
    b = f.b
    ax = f.sel(_nonfinite(f, x), 0.0, f.abs(x))  # (no compare below sees a NaN: _nonfinite)
    ax = f.sel(f.cmp("<", ax, TRIG_LIMIT), ax, 0.0)  # beyond: the lowering's check reruns the call
    p1, p2, p3, p4, p5 = _pio2_chunks()
    n = f.rint(f.mul(ax, 2.0 / math.pi))
    a = f.sub(ax, f.mul(n, p1))                        # exact (Sterbenz)
    a, e2 = f.two_sum(a, f.neg(f.mul(n, p2)))
    a, e3 = f.two_sum(a, f.neg(f.mul(n, p3)))
    a, e4 = f.two_sum(a, f.neg(f.mul(n, p4)))
    lo = f.add(f.add(e2, e3), f.sub(e4, f.mul(n, p5)))
    yh, yl = f.two_sum(a, lo)
    y2, y2e = f.two_prod(yh, yh)
    sin_tail = f.add(f.mul(f.mul(yh, y2), f.poly(y2, SIN_SERIES)),
                     f.mul(yl, f.sub(1.0, f.mul(y2, 0.5))))
    sin_pair = f.fast_two_sum(yh, sin_tail)
    hz = f.mul(y2, 0.5)
    w = f.sub(1.0, hz)
    cos_tail = f.sub(f.sub(f.sub(1.0, w), hz), f.mul(y2e, 0.5))      # 1 - hz exactly = w + this
    cos_tail = f.add(cos_tail, f.sub(f.mul(f.mul(y2, y2), f.poly(y2, COS_SERIES)), f.mul(yh, yl)))
    cos_pair = f.fast_two_sum(w, cos_tail)
    q = b.and_(b.fptosi(n, I64), ir.Constant(I64, 3))
    return q, sin_pair, cos_pair


def _nonfinite(f: Builder, x: ir.Value) -> ir.Value:
    """``x`` is NaN or +-inf, by quiet compares: x86's ``<`` (``vcmpltpd``) raises the invalid
    flag on a NaN, which a fast kernel reading the flags cannot tell from ``sin(inf)``'s event
    (every call over NaN data ran again with the precise kernels: 3 elements 5.4 us against
    0.4); a NaN operand is no event, an infinite one is tested apart (``fpevents.
    OPERAND_INFINITY``)."""
    return f.b.or_(f.isnan(x), f.cmp("==", f.abs(x), math.inf))


def _finite_or_nan(f: Builder, x: ir.Value, value: ir.Value) -> ir.Value:
    return f.sel(_nonfinite(f, x), math.nan, value)


def _sine(f: Builder, x: ir.Value, quarter_turns: int) -> ir.Value:
    """sin(x + quarter_turns pi/2): sin(q pi/2 + y) over q = 0..3 is s, c, -s, -c. sin is odd
    in x (sin(-0.0) = -0.0); cos = sin one quarter turn on, of |x| (even)."""
    b = f.b
    q, (sh, sl), (ch, cl) = _sin_cos_pairs(f, x)
    q = b.and_(b.add(q, ir.Constant(I64, quarter_turns)), ir.Constant(I64, 3))
    odd = b.trunc(q, I1)
    value = f.add(f.sel(odd, ch, sh), f.sel(odd, cl, sl))
    negate = b.icmp_unsigned(">=", q, ir.Constant(I64, 2))
    if quarter_turns == 0:
        negate = b.xor(negate, b.icmp_signed("<", f.bits(x), ir.Constant(I64, 0)))
    return _finite_or_nan(f, x, f.sel(negate, f.neg(value), value))


def sin(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return _sine(Builder(b, module), x, 0)


def cos(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return _sine(Builder(b, module), x, 1)


def tan(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """s / c, or -c / s in odd quadrants, as a division of pairs; odd in x."""
    f = Builder(b, module)
    q, (sh, sl), (ch, cl) = _sin_cos_pairs(f, x)
    odd = b.trunc(q, I1)
    nh, nl = f.sel(odd, ch, sh), f.sel(odd, cl, sl)
    dh, dl = f.sel(odd, sh, ch), f.sel(odd, sl, cl)
    quotient = f.div(nh, dh)
    p, pe = f.two_prod(quotient, dh)
    remainder = f.add(f.sub(f.sub(nh, p), pe), f.sub(nl, f.mul(quotient, dl)))
    value = f.add(quotient, f.div(remainder, dh))
    negate = b.xor(odd, b.icmp_signed("<", f.bits(x), ir.Constant(I64, 0)))
    return _finite_or_nan(f, x, f.sel(negate, f.neg(value), value))


# -- inverse trigonometric functions -------------------------------------------------------------

ATAN_SERIES = [(-1) ** k / (2 * k + 1) for k in range(1, 23)]   # |u| <= 7/16: to 2^-60
ASIN_SERIES = [math.comb(2 * k, k) / (4 ** k * (2 * k + 1)) for k in range(1, 28)]  # |s| <= 1/2


def _atan_pair(f: Builder, ah: ir.Value, al: ir.Value | float = 0.0) -> tuple[ir.Value, ir.Value]:
    """atan(ah + al) for ah >= 0 (inf included) as a pair. Around c = 0, 1/2, 1, 3/2 and infinity
    atan a = atan c + atan u with u = (a - c) / (1 + a c), |u| <= 7/16: a - c is exact (Sterbenz),
    1 + a c an exact pair, u a pair from the division's exact remainder; atan u by its series;
    al enters through the derivative 1 / (1 + a^2)."""
    k = constants()
    pieces = [  # (upper end of a's interval, c, atan c as a pair)
        (7 / 16, 0.0, (0.0, 0.0)), (11 / 16, 0.5, k["atan_half"]), (19 / 16, 1.0, k["pi_4"]),
        (39 / 16, 1.5, k["atan_three_halves"]), (math.inf, math.inf, k["pi_2"]),
    ]
    c: ir.Value = f.v(math.inf)
    base_hi: ir.Value = f.v(k["pi_2"][0])
    base_lo: ir.Value = f.v(k["pi_2"][1])
    for end, centre, (hi, lo) in reversed(pieces[:-1]):
        inside = f.cmp("<", ah, end)
        c, base_hi, base_lo = f.sel(inside, centre, c), f.sel(inside, hi, base_hi), f.sel(inside, lo, base_lo)
    far = f.cmp("==", c, math.inf)
    cf = f.sel(far, 0.0, c)
    numerator = f.sel(far, -1.0, f.sub(ah, cf))
    ac, ace = f.two_prod(ah, cf)
    dh, dl = f.two_sum(1.0, ac)
    dh, dl = f.sel(far, ah, dh), f.sel(far, 0.0, f.add(dl, ace))
    uh = f.div(numerator, dh)
    p, pe = f.two_prod(uh, dh)
    ul = f.div(f.sub(f.sub(f.sub(numerator, p), pe), f.mul(uh, dl)), dh)
    ul = f.sel(f.cmp("<", ah, 2.0 ** 900), ul, 0.0)  # beyond, below 2^-1800: and no overflow
    u2 = f.mul(uh, uh)
    tail = f.add(f.mul(f.mul(uh, u2), f.poly(u2, ATAN_SERIES)), f.div(ul, f.add(1.0, u2)))
    tail = f.add(tail, f.div(al, f.add(1.0, f.mul(ah, ah))))
    h, e = f.two_sum(base_hi, uh)
    return f.fast_two_sum(h, f.add(e, f.add(base_lo, tail)))


def arctan(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    f = Builder(b, module)
    hi, lo = _atan_pair(f, f.abs(x))
    return f.sel(f.isnan(x), x, f.copysign(f.add(hi, lo), x))


def arctan2(b: ir.IRBuilder, module: ir.Module, y: ir.Value, x: ir.Value) -> ir.Value:
    """C99's atan2: atan(|y| / |x|) with the quotient as a pair, folded to pi - angle by the sign
    bit of x (-0.0 counts), signed as y; both zeros and both infinities by their own angles."""
    f = Builder(b, module)
    k = constants()
    ay, ax = f.abs(y), f.abs(x)
    # both scaled by the larger one's power of two (exact where it matters): Dekker's products
    # need operands below 2^996
    larger = f.sel(f.cmp(">", ay, ax), ay, ax)
    e = b.sub(b.lshr(f.bits(larger), ir.Constant(I64, 52)), ir.Constant(I64, 1023))
    e = b.select(b.icmp_signed(">", e, ir.Constant(I64, 1000)), ir.Constant(I64, 1000), e)
    e = b.select(b.icmp_signed("<", e, ir.Constant(I64, -1000)), ir.Constant(I64, -1000), e)
    down = f.pow2(b.sub(ir.Constant(I64, 0), e))
    ay, ax = f.mul(ay, down), f.mul(ax, down)
    qh = f.div(ay, ax)
    p, pe = f.two_prod(qh, ax)
    finite = b.and_(f.cmp("<", qh, 2.0 ** 900), f.cmp(">", qh, 2.0 ** -900))  # else ql is moot
    ql = f.sel(finite, f.div(f.sub(f.sub(ay, p), pe), ax), 0.0)
    both_inf = b.and_(f.cmp("==", ay, math.inf), f.cmp("==", ax, math.inf))
    qh = f.sel(both_inf, 1.0, f.sel(b.and_(f.cmp("==", ay, 0.0), f.cmp("==", ax, 0.0)), 0.0, qh))
    hi, lo = _atan_pair(f, qh, ql)
    x_negative = b.icmp_signed("<", f.bits(x), ir.Constant(I64, 0))
    fh, fe = f.two_sum(k["pi"][0], f.neg(hi))
    folded = f.add(fh, f.add(fe, f.sub(k["pi"][1], lo)))
    value = f.sel(x_negative, folded, f.add(hi, lo))
    value = f.copysign(value, y)
    return f.sel(b.or_(f.isnan(x), f.isnan(y)), math.nan, value)


def _asin_small(f: Builder, sh: ir.Value, sl: ir.Value | float = 0.0) -> tuple[ir.Value, ir.Value]:
    """asin(sh + sl) for |sh| <= 1/2 as (sh, tail): its Taylor series to s^55 (2^-60)."""
    s2 = f.mul(sh, sh)
    tail = f.add(f.mul(f.mul(sh, s2), f.poly(s2, ASIN_SERIES)), f.mul(sl, f.add(1.0, f.mul(s2, 0.5))))
    return sh, tail


def _half_root(f: Builder, a: ir.Value) -> tuple[ir.Value, ir.Value]:
    """sqrt((1 - a) / 2) as a pair for a in [1/2, 1]: 1 - a and the halving are exact."""
    z = f.mul(f.sub(1.0, a), 0.5)
    r = f.sqrt(z)
    rr, rre = f.two_prod(r, r)
    return r, f.div(f.sub(f.sub(z, rr), rre), f.sel(f.cmp(">", r, 0.0), f.mul(r, 2.0), 1.0))


def arcsin(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """|x| <= 1/2: the series; beyond, pi/2 - 2 asin(sqrt((1 - |x|) / 2)); odd; NaN past 1."""
    f = Builder(b, module)
    k = constants()
    a = f.abs(x)
    nh, nt = _asin_small(f, a)
    near = f.add(nh, nt)
    rh, rl = _half_root(f, f.sel(f.cmp(">", a, 0.5), a, 0.5))
    sh, st = _asin_small(f, rh, rl)
    h, e = f.two_sum(k["pi_2"][0], f.mul(sh, -2.0))
    far = f.add(h, f.add(e, f.sub(k["pi_2"][1], f.mul(st, 2.0))))
    value = f.copysign(f.sel(f.cmp("<=", a, 0.5), near, far), x)
    return f.sel(f.cmp(">", a, 1.0), math.nan, f.sel(f.isnan(x), x, value))


def arccos(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """|x| <= 1/2: pi/2 - asin x; x > 1/2: 2 asin(sqrt((1 - x) / 2)); x < -1/2: pi minus that."""
    f = Builder(b, module)
    k = constants()
    a = f.abs(x)
    nh, nt = _asin_small(f, x)
    h, e = f.two_sum(k["pi_2"][0], f.neg(nh))
    near = f.add(h, f.add(e, f.sub(k["pi_2"][1], nt)))
    rh, rl = _half_root(f, f.sel(f.cmp(">", a, 0.5), a, 0.5))
    sh, st = _asin_small(f, rh, rl)
    positive = f.add(f.mul(sh, 2.0), f.mul(st, 2.0))
    h, e = f.two_sum(k["pi"][0], f.mul(sh, -2.0))
    negative = f.add(h, f.add(e, f.sub(k["pi"][1], f.mul(st, 2.0))))
    value = f.sel(f.cmp("<=", a, 0.5), near, f.sel(f.cmp(">", x, 0.0), positive, negative))
    return f.sel(f.cmp(">", a, 1.0), math.nan, f.sel(f.isnan(x), x, value))


