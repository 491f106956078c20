"""float64 transcendental functions within 1 ulp of the correctly rounded result.

NumPy promises 1 ulp for its float64 loops (2 for cbrt and tanh) and ships the data that checks
it (``numpy/_core/tests/data/umath-validation-set-*.csv``); our tests run these kernels on that
data with NumPy's own thresholds. A double computation rounds too often to stay under 1 ulp, so
every step that could cost a bit is kept as an unevaluated sum of two doubles (double-double):
exact sums (two-sum), exact products (FMA where the host has it, Dekker's splitting otherwise),
and reductions whose remainders are exact. The final rounding is the only full half-ulp.

Built from three cores, each straight-line (selects, no branches) so loops stay vectorizable:

- ``_exp_parts``: e^(xh + xl) = 2^n (s + t) to about 2^-68 relative, from a 64-entry table of
  2^(j/64) pairs, a Cody–Waite reduction to |r| <= ln2/128 and a series to degree 7;
- ``_log_parts``: log x = hi + lo to about 2^-68 relative, from a 128-entry table (x = 2^e m,
  m c_j = 1 + r with |r| <= 2^-7, log c_j in double-double computed once in decimal arithmetic)
  and a degree-10 series of log1p(r);
- ``_reduce_pio2``: x = n pi/2 + y for |x| < 2^23 pi/2 with pi/2 split into four 30-bit chunks
  (each n chunk product exact) and a fifth double; larger arguments make the lowering's check
  fail (such a call runs as NumPy, see ``stax.loop.lowering``).

Special values (NaN, +-inf, +-0.0, the domain edges) are selected at the end of each function to
match C99 and NumPy.
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal, localcontext

from llvmlite import binding as llvm
from llvmlite import ir

F64 = ir.DoubleType()
I64 = ir.IntType(64)
I1 = ir.IntType(1)

#: exact products by FMA only where the CPU has it (the object cache keys on CPU features);
#: elsewhere Dekker's splitting, which tests force to keep it covered
HAS_FMA = bool(llvm.get_host_cpu_features().get("fma", False))

# ln 2 = LN2_HI + LN2_LO with LN2_HI's low 21 bits zero: n LN2_HI is exact for |n| < 2^21
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10


@functools.cache
def _decimal_constants() -> dict[str, tuple[float, float]]:
    """Double-double values of the constants the kernels need, computed in 60-digit decimal."""
    with localcontext() as ctx:
        ctx.prec = 60
        pi = _decimal_pi()

        def atan(x: Decimal) -> Decimal:  # |x| <= 2/3: the series converges
            total, term, k = Decimal(0), x, 0
            while abs(term) > Decimal(10) ** -58:
                total += term / (2 * k + 1) * (-1) ** k
                term *= x * x
                k += 1
            return total

        values = {
            "ln2": Decimal(2).ln(), "inv_ln2": 1 / Decimal(2).ln(), "inv_ln10": 1 / Decimal(10).ln(),
            "pi": pi, "pi_2": pi / 2, "pi_4": pi / 4,
            "atan_half": atan(Decimal("0.5")),
            "atan_three_halves": pi / 2 - atan(Decimal(2) / 3),
        }
        return {name: _split(v) for name, v in values.items()}


def _decimal_pi() -> Decimal:
    """pi by Machin's formula in the current decimal context."""
    def arctan_inverse(k: int) -> Decimal:
        total, term, n, sign = Decimal(0), Decimal(1) / k, 1, 1
        while term > Decimal(10) ** -62:
            total += sign * term / n
            term /= k * k
            n += 2
            sign = -sign
        return total
    return 16 * arctan_inverse(5) - 4 * arctan_inverse(239)


def _split(v: Decimal) -> tuple[float, float]:
    hi = float(v)
    return hi, float(v - Decimal(hi))


class _Builder:
    """Double arithmetic on LLVM values with Python floats as constants, and the exact steps."""

    def __init__(self, b: ir.IRBuilder, module: ir.Module) -> None:
        self.b, self.module = b, module

    def v(self, x: ir.Value | float) -> ir.Value:
        return x if isinstance(x, ir.Value) else ir.Constant(F64, x)

    def add(self, x, y):
        return self.b.fadd(self.v(x), self.v(y))

    def sub(self, x, y):
        return self.b.fsub(self.v(x), self.v(y))

    def mul(self, x, y):
        return self.b.fmul(self.v(x), self.v(y))

    def div(self, x, y):
        return self.b.fdiv(self.v(x), self.v(y))

    def neg(self, x):
        return self.b.fneg(self.v(x))

    def cmp(self, op: str, x, y) -> ir.Value:  # ordered: false with a NaN
        return self.b.fcmp_ordered(op, self.v(x), self.v(y))

    def sel(self, cond: ir.Value, x, y) -> ir.Value:
        return self.b.select(cond, self.v(x), self.v(y))

    def isnan(self, x) -> ir.Value:
        return self.b.fcmp_unordered("uno", x, x)

    def intrinsic(self, name: str, *args: ir.Value) -> ir.Value:
        fn = self.module.declare_intrinsic(name, [F64], ir.FunctionType(F64, [F64] * len(args)))
        return self.b.call(fn, [self.v(a) for a in args])

    def abs(self, x):
        return self.intrinsic("llvm.fabs", x)

    def copysign(self, magnitude, sign):
        return self.intrinsic("llvm.copysign", magnitude, sign)

    def sqrt(self, x):
        return self.intrinsic("llvm.sqrt", x)

    def rint(self, x):
        return self.intrinsic("llvm.rint", x)

    def bits(self, x) -> ir.Value:
        return self.b.bitcast(self.v(x), I64)

    def from_bits(self, n: ir.Value) -> ir.Value:
        return self.b.bitcast(n, F64)

    def pow2(self, n: ir.Value) -> ir.Value:
        """2^n for an i64 n in [-1022, 1023]."""
        return self.from_bits(self.b.shl(self.b.add(n, ir.Constant(I64, 1023)), ir.Constant(I64, 52)))

    def scale(self, x, n: ir.Value) -> ir.Value:
        """x 2^n for n in [-2044, 2046], rounded once: 2^half is exact on a normal x, then one
        multiplication rounds (to a subnormal, or overflows to inf)."""
        half = self.b.ashr(n, ir.Constant(I64, 1))
        return self.mul(self.mul(x, self.pow2(half)), self.pow2(self.b.sub(n, half)))

    def poly(self, x, coefficients) -> ir.Value:
        """Horner: c0 + x (c1 + x (c2 + ...)), each step fused where the CPU has FMA
        (``llvm.fmuladd``): only these kernels' own polynomials, whose bounds are measured both
        ways, never user arithmetic."""
        fn = self.module.declare_intrinsic("llvm.fmuladd", [F64], ir.FunctionType(F64, [F64] * 3))
        acc = self.v(coefficients[-1])
        for c in reversed(coefficients[:-1]):
            acc = self.b.call(fn, [acc, self.v(x), self.v(c)])
        return acc

    # -- exact steps -------------------------------------------------------------------------
    def two_sum(self, x, y) -> tuple[ir.Value, ir.Value]:
        """s + e = x + y exactly, s the rounded sum (Knuth)."""
        s = self.add(x, y)
        yy = self.sub(s, x)
        return s, self.add(self.sub(x, self.sub(s, yy)), self.sub(y, yy))

    def fast_two_sum(self, x, y) -> tuple[ir.Value, ir.Value]:
        """s + e = x + y exactly when |x| >= |y| (or x = 0)."""
        s = self.add(x, y)
        return s, self.sub(y, self.sub(s, x))

    def two_prod(self, x, y) -> tuple[ir.Value, ir.Value]:
        """p + e = x y exactly (no overflow, no underflow below 2^-969)."""
        p = self.mul(x, y)
        if HAS_FMA:
            return p, self.intrinsic("llvm.fma", x, y, self.neg(p))
        xh, xl = self._split(x)
        yh, yl = self._split(y)
        e = self.add(self.add(self.sub(self.mul(xh, yh), p), self.mul(xh, yl)), self.mul(xl, yh))
        return p, self.add(e, self.mul(xl, yl))

    def _split(self, x) -> tuple[ir.Value, ir.Value]:
        t = self.mul(x, 134217729.0)  # 2^27 + 1 (Veltkamp)
        hi = self.sub(t, self.sub(t, x))
        return hi, self.sub(x, hi)

    def dd_mul(self, xh, xl, yh: float, yl: float) -> tuple[ir.Value, ir.Value]:
        """(xh + xl)(yh + yl) to about 2^-104 relative, as a pair."""
        p, e = self.two_prod(xh, yh)
        return p, self.add(e, self.add(self.mul(xh, yl), self.mul(xl, yh)))

    def table(self, name: str, values: list[float]) -> ir.GlobalVariable:
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        array = ir.ArrayType(F64, len(values))
        g = ir.GlobalVariable(self.module, array, name)
        g.initializer = ir.Constant(array, [ir.Constant(F64, v) for v in values])
        g.global_constant = True
        g.linkage = "internal"
        return g

    def gather(self, table: ir.GlobalVariable, index: ir.Value) -> ir.Value:
        return self.b.load(self.b.gep(table, [ir.Constant(I64, 0), index], inbounds=True))


# -- exp -----------------------------------------------------------------------------------------

EXP_TABLE_BITS = 6
EXP_SERIES = [1.0 / math.factorial(k) for k in range(2, 8)]  # e^r - 1 - r = r^2 (1/2 + r/6 + ...)


@functools.cache
def _exp_table() -> tuple[list[float], list[float]]:
    """2^(j/64) for j = 0..63 as pairs (60-digit decimal)."""
    with localcontext() as ctx:
        ctx.prec = 60
        size = 1 << EXP_TABLE_BITS
        pairs = [_split((Decimal(j) / size * Decimal(2).ln()).exp()) for j in range(size)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _exp_parts(f: _Builder, xh: ir.Value, xl: ir.Value | float = 0.0) -> tuple[ir.Value, ir.Value, ir.Value]:
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


def _exp_scaled(f: _Builder, xh: ir.Value, xl: ir.Value | float = 0.0) -> ir.Value:
    """e^(xh + xl), overflow to inf and underflow to 0 included, rounded once."""
    clamped = f.sel(f.cmp(">", xh, 800.0), 800.0, f.sel(f.cmp("<", xh, -800.0), -800.0, xh))
    n, s, t = _exp_parts(f, clamped, xl)
    return f.scale(f.add(s, t), n)


def exp(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    f = _Builder(b, module)
    return f.sel(f.isnan(x), x, _exp_scaled(f, x))


def exp2(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """2^x = e^(x ln 2) with x ln 2 as an exact pair: integer x gives exactly 2^x."""
    f = _Builder(b, module)
    ln2h, ln2l = _decimal_constants()["ln2"]
    clamped = f.sel(f.cmp(">", x, 1100.0), 1100.0, f.sel(f.cmp("<", x, -1100.0), -1100.0, x))
    zh, zl = f.dd_mul(clamped, 0.0, ln2h, ln2l)
    return f.sel(f.isnan(x), x, _exp_scaled(f, zh, zl))


EXPM1_SERIES = [1.0 / math.factorial(k) for k in range(2, 9)]   # |x| < 2^-10: to 2^-80


def expm1(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """|x| < 2^-10: x + x^2 P(x); beyond, 2^n s - 1 exactly by two-sum, then + 2^n t (the
    pair's 2^-68 is 2^-58 of the result at worst); below -40 the result is -1, above 40 e^x."""
    f = _Builder(b, module)
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
    f = _Builder(b, module)
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
            hi, lo = _split(-Decimal(c).ln())
            inverses.append(c)
            his.append(hi)
            los.append(lo)
    return inverses, his, los


LOG1P_SERIES = [(-1) ** (k + 1) / k for k in range(3, 11)]  # log1p(r) = r - r^2/2 + r^3 (1/3 - r/4 ...)


def _log_parts(f: _Builder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """log x = hi + lo for a positive finite x (subnormals included), about 2^-68 relative.

    x = 2^e m with m in [sqrt(1/2), sqrt(2)) read from the bits; j = the slice of m's bits;
    m c_j = p + pe exactly (two-prod) with p within 2^-7 of 1, so r = (p - 1) + pe exactly
    (Sterbenz); log x = e ln2 + (-log c_j) + r - r^2/2 + r^3 P(r), summed with two-sums so the
    large terms' roundings are kept."""
    b = f.b

    def i(v: int) -> ir.Constant:
        return ir.Constant(I64, v)

    subnormal = f.cmp("<", x, 2.2250738585072014e-308)
    xs = f.sel(subnormal, f.mul(x, 2.0 ** 54), x)
    offset = b.sub(f.bits(xs), i(SQRT_HALF_BITS))
    e = b.ashr(offset, i(52))
    m = f.from_bits(b.sub(f.bits(xs), b.shl(e, i(52))))
    j = b.and_(b.lshr(offset, i(52 - LOG_TABLE_BITS)), i((1 << LOG_TABLE_BITS) - 1))
    e = b.sub(e, b.select(subnormal, i(54), i(0)))
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


ATANH_SERIES = [2.0 / (2 * k + 3) for k in range(12)]   # 2 atanh(s) = 2s + s^3 (2/3 + 2s^2/5 ...)


def _log_parts_fast(f: _Builder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """log x = hi + lo for a positive finite x, about 2^-58 relative, without table lookups:
    x = 2^e m, m in [sqrt(1/2), sqrt(2)), f = m - 1 exact; log m = 2 atanh(s) with
    s = f / (2 + f) as a pair (the division's exact remainder); 2s + s^3 P(s^2) with |s| <= 0.172,
    whose tail (below 1% of the result) is the only part in plain double. Good for everything
    rounded once from it; pow and logaddexp, which magnify its error, use ``_log_parts``."""
    b = f.b

    def i(v: int) -> ir.Constant:
        return ir.Constant(I64, v)

    subnormal = f.cmp("<", x, 2.2250738585072014e-308)
    xs = f.sel(subnormal, f.mul(x, 2.0 ** 54), x)
    offset = b.sub(f.bits(xs), i(SQRT_HALF_BITS))
    e = b.ashr(offset, i(52))
    m = f.from_bits(b.sub(f.bits(xs), b.shl(e, i(52))))
    e = b.sub(e, b.select(subnormal, i(54), i(0)))
    g = f.sub(m, 1.0)                                  # exact (Sterbenz)
    dh, dl = f.fast_two_sum(2.0, g)
    sh = f.div(g, dh)
    p, pe = f.two_prod(sh, dh)
    # the remainder over 2 + g by a short series in g (sl is 2^-53 of sh: 2^-10 is plenty)
    sl = f.mul(f.sub(f.sub(f.sub(g, p), pe), f.mul(sh, dl)), f.poly(g, [0.5, -0.25, 0.125, -0.0625]))
    s2 = f.mul(sh, sh)
    tail = f.add(f.mul(f.mul(sh, s2), f.poly(s2, ATANH_SERIES)), f.mul(sl, 2.0))
    ef = b.sitofp(e, F64)
    a, ae = f.two_sum(f.mul(ef, LN2_HI), f.mul(sh, 2.0))  # e LN2_HI and 2 sh are exact
    return f.fast_two_sum(a, f.add(ae, f.add(tail, f.mul(ef, LN2_LO))))


def _log_specials(f: _Builder, x: ir.Value, value: ir.Value) -> ir.Value:
    """log's ends: +inf at +inf, -inf at +-0.0, NaN below zero and for NaN."""
    value = f.sel(f.cmp("==", x, math.inf), math.inf, value)
    value = f.sel(f.cmp("==", x, 0.0), -math.inf, value)
    value = f.sel(f.cmp("<", x, 0.0), math.nan, value)
    return f.sel(f.isnan(x), x, value)


def _safe_positive(f: _Builder, x: ir.Value) -> ir.Value:
    """x where it is positive and finite, else 1 (the specials are selected afterwards)."""
    ok = f.b.and_(f.cmp(">", x, 0.0), f.cmp("<", x, math.inf))
    return f.sel(ok, x, 1.0)


def log(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    f = _Builder(b, module)
    hi, lo = _log_parts_fast(f, _safe_positive(f, x))
    return _log_specials(f, x, f.add(hi, lo))


def _log_scaled(name: str):
    def kernel(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
        f = _Builder(b, module)
        hi, lo = _log_parts_fast(f, _safe_positive(f, x))
        ph, pl = f.dd_mul(hi, lo, *_decimal_constants()[name])
        return _log_specials(f, x, f.add(ph, pl))
    return kernel


log2 = _log_scaled("inv_ln2")
log10 = _log_scaled("inv_ln10")


def _log1p_parts(f: _Builder, uh: ir.Value, ul: ir.Value,
                 precise: bool = False) -> tuple[ir.Value, ir.Value]:
    """log(uh + ul) for uh > 0 finite and |ul| <= ulp(uh): log uh + ul / uh."""
    hi, lo = (_log_parts if precise else _log_parts_fast)(f, _safe_positive(f, uh))
    return f.fast_two_sum(hi, f.add(lo, f.div(ul, uh)))


def log1p(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """log(1 + x) with 1 + x as an exact pair; tiny x (and -0.0) give x."""
    f = _Builder(b, module)
    uh, ul = f.two_sum(1.0, x)
    hi, lo = _log1p_parts(f, uh, ul)
    value = f.sel(f.cmp("<", f.abs(x), 2.0 ** -60), x, f.add(hi, lo))
    value = f.sel(f.cmp("==", x, math.inf), math.inf, value)
    value = f.sel(f.cmp("==", x, -1.0), -math.inf, value)
    value = f.sel(f.cmp("<", x, -1.0), math.nan, value)
    return f.sel(f.isnan(x), x, value)


# -- sin, cos, tan -------------------------------------------------------------------------------

#: the fast reduction's range: n = rint(|x| 2/pi) < 2^23, so n times a 30-bit chunk is exact
TRIG_LIMIT = 2.0 ** 23 * math.pi / 2


@functools.cache
def _pio2_chunks() -> list[float]:
    """pi/2 as four 30-bit chunks and a double: 150 bits, past the worst cancellation a double
    below TRIG_LIMIT reaches near a multiple of pi/2."""
    with localcontext() as ctx:
        ctx.prec = 80
        rest = _decimal_pi() / 2
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


def _sin_cos_pairs(f: _Builder, x: ir.Value):
    """|x| = n pi/2 + yh + yl; returns (n mod 4, sin y and cos y as pairs)."""
    b = f.b
    ax = f.abs(x)
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


def _finite_or_nan(f: _Builder, x: ir.Value, value: ir.Value) -> ir.Value:
    return f.sel(f.cmp("<", f.abs(x), math.inf), value, math.nan)


def sin(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """sin(q pi/2 + y) over q = 0..3 is s, c, -s, -c; odd in x (sin(-0.0) = -0.0)."""
    f = _Builder(b, module)
    q, (sh, sl), (ch, cl) = _sin_cos_pairs(f, x)
    odd = b.trunc(q, I1)
    value = f.add(f.sel(odd, ch, sh), f.sel(odd, cl, sl))
    negate = b.xor(b.icmp_unsigned(">=", q, ir.Constant(I64, 2)),
                   b.icmp_signed("<", f.bits(x), ir.Constant(I64, 0)))
    return _finite_or_nan(f, x, f.sel(negate, f.neg(value), value))


def cos(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """cos(q pi/2 + y) over q = 0..3 is c, -s, -c, s; even in x."""
    f = _Builder(b, module)
    q, (sh, sl), (ch, cl) = _sin_cos_pairs(f, x)
    odd = b.trunc(q, I1)
    value = f.add(f.sel(odd, sh, ch), f.sel(odd, sl, cl))
    negate = b.or_(b.icmp_unsigned("==", q, ir.Constant(I64, 1)),
                   b.icmp_unsigned("==", q, ir.Constant(I64, 2)))
    return _finite_or_nan(f, x, f.sel(negate, f.neg(value), value))


def tan(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """s / c, or -c / s in odd quadrants, as a division of pairs; odd in x."""
    f = _Builder(b, module)
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


# -- cbrt, hypot, pow ----------------------------------------------------------------------------

def cbrt(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """|x| = 2^(3q) m' with m' in [1, 8) (exponent split by an integer division by 3); a guess
    from the bits divided by 3, three Halley steps (cubic convergence: 2^-5 -> 2^-15 -> 2^-45 ->
    past 2^-53), then one Newton step with the residual m' - y^3 from exact products."""
    f = _Builder(b, module)

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
    f = _Builder(b, module)

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


def pow(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    """|x|^y = e^(y log|x|) with log|x| a pair (2^-68) and y log|x| an exact product plus the
    low part, so the exponent errs by 2^-56 absolute at most where the result is finite; C99's
    special cases as the float32 kernel (``vmath.pow_d``)."""
    f = _Builder(b, module)
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


# -- inverse trigonometric functions -------------------------------------------------------------

ATAN_SERIES = [(-1) ** k / (2 * k + 1) for k in range(1, 23)]   # |u| <= 7/16: to 2^-60
ASIN_SERIES = [math.comb(2 * k, k) / (4 ** k * (2 * k + 1)) for k in range(1, 28)]  # |s| <= 1/2


def _atan_pair(f: _Builder, ah: ir.Value, al: ir.Value | float = 0.0) -> tuple[ir.Value, ir.Value]:
    """atan(ah + al) for ah >= 0 (inf included) as a pair. Around c = 0, 1/2, 1, 3/2 and infinity
    atan a = atan c + atan u with u = (a - c) / (1 + a c), |u| <= 7/16: a - c is exact (Sterbenz),
    1 + a c an exact pair, u a pair from the division's exact remainder; atan u by its series;
    al enters through the derivative 1 / (1 + a^2)."""
    k = _decimal_constants()
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
    f = _Builder(b, module)
    hi, lo = _atan_pair(f, f.abs(x))
    return f.sel(f.isnan(x), x, f.copysign(f.add(hi, lo), x))


def arctan2(b: ir.IRBuilder, module: ir.Module, y: ir.Value, x: ir.Value) -> ir.Value:
    """C99's atan2: atan(|y| / |x|) with the quotient as a pair, folded to pi - angle by the sign
    bit of x (-0.0 counts), signed as y; both zeros and both infinities by their own angles."""
    f = _Builder(b, module)
    k = _decimal_constants()
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


def _asin_small(f: _Builder, sh: ir.Value, sl: ir.Value | float = 0.0) -> tuple[ir.Value, ir.Value]:
    """asin(sh + sl) for |sh| <= 1/2 as (sh, tail): its Taylor series to s^55 (2^-60)."""
    s2 = f.mul(sh, sh)
    tail = f.add(f.mul(f.mul(sh, s2), f.poly(s2, ASIN_SERIES)), f.mul(sl, f.add(1.0, f.mul(s2, 0.5))))
    return sh, tail


def _half_root(f: _Builder, a: ir.Value) -> tuple[ir.Value, ir.Value]:
    """sqrt((1 - a) / 2) as a pair for a in [1/2, 1]: 1 - a and the halving are exact."""
    z = f.mul(f.sub(1.0, a), 0.5)
    r = f.sqrt(z)
    rr, rre = f.two_prod(r, r)
    return r, f.div(f.sub(f.sub(z, rr), rre), f.sel(f.cmp(">", r, 0.0), f.mul(r, 2.0), 1.0))


def arcsin(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """|x| <= 1/2: the series; beyond, pi/2 - 2 asin(sqrt((1 - |x|) / 2)); odd; NaN past 1."""
    f = _Builder(b, module)
    k = _decimal_constants()
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
    f = _Builder(b, module)
    k = _decimal_constants()
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


# -- inverse hyperbolic functions and logaddexp --------------------------------------------------

def _root_pair(f: _Builder, dh: ir.Value, dl: ir.Value) -> tuple[ir.Value, ir.Value]:
    """sqrt(dh + dl) as a pair (dh > 0): one Newton correction from the exact residual."""
    r = f.sqrt(dh)
    rr, rre = f.two_prod(r, r)
    return r, f.div(f.add(f.sub(f.sub(dh, rr), rre), dl), f.sel(f.cmp(">", r, 0.0), f.mul(r, 2.0), 1.0))


def _log_of_sum(f: _Builder, a: ir.Value, rh: ir.Value, rl: ir.Value) -> ir.Value:
    """log(a + rh + rl) rounded once, for a + rh >= 1."""
    wh, wl = f.two_sum(a, rh)
    hi, lo = _log1p_parts(f, wh, f.add(wl, rl))
    return f.add(hi, lo)


def _log_twice(f: _Builder, a: ir.Value) -> ir.Value:
    """log(2a) = log a + ln 2 for large a."""
    hi, lo = _log_parts_fast(f, _safe_positive(f, a))
    ln2h, ln2l = _decimal_constants()["ln2"]
    h, e = f.two_sum(hi, ln2h)
    return f.add(h, f.add(e, f.add(lo, ln2l)))


def arcsinh(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    """log(a + sqrt(a^2 + 1)) with the root a pair; log(2a) past 2^28; x itself below 2^-28."""
    f = _Builder(b, module)
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
    f = _Builder(b, module)
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
    f = _Builder(b, module)
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
    f = _Builder(b, module)
    k = _decimal_constants()
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


def ldexp(b: ir.IRBuilder, module: ir.Module, x: ir.Value, n: ir.Value) -> ir.Value:
    """x 2^n for an i64 n, rounded once as C's ldexp: x = 2^e m with m in [1, 2) (subnormal x
    normalized first); E = e + n; a normal result is m 2^E exactly, a subnormal one is
    (m 2^(E + 1074)) 2^-1074 with the first product exact and the second rounding once."""
    f = _Builder(b, module)

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


UNARY = {"exp2": exp2, "expm1": expm1, "sinh": sinh, "cosh": cosh, "log2": log2, "log10": log10,
         "log1p": log1p, "sin": sin, "cos": cos, "tan": tan,
         "cbrt": cbrt, "exp": exp, "log": log, "arctan": arctan, "arcsin": arcsin, "arccos": arccos,
         "arcsinh": arcsinh, "arccosh": arccosh, "arctanh": arctanh}
BINARY = {"hypot": hypot, "pow": pow, "arctan2": arctan2, "logaddexp": logaddexp,
          "logaddexp2": logaddexp2}
