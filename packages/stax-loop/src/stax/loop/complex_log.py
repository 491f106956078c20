"""Complex logarithms (``np.log`` of complex64/complex128 values), as NumPy computes them.

NumPy calls glibc's ``clog``/``clogf`` (``math/s_clog_template.c``; docs/complex-semantics.md
§6): the real part is ``log(hypot(x, y))`` with the scaling of huge and tiny parts, or, where that
cancels near |z| = 1, ``log1p`` of ``x^2 + y^2 - 1`` computed more exactly, halved; the imaginary
part is ``atan2(y, x)``. Written here branch for branch with Stax's own ``log``, ``log1p``,
``hypot`` and ``arctan2``, each part is within a few ulp of NumPy's (glibc's real functions are
not correctly rounded, so bits differ where theirs and ours round differently), and the special
values are C99's exactly: a zero gives ``-inf`` (and the divide-by-zero report, through a real
division as glibc's), an infinite part ``inf``, a NaN part NaN.

Every branch is computed for every element and one selected: each ``log1p`` argument is 0 where
its branch does not apply, and the branches share one ``log1p``.
"""

from __future__ import annotations

import math

import numpy as np

from stax.ir import Node

from .complex_roots import FloatOps
from .complex_values import complex_lowers, function_of_parts
from .context import Lazy, LoopLowering, float_predicate, negation
from .expr import Binary, Cast, Expr, Ternary, Unary


def _x2y2m1(f: FloatOps, x: Expr, y: Expr) -> Expr:
    """``x^2 + y^2 - 1`` for ``0.5 <= x < 1``, ``x^2 + y^2 >= 0.5``: in double for float32
    (glibc's ``(dx - 1)(dx + 1) + dy^2``), else from the exact products (an FMA gives each
    square's rounding error) and two-sums, as glibc's compensated sum does."""
    if f.dtype == "float32":
        d = FloatOps("float64")
        dx, dy = Cast(x, "float64"), Cast(y, "float64")
        exact = d.add(d.mul(d.sub(dx, d.k(1.0)), d.add(dx, d.k(1.0))), d.mul(dy, dy))
        return Cast(exact, "float32")
    hx, hy = f.mul(x, x), f.mul(y, y)
    lx = Ternary("fma", x, x, Unary("neg", hx, f.dtype), f.dtype)
    ly = Ternary("fma", y, y, Unary("neg", hy, f.dtype), f.dtype)
    s1, e1 = _two_sum(f, hx, f.k(-1.0))
    s2, e2 = _two_sum(f, s1, hy)
    return f.add(s2, f.add(f.add(e1, e2), f.add(lx, ly)))


def _two_sum(f: FloatOps, a: Expr, b: Expr) -> tuple[Expr, Expr]:
    """``a + b`` rounded, and its rounding error exactly (Knuth's two-sum)."""
    total = f.add(a, b)
    b_part = f.sub(total, a)
    return total, f.add(f.sub(a, f.sub(total, b_part)), f.sub(b, b_part))


def clog(dtype: str, x: Expr, y: Expr) -> tuple[Expr, Expr]:
    """glibc's clog of ``x + iy`` in the parts' ``dtype``: the (real, imaginary) parts."""
    f = FloatOps(dtype)
    info = np.finfo(dtype)
    low, high, eps = float(info.tiny), float(info.max), float(info.eps)
    mantissa = 24 if dtype == "float32" else 53
    zero, one, inf = f.k(0.0), f.k(1.0), f.k(float("inf"))
    ax0, ay0 = f.abs(x), f.abs(y)
    nan_x, nan_y = float_predicate("isnan", x), float_predicate("isnan", y)
    either_nan = Binary("or", nan_x, nan_y, "bool")
    either_inf = Binary("or", float_predicate("isinf", x), float_predicate("isinf", y), "bool")
    nan = f.pick(nan_x, x, y)  # the NaN operand itself (no NaN constant: a precise kernel)
    both_zero = f.both(f.cmp("eq", x, zero), f.cmp("eq", y, zero))
    # |z| = 0: -1 / |x| (-inf and NumPy's divide-by-zero report), arg pi or 0 with y's sign
    zero_re = f.div(f.k(-1.0), f.pick(both_zero, ax0, one))
    zero_im = f.op("copysign", f.pick(Unary("signbit", x, "bool"), f.k(math.pi), zero), y)
    # finite or infinite, not NaN, not zero: the larger and smaller magnitude, scaled
    usable = f.both(negation(either_nan), negation(both_zero))
    larger = f.cmp("ge", ax0, ay0)
    ax = f.pick(usable, f.pick(larger, ax0, ay0), one)
    ay = f.pick(usable, f.pick(larger, ay0, ax0), one)
    huge = f.cmp("gt", ax, f.k(high / 2))
    tiny = f.both(f.cmp("lt", ax, f.k(low)), f.cmp("lt", ay, f.k(low)))
    sx = f.pick(huge, f.mul(ax, f.k(0.5)), f.pick(tiny, f.mul(f.pick(tiny, ax, zero),
                                                              f.k(2.0 ** mantissa)), ax))
    sy = f.pick(huge, f.pick(f.cmp("ge", ay, f.k(2 * low)), f.mul(ay, f.k(0.5)), zero),
                f.pick(tiny, f.mul(f.pick(tiny, ay, zero), f.k(2.0 ** mantissa)), ay))
    unscaled = f.both(negation(huge), negation(tiny))
    # the log1p branches need |z| near 1 (sx < 2, sy < 2 here): their squares use operands
    # guarded to that range, so a huge element's square overflows in no branch
    close = f.both(unscaled, f.both(f.cmp("lt", sx, f.k(2.0)), f.cmp("lt", sy, f.k(2.0))))
    cx, cy = f.pick(close, sx, one), f.pick(close, sy, zero)
    unit = f.both(close, f.cmp("eq", cx, one))
    above = f.both(close, f.both(f.cmp("gt", cx, one), f.cmp("lt", cy, one)))  # and cx < 2
    below = f.both(close, f.both(f.cmp("ge", cx, f.k(0.5)), f.cmp("lt", cx, one)))
    flat = f.both(below, f.cmp("lt", cy, f.k(eps / 2)))
    near = f.both(below, f.cmp("ge", f.add(f.mul(cx, cx), f.mul(cy, cy)), f.k(0.5)))
    squares = f.mul(cy, cy)
    shifted = f.mul(f.sub(cx, one), f.add(cx, one))
    argument = f.pick(unit, squares, f.pick(
        above, f.add(shifted, f.pick(f.cmp("ge", sy, f.k(eps)), squares, zero)),
        f.pick(flat, shifted, f.pick(near, _x2y2m1(f, f.pick(near, cx, one),
                                                   f.pick(near, cy, zero)), zero))))
    by_log1p = Binary("or", Binary("or", unit, above, "bool"), Binary("or", flat, near, "bool"),
                      "bool")
    half_log1p = f.mul(Unary("log1p", argument, dtype), f.k(0.5))
    scale = f.pick(huge, f.k(-1.0), f.pick(tiny, f.k(float(mantissa)), zero))
    radius = Binary("hypot", f.pick(by_log1p, one, sx), f.pick(by_log1p, one, sy), dtype)
    by_log = f.sub(Unary("log", radius, dtype), f.mul(scale, f.k(math.log(2.0))))
    general_re = f.pick(by_log1p, half_log1p, by_log)
    angle = Binary("arctan2", f.pick(either_nan, zero, y), f.pick(either_nan, one, x), dtype)
    re = f.pick(both_zero, zero_re, f.pick(either_nan, f.pick(either_inf, inf, nan), general_re))
    im = f.pick(both_zero, zero_im, f.pick(either_nan, nan, angle))
    return re, im


@complex_lowers("log")
def _log(ctx: LoopLowering, node: Node) -> Lazy:
    from .externs import op_as_extern
    lazy = function_of_parts(ctx, node, clog)
    return lazy if lazy is not None else op_as_extern(ctx, node)
