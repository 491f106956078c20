"""float32 functions computed in double and rounded once.

A float32 argument is exact in double; exp64/log64 err by about 2 double ulps, which after the
one rounding to float32 leaves results within 0.5 + 2^-28 float32 ulp — except where a formula
cancels, which each function avoids with a short series near zero (keeping the sign of -0.0).
Each routine takes and returns doubles; the caller widens the operands and rounds the result
(``VIA_DOUBLE``, ``BINARY_VIA_DOUBLE``: by loop operator)."""

from __future__ import annotations

import math
import struct

from llvmlite import ir

from .double import F64, I64, copysign_d, exp64, f64, fabs_d, i64, log64, poly


def _series_times_x(b: ir.IRBuilder, x: ir.Value, coefficients: list[float]) -> ir.Value:
    """x (c0 + c1 x + c2 x^2 + ...): a product keeps the sign of a zero x."""
    return b.fmul(x, poly(b, x, coefficients))


def _small(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    fabs = module.declare_intrinsic("llvm.fabs", [F64])
    return b.fcmp_ordered("<", b.call(fabs, [x]), f64(2.0 ** -20))


def log1p_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    near = _series_times_x(b, x, [1.0, -1.0 / 2, 1.0 / 3, -1.0 / 4])
    return b.select(_small(b, module, x), near, log64(b, module, b.fadd(x, f64(1.0))))


def expm1_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    near = _series_times_x(b, x, [1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24])
    return b.select(_small(b, module, x), near, b.fsub(exp64(b, module, x), f64(1.0)))


def exp2_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return exp64(b, module, b.fmul(x, f64(math.log(2.0))))


def sinh_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    e = exp64(b, module, x)
    far = b.fmul(b.fsub(e, b.fdiv(f64(1.0), e)), f64(0.5))
    near = b.fmul(x, poly(b, b.fmul(x, x), [1.0, 1.0 / 6, 1.0 / 120]))  # x (1 + x^2/6 + ...)
    return b.select(_small(b, module, x), near, far)


def cosh_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    e = exp64(b, module, x)
    return b.fmul(b.fadd(e, b.fdiv(f64(1.0), e)), f64(0.5))


def cbrt_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    fabs = module.declare_intrinsic("llvm.fabs", [F64])
    copysign = module.declare_intrinsic("llvm.copysign", [F64], ir.FunctionType(F64, [F64, F64]))
    magnitude = exp64(b, module, b.fmul(log64(b, module, b.call(fabs, [x])), f64(1.0 / 3.0)))
    return b.call(copysign, [magnitude, x])  # cbrt(-0.0) = -0.0; NaN stays NaN


def hypot_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    """sqrt(x^2 + y^2) in double for float32 operands (squares exact, no overflow); an infinite
    operand gives +inf even against a NaN (C99)."""
    fabs = module.declare_intrinsic("llvm.fabs", [F64])
    sqrt = module.declare_intrinsic("llvm.sqrt", [F64])
    value = b.call(sqrt, [b.fadd(b.fmul(x, x), b.fmul(y, y))])
    infinite = b.or_(b.fcmp_ordered("==", b.call(fabs, [x]), f64(math.inf)),
                     b.fcmp_ordered("==", b.call(fabs, [y]), f64(math.inf)))
    return b.select(infinite, f64(math.inf), value)


def pow_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    """x^y for float32 operands in double: exp(y log|x|) with C99's special cases — y = 0 or
    x = 1 give 1 (even with a NaN), a negative x needs an integer y (odd: the sign stays),
    zeros and infinities by the sign and parity of y, |x| = 1 against an infinite y gives 1."""
    fabs = module.declare_intrinsic("llvm.fabs", [F64])
    trunc = module.declare_intrinsic("llvm.trunc", [F64])
    ax, ay = b.call(fabs, [x]), b.call(fabs, [y])
    integer = b.fcmp_ordered("==", b.call(trunc, [y]), y)
    half = b.fmul(y, f64(0.5))
    odd = b.and_(integer, b.fcmp_unordered("!=", b.call(trunc, [half]), half))
    magnitude = exp64(b, module, b.fmul(y, log64(b, module, ax)))  # |x|^y, zeros/infs included
    negative_x = b.fcmp_ordered("<", x, f64(0.0))
    sign_bit = b.icmp_signed("<", b.bitcast(x, I64), i64(0))  # -0.0 too: pow(-0.0, -1) = -inf
    signed = b.select(b.and_(sign_bit, odd), b.fneg(magnitude), magnitude)
    # a negative finite x and a non-integer finite y: NaN
    invalid = b.and_(b.and_(negative_x, b.fcmp_ordered("<", ax, f64(math.inf))),
                     b.and_(b.xor(integer, ir.Constant(ir.IntType(1), 1)),
                            b.fcmp_ordered("<", ay, f64(math.inf))))
    result = b.select(invalid, f64(math.nan), signed)
    # zero x: sign survives only for odd y (log gives -inf, exp then 0 or inf: magnitude is right)
    # |x| = 1 and y = +-inf: 1 (log|x| = 0 times inf would be NaN)
    one = b.or_(b.fcmp_ordered("==", y, f64(0.0)), b.fcmp_ordered("==", x, f64(1.0)))
    one = b.or_(one, b.and_(b.fcmp_ordered("==", ax, f64(1.0)),
                            b.fcmp_ordered("==", ay, f64(math.inf))))
    return b.select(one, f64(1.0), result)


def _above(b: ir.IRBuilder, a: ir.Value, bound: float) -> ir.Value:
    """``a > bound`` for a positive ``bound`` and an ``a`` that is >= 0, -0.0 or NaN, compared
    as integers: an ordered float compare is x86's signaling ``vcmppd`` on AVX2 hosts, whose
    invalid flag on a quiet NaN sent every call over NaN data (missing values) to the precise
    kernels (float32 ``arctan``, ``arcsin``, ``arccos``, ``arctan2``; AMD Zen 3). A NaN is
    "above" (its result is NaN either way); -0.0, a negative integer, is not."""
    return b.icmp_signed(">", b.bitcast(a, I64), i64(struct.unpack("<q", struct.pack("<d", bound))[0]))


def _atan_positive(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    """atan of a >= 0 (inf included): a > 1 folds to pi/2 - atan(1/a); above tan(pi/12) the
    argument moves by pi/6 (atan t = pi/6 + atan((t sqrt3 - 1) / (t + sqrt3))); the odd Taylor
    series to t^23 then errs by 2e-16 at most."""
    invert = _above(b, a, 1.0)
    t = b.select(invert, b.fdiv(f64(1.0), a), a)
    shifted = _above(b, t, math.tan(math.pi / 12))
    sqrt3 = math.sqrt(3.0)
    moved = b.fdiv(b.fsub(b.fmul(t, f64(sqrt3)), f64(1.0)), b.fadd(t, f64(sqrt3)))
    u = b.select(shifted, moved, t)
    series = poly(b, b.fmul(u, u), [(-1) ** k / (2 * k + 1) for k in range(12)])
    value = b.fadd(b.fmul(u, series), b.select(shifted, f64(math.pi / 6), f64(0.0)))
    return b.select(invert, b.fsub(f64(math.pi / 2), value), value)


def atan_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    return copysign_d(b, module, _atan_positive(b, fabs_d(b, module, x)), x)


def asin_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """atan(x / sqrt((1 - x)(1 + x))): exact products for a float32 x; NaN beyond |x| = 1."""
    sqrt = module.declare_intrinsic("llvm.sqrt", [F64])
    root = b.call(sqrt, [b.fmul(b.fsub(f64(1.0), x), b.fadd(f64(1.0), x))])
    return _beyond_one(b, module, x, atan_d(b, module, b.fdiv(x, root)))


def acos_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """2 atan(sqrt((1 - x) / (1 + x)))."""
    sqrt = module.declare_intrinsic("llvm.sqrt", [F64])
    ratio = b.call(sqrt, [b.fdiv(b.fsub(f64(1.0), x), b.fadd(f64(1.0), x))])
    return _beyond_one(b, module, x, b.fmul(f64(2.0), _atan_positive(b, ratio)))


def _beyond_one(b: ir.IRBuilder, module: ir.Module, x: ir.Value, value: ir.Value) -> ir.Value:
    """``value``, or NumPy's NaN (sign bit clear, as its float64 routines and its float32 ones
    give) where ``|x| > 1``: the square root of a negative gives x86's default NaN, whose sign
    bit is set. A NaN ``x`` goes through as it came (a quiet ``ord`` compare)."""
    outside = b.and_(b.fcmp_ordered("ord", x, x), _above(b, fabs_d(b, module, x), 1.0))
    return b.select(outside, f64(math.nan), value)


def asinh_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    sqrt = module.declare_intrinsic("llvm.sqrt", [F64])
    a = fabs_d(b, module, x)
    far = log64(b, module, b.fadd(a, b.call(sqrt, [b.fadd(b.fmul(a, a), f64(1.0))])))
    near = b.fmul(a, poly(b, b.fmul(a, a), [1.0, -1.0 / 6, 3.0 / 40, -5.0 / 112]))
    small = b.fcmp_ordered("<", a, f64(2.0 ** -8))
    return copysign_d(b, module, b.select(small, near, far), x)


def acosh_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    sqrt = module.declare_intrinsic("llvm.sqrt", [F64])
    root = b.call(sqrt, [b.fmul(b.fsub(x, f64(1.0)), b.fadd(x, f64(1.0)))])
    value = log64(b, module, b.fadd(x, root))  # (x - 1)(x + 1) is positive again below -1
    return b.select(b.fcmp_unordered("<", x, f64(1.0)), f64(math.nan), value)


def atanh_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    far = b.fmul(f64(0.5), log64(b, module, b.fdiv(b.fadd(f64(1.0), x), b.fsub(f64(1.0), x))))
    near = b.fmul(x, poly(b, b.fmul(x, x), [1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7]))
    small = b.fcmp_ordered("<", fabs_d(b, module, x), f64(2.0 ** -8))
    return b.select(small, near, far)


def atan2_d(b: ir.IRBuilder, module: ir.Module, y: ir.Value, x: ir.Value) -> ir.Value:
    """atan2 by C99: atan(|y| / |x|) folded by the sign bit of x (so -0.0 counts as negative)
    and given y's sign; both zeros and both infinities have their own quadrant angles."""
    ay, ax = fabs_d(b, module, y), fabs_d(b, module, x)
    x_negative = b.icmp_signed("<", b.bitcast(x, I64), i64(0))
    base = _atan_positive(b, b.fdiv(ay, ax))
    zeros = b.and_(b.fcmp_ordered("==", ay, f64(0.0)), b.fcmp_ordered("==", ax, f64(0.0)))
    infinities = b.and_(b.fcmp_ordered("==", ay, f64(math.inf)),
                        b.fcmp_ordered("==", ax, f64(math.inf)))
    base = b.select(zeros, f64(0.0), b.select(infinities, f64(math.pi / 4), base))
    folded = b.select(x_negative, b.fsub(f64(math.pi), base), base)
    return copysign_d(b, module, folded, y)


def logaddexp_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    """log(e^x + e^y) = max + log1p(e^-|x - y|) for float32 operands in double; equal
    infinities give that infinity (their difference would be NaN), a NaN gives NaN."""
    fabs = module.declare_intrinsic("llvm.fabs", [F64])
    larger = b.select(b.fcmp_ordered(">", x, y), x, y)
    gap = b.fneg(b.call(fabs, [b.fsub(x, y)]))
    value = b.fadd(larger, log1p_d(b, module, exp64(b, module, gap)))
    same = b.fcmp_ordered("==", x, y)  # inf == inf, and x == y exactly: max + log 2
    value = b.select(b.and_(same, b.fcmp_ordered("==", b.call(fabs, [x]), f64(math.inf))), x, value)
    nan = b.or_(b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y))
    return b.select(nan, b.fadd(x, y), value)


def logaddexp2_d(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    """log2(2^x + 2^y): logaddexp of x ln2, y ln2, over ln2 (all in double, rounded once)."""
    ln2 = f64(math.log(2.0))
    return b.fdiv(logaddexp_d(b, module, b.fmul(x, ln2), b.fmul(y, ln2)), ln2)


#: by loop operator: the unary routines, and the binary ones
VIA_DOUBLE = {"expm1": expm1_d,
              "exp2": exp2_d, "sinh": sinh_d, "cosh": cosh_d, "cbrt": cbrt_d, "arctan": atan_d,
              "arcsin": asin_d, "arccos": acos_d, "arcsinh": asinh_d, "arccosh": acosh_d,
              "arctanh": atanh_d}
BINARY_VIA_DOUBLE = {"hypot": hypot_d, "pow": pow_d, "arctan2": atan2_d,
                     "logaddexp": logaddexp_d, "logaddexp2": logaddexp2_d}
