"""Double-double arithmetic on LLVM values: exact two-sums and two-products (FMA where the host
has it, Dekker's splitting otherwise), constants as pairs computed in decimal, table globals."""

from __future__ import annotations

import functools
from decimal import Decimal, localcontext

from llvmlite import ir

from ..host import host_identity

F64 = ir.DoubleType()
I64 = ir.IntType(64)
I32 = ir.IntType(32)
I1 = ir.IntType(1)


def has_scalef() -> bool:
    """Whether ``llvm.ldexp`` becomes one instruction on vectors (AVX-512's ``vscalefpd``, at
    either vector width); elsewhere it is a call of C's ldexp, which would keep loops scalar."""
    return host_identity().has("avx512f")


def has_fma() -> bool:
    """Exact products by FMA only where the host CPU has it (asked on the first product, never
    at import; the disk cache keys on CPU features); elsewhere Dekker's splitting, which tests
    force to keep it covered. These kernels make code for the host, as the JIT compiles it."""
    return host_identity().fma


# ln 2 = LN2_HI + LN2_LO with LN2_HI's low 21 bits zero: n LN2_HI is exact for |n| < 2^21
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10


@functools.cache
def constants() -> dict[str, tuple[float, float]]:
    """Double-double values of the constants the kernels need, computed in 60-digit decimal."""
    with localcontext() as ctx:
        ctx.prec = 60
        pi = decimal_pi()

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
        return {name: pair_of(v) for name, v in values.items()}


def decimal_pi() -> Decimal:
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


def pair_of(v: Decimal) -> tuple[float, float]:
    """A decimal as a double and the double nearest what it leaves."""
    hi = float(v)
    return hi, float(v - Decimal(hi))


class Builder:
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

    def ldexp(self, x, n: ir.Value) -> ir.Value:
        """x 2^n for an i32 n in [-2044, 2046], rounded once (to a subnormal, or overflowing to
        inf): ``vscalefpd`` where the host has it, else ``scale``'s two multiplications, which
        round the same."""
        if not has_scalef():
            return self.scale(x, self.b.sext(n, I64))
        fn = self.module.declare_intrinsic("llvm.ldexp", [F64, I32], ir.FunctionType(F64, [F64, I32]))
        return self.b.call(fn, [self.v(x), n])

    def muladd(self, x, y, z) -> ir.Value:
        """x y + z, fused where the CPU has FMA (``llvm.fmuladd``), for steps whose rounding the
        kernel's bound allows either way (never where exactness is claimed: ``remainder``)."""
        fn = self.module.declare_intrinsic("llvm.fmuladd", [F64], ir.FunctionType(F64, [F64] * 3))
        return self.b.call(fn, [self.v(x), self.v(y), self.v(z)])

    def poly(self, x, coefficients) -> ir.Value:
        """Horner: c0 + x (c1 + x (c2 + ...)), each step fused where the CPU has FMA
        (``llvm.fmuladd``): only these kernels' own polynomials, whose bounds are measured both
        ways, never user arithmetic."""
        acc = self.v(coefficients[-1])
        for c in reversed(coefficients[:-1]):
            acc = self.muladd(acc, x, c)
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
        if has_fma():
            return p, self.intrinsic("llvm.fma", x, y, self.neg(p))
        xh, xl = self.veltkamp(x)
        yh, yl = self.veltkamp(y)
        e = self.add(self.add(self.sub(self.mul(xh, yh), p), self.mul(xh, yl)), self.mul(xl, yh))
        return p, self.add(e, self.mul(xl, yl))

    def remainder(self, n, q, d) -> ir.Value:
        """n - q d exactly, for q = n / d rounded to nearest (the remainder of a correctly rounded
        division is a double): one FMA, or Dekker's product whose high part cancels n exactly
        (Sterbenz)."""
        if has_fma():
            return self.intrinsic("llvm.fma", self.neg(q), d, n)
        p, e = self.two_prod(q, d)
        return self.sub(self.sub(n, p), e)

    def veltkamp(self, x) -> tuple[ir.Value, ir.Value]:
        """x = hi + lo with hi on 26 bits and lo on 27: their products are exact."""
        t = self.mul(x, 134217729.0)  # 2^27 + 1
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


