"""Complex square roots (``np.sqrt`` of complex64/complex128 values), as NumPy computes them.

NumPy calls glibc's ``csqrt``/``csqrtf``, whose algorithm (``math/s_csqrt_template.c``) uses
only IEEE operations and glibc's ``hypot``, itself IEEE operations since glibc 2.35
(``sysdeps/ieee754/dbl-64/e_hypot.c``, the kernel without FMA of a baseline x86-64 build;
``hypotf`` is a double-precision ``sqrt(x*x + y*y)`` rounded once). Written here operation for
operation, the result is glibc's bit for bit, special values included (docs/complex-semantics.md
§7: 0 mismatches in 6,256 per dtype, every branch hit). On another C library, or a glibc before
2.35 (another hypot), ``np.sqrt`` of complex values stays NumPy's call.

Every branch is computed for every element and one is selected, so each branch's operands are
replaced by harmless values where another branch applies: a branch never divides by zero,
overflows or takes the root of a negative number the selected one does not.
"""

from __future__ import annotations

import platform

import numpy as np

from stax.ir import Node

from .complex_values import complex_lowers, function_of_parts
from .context import Lazy, LoopLowering, float_predicate, negation
from .expr import Binary, Cast, Const, Expr, Select, Unary


def _glibc_hypot_is_ieee() -> bool:
    """Whether NumPy's csqrt is glibc 2.35 or later (the hypot written here)."""
    library, version = platform.libc_ver()
    if library != "glibc":
        return False
    try:
        return tuple(int(v) for v in version.split(".")[:2]) >= (2, 35)
    except ValueError:
        return False


GLIBC_CSQRT = _glibc_hypot_is_ieee()


class FloatOps:
    """Expression builders in one float dtype (glibc's C, line for line)."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype

    def k(self, v: float) -> Expr:
        return Const(v, self.dtype)

    def op(self, name: str, a: Expr, b: Expr) -> Expr:
        return Binary(name, a, b, self.dtype)

    def add(self, a: Expr, b: Expr) -> Expr:
        return self.op("add", a, b)

    def sub(self, a: Expr, b: Expr) -> Expr:
        return self.op("sub", a, b)

    def mul(self, a: Expr, b: Expr) -> Expr:
        return self.op("mul", a, b)

    def div(self, a: Expr, b: Expr) -> Expr:
        return self.op("truediv", a, b)

    def sqrt(self, a: Expr) -> Expr:
        return Unary("sqrt", a, self.dtype)

    def abs(self, a: Expr) -> Expr:
        return Unary("abs", a, self.dtype)

    def pick(self, condition: Expr, a: Expr, b: Expr) -> Expr:
        return Select(condition, a, b, self.dtype)

    @staticmethod
    def cmp(name: str, a: Expr, b: Expr) -> Expr:
        return Binary(name, a, b, "bool")

    @staticmethod
    def both(a: Expr, b: Expr) -> Expr:
        return Binary("and", a, b, "bool")


def hypot(f: FloatOps, x: Expr, y: Expr) -> Expr:
    """glibc's hypot of two finite values (csqrt's general branch passes no other)."""
    if f.dtype == "float32":
        d = FloatOps("float64")
        wx, wy = Cast(x, "float64"), Cast(y, "float64")
        return Cast(d.sqrt(d.add(d.mul(wx, wx), d.mul(wy, wy))), "float32")
    scale, large, tiny, eps = 2.0 ** -600, 2.0 ** 511, 2.0 ** -459, 2.0 ** -54
    ax0, ay0 = f.abs(x), f.abs(y)
    swap = f.cmp("lt", ax0, ay0)
    ax, ay = f.pick(swap, ay0, ax0), f.pick(swap, ax0, ay0)
    big = f.cmp("gt", ax, f.k(large))
    small = f.both(f.cmp("le", ax, f.k(large)), f.cmp("lt", ay, f.k(tiny)))
    zero = f.k(0.0)

    def only(condition: Expr, v: Expr) -> Expr:  # v where the branch applies, else 0
        return f.pick(condition, v, zero)
    # far apart, the sum; else the kernel on values scaled into range (one kernel, on (1, 1)
    # where it is not used; a scaling computed only where it applies: none overflows elsewhere)
    apart = f.pick(small, f.cmp("ge", ax, f.div(only(small, ay), f.k(eps))),
                   f.cmp("le", ay, f.mul(ax, f.k(eps))))
    near = negation(apart)
    down, up = f.both(big, near), f.both(small, near)
    one = f.k(1.0)
    sx = f.pick(apart, one, f.pick(down, f.mul(ax, f.k(scale)),
                                   f.pick(up, f.div(only(up, ax), f.k(scale)), ax)))
    sy = f.pick(apart, one, f.pick(down, f.mul(ay, f.k(scale)),
                                   f.pick(up, f.div(only(up, ay), f.k(scale)), ay)))
    kernel = _hypot_kernel(f, sx, sy)
    scaled = f.pick(down, f.div(only(down, kernel), f.k(scale)),
                    f.pick(up, f.mul(kernel, f.k(scale)), kernel))
    return f.pick(apart, f.add(ax, ay), scaled)


def _hypot_kernel(f: FloatOps, ax: Expr, ay: Expr) -> Expr:
    """e_hypot.c's kernel for ``ax >= ay`` in range: ``sqrt(ax^2 + ay^2)`` corrected by the
    rounding error of the sum (no FMA)."""
    h = f.sqrt(f.add(f.mul(ax, ax), f.mul(ay, ay)))
    two, four = f.k(2.0), f.k(4.0)
    near = f.cmp("le", h, f.mul(two, ay))
    d1 = f.sub(h, ay)
    t1a = f.mul(ax, f.sub(f.mul(two, d1), ax))
    t2a = f.mul(f.sub(d1, f.mul(two, f.sub(ax, ay))), d1)
    d2 = f.sub(h, ax)
    t1b = f.mul(f.mul(two, d2), f.sub(ax, f.mul(two, ay)))
    t2b = f.add(f.mul(f.sub(f.mul(four, d2), ay), ay), f.mul(d2, d2))
    t = f.add(f.pick(near, t1a, t1b), f.pick(near, t2a, t2b))
    # h is 0 only for (0, 0), which csqrt's general branch never passes: guarded all the same
    return f.sub(h, f.div(t, f.mul(two, f.pick(f.cmp("eq", h, f.k(0.0)), f.k(1.0), h))))


def csqrt(dtype: str, x: Expr, y: Expr) -> tuple[Expr, Expr]:
    """glibc's csqrt of ``x + iy`` in the parts' ``dtype``: the (real, imaginary) parts."""
    f = FloatOps(dtype)
    info = np.finfo(dtype)
    low, high = float(info.tiny), float(info.max)
    mantissa = 24 if dtype == "float32" else 53
    inf, zero, half = f.k(float("inf")), f.k(0.0), f.k(0.5)
    # NaN where an operand is NaN: that operand (a NaN constant would make the kernel a precise
    # one, ``jit.nan_operands``; arithmetic on the other, infinite, one may report invalid)
    nan = f.pick(float_predicate("isnan", x), x, y)
    ax, ay = f.abs(x), f.abs(y)
    finite = f.both(float_predicate("isfinite", x), float_predicate("isfinite", y))
    nan_y = float_predicate("isnan", y)
    # not finite: an infinite imaginary part first, then an infinite real part, else NaN
    inf_y, inf_x = float_predicate("isinf", y), float_predicate("isinf", x)
    minus = f.cmp("lt", x, zero)
    special_re = f.pick(inf_y, inf, f.pick(inf_x, f.pick(minus, f.pick(nan_y, y, zero), x), nan))
    special_im = f.pick(inf_y, y, f.pick(inf_x, f.pick(
        minus, f.op("copysign", inf, y), f.pick(nan_y, y, f.op("copysign", zero, y))), nan))
    # y == 0: the root of |x| on the real axis (x >= 0) or the imaginary one (x < 0)
    root = f.sqrt(ax)
    axis_re = f.pick(minus, zero, root)
    axis_im = f.pick(minus, f.op("copysign", root, y), f.op("copysign", zero, y))
    # x == 0: (r, copysign(r, y)), r = sqrt(|y| / 2) computed without underflow
    normal = f.cmp("ge", ay, f.k(2 * low))
    r_big = f.sqrt(f.mul(half, f.pick(normal, ay, f.k(1.0))))
    r_small = f.mul(half, f.sqrt(f.mul(f.k(2.0), f.pick(normal, zero, ay))))
    r_axis = f.pick(normal, r_big, r_small)
    # the general branch, on harmless operands where another branch applies
    y_zero, x_zero = f.cmp("eq", y, zero), f.cmp("eq", x, zero)
    general = f.both(finite, f.both(negation(y_zero), negation(x_zero)))
    gx, gy = f.pick(general, x, f.k(1.0)), f.pick(general, y, f.k(1.0))
    gax, gay = f.abs(gx), f.abs(gy)
    quarter = f.k(0.25)
    huge_x = f.cmp("gt", gax, f.k(high / 4))
    huge_y = f.both(negation(huge_x),
                    f.cmp("gt", gay, f.k(high / 4)))
    tiny = f.both(f.both(f.cmp("lt", gax, f.k(2 * low)), f.cmp("lt", gay, f.k(2 * low))),
                  negation(Binary("or", huge_x, huge_y, "bool")))
    up = 2.0 ** (mantissa + 1 - (mantissa + 1) % 2)  # ldexp(., -2 * scale), scale = -(M+1)/2
    shrink = Binary("or", huge_x, huge_y, "bool")
    sx = f.pick(huge_x, f.mul(gx, quarter), f.pick(huge_y, f.pick(
        f.cmp("ge", gax, f.k(4 * low)), f.mul(gx, quarter), zero),
        f.pick(tiny, f.mul(f.pick(tiny, gx, zero), f.k(up)), gx)))
    sy = f.pick(shrink, f.mul(gy, quarter), f.pick(tiny, f.mul(f.pick(tiny, gy, zero), f.k(up)),
                                                   gy))
    d = hypot(f, sx, sy)
    t = f.sqrt(f.mul(half, f.add(d, f.abs(sx))))  # d + x for x > 0, d - x otherwise
    q = f.div(sy, t)
    direct = f.both(shrink, f.cmp("lt", f.abs(sy), f.k(1.0)))  # scaled back at once
    positive = f.cmp("gt", sx, zero)
    twice = f.mul(t, f.k(2.0))
    half_q = f.mul(half, q)
    r = f.pick(positive, f.pick(direct, twice, t), f.pick(direct, f.abs(q), f.abs(half_q)))
    s = f.pick(positive, f.pick(direct, q, half_q), f.pick(direct, twice, t))
    factor = f.pick(direct, f.k(1.0), f.pick(shrink, f.k(2.0), f.pick(tiny, f.k(1.0 / (up ** 0.5)),
                                                                        f.k(1.0))))
    general_re, general_im = f.mul(r, factor), f.op("copysign", f.mul(s, factor), gy)
    re = f.pick(finite, f.pick(y_zero, axis_re, f.pick(x_zero, r_axis, general_re)), special_re)
    im = f.pick(finite, f.pick(y_zero, axis_im, f.pick(x_zero, f.op("copysign", r_axis, y),
                                                       general_im)), special_im)
    return re, im


@complex_lowers("sqrt")
def _sqrt(ctx: LoopLowering, node: Node) -> Lazy:
    from .externs import op_as_extern
    lazy = function_of_parts(ctx, node, csqrt) if GLIBC_CSQRT else None
    return lazy if lazy is not None else op_as_extern(ctx, node)
