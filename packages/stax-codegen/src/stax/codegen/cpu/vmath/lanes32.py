"""float32 exp, log, log2, log10, log1p and tanh in float32 lanes (twice the vector width of the
double path): a fitted polynomial reaches the bound there. Measured against a higher-precision
reference the tests check (ARCHITECTURE.md §4): ``exp32`` 1.04 ulp, ``log32`` 0.94 ulp,
``tanh32`` 1.6 ulp (bounds 2), ``log2_32`` 0.92 ulp, ``log10_32`` 0.81 ulp, ``log1p32`` 0.85 ulp
(bound 1). ``tanh32``, ``log32``, ``log1p32``, ``log2_32`` and ``log10_32`` were measured over
every float32 (log2 and log10 against float64's, in float32 ulps of the rounded result; their
worst, at 1.412878 and 1.3215055, lie in [0.5, 2), which a test checks whole).

No table: LLVM makes a lookup a vector gather, which on AMD Zen 5 costs as much as a whole
logarithm. The cost is the count of instructions (about 0.35 us each over 50,000 float32 on
one Zen 5 core, the kernels interleaving four vectors), so these count them."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
from llvmlite import ir

from ..vmath64.dd import has_scalef
from .double import LOG2E, tanh_series

F32 = ir.FloatType()
I32 = ir.IntType(32)


@functools.cache
def _fit(name: str, degree: int, scale: float = 1.0) -> tuple[float, ...]:
    """Power-basis coefficients, times ``scale`` and then rounded to float32, of a near-minimax
    polynomial (Chebyshev interpolation, computed in float64 here once) for the float32 kernels
    below:

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
    return tuple(float(np.float32(c * scale)) for c in fit.convert(kind=np.polynomial.Polynomial).coef)


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


#: LLVM makes ``fdiv arcp afn ninf 1.0, d`` an estimate in a function with this attribute, refining it
#: zero times: the refinement is ours (``_reciprocal32``). zmm loops get ``vrcp14ps`` (2^-14,
#: its bits given by Intel's reference code), but a loop's ymm epilogue gets ``vrcpps`` (12
#: bits, which differ between vendors), hence a refinement good for both. Scalar divisions
#: (``!divf``) stay divisions: a scalar ``rcpss`` refined so would be another result again. No
#: other division is emitted with fast-math flags.
RECIPROCAL_ESTIMATES = '"reciprocal-estimates"="vec-divf:0,!divf"'


def _reciprocal32(b: ir.IRBuilder, module: ir.Module, d: ir.Value) -> ir.Value:
    """1/d for finite normal d within 0.5 ulp + 2^-33 relative (a division's 0.5 ulp) on
    AVX-512: from the estimate r, the residual e = 1 - d r (exact by an FMA) and r (1 + e + e^2),
    whose error is e^3: below 2^-33 from a 12-bit estimate as from a 14-bit one, so the zmm body
    of a loop and its ymm epilogue agree but where 1/d lies within 2^-33 of a rounding midpoint
    (with one Newton step, r (1 + e), a 12-bit epilogue's results were an ulp off where the
    body's were not: ``tanh`` of one element differed with the array's length). A zmm
    ``vdivps`` occupies the divider ~10 cycles on Intel cores (four FMA-port instructions here).
    Elsewhere (no AVX-512) a division.
    Callers keep d finite and normal or NaN: the estimate of an infinity is 0, and the step a
    NaN (its flags say ``ninf``, which LLVM needs for the estimate); a NaN goes through as a
    NaN (not ``nnan``: tanh of a NaN takes this path)."""
    one = ir.Constant(F32, 1.0)
    if not has_scalef():  # AVX-512F
        return b.fdiv(one, d)
    set.add(b.function.attributes, RECIPROCAL_ESTIMATES)  # llvmlite knows no string attribute
    fma = _fmuladd32(b, module)
    r = b.fdiv(one, d, flags=("arcp", "afn", "ninf"))  # no nnan: a NaN d gives NaN
    e = fma(b.fneg(d), r, one)
    return fma(r, fma(e, e, e), r)


def _ldexp32(b: ir.IRBuilder, module: ir.Module, p: ir.Value, n: ir.Value) -> ir.Value:
    """p 2^n rounded once: ``vscalefps`` on vectors (only where ``has_scalef``)."""
    ldexp = module.declare_intrinsic("llvm.ldexp", [F32, I32], ir.FunctionType(F32, [F32, I32]))
    return b.call(ldexp, [p, n])


#: 1.5 2^23: added to a float of magnitude below 2^22, the sum's last bit has weight 1
SHIFTER = 12582912.0
SHIFTER_BITS = 0x4B400000
#: ln 2 in two parts, the first of 9 bits: n times it is exact for |n| < 2^15, FMA or not
LN2_HI, LN2_LO = 0.693359375, -2.12194440e-4


def _shifted(b: ir.IRBuilder, fma: Callable, x: ir.Value, scale: float = 1.0
             ) -> tuple[ir.Value, ir.Value]:
    """n = rint(scale x log2 e) from a shifter: scale x log2 e + 1.5 2^23 rounds to an integer
    in the sum's last bits, which are n as an integer (the sum's bits minus ``SHIFTER_BITS``);
    (that sum, n as a float, exactly). No ``fptosi``, whose NaN is poison: a NaN goes through."""
    shifted = fma(x, ir.Constant(F32, scale * LOG2E), ir.Constant(F32, SHIFTER))
    return shifted, b.fsub(shifted, ir.Constant(F32, SHIFTER))


def _minus_n_ln2(fma: Callable, nf: ir.Value, x: ir.Value, scale: float = 1.0) -> ir.Value:
    """Cody–Waite: x - n ln2 / scale in two exact steps (``LN2_HI``, ``LN2_LO``; scale a power
    of two, which divides both exactly)."""
    r = fma(nf, ir.Constant(F32, -LN2_HI / scale), x)
    return fma(nf, ir.Constant(F32, -LN2_LO / scale), r)


def exp32(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """float32 exp in float32 (twice the vector width of the double path).

    x is clamped to [-104, 89] (minnum/maxnum: one instruction each); n = rint(x log2 e); Cody–Waite
    reduction r = x - n ln2 with a 9-bit ln2_hi, so n ln2_hi is exact with or without FMA; e^r by a
    degree-6 fitted polynomial; 2^n applied in two steps so subnormal results are right. The
    clamp makes the ends come out of the arithmetic itself: 89 gives 2^64 2^64 = inf, -104 gives
    2^-75 2^-75 p, below half the smallest subnormal, = 0. Where AVX-512 is there, 2^n is
    applied by ``llvm.ldexp`` (``vscalefps``: one instruction for the five integer and float
    operations of the two steps; a softmax row's exp phase on an Intel host). Measured: 1.1 ulp
    (bound 2)."""
    def c(v: float) -> ir.Constant:
        return ir.Constant(F32, v)

    def i(v: int) -> ir.Constant:
        return ir.Constant(I32, v)

    fma = _fmuladd32(b, module)
    # x < -104 ? -104 : x, then above 89 ? 89 : that: one vmaxps and one vminps (a NaN goes
    # through, the last select returns it); llvm.maxnum/minnum took three instructions each
    low = b.select(b.fcmp_ordered("<", x, c(-104.0)), c(-104.0), x)
    clamped = b.select(b.fcmp_ordered(">", low, c(89.0)), c(89.0), low)
    if has_scalef():  # one ``vscalefps``, rounding once as the two steps below do
        # n from a shifter (``_shifted``): a NaN needs no select, and the loop is two
        # instructions shorter (softmax's exponentials on an Intel host)
        shifted, nf = _shifted(b, fma, clamped)
        n = b.sub(b.bitcast(shifted, I32), i(SHIFTER_BITS))
        r = _minus_n_ln2(fma, nf, clamped)
        return _ldexp32(b, module, _horner32(fma, r, _fit("exp", 6)), n)
    nf = b.call(module.declare_intrinsic("llvm.rint", [F32]), [b.fmul(clamped, c(LOG2E))])
    p = _horner32(fma, _minus_n_ln2(fma, nf, clamped), _fit("exp", 6))
    n = b.fptosi(nf, I32)
    half = b.ashr(n, i(1))

    def pow2(e: ir.Value) -> ir.Value:
        return b.bitcast(b.shl(b.add(e, i(127)), i(23)), F32)

    scaled = b.fmul(b.fmul(p, pow2(half)), pow2(b.sub(n, half)))
    return b.select(b.fcmp_unordered("uno", x, x), x, scaled)  # NaN in, NaN out


SQRT_HALF = math.sqrt(0.5)
SQRT_TWO = math.sqrt(2.0)


def _exponent_and_mantissa(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """A normal positive x = 2^e m with m in [sqrt(1/2), sqrt(2)), from the bits: (e as an
    integer, m)."""
    offset = b.sub(b.bitcast(x, I32), ir.Constant(I32, 0x3F3504F3))  # bits of sqrt(1/2)
    e = b.ashr(offset, ir.Constant(I32, 23))
    return e, b.bitcast(b.sub(b.bitcast(x, I32), b.shl(e, ir.Constant(I32, 23))), F32)


def _reduce(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first): (e as an
    integer, f = m - 1 exactly)."""
    def c(v: float) -> ir.Constant:
        return ir.Constant(F32, v)

    subnormal = b.fcmp_ordered("<", x, c(1.1754943508222875e-38))
    xs = b.select(subnormal, b.fmul(x, c(2.0 ** 23)), x)
    e, m = _exponent_and_mantissa(b, xs)
    e = b.sub(e, b.select(subnormal, ir.Constant(I32, 23), ir.Constant(I32, 0)))
    return e, b.fsub(m, c(1.0))


def _log_special_values(b: ir.IRBuilder, x: ir.Value, value: ir.Value) -> ir.Value:
    """log's IEEE values in three selects: +inf at +inf, -inf at +-0, NaN below zero and at a NaN
    (``ult``: unordered or less; a quiet NaN, not the argument's payload)."""
    def c(v: float) -> ir.Constant:
        return ir.Constant(F32, v)

    value = b.select(b.fcmp_ordered("==", x, c(math.inf)), c(math.inf), value)
    value = b.select(b.fcmp_ordered("==", x, c(0.0)), c(-math.inf), value)
    return b.select(b.fcmp_unordered("<", x, c(0.0)), c(math.nan), value)


def log32(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """float32 log in float32 lanes (twice the vector width of the double path, no division, no
    table: a gather of 16 lanes costs as much as the whole function).

    ``_reduce``, then log m = f + f^2 g(f) with g a fitted degree-8 polynomial, and e ln2 with a
    16-bit ln2_hi (exact products). Every instruction counts: degree 8 instead of 10 and three
    selects for the special values instead of four took ``np.log`` of 50,000 float32 from 14.6
    to 12.0 us on one AMD EPYC (Zen 5) core (NumPy 12.5). Measured over every float32: 0.94 ulp
    (bound 2; NumPy's own float32 log promises 4)."""
    fma = _fmuladd32(b, module)
    e, f = _reduce(b, x)
    ef = b.sitofp(e, F32)
    g = _horner32(fma, f, _fit("log1p_tail", 8))
    log_m = fma(b.fmul(f, f), g, f)  # one fused multiply-add keeps f exact in the sum
    value = fma(ef, ir.Constant(F32, 0.693145751953125),
                fma(ef, ir.Constant(F32, 1.428606765330187e-06), log_m))
    return _log_special_values(b, x, value)


def _log_in_base(inverse_ln_base: tuple[float, float], log_two: tuple[float, float]
                 ) -> Callable[[ir.IRBuilder, ir.Module, ir.Value], ir.Value]:
    """log2 or log10 in float32 lanes: e log_b(2) + log(m) / ln(b), every term but the last sum's
    small ones kept exact or rounded once.

    ``_reduce``, then log(m) / ln(b) = f / ln(b) + f^2 g(f) with g a fitted degree-9 polynomial
    already divided by ln b. 1/ln b = C_hi + C_lo and log_b 2 = L_hi + L_lo (L_hi of at most 11
    significant bits, so e L_hi is exact; log2's L_lo is 0 and left out); p = f C_hi rounded, its
    error fma(f, C_hi, -p) exact (a true fused multiply-add, ``llvm.fma``); f^2 = q + q_error
    likewise, so the f^2 g term rounds once, in one fused multiply-add (its rounded square was
    worth 0.2 ulp: log2 measured 1.07 ulp at 1.4128582); s = e L_hi; hi = s + p with its rounding
    error recovered (|s| >= |p| whenever s != 0); the result is hi plus the small terms. Exact
    at powers of the base that are float32 values (log2(2^k) = k, log10(10^k) = k). The special
    values in ``log32``'s three selects (a NaN gives a quiet NaN). Against the degree-10 g, the
    f^2 g product and four selects before: two instructions a vector fewer (log10), three (log2)."""
    c_hi, c_lo = inverse_ln_base
    l_hi, l_lo = log_two

    def routine(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
        def c(v: float) -> ir.Constant:
            return ir.Constant(F32, v)

        fma = _fmuladd32(b, module)
        exact_fma = module.declare_intrinsic("llvm.fma", [F32], ir.FunctionType(F32, [F32] * 3))
        e, f = _reduce(b, x)
        ef = b.sitofp(e, F32)
        g = _horner32(fma, f, _fit("log1p_tail", 9, c_hi + c_lo))
        q = b.fmul(f, f)
        q_error = b.call(exact_fma, [f, f, b.fneg(q)])
        p = b.fmul(f, c(c_hi))
        p_error = b.call(exact_fma, [f, c(c_hi), b.fneg(p)])
        small = fma(q, g, fma(q_error, g, fma(f, c(c_lo), p_error)))
        s = b.fmul(ef, c(l_hi))
        hi = b.fadd(s, p)
        small = b.fadd(small, b.fadd(b.fsub(s, hi), p))
        if l_lo:
            small = fma(ef, c(l_lo), small)
        return _log_special_values(b, x, b.fadd(hi, small))
    return routine


def _split(value: float, bits: int = 24) -> tuple[float, float]:
    """value as hi + lo: hi rounded to ``bits`` significant bits, lo the rest in float32."""
    exponent = math.frexp(value)[1]
    hi = round(math.ldexp(value, bits - exponent)) * 2.0 ** (exponent - bits)
    return float(np.float32(hi)), float(np.float32(value - hi))


#: log2 and log10 in float32 lanes. Measured: see ``BOUNDS`` in test_vmath.py
log2_32 = _log_in_base(_split(1.0 / math.log(2.0)), (1.0, 0.0))
log10_32 = _log_in_base(_split(1.0 / math.log(10.0)), _split(math.log10(2.0), 11))


def log1p32(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """float32 log1p in float32 lanes (it was computed in double, 4.4x slower).

    u = 1 + x rounded and c = x - (u - 1) exactly, so 1 + x = u + c and log1p(x) = log u + c/u
    to far below an ulp (c is at most half an ulp of u; one division). log u as ``log32``'s
    (u is normal: x above -1 makes it at least 2^-24) with a degree-9 g, and e ln2_hi + f summed
    with its error (Fast2Sum: |e ln2_hi| >= |f| where e != 0): the bound is 1 ulp, and near
    x = 1 (e = 1, m below 1) log m would otherwise round at the result's own scale. x is clamped
    to the largest float first, so +inf raises no flag (the fast kernels read the CPU's,
    ``cpu/fpevents.py``); +-0 and +inf are themselves (x == x/2), -1 gives -inf, below -1 and
    NaN give NaN. ``np.log1p`` of 50,000 float32 on one AMD EPYC (Zen 5) core: 57 -> 13 us
    (NumPy 13). Measured over every float32: 0.85 ulp (bound 1)."""
    def c(v: float) -> ir.Constant:
        return ir.Constant(F32, v)

    fma = _fmuladd32(b, module)
    minnum = module.declare_intrinsic("llvm.minnum", [F32], ir.FunctionType(F32, [F32] * 2))
    xc = b.call(minnum, [x, c(3.4028234663852886e38)])  # +inf - inf would raise invalid
    u = b.fadd(xc, c(1.0))
    e, m = _exponent_and_mantissa(b, u)
    f = b.fsub(m, c(1.0))
    ef = b.sitofp(e, F32)
    correction = b.fdiv(b.fsub(xc, b.fsub(u, c(1.0))), u)
    g = _horner32(fma, f, _fit("log1p_tail", 9))
    s = b.fmul(ef, c(0.693145751953125))  # exact: 16 bits times at most 8
    hi = b.fadd(s, f)
    hi_error = b.fadd(b.fsub(s, hi), f)
    lo = fma(b.fmul(f, f), g, fma(ef, c(1.428606765330187e-06), correction))
    value = b.fadd(hi, b.fadd(lo, hi_error))
    value = b.select(b.fcmp_ordered("==", x, b.fmul(x, c(0.5))), x, value)
    value = b.select(b.fcmp_ordered("==", x, c(-1.0)), c(-math.inf), value)
    return b.select(b.fcmp_unordered("<", x, c(-1.0)), c(math.nan), value)


def _min32(b: ir.IRBuilder, x: ir.Value, limit: ir.Constant) -> ir.Value:
    """min(x, limit) for x not NaN: one ``vminps``."""
    return b.select(b.fcmp_ordered(">", x, limit), limit, x)


TANH_SERIES = tanh_series(11)


def tanh32(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """float32 tanh in float32: 1 - 2 / (e^(2a) + 1) for a = |x| >= 0.55, where that has no
    cancellation, below it x + x^3 P(x^2) with P a degree-5 fitted polynomial (the correction is
    at most a tenth of x, so its rounding hardly shows); the sign of x. a is clamped to 9.1,
    past which tanh rounds to 1, so e^(2a) + 1 stays below 2^27 and its reciprocal may be an
    estimate, refined (``_reciprocal32``; a division was the most expensive instruction of a
    GELU on Intel cores). e^(2a) as ``exp32``'s: n from a shifter (no ``fptosi``, whose NaN is
    poison, so a NaN goes through the arithmetic and needs no select), a - n ln2/2 with exp's
    polynomial in 2r (its coefficients times 2^k, exactly), 2^n from n's bits, and e^(2a) + 1 =
    2^n p + 1 in one FMA: about 30 vector instructions where the rint, two conversions,
    ``vscalefps`` and a NaN select took 35, the bulk of a GELU. Measured over every float32:
    1.6 ulp (bound 2; NumPy's own 1.4)."""
    def c(v: float) -> ir.Constant:
        return ir.Constant(F32, v)

    fma = _fmuladd32(b, module)
    fabs = module.declare_intrinsic("llvm.fabs", [F32])
    copysign = module.declare_intrinsic("llvm.copysign", [F32], ir.FunctionType(F32, [F32, F32]))
    a = _min32(b, b.call(fabs, [x]), c(9.1))
    shifted, nf = _shifted(b, fma, a, 2.0)  # n = rint(2a log2 e)
    r = _minus_n_ln2(fma, nf, a, 2.0)  # half of exp's r = 2a - n ln2
    p = _horner32(fma, r, [coefficient * 2.0 ** k for k, coefficient in enumerate(_fit("exp", 6))])
    # n + SHIFTER_BITS in the low bits, whose own low 23 are 0: shifted up, n in the exponent
    bits = b.shl(b.bitcast(shifted, I32), ir.Constant(I32, 23))
    two_n = b.bitcast(b.add(bits, ir.Constant(I32, 127 << 23)), F32)
    large = fma(c(-2.0), _reciprocal32(b, module, fma(two_n, p, c(1.0))), c(1.0))
    x2 = b.fmul(x, x)
    small = b.fmul(x, fma(x2, _horner32(fma, x2, _fit("tanh_small", 5)), c(1.0)))
    t = b.select(b.fcmp_ordered("<", a, c(0.55)), small, large)
    return b.call(copysign, [t, x])  # small has x's sign already; large, a NaN's, gets it
