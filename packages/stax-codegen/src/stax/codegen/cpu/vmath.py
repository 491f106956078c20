"""Transcendental functions as straight-line LLVM IR (no libm call per element), float32.

``llvm.exp.*`` and friends become scalar libm calls, which keep a loop from vectorizing. These are
written with arithmetic, compares, selects and bit casts only, so LLVM widens them with the rest
of a fused loop. float32 functions run in float32 lanes where a fitted polynomial reaches the
bound (exp, log, tanh: twice the vector width), else in double rounded once; each has a measured
error bound against a higher-precision reference that the tests check (ARCHITECTURE.md §4).
float64 functions are in ``vmath64`` (double-double steps, within 1 ulp).

- ``exp64``/``log64``: the double kernels the float32 functions computed in double build on
  (exp: Cody–Waite, Taylor to degree 13, 1.1 double ulp; log: 2 atanh(f / (2 + f)), 2.0 double
  ulp), rounded once to float32: within 0.5 + 2^-28 float32 ulp.
- ``exp32`` 1.04 ulp, ``log32`` 0.89 ulp, ``tanh32`` 1.5 ulp (bounds 2); sin/cos 0.5/0.8 ulp
  over the whole float32 range (Payne–Hanek).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
from llvmlite import ir

F64 = ir.DoubleType()
I64 = ir.IntType(64)
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
LOG2E = 1.0 / math.log(2.0)


def _c(value: float) -> ir.Constant:
    return ir.Constant(F64, value)


def _i(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def _poly(b: ir.IRBuilder, x: ir.Value, coefficients: list[float]) -> ir.Value:
    """Horner: c0 + x (c1 + x (c2 + ...))."""
    acc = _c(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = b.fadd(b.fmul(acc, x), _c(c))
    return acc


def _pow2(b: ir.IRBuilder, n: ir.Value) -> ir.Value:
    """2^n as a double for an i64 n in [-1022, 1023]."""
    return b.bitcast(b.shl(b.add(n, _i(1023)), _i(52)), F64)


def _rint(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return b.call(module.declare_intrinsic("llvm.rint", [F64]), [x])


def exp64(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    clamped = b.select(b.fcmp_ordered(">", x, _c(710.0)), _c(710.0),
                       b.select(b.fcmp_ordered("<", x, _c(-746.0)), _c(-746.0), x))
    nf = _rint(b, module, b.fmul(clamped, _c(LOG2E)))
    r = b.fsub(b.fsub(clamped, b.fmul(nf, _c(LN2_HI))), b.fmul(nf, _c(LN2_LO)))
    p = _poly(b, r, [1.0 / math.factorial(k) for k in range(14)])
    n = b.fptosi(nf, I64)
    half = b.ashr(n, _i(1))  # 2^n = 2^half * 2^(n - half): both factors stay normal
    scaled = b.fmul(b.fmul(p, _pow2(b, half)), _pow2(b, b.sub(n, half)))
    result = b.select(b.fcmp_ordered(">", x, _c(709.782712893384)), _c(math.inf), scaled)
    result = b.select(b.fcmp_ordered("<", x, _c(-745.1332191019412)), _c(0.0), result)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)  # NaN in, NaN out


F32 = ir.FloatType()
I32 = ir.IntType(32)


@functools.cache
def _fit(name: str, degree: int) -> tuple[float, ...]:
    """Power-basis coefficients, rounded to float32, of a near-minimax polynomial (Chebyshev
    interpolation, computed in float64 here once) for the float32 kernels below:

    - ``exp``: e^r on |r| <= ln2/2 (interpolation error ~2e-9, a thirtieth of a float32 ulp);
    - ``tanh_small``: (tanh(x) - x) / x^3 as a polynomial in x^2 on |x| <= 0.55;
    - ``log1p_tail``: (log1p(f) - f) / f^2 on sqrt(1/2) - 1 <= f < sqrt(2) - 1.
    """
    from numpy.polynomial import Chebyshev

    if name == "exp":
        fit = Chebyshev.interpolate(np.exp, degree, domain=[-0.35, 0.35])
    elif name == "log1p_tail":
        def h(f: np.ndarray) -> np.ndarray:  # (log1p(f) - f) / f^2, its series near 0
            with np.errstate(all="ignore"):
                direct = (np.log1p(f) - f) / (f * f)
            series = sum((-1) ** (k + 1) / (k + 2) * f ** k for k in range(12))
            return np.where(np.abs(f) < 1e-2, series, direct)
        fit = Chebyshev.interpolate(h, degree, domain=[SQRT_HALF - 1.0, SQRT_TWO - 1.0])
    else:
        def g(s: np.ndarray) -> np.ndarray:  # s = x^2; the series near 0 avoids cancellation
            x = np.sqrt(s)
            with np.errstate(all="ignore"):
                direct = (np.tanh(x) - x) / (x * s)
            series = sum(c * s ** k for k, c in enumerate(TANH_SERIES[1:9]))
            return np.where(s < 1e-3, series, direct)
        fit = Chebyshev.interpolate(g, degree, domain=[0.0, 0.3025])
    return tuple(float(np.float32(c)) for c in fit.convert(kind=np.polynomial.Polynomial).coef)


def _fmuladd32(b: ir.IRBuilder, module: ir.Module) -> Callable[[ir.Value, ir.Value, ir.Value], ir.Value]:
    """a * b + c, fused where the CPU has FMA (``llvm.fmuladd``): only ever used inside these
    functions' own polynomials, whose error bounds are measured with it, never on user arithmetic."""
    fn = module.declare_intrinsic("llvm.fmuladd", [F32], ir.FunctionType(F32, [F32] * 3))
    return lambda x, y, z: b.call(fn, [x, y, z])


def _horner32(fma: Callable, x: ir.Value, coefficients: Sequence[float]) -> ir.Value:
    acc: ir.Value = ir.Constant(F32, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = fma(acc, x, ir.Constant(F32, c))
    return acc


def exp32(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """float32 exp in float32 (twice the vector width of the double path).

    x is clamped to [-104, 89] (minnum/maxnum: one instruction each); n = rint(x log2 e); Cody–Waite
    reduction r = x - n ln2 with a 9-bit ln2_hi, so n ln2_hi is exact with or without FMA; e^r by a
    degree-6 fitted polynomial; 2^n applied in two steps so subnormal results are right. The
    clamp makes the ends come out of the arithmetic itself: 89 gives 2^64 2^64 = inf, -104 gives
    2^-75 2^-75 p, below half the smallest subnormal, = 0. Measured: 1.1 ulp (bound 2).
    """
    def c(v: float) -> ir.Constant:
        return ir.Constant(F32, v)

    def i(v: int) -> ir.Constant:
        return ir.Constant(I32, v)

    fma = _fmuladd32(b, module)
    minnum = module.declare_intrinsic("llvm.minnum", [F32], ir.FunctionType(F32, [F32] * 2))
    maxnum = module.declare_intrinsic("llvm.maxnum", [F32], ir.FunctionType(F32, [F32] * 2))
    clamped = b.call(minnum, [b.call(maxnum, [x, c(-104.0)]), c(89.0)])
    nf = b.call(module.declare_intrinsic("llvm.rint", [F32]), [b.fmul(clamped, c(LOG2E))])
    r = fma(nf, c(-0.693359375), clamped)
    r = fma(nf, c(2.12194440e-4), r)
    p = _horner32(fma, r, _fit("exp", 6))
    n = b.fptosi(nf, I32)
    half = b.ashr(n, i(1))

    def pow2(e: ir.Value) -> ir.Value:
        return b.bitcast(b.shl(b.add(e, i(127)), i(23)), F32)

    scaled = b.fmul(b.fmul(p, pow2(half)), pow2(b.sub(n, half)))
    return b.select(b.fcmp_unordered("uno", x, x), x, scaled)  # NaN in, NaN out


SQRT_HALF = math.sqrt(0.5)
SQRT_TWO = math.sqrt(2.0)


def log32(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """float32 log in float32 lanes (twice the vector width of the double path, no division).

    x = 2^e m with m in [sqrt(1/2), sqrt(2)) from the bits (subnormals scaled by 2^23 first),
    f = m - 1 exactly; log m = f + f^2 g(f) with g a fitted degree-10 polynomial (one fused
    multiply-add keeps f exact in the sum); e ln2 with a 16-bit ln2_hi (exact products).
    Measured: 0.87 ulp (bound 2; NumPy's own float32 log promises 4)."""
    def c(v: float) -> ir.Constant:
        return ir.Constant(F32, v)

    def i(v: int) -> ir.Constant:
        return ir.Constant(I32, v)

    fma = _fmuladd32(b, module)
    subnormal = b.fcmp_ordered("<", x, c(1.1754943508222875e-38))
    xs = b.select(subnormal, b.fmul(x, c(2.0 ** 23)), x)
    offset = b.sub(b.bitcast(xs, I32), i(0x3F3504F3))                 # bits of sqrt(1/2)
    e = b.ashr(offset, i(23))
    m = b.bitcast(b.sub(b.bitcast(xs, I32), b.shl(e, i(23))), F32)
    e = b.sub(e, b.select(subnormal, i(23), i(0)))
    f = b.fsub(m, c(1.0))
    f2 = b.fmul(f, f)
    log_m = fma(f2, _horner32(fma, f, _fit("log1p_tail", 10)), f)
    ef = b.sitofp(e, F32)
    value = fma(ef, c(0.693145751953125), fma(ef, c(1.428606765330187e-06), log_m))
    value = b.select(b.fcmp_ordered("==", x, c(math.inf)), c(math.inf), value)
    value = b.select(b.fcmp_ordered("==", x, c(0.0)), c(-math.inf), value)
    value = b.select(b.fcmp_ordered("<", x, c(0.0)), c(math.nan), value)
    return b.select(b.fcmp_unordered("uno", x, x), x, value)


def _exp32_at_least_one(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """exp32 for 0 <= x (tanh's e^(2|x|)): no subnormal results, so 2^n in one step; x above 89
    is clamped there, where n = 128 makes 2^n (exponent field 255) infinite, as e^x is. NaN goes
    through as NaN (the caller decides what a NaN gives)."""
    def c(v: float) -> ir.Constant:
        return ir.Constant(F32, v)

    fma = _fmuladd32(b, module)
    minnum = module.declare_intrinsic("llvm.minnum", [F32], ir.FunctionType(F32, [F32] * 2))
    clamped = b.call(minnum, [x, c(89.0)])
    nf = b.call(module.declare_intrinsic("llvm.rint", [F32]), [b.fmul(clamped, c(LOG2E))])
    r = fma(nf, c(-0.693359375), clamped)
    r = fma(nf, c(2.12194440e-4), r)
    p = _horner32(fma, r, _fit("exp", 6))
    scale = b.bitcast(b.shl(b.add(b.fptosi(nf, I32), ir.Constant(I32, 127)), ir.Constant(I32, 23)),
                      F32)
    return b.fmul(p, scale)


def _tanh_series(terms: int) -> list[float]:
    """Taylor coefficients of tanh(x) / x in powers of x^2: 2^2n (2^2n - 1) B_2n / (2n)!."""
    from fractions import Fraction

    bernoulli = [Fraction(1)]
    for m in range(1, 2 * terms + 2):
        bernoulli.append(-sum(Fraction(math.comb(m + 1, k)) * bernoulli[k] for k in range(m))
                         / (m + 1))
    return [float(2 ** (2 * n) * (2 ** (2 * n) - 1) * bernoulli[2 * n] / math.factorial(2 * n))
            for n in range(1, terms + 1)]


TANH_SERIES = _tanh_series(11)


def tanh32(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """float32 tanh in float32: 1 - 2 / (e^(2|x|) + 1) with the sign of x where that has no
    cancellation (|x| >= 0.55), and below it x + x^3 P(x^2) with P a degree-5 fitted polynomial
    (the correction is at most a tenth of x, so its rounding hardly shows). |x| > 9 gives +-1
    from the arithmetic itself (e^18 makes 2 / (e + 1) vanish against 1). Measured: 1.5 ulp
    (bound 2)."""
    def c(v: float) -> ir.Constant:
        return ir.Constant(F32, v)

    fma = _fmuladd32(b, module)
    fabs = module.declare_intrinsic("llvm.fabs", [F32])
    copysign = module.declare_intrinsic("llvm.copysign", [F32], ir.FunctionType(F32, [F32, F32]))
    ax = b.call(fabs, [x])
    big_e = _exp32_at_least_one(b, module, b.fmul(ax, c(2.0)))
    large = b.fsub(c(1.0), b.fdiv(c(2.0), b.fadd(big_e, c(1.0))))
    large = b.call(copysign, [large, x])
    x2 = b.fmul(x, x)
    series = _horner32(fma, x2, _fit("tanh_small", 5))
    small = b.fmul(x, fma(x2, series, c(1.0)))  # x (1 + x^2 P(x^2)): a product keeps -0.0
    t = b.select(b.fcmp_ordered("<", ax, c(0.55)), small, large)
    return b.select(b.fcmp_unordered("uno", x, x), x, t)


def log64(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    subnormal = b.fcmp_ordered("<", x, _c(2.2250738585072014e-308))
    xs = b.select(subnormal, b.fmul(x, _c(2.0 ** 54)), x)
    bits = b.bitcast(xs, I64)
    e = b.sub(b.and_(b.lshr(bits, _i(52)), _i(0x7FF)), _i(1023))
    e = b.select(subnormal, b.sub(e, _i(54)), e)
    m = b.bitcast(b.or_(b.and_(bits, _i((1 << 52) - 1)), _i(1023 << 52)), F64)  # [1, 2)
    big = b.fcmp_ordered(">", m, _c(math.sqrt(2.0)))
    m = b.select(big, b.fmul(m, _c(0.5)), m)
    e = b.select(big, b.add(e, _i(1)), e)
    f = b.fsub(m, _c(1.0))
    s = b.fdiv(f, b.fadd(f, _c(2.0)))
    s2 = b.fmul(s, s)
    series = _poly(b, s2, [2.0 / (2 * k + 1) for k in range(11)])  # 2 atanh(s) / s
    log_m = b.fmul(s, series)
    ef = b.sitofp(e, F64)
    result = b.fadd(b.fmul(ef, _c(LN2_HI)), b.fadd(log_m, b.fmul(ef, _c(LN2_LO))))
    result = b.select(b.fcmp_ordered("==", x, _c(math.inf)), _c(math.inf), result)
    result = b.select(b.fcmp_ordered("==", x, _c(0.0)), _c(-math.inf), result)
    result = b.select(b.fcmp_ordered("<", x, _c(0.0)), _c(math.nan), result)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


FUNCTIONS = {"exp": exp64, "log": log64}


# -- sin and cos (float32) -----------------------------------------------------------------------

def _two_over_pi_chunks(count: int) -> list[int]:
    """The binary digits of 2/pi in 24-bit chunks, computed with integers (Machin's formula)."""
    bits = 24 * count + 64
    scale = 1 << (bits + 8)

    def arctan_inverse(k: int) -> int:  # arctan(1/k) * scale
        total, term, n, sign = 0, scale // k, 1, 1
        while term:
            total += sign * (term // n)
            term //= k * k
            n += 2
            sign = -sign
        return total
    pi = 16 * arctan_inverse(5) - 4 * arctan_inverse(239)
    two_over_pi = (2 * scale * (1 << bits)) // pi  # 2/pi * 2^bits
    return [(two_over_pi >> (bits - 24 * (i + 1))) & 0xFFFFFF for i in range(count)]


TWO_OVER_PI_24 = _two_over_pi_chunks(13)
PIO2_HI = 1.5707963267948966
PIO2_LO = 6.123233995736766e-17


def _reduce_pio2(b: ir.IRBuilder, module: ir.Module, ax: ir.Value) -> tuple[ir.Value, ir.Value]:
    """|x| (float32, finite) = (4j + q + r) pi/2 with q in 0..3 and |r| <= 1/2 + tiny: returns
    (q, y = r pi/2 in double). Payne–Hanek for every input: |x| = m 2^E with m a 24-bit integer;
    m times 24-bit chunks of 2/pi are exact in double; chunks whose product is a multiple of 4
    are skipped (the index comes from E: a gather from a 13-entry table); five chunks keep the
    fraction to 2^-70 absolute, past the worst cancellation a float32 can reach near a multiple
    of pi/2. Sums are reduced mod 4 exactly, the last additions as an exact two-sum."""
    def i(v: int) -> ir.Constant:
        return ir.Constant(I32, v)

    floor = module.declare_intrinsic("llvm.floor", [F64])
    bits = b.bitcast(ax, I32)
    biased = b.lshr(bits, i(23))
    subnormal = b.icmp_signed("==", biased, i(0))
    m = b.select(subnormal, b.and_(bits, i(0x7FFFFF)), b.or_(b.and_(bits, i(0x7FFFFF)), i(0x800000)))
    e = b.sub(b.select(subnormal, i(1), biased), i(150))            # |x| = m 2^e
    first = b.select(b.icmp_signed("<", e, i(2)), i(0), b.sdiv(b.sub(e, i(2)), i(24)))
    md = b.uitofp(m, F64)

    def pow2(k: ir.Value) -> ir.Value:  # 2^k as a double, k in [-1022, 1023]
        return b.bitcast(b.shl(b.zext(b.add(k, i(1023)), I64), _i(52)), F64)

    def mod4(v: ir.Value) -> ir.Value:  # exact: v carries at most 53 significant bits
        return b.fsub(v, b.fmul(_c(4.0), b.call(floor, [b.fmul(v, _c(0.25))])))

    # m 2^(e - 24 (first + 1)), exact; chunk j scaled by 2^(-24 j) (exact constants), so each
    # part is one exact product: a 24-bit m times a 24-bit chunk
    scaled = b.fmul(md, pow2(b.sub(e, b.mul(b.add(first, i(1)), i(24)))))
    parts = []
    for j in range(5):
        # the chunk first + j: first is 0..4 over the float32 range (0 below 2^50), so a select
        # among constants, cheaper than a gather from a table
        chunk: ir.Value = _c(TWO_OVER_PI_24[j] * 2.0 ** (-24 * j))
        for k in range(1, 5):
            chunk = b.select(b.icmp_signed("==", first, i(k)),
                             _c(TWO_OVER_PI_24[j + k] * 2.0 ** (-24 * j)), chunk)
        parts.append(b.fmul(scaled, chunk))
    head = mod4(b.fadd(mod4(parts[0]), mod4(parts[1])))
    n = b.call(module.declare_intrinsic("llvm.rint", [F64]), [b.fadd(head, parts[2])])
    a = b.fsub(head, n)                                               # exact
    hi = b.fadd(a, parts[2])                                          # two-sum: hi + lo = a + p2
    v = b.fsub(hi, a)
    lo = b.fadd(b.fsub(a, b.fsub(hi, v)), b.fsub(parts[2], v))
    lo = b.fadd(lo, b.fadd(parts[3], parts[4]))
    y = b.fadd(b.fmul(hi, _c(PIO2_HI)), b.fadd(b.fmul(lo, _c(PIO2_HI)), b.fmul(hi, _c(PIO2_LO))))
    q = b.and_(b.fptosi(n, I32), i(3))
    return q, y


def _sin_cos_poly(b: ir.IRBuilder, y: ir.Value) -> tuple[ir.Value, ir.Value]:
    """sin y and cos y for |y| <= pi/4 + tiny, Taylor series to y^11 / y^12 (truncation 7e-12,
    far below a float32 ulp)."""
    y2 = b.fmul(y, y)
    sin_series = _poly(b, y2, [(-1) ** k / math.factorial(2 * k + 1) for k in range(6)])
    cos_series = _poly(b, y2, [(-1) ** k / math.factorial(2 * k) for k in range(7)])
    return b.fmul(y, sin_series), cos_series


def _sincos32(b: ir.IRBuilder, module: ir.Module, x: ir.Value, want: str) -> ir.Value:
    """float32 sin/cos, computed in double and rounded once. Measured: 0.5 ulp (bound 1) over
    the whole float32 range; NaN and +-Inf give NaN, sin(-0.0) is -0.0, as NumPy."""
    def i(v: int) -> ir.Constant:
        return ir.Constant(I32, v)

    fabs = module.declare_intrinsic("llvm.fabs", [F32])
    ax = b.call(fabs, [x])
    q, y = _reduce_pio2(b, module, ax)
    s, c = _sin_cos_poly(b, y)
    # sin(q pi/2 + y) over q = 0..3 is s, c, -s, -c; cos is sin one quarter turn on
    q = b.and_(b.add(q, i(1 if want == "cos" else 0)), i(3))
    base = b.select(b.trunc(q, ir.IntType(1)), c, s)
    negate = b.icmp_unsigned(">=", q, i(2))
    value = b.select(negate, b.fneg(base), base)
    result = b.fptrunc(value, F32)
    if want == "sin":  # sin(-|x|) = -sin(|x|), and sin(-0.0) = -0.0
        negative = b.icmp_signed("<", b.bitcast(x, I32), i(0))
        result = b.select(negative, b.fneg(result), result)
    finite = b.fcmp_ordered("<", ax, ir.Constant(F32, math.inf))
    return b.select(finite, result, ir.Constant(F32, math.nan))


def sin32(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return _sincos32(b, module, x, "sin")


def cos32(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return _sincos32(b, module, x, "cos")


# -- float32 functions computed in double and rounded once ---------------------------------------
# A float32 argument is exact in double; exp64/log64 err by about 2 double ulps, which after the
# one rounding to float32 leaves results within 0.5 + 2^-28 float32 ulp — except where a formula
# cancels, which each function avoids with a short series near zero (keeping the sign of -0.0).

def _series_times_x(b: ir.IRBuilder, x: ir.Value, coefficients: list[float]) -> ir.Value:
    """x (c0 + c1 x + c2 x^2 + ...): a product keeps the sign of a zero x."""
    return b.fmul(x, _poly(b, x, coefficients))


def _small(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    fabs = module.declare_intrinsic("llvm.fabs", [F64])
    return b.fcmp_ordered("<", b.call(fabs, [x]), _c(2.0 ** -20))


def log2_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return b.fmul(log64(b, module, x), _c(1.0 / math.log(2.0)))


def log10_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return b.fmul(log64(b, module, x), _c(1.0 / math.log(10.0)))


def log1p_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    near = _series_times_x(b, x, [1.0, -1.0 / 2, 1.0 / 3, -1.0 / 4])
    return b.select(_small(b, module, x), near, log64(b, module, b.fadd(x, _c(1.0))))


def expm1_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    near = _series_times_x(b, x, [1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24])
    return b.select(_small(b, module, x), near, b.fsub(exp64(b, module, x), _c(1.0)))


def exp2_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return exp64(b, module, b.fmul(x, _c(math.log(2.0))))


def sinh_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    e = exp64(b, module, x)
    far = b.fmul(b.fsub(e, b.fdiv(_c(1.0), e)), _c(0.5))
    near = b.fmul(x, _poly(b, b.fmul(x, x), [1.0, 1.0 / 6, 1.0 / 120]))  # x (1 + x^2/6 + ...)
    return b.select(_small(b, module, x), near, far)


def cosh_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    e = exp64(b, module, x)
    return b.fmul(b.fadd(e, b.fdiv(_c(1.0), e)), _c(0.5))


def cbrt_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    fabs = module.declare_intrinsic("llvm.fabs", [F64])
    copysign = module.declare_intrinsic("llvm.copysign", [F64], ir.FunctionType(F64, [F64, F64]))
    magnitude = exp64(b, module, b.fmul(log64(b, module, b.call(fabs, [x])), _c(1.0 / 3.0)))
    return b.call(copysign, [magnitude, x])  # cbrt(-0.0) = -0.0; NaN stays NaN


VIA_DOUBLE = {"log2": log2_d, "log10": log10_d, "log1p": log1p_d, "expm1": expm1_d,
              "exp2": exp2_d, "sinh": sinh_d, "cosh": cosh_d, "cbrt": cbrt_d}


def hypot_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    """sqrt(x^2 + y^2) in double for float32 operands (squares exact, no overflow); an infinite
    operand gives +inf even against a NaN (C99)."""
    fabs = module.declare_intrinsic("llvm.fabs", [F64])
    sqrt = module.declare_intrinsic("llvm.sqrt", [F64])
    value = b.call(sqrt, [b.fadd(b.fmul(x, x), b.fmul(y, y))])
    infinite = b.or_(b.fcmp_ordered("==", b.call(fabs, [x]), _c(math.inf)),
                     b.fcmp_ordered("==", b.call(fabs, [y]), _c(math.inf)))
    return b.select(infinite, _c(math.inf), value)


def pow_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    """x^y for float32 operands in double: exp(y log|x|) with C99's special cases — y = 0 or
    x = 1 give 1 (even with a NaN), a negative x needs an integer y (odd: the sign stays),
    zeros and infinities by the sign and parity of y, |x| = 1 against an infinite y gives 1."""
    fabs = module.declare_intrinsic("llvm.fabs", [F64])
    trunc = module.declare_intrinsic("llvm.trunc", [F64])
    ax, ay = b.call(fabs, [x]), b.call(fabs, [y])
    integer = b.fcmp_ordered("==", b.call(trunc, [y]), y)
    half = b.fmul(y, _c(0.5))
    odd = b.and_(integer, b.fcmp_unordered("!=", b.call(trunc, [half]), half))
    magnitude = exp64(b, module, b.fmul(y, log64(b, module, ax)))  # |x|^y, zeros/infs included
    negative_x = b.fcmp_ordered("<", x, _c(0.0))
    sign_bit = b.icmp_signed("<", b.bitcast(x, I64), _i(0))  # -0.0 too: pow(-0.0, -1) = -inf
    signed = b.select(b.and_(sign_bit, odd), b.fneg(magnitude), magnitude)
    # a negative finite x and a non-integer finite y: NaN
    invalid = b.and_(b.and_(negative_x, b.fcmp_ordered("<", ax, _c(math.inf))),
                     b.and_(b.xor(integer, ir.Constant(ir.IntType(1), 1)),
                            b.fcmp_ordered("<", ay, _c(math.inf))))
    result = b.select(invalid, _c(math.nan), signed)
    # zero x: sign survives only for odd y (log gives -inf, exp then 0 or inf: magnitude is right)
    # |x| = 1 and y = +-inf: 1 (log|x| = 0 times inf would be NaN)
    one = b.or_(b.fcmp_ordered("==", y, _c(0.0)), b.fcmp_ordered("==", x, _c(1.0)))
    one = b.or_(one, b.and_(b.fcmp_ordered("==", ax, _c(1.0)),
                            b.fcmp_ordered("==", ay, _c(math.inf))))
    return b.select(one, _c(1.0), result)


# -- inverse trigonometric and hyperbolic functions, and tan (float32, in double) ----------------

def _abs_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return b.call(module.declare_intrinsic("llvm.fabs", [F64]), [x])


def _copysign_d(b: ir.IRBuilder, module: ir.Module, magnitude: ir.Value, sign: ir.Value) -> ir.Value:
    fn = module.declare_intrinsic("llvm.copysign", [F64], ir.FunctionType(F64, [F64, F64]))
    return b.call(fn, [magnitude, sign])


def _atan_positive(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    """atan of a >= 0 (inf included): a > 1 folds to pi/2 - atan(1/a); above tan(pi/12) the
    argument moves by pi/6 (atan t = pi/6 + atan((t sqrt3 - 1) / (t + sqrt3))); the odd Taylor
    series to t^23 then errs by 2e-16 at most."""
    invert = b.fcmp_ordered(">", a, _c(1.0))
    t = b.select(invert, b.fdiv(_c(1.0), a), a)
    shifted = b.fcmp_ordered(">", t, _c(math.tan(math.pi / 12)))
    sqrt3 = math.sqrt(3.0)
    moved = b.fdiv(b.fsub(b.fmul(t, _c(sqrt3)), _c(1.0)), b.fadd(t, _c(sqrt3)))
    u = b.select(shifted, moved, t)
    series = _poly(b, b.fmul(u, u), [(-1) ** k / (2 * k + 1) for k in range(12)])
    value = b.fadd(b.fmul(u, series), b.select(shifted, _c(math.pi / 6), _c(0.0)))
    return b.select(invert, b.fsub(_c(math.pi / 2), value), value)


def atan_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return _copysign_d(b, module, _atan_positive(b, _abs_d(b, module, x)), x)


def asin_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """atan(x / sqrt((1 - x)(1 + x))): exact products for a float32 x; NaN beyond |x| = 1."""
    sqrt = module.declare_intrinsic("llvm.sqrt", [F64])
    root = b.call(sqrt, [b.fmul(b.fsub(_c(1.0), x), b.fadd(_c(1.0), x))])
    return atan_d(b, module, b.fdiv(x, root))


def acos_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """2 atan(sqrt((1 - x) / (1 + x)))."""
    sqrt = module.declare_intrinsic("llvm.sqrt", [F64])
    ratio = b.call(sqrt, [b.fdiv(b.fsub(_c(1.0), x), b.fadd(_c(1.0), x))])
    return b.fmul(_c(2.0), _atan_positive(b, ratio))


def asinh_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    sqrt = module.declare_intrinsic("llvm.sqrt", [F64])
    a = _abs_d(b, module, x)
    far = log64(b, module, b.fadd(a, b.call(sqrt, [b.fadd(b.fmul(a, a), _c(1.0))])))
    near = b.fmul(a, _poly(b, b.fmul(a, a), [1.0, -1.0 / 6, 3.0 / 40, -5.0 / 112]))
    small = b.fcmp_ordered("<", a, _c(2.0 ** -8))
    return _copysign_d(b, module, b.select(small, near, far), x)


def acosh_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    sqrt = module.declare_intrinsic("llvm.sqrt", [F64])
    root = b.call(sqrt, [b.fmul(b.fsub(x, _c(1.0)), b.fadd(x, _c(1.0)))])
    value = log64(b, module, b.fadd(x, root))  # (x - 1)(x + 1) is positive again below -1
    return b.select(b.fcmp_unordered("<", x, _c(1.0)), _c(math.nan), value)


def atanh_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    far = b.fmul(_c(0.5), log64(b, module, b.fdiv(b.fadd(_c(1.0), x), b.fsub(_c(1.0), x))))
    near = b.fmul(x, _poly(b, b.fmul(x, x), [1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7]))
    small = b.fcmp_ordered("<", _abs_d(b, module, x), _c(2.0 ** -8))
    return b.select(small, near, far)


VIA_DOUBLE.update({"arctan": atan_d, "arcsin": asin_d, "arccos": acos_d, "arcsinh": asinh_d,
                   "arccosh": acosh_d, "arctanh": atanh_d})


def atan2_d(b: ir.IRBuilder, module: ir.Module, y: ir.Value, x: ir.Value) -> ir.Value:
    """atan2 by C99: atan(|y| / |x|) folded by the sign bit of x (so -0.0 counts as negative)
    and given y's sign; both zeros and both infinities have their own quadrant angles."""
    ay, ax = _abs_d(b, module, y), _abs_d(b, module, x)
    x_negative = b.icmp_signed("<", b.bitcast(x, I64), _i(0))
    base = _atan_positive(b, b.fdiv(ay, ax))
    zeros = b.and_(b.fcmp_ordered("==", ay, _c(0.0)), b.fcmp_ordered("==", ax, _c(0.0)))
    infinities = b.and_(b.fcmp_ordered("==", ay, _c(math.inf)),
                        b.fcmp_ordered("==", ax, _c(math.inf)))
    base = b.select(zeros, _c(0.0), b.select(infinities, _c(math.pi / 4), base))
    folded = b.select(x_negative, b.fsub(_c(math.pi), base), base)
    return _copysign_d(b, module, folded, y)


def tan32(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """float32 tan from the sin/cos reduction: s/c, or -c/s in odd quadrants; odd in x."""
    fabs = module.declare_intrinsic("llvm.fabs", [F32])
    ax = b.call(fabs, [x])
    q, y = _reduce_pio2(b, module, ax)
    s, c = _sin_cos_poly(b, y)
    odd = b.trunc(q, ir.IntType(1))
    value = b.select(odd, b.fdiv(b.fneg(c), s), b.fdiv(s, c))
    result = b.fptrunc(value, F32)
    negative = b.icmp_signed("<", b.bitcast(x, I32), ir.Constant(I32, 0))
    result = b.select(negative, b.fneg(result), result)
    finite = b.fcmp_ordered("<", ax, ir.Constant(F32, math.inf))
    return b.select(finite, result, ir.Constant(F32, math.nan))


TANH_SERIES_64 = _tanh_series(24)


def tanh64(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """float64 tanh: below |x| = 0.55 the odd Taylor series to x^47 (each term about a tenth of
    the last); above, 1 - 2 / (e^(2|x|) + 1) with the sign of x, where the result is at least
    0.5 so exp's error (1.1 ulp) is halved; past 19.1 the arithmetic itself gives +-1.
    Measured: 1.5 ulp (bound 3)."""
    fabs = module.declare_intrinsic("llvm.fabs", [F64])
    ax = b.call(fabs, [x])
    big_e = exp64(b, module, b.fmul(ax, _c(2.0)))
    large = b.fsub(_c(1.0), b.fdiv(_c(2.0), b.fadd(big_e, _c(1.0))))
    large = _copysign_d(b, module, large, x)
    x2 = b.fmul(x, x)
    series = _poly(b, x2, [1.0, *TANH_SERIES_64[1:]])
    small = b.fmul(x, series)  # a product keeps -0.0
    t = b.select(b.fcmp_ordered("<", ax, _c(0.55)), small, large)
    return b.select(b.fcmp_unordered("uno", x, x), x, t)


def logaddexp_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    """log(e^x + e^y) = max + log1p(e^-|x - y|) for float32 operands in double; equal
    infinities give that infinity (their difference would be NaN), a NaN gives NaN."""
    fabs = module.declare_intrinsic("llvm.fabs", [F64])
    larger = b.select(b.fcmp_ordered(">", x, y), x, y)
    gap = b.fneg(b.call(fabs, [b.fsub(x, y)]))
    value = b.fadd(larger, log1p_d(b, module, exp64(b, module, gap)))
    same = b.fcmp_ordered("==", x, y)  # inf == inf, and x == y exactly: max + log 2
    value = b.select(b.and_(same, b.fcmp_ordered("==", b.call(fabs, [x]), _c(math.inf))), x, value)
    nan = b.or_(b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y))
    return b.select(nan, b.fadd(x, y), value)


def logaddexp2_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    """log2(2^x + 2^y): logaddexp of x ln2, y ln2, over ln2 (all in double, rounded once)."""
    ln2 = _c(math.log(2.0))
    return b.fdiv(logaddexp_d(b, module, b.fmul(x, ln2), b.fmul(y, ln2)), ln2)
