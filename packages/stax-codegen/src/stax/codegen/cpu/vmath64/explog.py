"""exp and log cores and what is built of them: exp2, expm1, sinh, cosh, log2, log10, log1p,
pow, arcsinh, arccosh, arctanh, logaddexp, logaddexp2."""

from __future__ import annotations

import functools
import math
from decimal import Decimal, localcontext

from llvmlite import ir

from .dd import F64, I1, I32, I64, LN2_HI, LN2_LO, Builder, constants, pair_of

# -- exp -----------------------------------------------------------------------------------------

EXP_TABLE_BITS = 6
EXP_SERIES = [1.0 / math.factorial(k) for k in range(2, 8)]  # e^r - 1 - r = r^2 (1/2 + r/6 + ...)


@functools.cache
def _exp_table() -> tuple[list[float], list[float]]:
    """2^(j/64) for j = 0..63 as pairs (60-digit decimal)."""
    with localcontext() as ctx:
        ctx.prec = 60
        size = 1 << EXP_TABLE_BITS
        pairs = [pair_of((Decimal(j) / size * Decimal(2).ln()).exp()) for j in range(size)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _exp_parts(f: Builder, xh: ir.Value, xl: ir.Value | float = 0.0) -> tuple[ir.Value, ir.Value, ir.Value]:
    """e^(xh + xl) = 2^n (s + t), a pair to about 2^-68, for |xh| <= 800 (callers clamp).

    N = rint(64 xh / ln 2) = 64 n + j; r = xh - N ln2/64 + xl as an exact pair (N LN2_HI/64 is
    exact, and so is the subtraction), |r| <= ln2/128; e^x = 2^n 2^(j/64) e^r with 2^(j/64) a
    table pair and e^r - 1 = r + r^2 P(r) to degree 7 (2^-70 here); T r is an exact product,
    so only terms below 2^-60 of the result round."""
    b = f.b
    size = 1 << EXP_TABLE_BITS
    nf = f.rint(f.mul(xh, size / math.log(2.0)))
    r1 = f.sub(xh, f.mul(nf, LN2_HI / size))
    rh, rl = f.two_sum(r1, f.neg(f.mul(nf, LN2_LO / size)))
    rh, rl = f.two_sum(rh, f.add(rl, xl))               # |rl| <= ulp(rh) / 2 from here on
    big_n = b.fptosi(nf, I64)
    j = b.and_(big_n, ir.Constant(I64, size - 1))
    his, los = _exp_table()
    th = f.gather(f.table("stax_exp_hi", his), j)
    tl = f.gather(f.table("stax_exp_lo", los), j)
    q = f.mul(f.mul(rh, rh), f.poly(rh, EXP_SERIES))
    a, ae = f.two_prod(th, rh)
    s, e = f.fast_two_sum(th, a)
    # e^rl = 1 + rl to 2^-100; T (q + rl e^rh) and tl e^r are the small terms
    t = f.add(f.add(e, ae), f.add(f.mul(th, f.add(q, f.mul(rl, f.add(1.0, rh)))),
                                  f.mul(tl, f.add(1.0, f.add(rh, q)))))
    s, t = f.fast_two_sum(s, t)
    return b.ashr(big_n, ir.Constant(I64, EXP_TABLE_BITS)), s, t


def _exp_scaled(f: Builder, xh: ir.Value, xl: ir.Value | float = 0.0) -> ir.Value:
    """e^(xh + xl), overflow to inf and underflow to 0 included, rounded once."""
    clamped = f.sel(f.cmp(">", xh, 800.0), 800.0, f.sel(f.cmp("<", xh, -800.0), -800.0, xh))
    n, s, t = _exp_parts(f, clamped, xl)
    return f.scale(f.add(s, t), n)


#: e^r = 1 + r + r^2/2 + r^3 Q(r) for |r| <= ln2/2: Q a degree-9 least-squares fit at 400
#: Chebyshev nodes weighted by r^3 (50-digit mpmath), r^3 Q within 2^-63.9 of its target
EXP_Q = [float.fromhex(h) for h in (
    "0x1.555555555555cp-3", "0x1.5555555555558p-5", "0x1.111111110eac7p-7",
    "0x1.6c16c16c14f7bp-10", "0x1.a01a01b4061c2p-13", "0x1.a01a01ada2138p-16",
    "0x1.71ddeef4b59f9p-19", "0x1.27e4cbd014f07p-22", "0x1.af6dbe196f4d1p-26",
    "0x1.1f8c33a4d1b57p-29")]
ROUNDING_SHIFT = 1.5 * 2.0 ** 52  # x + this - this: x rounded to an integer, |x| < 2^51


def exp(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """e^x without tables, 0.55 ulp measured: a vector gather costs more here than the dozen
    instructions a table saves (Zen 5: a gather of 8 doubles about as much as 10 FMAs).

    k = rint(x / ln2), r = x - k ln2 as a pair rh + rl (Cody–Waite: k LN2_HI exact),
    |r| <= ln2/2; e^r = s + e + rl s + rh^2/2 + rh^3 Q(rh) with s + e = 1 + rh exact and rh^2
    an exact product, so the only roundings of size are the last two additions; then 2^k by
    ``ldexp`` (once rounded, subnormal or inf at the ends). x is clamped to +-1000 (e^x is
    already 0 or inf), which keeps a NaN: it goes through the arithmetic (quieted)."""
    f = Builder(b, module)
    xc = f.sel(f.cmp(">", x, 1000.0), 1000.0, x)
    xc = f.sel(f.cmp("<", xc, -1000.0), -1000.0, xc)
    shifted = f.muladd(xc, 1.0 / math.log(2.0), ROUNDING_SHIFT)
    k = f.sub(shifted, ROUNDING_SHIFT)
    r1 = f.muladd(k, -LN2_HI, xc)                           # exact
    rh = f.muladd(k, -LN2_LO, r1)
    rl = f.muladd(k, -LN2_LO, f.sub(r1, rh))                # r1 - rh exact (Sterbenz)
    s, e = f.fast_two_sum(1.0, rh)
    r2, r2e = f.two_prod(rh, rh)
    small = f.muladd(r2e, 0.5, f.muladd(rl, s, e))          # e^(rh + rl) = e^rh (1 + rl)
    t = f.muladd(r2, 0.5, f.muladd(f.mul(r2, rh), f.poly(rh, EXP_Q), small))
    return f.ldexp(f.add(s, t), b.trunc(f.bits(shifted), I32))  # k's low bits: no poison at NaN


def exp2(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """2^x = e^(x ln 2) with x ln 2 as an exact pair: integer x gives exactly 2^x."""
    f = Builder(b, module)
    ln2h, ln2l = constants()["ln2"]
    clamped = f.sel(f.cmp(">", x, 1100.0), 1100.0, f.sel(f.cmp("<", x, -1100.0), -1100.0, x))
    zh, zl = f.dd_mul(clamped, 0.0, ln2h, ln2l)
    return f.sel(f.isnan(x), x, _exp_scaled(f, zh, zl))


EXPM1_SERIES = [1.0 / math.factorial(k) for k in range(2, 9)]   # |x| < 2^-10: to 2^-80


def expm1(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """|x| < 2^-10: x + x^2 P(x); beyond, 2^n s - 1 exactly by two-sum, then + 2^n t (the
    pair's 2^-68 is 2^-58 of the result at worst); below -40 the result is -1, above 40 e^x."""
    f = Builder(b, module)
    near = f.add(x, f.mul(f.mul(x, x), f.poly(x, EXPM1_SERIES)))
    clamped = f.sel(f.cmp(">", x, 40.0), 40.0, f.sel(f.cmp("<", x, -40.0), -40.0, x))
    n, s, t = _exp_parts(f, clamped)
    p = f.pow2(n)
    h, e = f.two_sum(f.mul(s, p), -1.0)
    far = f.add(h, f.add(e, f.mul(t, p)))
    result = f.sel(f.cmp("<", f.abs(x), 2.0 ** -10), near, far)
    result = f.sel(f.cmp(">", x, 40.0), _exp_scaled(f, f.sel(f.cmp(">", x, 800.0), 800.0, x)), result)
    result = f.sel(f.cmp("<", x, -40.0), -1.0, result)
    return f.sel(b.or_(f.isnan(x), f.cmp("==", x, 0.0)), x, result)  # expm1(-0.0) = -0.0


SINH_SERIES = [1.0 / math.factorial(2 * k + 1) for k in range(1, 4)]   # |x| < 2^-10: to 2^-80


def _hyperbolic(b: ir.IRBuilder, module: ir.Module, x: ir.Value, odd: bool) -> ir.Value:
    """Up to |x| = 20: (e^a -+ e^-a) / 2 with both exponentials as pairs (e^-a by a division
    with its exact remainder), so sinh's cancellation near 0 costs 2^-58 at worst above 2^-10,
    where sinh switches to its series; beyond 20, e^a / 2 alone (2^(n-1) (s + t), finite up to
    a = 710.47)."""
    f = Builder(b, module)
    a = f.abs(x)
    n, s, t = _exp_parts(f, f.sel(f.cmp(">", a, 800.0), 800.0, a))
    p = f.pow2(b.sub(n, ir.Constant(I64, 1)))          # valid where a <= 20 (n <= 29)
    inverse_p = f.pow2(b.sub(ir.Constant(I64, -1), n))
    ih = f.div(1.0, s)
    m, me = f.two_prod(ih, s)
    il = f.div(f.sub(f.sub(f.sub(1.0, m), me), f.mul(ih, t)), s)
    other_h, other_l = f.mul(ih, inverse_p), f.mul(il, inverse_p)   # e^-a / 2 as a pair
    if odd:
        other_h, other_l = f.neg(other_h), f.neg(other_l)
    h, e = f.two_sum(f.mul(s, p), other_h)
    mid = f.add(h, f.add(e, f.add(f.mul(t, p), other_l)))
    far = f.scale(f.add(s, t), b.sub(n, ir.Constant(I64, 1)))
    result = f.sel(f.cmp("<=", a, 20.0), mid, far)
    if odd:
        a2 = f.mul(a, a)
        near = f.add(a, f.mul(f.mul(a, a2), f.poly(a2, SINH_SERIES)))
        result = f.copysign(f.sel(f.cmp("<", a, 2.0 ** -10), near, result), x)  # sinh(-0.0) = -0.0
    return f.sel(f.isnan(x), x, result)


def sinh(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return _hyperbolic(b, module, x, True)


def cosh(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return _hyperbolic(b, module, x, False)


# -- log -----------------------------------------------------------------------------------------

LOG_TABLE_BITS = 7
SQRT_HALF_BITS = 0x3FE6A09E667F3BCD  # the bits of sqrt(1/2) rounded down


@functools.cache
def _log_table() -> tuple[list[float], list[float], list[float]]:
    """For each of 128 equal slices of the bit patterns from sqrt(1/2) to sqrt(2): a double
    c_j near 1 / (the slice's middle) and -log c_j as a pair (60-digit decimal). The slice that
    holds 1.0 gets c_j = 1 exactly, so log x near 1 is the series of x - 1 alone."""
    import struct

    def from_bits(n: int) -> float:
        return struct.unpack("<d", struct.pack("<Q", n))[0]

    shift = 52 - LOG_TABLE_BITS
    one = (0x3FF0000000000000 - SQRT_HALF_BITS) >> shift
    inverses, his, los = [], [], []
    with localcontext() as ctx:
        ctx.prec = 60
        for j in range(1 << LOG_TABLE_BITS):
            middle = from_bits(SQRT_HALF_BITS + (j << shift) + (1 << (shift - 1)))
            c = 1.0 if j == one else 1.0 / middle
            hi, lo = pair_of(-Decimal(c).ln())
            inverses.append(c)
            his.append(hi)
            los.append(lo)
    return inverses, his, los


LOG1P_SERIES = [(-1) ** (k + 1) / k for k in range(3, 11)]  # log1p(r) = r - r^2/2 + r^3 (1/3 - r/4 ...)


def _exponent_split(f: Builder, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """x = 2^e m for a positive finite x, m in [sqrt(1/2), sqrt(2)) read from the bits
    (subnormals scaled by 2^54 first); also the bits of m's binade offset from sqrt(1/2), whose
    top bits index the log table. Returns (e as an i64, m, offset)."""
    b = f.b

    def i(v: int) -> ir.Constant:
        return ir.Constant(I64, v)

    subnormal = b.icmp_unsigned("<", f.bits(x), i(1 << 52))    # +0 too; no flag at a NaN
    xs = f.sel(subnormal, f.mul(x, 2.0 ** 54), x)
    offset = b.sub(f.bits(xs), i(SQRT_HALF_BITS))
    e = b.ashr(offset, i(52))
    m = f.from_bits(b.sub(f.bits(xs), b.shl(e, i(52))))
    return b.sub(e, b.select(subnormal, i(54), i(0))), m, offset


def _log_parts(f: Builder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """log x = hi + lo for a positive finite x (subnormals included), about 2^-68 relative.

    x = 2^e m with m in [sqrt(1/2), sqrt(2)) read from the bits; j = the slice of m's bits;
    m c_j = p + pe exactly (two-prod) with p within 2^-7 of 1, so r = (p - 1) + pe exactly
    (Sterbenz); log x = e ln2 + (-log c_j) + r - r^2/2 + r^3 P(r), summed with two-sums so the
    large terms' roundings are kept."""
    b = f.b
    e, m, offset = _exponent_split(f, x)
    j = b.and_(b.lshr(offset, ir.Constant(I64, 52 - LOG_TABLE_BITS)),
               ir.Constant(I64, (1 << LOG_TABLE_BITS) - 1))
    inverses, his, los = _log_table()
    c = f.gather(f.table("stax_log_c", inverses), j)
    lh = f.gather(f.table("stax_log_hi", his), j)
    ll = f.gather(f.table("stax_log_lo", los), j)
    p, pe = f.two_prod(m, c)
    rh = f.sub(p, 1.0)                                   # exact
    sq, sqe = f.two_prod(rh, rh)
    cubic = f.mul(f.mul(rh, sq), f.poly(rh, LOG1P_SERIES))
    ef = b.sitofp(e, F64)
    a, ae = f.two_sum(f.mul(ef, LN2_HI), lh)             # e LN2_HI is exact
    a, be = f.two_sum(a, rh)
    a, ce = f.two_sum(a, f.mul(sq, -0.5))
    # pe is the rest of r: log1p(rh + pe) = log1p(rh) + pe (1 - rh) to 2^-60 of pe
    lo = f.add(f.add(ae, be), f.add(ce, f.add(f.mul(ef, LN2_LO), ll)))
    lo = f.add(lo, f.add(f.add(f.mul(sqe, -0.5), cubic), f.mul(pe, f.sub(1.0, rh))))
    return f.fast_two_sum(a, lo)


#: 2 atanh(s) = 2s + s^3 R(s^2) for |s| <= 0.1716: R a degree-6 least-squares fit at 400
#: Chebyshev nodes weighted by s^3 (50-digit mpmath), s^3 R within 2^-61.7 of its target
LOG_R = [float.fromhex(h) for h in (
    "0x1.55555555555dcp-1", "0x1.999999996d048p-2", "0x1.2492494fd1f70p-2",
    "0x1.c71c48388d7a7p-3", "0x1.74680c5a23d2ep-3", "0x1.39774b54b54ffp-3",
    "0x1.3090f34c780e3p-3")]


def _log_parts_fast(f: Builder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """log x = hi + lo for a positive finite x, about 2^-57 relative, |lo| within 1% of |hi| (not
    normalized), without table lookups (a gather costs more than the table saves).

    x = 2^e m, m in [sqrt(1/2), sqrt(2)), g = m - 1 exact; log m = 2 atanh(s) with
    s = g / (2 + g) as a pair: 2 + g = d + dl exactly, s the rounded quotient, its remainder
    g - s d exact, and 1 / (2 + g) = (1 - s) / 2, so the low part 2 sl = rest (1 - s) needs no
    second division; 2s + s^3 R(s^2) with |s| <= 0.1716, e LN2_HI + 2s by a fast two-sum
    (|e LN2_HI| >= 0.69 > |2s| or e = 0). Good for everything rounded once from it; pow and
    logaddexp, which magnify its error, use ``_log_parts``."""
    b = f.b
    e, m, _ = _exponent_split(f, x)
    g = f.sub(m, 1.0)                                  # exact (Sterbenz)
    d = f.add(g, 2.0)
    dl = f.sub(g, f.sub(d, 2.0))
    s = f.div(g, d)
    rest = f.muladd(f.neg(s), dl, f.remainder(g, s, d))   # g - s (d + dl), to 2^-100 of g
    s2 = f.mul(s, s)
    tail = f.muladd(f.mul(s, s2), f.poly(s2, LOG_R), f.muladd(f.neg(rest), s, rest))
    ef = b.sitofp(e, F64)
    a = f.mul(ef, LN2_HI)                              # exact
    hi = f.muladd(s, 2.0, a)
    lo = f.muladd(s, 2.0, f.sub(a, hi))                # exact
    return hi, f.add(lo, f.muladd(ef, LN2_LO, tail))


def _log_specials(f: Builder, x: ir.Value, value: ir.Value) -> ir.Value:
    """log's ends: +inf at +inf, -inf at +-0.0, NaN below zero and for NaN."""
    value = f.sel(f.cmp("==", x, math.inf), math.inf, value)
    value = f.sel(f.cmp("==", x, 0.0), -math.inf, value)
    value = f.sel(f.cmp("<", x, 0.0), math.nan, value)
    return f.sel(f.isnan(x), x, value)


def _safe_positive(f: Builder, x: ir.Value) -> ir.Value:
    """x where it is positive and finite, else 1 (the specials are selected afterwards)."""
    ok = f.b.and_(f.cmp(">", x, 0.0), f.cmp("<", x, math.inf))
    return f.sel(ok, x, 1.0)


def log(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """0.54 ulp measured. Where x is not positive and finite the core computes garbage from its
    bits (m lands in [sqrt(1/2), sqrt(2)) whatever they are: no poison, no flag raised) and a
    select puts log's end instead: +inf at +inf, -inf at +-0.0, NaN below zero, a NaN itself."""
    f = Builder(b, module)
    hi, lo = _log_parts_fast(f, x)
    positive = b.icmp_unsigned("<", b.sub(f.bits(x), ir.Constant(I64, 1)),
                               ir.Constant(I64, 0x7FF0000000000000 - 1))   # 0 < x < inf
    end = f.sel(f.cmp("==", x, 0.0), -math.inf, f.sel(f.cmp("<", x, 0.0), math.nan, x))
    return f.sel(positive, f.add(hi, lo), end)


def _log_scaled(name: str):
    def kernel(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
        f = Builder(b, module)
        hi, lo = _log_parts_fast(f, _safe_positive(f, x))
        ph, pl = f.dd_mul(hi, lo, *constants()[name])
        return _log_specials(f, x, f.add(ph, pl))
    return kernel


log2 = _log_scaled("inv_ln2")
log10 = _log_scaled("inv_ln10")


def _log1p_parts(f: Builder, uh: ir.Value, ul: ir.Value,
                 precise: bool = False) -> tuple[ir.Value, ir.Value]:
    """log(uh + ul) for uh > 0 finite and |ul| <= ulp(uh): log uh + ul / uh."""
    hi, lo = (_log_parts if precise else _log_parts_fast)(f, _safe_positive(f, uh))
    return f.fast_two_sum(hi, f.add(lo, f.div(ul, uh)))


def log1p(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """log(1 + x) with 1 + x as an exact pair; tiny x (and -0.0) give x."""
    f = Builder(b, module)
    uh, ul = f.two_sum(1.0, x)
    hi, lo = _log1p_parts(f, uh, ul)
    value = f.sel(f.cmp("<", f.abs(x), 2.0 ** -60), x, f.add(hi, lo))
    value = f.sel(f.cmp("==", x, math.inf), math.inf, value)
    value = f.sel(f.cmp("==", x, -1.0), -math.inf, value)
    value = f.sel(f.cmp("<", x, -1.0), math.nan, value)
    return f.sel(f.isnan(x), x, value)


def pow(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    """|x|^y = e^(y log|x|) with log|x| a pair (2^-68) and y log|x| an exact product plus the
    low part, so the exponent errs by 2^-56 absolute at most where the result is finite; C99's
    special cases as the float32 kernel (``vmath.via_double.pow_d``)."""
    f = Builder(b, module)
    ax, ay = f.abs(x), f.abs(y)
    lh, ll = _log_parts(f, _safe_positive(f, ax))
    zh, zl = f.dd_mul(y, 0.0, lh, ll)
    zl = f.sel(f.cmp("<", f.abs(zh), 1500.0), zl, 0.0)
    magnitude = _exp_scaled(f, f.sel(f.isnan(zh), 0.0, zh), zl)
    # the ends of |x|: 0 and inf give 0 or inf by the sign of y (log would be -inf, +inf)
    ends = f.sel(f.cmp(">", y, 0.0), f.sel(f.cmp("==", ax, 0.0), 0.0, math.inf),
                 f.sel(f.cmp("==", ax, 0.0), math.inf, 0.0))
    at_end = b.or_(f.cmp("==", ax, 0.0), f.cmp("==", ax, math.inf))
    magnitude = f.sel(at_end, ends, magnitude)
    # an infinite y: |x| > 1 grows, |x| < 1 vanishes (by the sign of y)
    grows = f.cmp(">", ax, 1.0)
    inf_y = f.sel(f.cmp(">", y, 0.0), f.sel(grows, math.inf, 0.0), f.sel(grows, 0.0, math.inf))
    magnitude = f.sel(f.cmp("==", ay, math.inf), inf_y, magnitude)
    integer = f.cmp("==", f.intrinsic("llvm.trunc", y), y)
    half = f.mul(y, 0.5)
    odd = b.and_(integer, f.b.fcmp_unordered("!=", f.intrinsic("llvm.trunc", half), half))
    odd = b.and_(odd, f.cmp("<", ay, 2.0 ** 53))
    sign_bit = b.icmp_signed("<", f.bits(x), ir.Constant(I64, 0))   # -0.0 too
    result = f.sel(b.and_(sign_bit, odd), f.neg(magnitude), magnitude)
    invalid = b.and_(b.and_(f.cmp("<", x, 0.0), f.cmp("<", ax, math.inf)),
                     b.and_(b.xor(integer, ir.Constant(I1, 1)), f.cmp("<", ay, math.inf)))
    result = f.sel(invalid, math.nan, result)
    result = f.sel(b.or_(f.isnan(x), f.isnan(y)), math.nan, result)
    one = b.or_(f.cmp("==", y, 0.0), f.cmp("==", x, 1.0))
    one = b.or_(one, b.and_(f.cmp("==", ax, 1.0), f.cmp("==", ay, math.inf)))
    return f.sel(one, 1.0, result)


# -- inverse hyperbolic functions and logaddexp --------------------------------------------------

def _root_pair(f: Builder, dh: ir.Value, dl: ir.Value) -> tuple[ir.Value, ir.Value]:
    """sqrt(dh + dl) as a pair (dh > 0): one Newton correction from the exact residual."""
    r = f.sqrt(dh)
    rr, rre = f.two_prod(r, r)
    return r, f.div(f.add(f.sub(f.sub(dh, rr), rre), dl), f.sel(f.cmp(">", r, 0.0), f.mul(r, 2.0), 1.0))


def _log_of_sum(f: Builder, a: ir.Value, rh: ir.Value, rl: ir.Value) -> ir.Value:
    """log(a + rh + rl) rounded once, for a + rh >= 1."""
    wh, wl = f.two_sum(a, rh)
    hi, lo = _log1p_parts(f, wh, f.add(wl, rl))
    return f.add(hi, lo)


def _log_twice(f: Builder, a: ir.Value) -> ir.Value:
    """log(2a) = log a + ln 2 for large a."""
    hi, lo = _log_parts_fast(f, _safe_positive(f, a))
    ln2h, ln2l = constants()["ln2"]
    h, e = f.two_sum(hi, ln2h)
    return f.add(h, f.add(e, f.add(lo, ln2l)))


def arcsinh(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """log(a + sqrt(a^2 + 1)) with the root a pair; log(2a) past 2^28; x itself below 2^-28."""
    f = Builder(b, module)
    a = f.abs(x)
    am = f.sel(f.cmp("<", a, 2.0 ** 28), a, 1.0)
    p, pe = f.two_prod(am, am)
    dh, dl = f.two_sum(p, 1.0)
    rh, rl = _root_pair(f, dh, f.add(dl, pe))
    value = f.sel(f.cmp("<", a, 2.0 ** 28), _log_of_sum(f, am, rh, rl), _log_twice(f, a))
    value = f.sel(f.cmp("<", a, 2.0 ** -28), a, f.sel(f.cmp("==", a, math.inf), math.inf, value))
    return f.sel(f.isnan(x), x, f.copysign(value, x))


def arccosh(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """log(x + sqrt(x^2 - 1)) with x^2 - 1 and the root as pairs; log(2x) past 2^28; NaN below 1."""
    f = Builder(b, module)
    xm = f.sel(b.and_(f.cmp(">=", x, 1.0), f.cmp("<", x, 2.0 ** 28)), x, 1.0)
    p, pe = f.two_prod(xm, xm)
    dh, dl = f.two_sum(p, -1.0)
    dl = f.add(dl, pe)
    rh, rl = _root_pair(f, f.sel(f.cmp(">", dh, 0.0), dh, 0.0), dl)
    value = f.sel(f.cmp("<", x, 2.0 ** 28), _log_of_sum(f, xm, rh, rl), _log_twice(f, x))
    value = f.sel(f.cmp("==", x, math.inf), math.inf, value)
    return f.sel(f.cmp("<", x, 1.0), math.nan, f.sel(f.isnan(x), x, value))


def arctanh(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """(log(1 + a) - log(1 - a)) / 2 with 1 +- a exact pairs: no cancellation near 0."""
    f = Builder(b, module)
    a = f.abs(x)
    am = f.sel(f.cmp("<", a, 1.0), a, 0.5)
    uh, ul = f.two_sum(1.0, am)
    vh, vl = f.two_sum(1.0, f.neg(am))
    p_hi, p_lo = _log1p_parts(f, uh, ul)
    m_hi, m_lo = _log1p_parts(f, vh, vl)
    h, e = f.two_sum(p_hi, f.neg(m_hi))
    value = f.mul(f.add(h, f.add(e, f.sub(p_lo, m_lo))), 0.5)
    value = f.sel(f.cmp("<", a, 2.0 ** -28), a, value)
    value = f.sel(f.cmp("==", a, 1.0), math.inf, f.sel(f.cmp(">", a, 1.0), math.nan, value))
    return f.sel(f.isnan(x), x, f.copysign(value, x))


def _logaddexp(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value, base2: bool) -> ir.Value:
    """max + log(1 + e^d), d = -|x - y| as an exact pair (log2 and 2^d for base 2, through
    ln 2 as a pair); equal infinities give that infinity, a NaN gives NaN."""
    f = Builder(b, module)
    k = constants()
    larger = f.sel(f.cmp(">", x, y), x, y)
    dh, dl = f.two_sum(x, f.neg(y))
    flip = f.cmp(">", dh, 0.0)
    dh, dl = f.sel(flip, f.neg(dh), dh), f.sel(flip, f.neg(dl), dl)
    finite = f.cmp(">", dh, -800.0)       # e^-800 is 0 in double; exp_parts' range
    dh, dl = f.sel(finite, dh, -800.0), f.sel(finite, dl, 0.0)
    if base2:
        dh, dl = f.dd_mul(dh, dl, *k["ln2"])
    n, s, t = _exp_parts(f, dh, dl)
    eh, el = f.scale(s, n), f.scale(t, n)
    uh, ul = f.two_sum(1.0, eh)
    hi, lo = _log1p_parts(f, uh, f.add(ul, el), precise=True)  # the sum may cancel to ~0
    if base2:
        hi, lo = f.dd_mul(hi, lo, *k["inv_ln2"])
    h, e = f.two_sum(larger, hi)
    value = f.add(h, f.add(e, lo))
    infinite = b.and_(f.cmp("==", x, y), f.cmp("==", f.abs(x), math.inf))
    value = f.sel(f.cmp("==", larger, math.inf), math.inf, f.sel(infinite, x, value))
    return f.sel(b.or_(f.isnan(x), f.isnan(y)), math.nan, value)


def logaddexp(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    return _logaddexp(b, module, x, y, False)


def logaddexp2(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    return _logaddexp(b, module, x, y, True)


