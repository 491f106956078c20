"""Transcendental functions as straight-line LLVM IR (no libm call per element).

``llvm.exp.*`` and friends become scalar libm calls, which keep a loop from vectorizing. These are
written with arithmetic, compares, selects and bit casts only, so LLVM widens them with the rest
of a fused loop. Each is computed in double precision (float32 inputs are widened and the result
rounded once), with a measured error bound against a float64/higher-precision reference that the
tests check (ARCHITECTURE.md §4):

- ``exp``: Cody–Waite reduction x = n ln2 + r, |r| <= ln2/2, Taylor series to degree 13, scaling
  by 2^n in two steps so subnormal results are right. Measured: float64 1.1 ulp (bound 2).
  float32 has its own single-precision version (``exp32``), twice as wide per vector.
- ``log``: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(f / (2 + f)) by its odd
  series to s^21. Measured: float64 2.0 ulp (bound 3), float32 0.5 ulp (bound 1).
- ``tanh`` (float32 only): in single precision (``tanh32``), from exp32 and an expm1 series.
"""

from __future__ import annotations

import math

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


def exp32(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """float32 exp in float32 (twice the vector width of the double path): Cody–Waite with a
    short ln2, Taylor to degree 7 (truncation 5e-9 relative on |r| <= ln2/2), 2^n in two steps."""
    def c(v: float) -> ir.Constant:
        return ir.Constant(F32, v)

    def i(v: int) -> ir.Constant:
        return ir.Constant(I32, v)

    clamped = b.select(b.fcmp_ordered(">", x, c(89.0)), c(89.0),
                       b.select(b.fcmp_ordered("<", x, c(-104.0)), c(-104.0), x))
    nf = b.call(module.declare_intrinsic("llvm.rint", [F32]), [b.fmul(clamped, c(LOG2E))])
    r = b.fsub(b.fsub(clamped, b.fmul(nf, c(0.693359375))), b.fmul(nf, c(-2.12194440e-4)))
    acc = c(1.0 / math.factorial(7))
    for k in range(6, -1, -1):
        acc = b.fadd(b.fmul(acc, r), c(1.0 / math.factorial(k)))
    n = b.fptosi(nf, I32)
    half = b.ashr(n, i(1))

    def pow2(e: ir.Value) -> ir.Value:
        return b.bitcast(b.shl(b.add(e, i(127)), i(23)), F32)

    scaled = b.fmul(b.fmul(acc, pow2(half)), pow2(b.sub(n, half)))
    result = b.select(b.fcmp_ordered(">", x, c(88.72283935546875)), c(math.inf), scaled)
    result = b.select(b.fcmp_ordered("<", x, c(-103.97208404541016)), c(0.0), result)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


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
    cancellation (|x| >= 0.55), and below it x + x^3 P(x^2) from tanh's Taylor series to x^21
    (each term shrinks by about 0.12 there; the correction is a tenth of x, so its rounding
    hardly shows)."""
    def c(v: float) -> ir.Constant:
        return ir.Constant(F32, v)

    fabs = module.declare_intrinsic("llvm.fabs", [F32])
    copysign = module.declare_intrinsic("llvm.copysign", [F32], ir.FunctionType(F32, [F32, F32]))
    ax = b.call(fabs, [x])
    big_e = exp32(b, module, b.fmul(ax, c(2.0)))
    large = b.fsub(c(1.0), b.fdiv(c(2.0), b.fadd(big_e, c(1.0))))
    large = b.call(copysign, [large, x])
    x2 = b.fmul(x, x)
    series = c(TANH_SERIES[-1])
    for coefficient in reversed(TANH_SERIES[1:-1]):
        series = b.fadd(b.fmul(series, x2), c(coefficient))
    # x (1 + x^2 (-1/3 + 2/15 x^2 - ...)): a product keeps the sign of a zero x
    small = b.fmul(x, b.fadd(c(1.0), b.fmul(x2, series)))
    t = b.select(b.fcmp_ordered("<", ax, c(0.55)), small, large)
    t = b.select(b.fcmp_ordered(">", ax, c(20.0)), b.call(copysign, [c(1.0), x]), t)
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
