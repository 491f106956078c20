"""The double kernels of the float32 functions, and float64 tanh: ``exp64`` (Cody–Waite,
Taylor to degree 13, 1.1 double ulp) and ``log64`` (2 atanh(f / (2 + f)), 2.0 double ulp), which
the float32 functions computed in double build on (rounded once to float32 they are within
0.5 + 2^-28 float32 ulp); ``tanh64`` (1.5 ulp, bound 3); and the constants and helpers every
module of ``vmath`` shares. Straight-line code only (arithmetic, compares, selects, bit casts):
LLVM vectorizes it with the rest of a fused loop, where a libm call per element would not."""

from __future__ import annotations

import math

from llvmlite import ir

F64 = ir.DoubleType()
I64 = ir.IntType(64)
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
LOG2E = 1.0 / math.log(2.0)


def f64(value: float) -> ir.Constant:
    return ir.Constant(F64, value)


def i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def poly(b: ir.IRBuilder, x: ir.Value, coefficients: list[float]) -> ir.Value:
    """Horner: c0 + x (c1 + x (c2 + ...))."""
    acc = f64(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = b.fadd(b.fmul(acc, x), f64(c))
    return acc


def _pow2(b: ir.IRBuilder, n: ir.Value) -> ir.Value:
    """2^n as a double for an i64 n in [-1022, 1023]."""
    return b.bitcast(b.shl(b.add(n, i64(1023)), i64(52)), F64)


def _rint(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return b.call(module.declare_intrinsic("llvm.rint", [F64]), [x])


def exp64(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    clamped = b.select(b.fcmp_ordered(">", x, f64(710.0)), f64(710.0),
                       b.select(b.fcmp_ordered("<", x, f64(-746.0)), f64(-746.0), x))
    nf = _rint(b, module, b.fmul(clamped, f64(LOG2E)))
    r = b.fsub(b.fsub(clamped, b.fmul(nf, f64(LN2_HI))), b.fmul(nf, f64(LN2_LO)))
    p = poly(b, r, [1.0 / math.factorial(k) for k in range(14)])
    n = b.fptosi(nf, I64)
    half = b.ashr(n, i64(1))  # 2^n = 2^half * 2^(n - half): both factors stay normal
    scaled = b.fmul(b.fmul(p, _pow2(b, half)), _pow2(b, b.sub(n, half)))
    result = b.select(b.fcmp_ordered(">", x, f64(709.782712893384)), f64(math.inf), scaled)
    result = b.select(b.fcmp_ordered("<", x, f64(-745.1332191019412)), f64(0.0), result)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)  # NaN in, NaN out


def log64(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    subnormal = b.fcmp_ordered("<", x, f64(2.2250738585072014e-308))
    xs = b.select(subnormal, b.fmul(x, f64(2.0 ** 54)), x)
    bits = b.bitcast(xs, I64)
    e = b.sub(b.and_(b.lshr(bits, i64(52)), i64(0x7FF)), i64(1023))
    e = b.select(subnormal, b.sub(e, i64(54)), e)
    m = b.bitcast(b.or_(b.and_(bits, i64((1 << 52) - 1)), i64(1023 << 52)), F64)  # [1, 2)
    big = b.fcmp_ordered(">", m, f64(math.sqrt(2.0)))
    m = b.select(big, b.fmul(m, f64(0.5)), m)
    e = b.select(big, b.add(e, i64(1)), e)
    f = b.fsub(m, f64(1.0))
    s = b.fdiv(f, b.fadd(f, f64(2.0)))
    s2 = b.fmul(s, s)
    series = poly(b, s2, [2.0 / (2 * k + 1) for k in range(11)])  # 2 atanh(s) / s
    log_m = b.fmul(s, series)
    ef = b.sitofp(e, F64)
    result = b.fadd(b.fmul(ef, f64(LN2_HI)), b.fadd(log_m, b.fmul(ef, f64(LN2_LO))))
    result = b.select(b.fcmp_ordered("==", x, f64(math.inf)), f64(math.inf), result)
    result = b.select(b.fcmp_ordered("==", x, f64(0.0)), f64(-math.inf), result)
    result = b.select(b.fcmp_ordered("<", x, f64(0.0)), f64(math.nan), result)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


def tanh_series(terms: int) -> list[float]:
    """Taylor coefficients of tanh(x) / x in powers of x^2: 2^2n (2^2n - 1) B_2n / (2n)!."""
    from fractions import Fraction

    bernoulli = [Fraction(1)]
    for m in range(1, 2 * terms + 2):
        bernoulli.append(-sum(Fraction(math.comb(m + 1, k)) * bernoulli[k] for k in range(m))
                         / (m + 1))
    return [float(2 ** (2 * n) * (2 ** (2 * n) - 1) * bernoulli[2 * n] / math.factorial(2 * n))
            for n in range(1, terms + 1)]


def fabs_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return b.call(module.declare_intrinsic("llvm.fabs", [F64]), [x])


def copysign_d(b: ir.IRBuilder, module: ir.Module, magnitude: ir.Value, sign: ir.Value) -> ir.Value:
    fn = module.declare_intrinsic("llvm.copysign", [F64], ir.FunctionType(F64, [F64, F64]))
    return b.call(fn, [magnitude, sign])


TANH_SERIES_64 = tanh_series(24)


def tanh64(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """float64 tanh: below |x| = 0.55 the odd Taylor series to x^47 (each term about a tenth of
    the last); above, 1 - 2 / (e^(2|x|) + 1) with the sign of x, where the result is at least
    0.5 so exp's error (1.1 ulp) is halved; past 19.1 the arithmetic itself gives +-1.
    Measured: 1.5 ulp (bound 3)."""
    fabs = module.declare_intrinsic("llvm.fabs", [F64])
    ax = b.call(fabs, [x])
    big_e = exp64(b, module, b.fmul(ax, f64(2.0)))
    large = b.fsub(f64(1.0), b.fdiv(f64(2.0), b.fadd(big_e, f64(1.0))))
    large = copysign_d(b, module, large, x)
    x2 = b.fmul(x, x)
    series = poly(b, x2, [1.0, *TANH_SERIES_64[1:]])
    small = b.fmul(x, series)  # a product keeps -0.0
    t = b.select(b.fcmp_ordered("<", ax, f64(0.55)), small, large)
    return b.select(b.fcmp_unordered("uno", x, x), x, t)
