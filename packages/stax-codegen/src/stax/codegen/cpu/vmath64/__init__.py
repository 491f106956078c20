"""float64 transcendental functions within 1 ulp of the correctly rounded result.

NumPy promises 1 ulp for its float64 loops (2 for cbrt and tanh) and ships the data that checks
it (``numpy/_core/tests/data/umath-validation-set-*.csv``); our tests run these kernels on that
data with NumPy's own thresholds. A double computation rounds too often to stay under 1 ulp, so
every step that could cost a bit is kept as an unevaluated sum of two doubles (double-double):
exact sums (two-sum), exact products (FMA where the host has it, Dekker's splitting otherwise),
and reductions whose remainders are exact. The final rounding is the only full half-ulp.

Built from a few cores, each straight-line (selects, no branches) so loops stay vectorizable:

- ``exp`` and ``_log_parts_fast`` (log, log2, log10, log1p, the inverse hyperbolics) take no
  table: a lookup becomes a vector gather, and a gather of 8 doubles costs about as much as ten
  FMAs. exp is e^r for |r| <= ln2/2 with the leading terms exact (0.55 ulp), log 2 atanh(s) with
  s = (m - 1) / (m + 1) as a pair from one division (0.54 ulp);
- ``_exp_parts``: e^(xh + xl) = 2^n (s + t) to about 2^-68 relative, for the functions that
  magnify its error or need the pair (exp2, expm1, sinh, cosh, pow, logaddexp), from a 64-entry
  table of 2^(j/64) pairs, a Cody–Waite reduction to |r| <= ln2/128 and a series to degree 7;
- ``_log_parts``: log x = hi + lo to about 2^-68 relative (pow, logaddexp), from a 128-entry
  table (x = 2^e m, m c_j = 1 + r with |r| <= 2^-7, log c_j in double-double computed once in
  decimal arithmetic) and a degree-10 series of log1p(r);
- ``_reduce_pio2``: x = n pi/2 + y for |x| < 2^23 pi/2 with pi/2 split into four 30-bit chunks
  (each n chunk product exact) and a fifth double; larger arguments make the lowering's check
  fail (such a call runs as NumPy, see ``stax.loop.lowering``).

Special values (NaN, +-inf, +-0.0, the domain edges) are selected at the end of each function to
match C99 and NumPy (exp's come out of its arithmetic: a NaN goes through, ldexp gives 0 and inf).
"""

from .explog import (
    arccosh,
    arcsinh,
    arctanh,
    cosh,
    exp,
    exp2,
    expm1,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    pow,
    sinh,
)
from .roots import cbrt, hypot, ldexp
from .trig import TRIG_LIMIT, arccos, arcsin, arctan, arctan2, cos, sin, tan

UNARY = {"exp2": exp2, "expm1": expm1, "sinh": sinh, "cosh": cosh, "log2": log2, "log10": log10,
         "log1p": log1p, "sin": sin, "cos": cos, "tan": tan,
         "cbrt": cbrt, "exp": exp, "log": log, "arctan": arctan, "arcsin": arcsin, "arccos": arccos,
         "arcsinh": arcsinh, "arccosh": arccosh, "arctanh": arctanh}
BINARY = {"hypot": hypot, "pow": pow, "arctan2": arctan2, "logaddexp": logaddexp,
          "logaddexp2": logaddexp2}

__all__ = ["BINARY", "TRIG_LIMIT", "UNARY", "ldexp"]
