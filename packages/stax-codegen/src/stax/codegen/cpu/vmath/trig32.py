"""float32 sin, cos and tan, computed in double and rounded once. Two argument reductions:

- ``short``: ``x - n pi/2`` by two fused multiply-adds in double (Cody–Waite), for |x| below
  ``TRIG32_LIMIT``: the loop layer checks every argument against it (``LoopProgram.trig_limits``)
  and a call beyond runs as NumPy. About 3.5x faster than the full reduction.
- ``full``: Payne–Hanek over the whole float32 range, for a program lowered without that check
  (a loop-IR document before 1.5, or lowered with other limits).

Measured: sin/cos 0.5 ulp (bound 1) with either reduction, tan within 1."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from llvmlite import ir

from .double import F64, I64, f64, i64, poly
from .lanes32 import F32, I32

#: an argument reduction: (builder, module, |x|) -> (quadrant q in 0..3, y in double)
Reduction = Callable[[ir.IRBuilder, ir.Module, ir.Value], tuple[ir.Value, ir.Value]]
Routine = Callable[[ir.IRBuilder, ir.Module, ir.Value], ir.Value]


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
#: |x| below which the short reduction is used (when the program checks it): 2^23 pi/2, as
#: float64's. n = rint(|x| 2/pi) < 2^23; |x| - n PIO2_HI is exact in one FMA (a multiple of
#: 2^-52 below 1 in magnitude), and the part of pi/2 past PIO2_HI + PIO2_LO (below 2^-108)
#: times n errs by under 2^-85, far below the 2^-24 of the closest float32 to a multiple of pi/2
TRIG32_LIMIT = 2.0 ** 23 * math.pi / 2


def _reduce_short(b: ir.IRBuilder, module: ir.Module, ax: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(q, y) as ``_reduce_full`` gives them, for |x| (float32, finite) below ``TRIG32_LIMIT``:
    n = rint(|x| 2/pi), y = (|x| - n PIO2_HI) - n PIO2_LO by two FMAs in double; larger
    arguments give some q and y (the program's check sends such a call to NumPy)."""
    inside = b.fcmp_ordered("<", ax, ir.Constant(F32, TRIG32_LIMIT))
    wide = b.fpext(b.select(inside, ax, ir.Constant(F32, 0.0)), F64)  # no poison from fptosi
    n = b.call(module.declare_intrinsic("llvm.rint", [F64]), [b.fmul(wide, f64(2 / math.pi))])
    fma = module.declare_intrinsic("llvm.fma", [F64], ir.FunctionType(F64, [F64] * 3))
    minus_n = b.fneg(n)
    y = b.call(fma, [minus_n, f64(PIO2_LO), b.call(fma, [minus_n, f64(PIO2_HI), wide])])
    return b.and_(b.fptosi(n, I32), ir.Constant(I32, 3)), y


def _reduce_full(b: ir.IRBuilder, module: ir.Module, ax: ir.Value) -> tuple[ir.Value, ir.Value]:
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
        return b.bitcast(b.shl(b.zext(b.add(k, i(1023)), I64), i64(52)), F64)

    def mod4(v: ir.Value) -> ir.Value:  # exact: v carries at most 53 significant bits
        return b.fsub(v, b.fmul(f64(4.0), b.call(floor, [b.fmul(v, f64(0.25))])))

    # m 2^(e - 24 (first + 1)), exact; chunk j scaled by 2^(-24 j) (exact constants), so each
    # part is one exact product: a 24-bit m times a 24-bit chunk
    scaled = b.fmul(md, pow2(b.sub(e, b.mul(b.add(first, i(1)), i(24)))))
    parts = []
    for j in range(5):
        # the chunk first + j: first is 0..4 over the float32 range (0 below 2^50), so a select
        # among constants, cheaper than a gather from a table
        chunk: ir.Value = f64(TWO_OVER_PI_24[j] * 2.0 ** (-24 * j))
        for k in range(1, 5):
            chunk = b.select(b.icmp_signed("==", first, i(k)),
                             f64(TWO_OVER_PI_24[j + k] * 2.0 ** (-24 * j)), chunk)
        parts.append(b.fmul(scaled, chunk))
    head = mod4(b.fadd(mod4(parts[0]), mod4(parts[1])))
    n = b.call(module.declare_intrinsic("llvm.rint", [F64]), [b.fadd(head, parts[2])])
    a = b.fsub(head, n)                                               # exact
    hi = b.fadd(a, parts[2])                                          # two-sum: hi + lo = a + p2
    v = b.fsub(hi, a)
    lo = b.fadd(b.fsub(a, b.fsub(hi, v)), b.fsub(parts[2], v))
    lo = b.fadd(lo, b.fadd(parts[3], parts[4]))
    y = b.fadd(b.fmul(hi, f64(PIO2_HI)), b.fadd(b.fmul(lo, f64(PIO2_HI)), b.fmul(hi, f64(PIO2_LO))))
    q = b.and_(b.fptosi(n, I32), i(3))
    return q, y


def _sin_cos_poly(b: ir.IRBuilder, y: ir.Value) -> tuple[ir.Value, ir.Value]:
    """sin y and cos y for |y| <= pi/4 + tiny, Taylor series to y^11 / y^12 (truncation 7e-12,
    far below a float32 ulp)."""
    y2 = b.fmul(y, y)
    sin_series = poly(b, y2, [(-1) ** k / math.factorial(2 * k + 1) for k in range(6)])
    cos_series = poly(b, y2, [(-1) ** k / math.factorial(2 * k) for k in range(7)])
    return b.fmul(y, sin_series), cos_series


def _quiet_magnitude(b: ir.IRBuilder, module: ir.Module, x: ir.Value
                     ) -> tuple[ir.Value, ir.Value]:
    """(|x|, 0 where x is NaN or +-inf; whether it is), by quiet compares: no NaN reaches the
    reduction, whose conversions and compares would raise the invalid flag, which a fast kernel
    reading the flags cannot tell from ``sin(inf)``'s event (``vmath64.trig._nonfinite``)."""
    ax = b.call(module.declare_intrinsic("llvm.fabs", [F32]), [x])
    nonfinite = b.or_(b.fcmp_unordered("uno", x, x),
                      b.fcmp_ordered("==", ax, ir.Constant(F32, math.inf)))
    return b.select(nonfinite, ir.Constant(F32, 0.0), ax), nonfinite


def _sincos32(b: ir.IRBuilder, module: ir.Module, x: ir.Value, want: str, reduce: Reduction
              ) -> ir.Value:
    """float32 sin/cos, computed in double and rounded once. Measured: 0.5 ulp (bound 1) over
    the whole float32 range; NaN and +-Inf give NaN, sin(-0.0) is -0.0, as NumPy."""
    def i(v: int) -> ir.Constant:
        return ir.Constant(I32, v)

    ax, nonfinite = _quiet_magnitude(b, module, x)
    q, y = reduce(b, module, ax)
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
    return b.select(nonfinite, ir.Constant(F32, math.nan), result)


def _tan32(b: ir.IRBuilder, module: ir.Module, x: ir.Value, reduce: Reduction) -> ir.Value:
    """float32 tan from the sin/cos reduction: s/c, or -c/s in odd quadrants; odd in x."""
    ax, nonfinite = _quiet_magnitude(b, module, x)
    q, y = reduce(b, module, ax)
    s, c = _sin_cos_poly(b, y)
    odd = b.trunc(q, ir.IntType(1))
    # one division of the selected quotient: -c / s beside an even quadrant's s = 0 (tan(0),
    # and a NaN's stand-in) raised the divide flag, and the fast kernel ran again precisely
    value = b.fdiv(b.select(odd, b.fneg(c), s), b.select(odd, s, c))
    result = b.fptrunc(value, F32)
    negative = b.icmp_signed("<", b.bitcast(x, I32), ir.Constant(I32, 0))
    result = b.select(negative, b.fneg(result), result)
    return b.select(nonfinite, ir.Constant(F32, math.nan), result)


def _routines(reduce: Reduction) -> dict[str, Routine]:
    return {"sin": lambda b, module, x: _sincos32(b, module, x, "sin", reduce),
            "cos": lambda b, module, x: _sincos32(b, module, x, "cos", reduce),
            "tan": lambda b, module, x: _tan32(b, module, x, reduce)}


#: the routines by reduction: ``short`` where the program checks |x| < TRIG32_LIMIT, else ``full``
TRIG32 = {"short": _routines(_reduce_short), "full": _routines(_reduce_full)}


def short_reductions(trig_limits: Mapping[str, float]) -> frozenset[str]:
    """The float dtypes whose sin/cos/tan may use the short argument reduction: those a program
    checks below its range (``LoopProgram.trig_limits``). float64's routines always reduce
    short (the float64 check is as old as the loop IR)."""
    limit = trig_limits.get("float32")
    return frozenset({"float32"}) if limit is not None and limit <= TRIG32_LIMIT else frozenset()
