"""Complex numbers in loops, as pairs of floats (issue 13).

A complex64/complex128 value is lowered as its *parts*: a ``Lazy`` whose shape has one more
dimension of 2 at the end (0: real, 1: imaginary) and whose dtype is the parts' float dtype
(``Lazy.parts``). Every rule here composes the parts' loaders with the real operators, so
complex arithmetic fuses with everything else, and the kernels never see a complex number.

In memory, a complex buffer (an argument, a result, a realized value) keeps its complex dtype,
shape and strides in the loop program; the loads and stores of its parts count parts: element
``i``'s real part is part ``2 * i``, its imaginary part ``2 * i + 1`` (``context.part_strides``).
The code generator addresses a complex buffer as an array of its parts' floats.

Each formula is NumPy's own evaluation, operation for operation (its loops, funcs.inc.src and
npy_math_complex.c.src), so results are NumPy's bit for bit, special values (infinite and NaN
parts, signed zeros) included: a real operand is a complex one with imaginary part +0.0, as NumPy
promotes it. Ops without a rule here run as NumPy's calls on the complex buffers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from stax.ir import Node, rebase_view

from .context import (
    PARTS_OF,
    Lazy,
    Loader,
    LoopLowering,
    float_predicate,
    output_strides,
    part_strides,
    trig_range_check,
)
from .expr import Binary, Cast, Const, Expr, Index, Load, Select, Ternary, Unary
from .index import Affine, linear_index
from .registry import lowers

Parts = tuple[Loader, Loader]  # (real, imaginary), each over the value's own index
ComplexRule = Callable[[LoopLowering, Node], Lazy]

#: op -> its rule for complex operands or results (``involves_complex``)
COMPLEX_LOWERINGS: dict[str, ComplexRule] = {}


def complex_lowers(*ops: str) -> Callable[[ComplexRule], ComplexRule]:
    def register(rule: ComplexRule) -> ComplexRule:
        for op in ops:
            assert op not in COMPLEX_LOWERINGS, f"op {op!r} has two complex lowerings"
            COMPLEX_LOWERINGS[op] = rule
        return rule
    return register


def is_complex(dtype: Any) -> bool:
    return np.dtype(dtype).kind == "c"


def involves_complex(node: Node) -> bool:
    """Whether ``node``'s result or one of its operands (arrays and constants) is complex."""
    if node.tensor is not None and node.tensor.dtype != "object" and is_complex(node.tensor.dtype):
        return True
    return any(isinstance(a, (complex, np.complexfloating)) or (
        isinstance(a, Node) and a.tensor is not None and a.tensor.dtype != "object" and
        is_complex(a.tensor.dtype)) for a in node.args)


def as_parts(lazy: Lazy, dtype: str) -> Lazy:
    """A complex value in memory (an argument, NumPy's result) seen as its parts."""
    if lazy.parts:
        return lazy
    if lazy.memory is None:
        raise ValueError("a complex value that is neither parts nor memory")
    buffer, offset, strides = lazy.memory
    return LoopLowering.stored_parts(buffer, lazy.shape, PARTS_OF[dtype], part_strides(strides),
                                     2 * offset, view=lazy.buffer is None)


def from_parts(shape: tuple[int, ...], dtype: str, real: Loader, imag: Loader) -> Lazy:
    """The value of ``shape`` whose parts are ``real`` and ``imag`` (in ``dtype``, the parts'
    float dtype): a part index that is a constant picks one, a loop variable selects. Each
    element's expression is made once and then shared (a product of products would otherwise
    rebuild its operands' formulas for each part it reads, doubling at every level)."""
    memo: dict[tuple[Affine, ...], Expr] = {}

    def load(index: tuple[Affine, ...]) -> Expr:
        found = memo.get(index)
        if found is not None:
            return found
        *i, part = index
        if not part.terms:
            found = (real if part.const == 0 else imag)(tuple(i))
        else:
            first = Binary("eq", Index(part, "int64"), Const(0, "int64"), "bool")
            found = Select(first, load((*i, Affine.of(0))), load((*i, Affine.of(1))), dtype)
        memo[index] = found
        return found
    return Lazy((*shape, 2), dtype, load, parts=True)


#: a complex function of one operand's parts (parts dtype, real, imaginary) -> result's parts
PartsFormula = Callable[[str, Expr, Expr], tuple[Expr, Expr]]


def function_of_parts(ctx: LoopLowering, node: Node, formula: PartsFormula) -> Lazy | None:
    """``node`` (a complex op of one operand of its own dtype) as ``formula`` of its operand's
    parts, each element's formula made once for both result parts; None for other operands."""
    meta = node.tensor
    if meta.dtype not in ("complex64", "complex128") or node.args[0].tensor.dtype != meta.dtype:
        return None
    dtype = PARTS_OF[meta.dtype]
    x_of, y_of = parts_of(ctx, node.args[0], meta.shape, dtype)
    memo: dict[tuple[Affine, ...], tuple[Expr, Expr]] = {}

    def parts(i: tuple[Affine, ...]) -> tuple[Expr, Expr]:
        if i not in memo:  # the real and imaginary loaders share one formula
            memo[i] = formula(dtype, x_of(i), y_of(i))
        return memo[i]
    return from_parts(meta.shape, dtype, lambda i: parts(i)[0], lambda i: parts(i)[1])


def parts_of(ctx: LoopLowering, value: Any, shape: tuple[int, ...], dtype: str) -> Parts:
    """``value`` (a node, complex or real, or a constant) broadcast to ``shape`` as parts of
    float ``dtype``: a real value has imaginary part +0.0, as NumPy's promotion gives it."""
    zero = Const(0.0, dtype)
    if not isinstance(value, Node):
        number = complex(value)
        re, im = Const(float(np.dtype(dtype).type(number.real)), dtype), \
            Const(float(np.dtype(dtype).type(number.imag)), dtype)
        return (lambda i: re), (lambda i: im)
    lazy = ctx.values[value]
    if lazy.parts:
        whole = ctx.operand_of(lazy, (*shape, 2), lazy.loader)

        def part(p: int) -> Loader:
            def load(i: tuple[Affine, ...]) -> Expr:
                e = whole((*i, Affine.of(p)))
                return e if e.dtype == dtype else Cast(e, dtype)
            return load
        return part(0), part(1)
    return ctx.operand(value, shape, dtype), (lambda i: zero)


def lower_complex(ctx: LoopLowering, node: Node) -> Lazy:
    """``node``'s value when it involves complex numbers: its rule here, else NumPy's call."""
    from .externs import op_as_extern
    from .registry import LOWERINGS
    if not ctx.options.complex_parts:
        raise ctx.unsupported(f"dtype {_complex_dtype(node)}, which this target does not compute")
    native = complex_native(ctx, _complex_dtype(node))
    rule = COMPLEX_LOWERINGS.get(node.target) if native else None
    if rule is None:  # NumPy's call (``extern`` makes it itself; a view of NumPy's values too)
        own = ("extern",) if native else ("extern", "view")
        rule = LOWERINGS[node.target] if node.target in own else op_as_extern
    lazy = rule(ctx, node)
    meta = node.tensor
    if native and meta is not None and meta.dtype != "object" and is_complex(meta.dtype) and \
            not lazy.parts:
        lazy = as_parts(lazy, meta.dtype)
    return lazy


def complex_native(ctx: LoopLowering, dtype: str) -> bool:
    """Whether kernels compute values of the complex ``dtype``: as parts of a float dtype
    they compute in (else every complex value is NumPy's)."""
    return ctx.options.complex_parts and ctx.native(PARTS_OF[dtype])


def _complex_dtype(node: Node) -> str:
    for meta in (node.tensor, *(a.tensor for a in node.args if isinstance(a, Node))):
        if meta is not None and meta.dtype != "object" and is_complex(meta.dtype):
            return meta.dtype
    return "complex128"  # a complex constant with real arrays


def _binary_parts(ctx: LoopLowering, node: Node) -> tuple[Parts, Parts, str]:
    meta = node.tensor
    dtype = PARTS_OF[meta.dtype]
    a = parts_of(ctx, node.args[0], meta.shape, dtype)
    b = parts_of(ctx, node.args[1], meta.shape, dtype)
    return a, b, dtype


def _op(name: str, x: Loader, y: Loader, dtype: str) -> Loader:
    return lambda i: Binary(name, x(i), y(i), dtype)


# -- arithmetic -----------------------------------------------------------------------------------

@complex_lowers("add", "sub")
def _add_sub(ctx: LoopLowering, node: Node) -> Lazy:
    (a, b), (c, d), dtype = _binary_parts(ctx, node)
    return from_parts(node.tensor.shape, dtype, _op(node.target, a, c, dtype),
                      _op(node.target, b, d, dtype))


@complex_lowers("neg", "conjugate", "positive")
def _sign_parts(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    dtype = PARTS_OF[meta.dtype]
    a, b = parts_of(ctx, node.args[0], meta.shape, dtype)
    neg: Callable[[Loader], Loader] = lambda x: (lambda i: Unary("neg", x(i), dtype))  # noqa: E731
    if node.target == "neg":
        return from_parts(meta.shape, dtype, neg(a), neg(b))
    if node.target == "conjugate":
        return from_parts(meta.shape, dtype, a, neg(b))
    return from_parts(meta.shape, dtype, a, b)


def _eager_where(ctx: LoopLowering, shape: tuple[int, ...], flag: Loader, why: str) -> None:
    """A check: where ``flag`` holds anywhere, the call runs as NumPy (whose loop reports an
    event these formulas' operations do not raise: a comparison with a NaN, glibc's own)."""
    check = ctx.reduce_values(flag, shape, tuple(range(len(shape))), False, "max", "bool")
    ctx.checks[check.buffer] = why


def _numpy_vector_loop(node: Node, reversed_ok: bool = False) -> bool:
    """Whether NumPy computes ``node`` in the loop the formulas here follow: its SIMD loops for
    arrays. A scalar result comes from NumPy's scalar code (scalarmath: no FMA, glibc's hypot),
    and an operand with a negative stride sends complex64 products and every complex magnitude
    to NumPy's plain loops (``npyv_loadable_stride`` tests the stride as unsigned; complex128
    products keep the vector loop: ``reversed_ok``): those stay NumPy's calls."""
    if node.tensor is None or node.tensor.scalar:
        return False
    return reversed_ok or not any(isinstance(a, Node) and a.tensor is not None and
                                  any(s < 0 for s in a.tensor.strides) for a in node.args)


def _fma(x: Expr, y: Expr, z: Expr) -> Expr:
    return Ternary("fma", x, y, z, x.dtype)


@complex_lowers("mul")
def _multiply(ctx: LoopLowering, node: Node) -> Lazy:
    """NumPy's vector loop (``_mm256_fmaddsub``): ``(fma(a, c, -(b*d)), fma(a, d, b*c))``, a real
    operand being ``(r, +0.0)``. Where NumPy takes its plain loop or its scalar code (no FMA),
    its call, unless an operand is real: ``b*d`` and ``a*d`` are then zeros, exact, and the
    fused and the plain products round alike (``-2j * np.pi * k`` of a lifted loop's item)."""
    from .externs import op_as_extern
    real = any(not is_complex(a.tensor.dtype) if isinstance(a, Node) and a.tensor is not None
               else isinstance(a, (int, float, np.integer, np.floating)) for a in node.args)
    if not real and not _numpy_vector_loop(node, reversed_ok=node.tensor.dtype == "complex128"):
        return op_as_extern(ctx, node)
    (a, b), (c, d), dtype = _binary_parts(ctx, node)

    def real(i: tuple[Affine, ...]) -> Expr:
        return _fma(a(i), c(i), Unary("neg", Binary("mul", b(i), d(i), dtype), dtype))

    def imag(i: tuple[Affine, ...]) -> Expr:
        return _fma(a(i), d(i), Binary("mul", b(i), c(i), dtype))
    return from_parts(node.tensor.shape, dtype, real, imag)


@complex_lowers("truediv")
def _divide(ctx: LoopLowering, node: Node) -> Lazy:
    """Smith's algorithm as NumPy's loop computes it (no FMA, every layout)::

        |c| >= |d|, both 0:  (a / |c|, b / |d|)
        |c| >= |d|:          rat = d/c, scl = 1/(c + d*rat), ((a + b*rat)*scl, (b - a*rat)*scl)
        otherwise (or NaN):  rat = c/d, scl = 1/(d + c*rat), ((a*rat + b)*scl, (b*rat - a)*scl)

    as one formula over operands chosen by selects, so an operation of the branch not taken
    never divides by zero (it would report an event NumPy does not)."""
    from .externs import op_as_extern
    if node.tensor.scalar:
        return op_as_extern(ctx, node)
    (a, b), (c, d), dtype = _binary_parts(ctx, node)
    one, zero = Const(1.0, dtype), Const(0.0, dtype)
    shape = tuple(node.tensor.shape)
    # NumPy's |c| >= |d| is a signaling comparison: a NaN in the divisor reports invalid
    _eager_where(ctx, shape, lambda i: Binary("or", float_predicate("isnan", c(i)),
                                              float_predicate("isnan", d(i)), "bool"),
                 "a complex divisor with a NaN part (NumPy reports invalid)")
    memo: dict[tuple[Affine, ...], tuple[Expr, Expr]] = {}

    def parts(i: tuple[Affine, ...]) -> tuple[Expr, Expr]:
        if i in memo:  # the real and imaginary loaders share one formula
            return memo[i]
        memo[i] = _smith(a(i), b(i), c(i), d(i), dtype, one, zero)
        return memo[i]
    return from_parts(shape, dtype, lambda i: parts(i)[0], lambda i: parts(i)[1])


def _smith(ai: Expr, bi: Expr, ci: Expr, di: Expr, dtype: str, one: Expr, zero: Expr
           ) -> tuple[Expr, Expr]:
    """Smith's quotient (a + bi) / (c + di), as ``_divide`` describes it."""
    mag_c, mag_d = Unary("abs", ci, dtype), Unary("abs", di, dtype)
    first = Binary("ge", mag_c, mag_d, "bool")
    both_zero = Binary("and", Binary("eq", mag_c, zero, "bool"),
                       Binary("eq", mag_d, zero, "bool"), "bool")
    p = Select(both_zero, one, Select(first, ci, di, dtype), dtype)
    q = Select(both_zero, zero, Select(first, di, ci, dtype), dtype)
    rat = Binary("truediv", q, p, dtype)
    scl = Binary("truediv", one, Binary("add", p, Binary("mul", q, rat, dtype), dtype), dtype)
    u, v = Select(first, ai, bi, dtype), Select(first, bi, ai, dtype)
    re = Binary("mul", Binary("add", u, Binary("mul", v, rat, dtype), dtype), scl, dtype)
    im_first = Binary("sub", bi, Binary("mul", ai, rat, dtype), dtype)
    im_other = Binary("sub", Binary("mul", bi, rat, dtype), ai, dtype)
    im = Binary("mul", Select(first, im_first, im_other, dtype), scl, dtype)
    by_zero_c = Binary("truediv", ai, Select(both_zero, mag_c, one, dtype), dtype)
    by_zero_d = Binary("truediv", bi, Select(both_zero, mag_d, one, dtype), dtype)
    return Select(both_zero, by_zero_c, re, dtype), Select(both_zero, by_zero_d, im, dtype)


# -- parts, magnitude, predicates -----------------------------------------------------------------

def _operand_parts(ctx: LoopLowering, node: Node) -> Parts:
    x = node.args[0]
    dtype = PARTS_OF[x.tensor.dtype]
    return parts_of(ctx, x, node.tensor.shape, dtype)


@complex_lowers("real", "imag")
def _part(ctx: LoopLowering, node: Node) -> Lazy:
    a, b = _operand_parts(ctx, node)
    meta = node.tensor
    return Lazy(meta.shape, meta.dtype, a if node.target == "real" else b)


@complex_lowers("abs")
def _magnitude(ctx: LoopLowering, node: Node) -> Lazy:
    """NumPy's vector loop (not hypot): an infinite part gives inf, else a NaN part NaN, else
    ``l * sqrt(fma(r, r, 1))`` with ``l, s`` the larger and smaller magnitude and ``r = s / l``
    (0 when ``l`` is 0), all in the parts' float type."""
    from .externs import op_as_extern
    if not _numpy_vector_loop(node):
        return op_as_extern(ctx, node)
    a, b = _operand_parts(ctx, node)
    dtype = node.tensor.dtype
    one, zero = Const(1.0, dtype), Const(0.0, dtype)

    def magnitude(i: tuple[Affine, ...]) -> Expr:
        x, y = Unary("abs", a(i), dtype), Unary("abs", b(i), dtype)
        larger_x = Binary("ge", x, y, "bool")
        big, small = Select(larger_x, x, y, dtype), Select(larger_x, y, x, dtype)
        nothing = Binary("eq", big, zero, "bool")
        r = Select(nothing, zero, Binary("truediv", small, Select(nothing, one, big, dtype),
                                         dtype), dtype)
        value = Binary("mul", big, Unary("sqrt", _fma(r, r, one), dtype), dtype)
        nan = Binary("or", float_predicate("isnan", x), float_predicate("isnan", y), "bool")
        inf = Binary("or", float_predicate("isinf", x), float_predicate("isinf", y), "bool")
        # NaN: the NaN part itself (a NaN constant would make the kernel a precise one)
        either = Select(float_predicate("isnan", x), x, y, dtype)
        return Select(inf, Const(float("inf"), dtype), Select(nan, either, value, dtype), dtype)
    return Lazy(node.tensor.shape, dtype, magnitude)


#: per parts dtype: glibc cexp's scaling threshold ``(int)((MAX_EXP - 1) * ln 2)``, exp of it
#: (glibc's own value: ``math.exp`` calls it; float32's rounded from it) and the largest float
_CEXP_SCALE = {"float64": (709.0, math.exp(709.0), float(np.finfo(np.float64).max)),
               "float32": (88.0, float(np.float32(math.exp(88.0))),
                           float(np.finfo(np.float32).max))}


@complex_lowers("exp")
def _exp(ctx: LoopLowering, node: Node) -> Lazy:
    """glibc's cexp (NumPy calls it): ``(exp(x) cos y, exp(x) sin y)``, ``(y, 1)`` for sin and
    cos of a tiny ``|y|``, the real part scaled down by ``exp(t)`` (up to twice) above ``t`` so a
    finite result stays finite, and C99's special values (the rows of an infinite or NaN real
    part, and of a zero imaginary one). Stax's own exp, sin and cos: within their ulp bounds of
    NumPy's, as for real arguments; the special values exactly."""
    meta = node.tensor
    dtype = PARTS_OF[meta.dtype]
    x_of, y_of = parts_of(ctx, node.args[0], meta.shape, dtype)
    t, exp_t, largest = _CEXP_SCALE[dtype]
    tiny = float(np.finfo(dtype).tiny)
    limit = ctx.options.trig_reduction_limit.get(dtype)
    if limit is not None:  # sin and cos of the imaginary part
        trig_range_check(ctx, tuple(meta.shape), dtype, y_of, limit)

    def glibc_invalid(i: tuple[Affine, ...]) -> Expr:
        """Where glibc's cexp reports invalid though no operation here makes a NaN from
        numbers: a finite real part with a NaN imaginary one, a NaN real part with a non-zero
        imaginary one (an infinite imaginary part makes sin's own NaN)."""
        x, y = x_of(i), y_of(i)
        nan_y = float_predicate("isnan", y)
        return Binary("or", Binary("and", float_predicate("isfinite", x), nan_y, "bool"),
                      Binary("and", float_predicate("isnan", x),
                             Binary("ne", y, Const(0.0, dtype), "bool"), "bool"), "bool")
    _eager_where(ctx, tuple(meta.shape), glibc_invalid,
                 "a NaN part where glibc's cexp reports invalid")
    def k(v: float) -> Expr:
        return Const(v, dtype)

    def cexp(_: str, x: Expr, y: Expr) -> tuple[Expr, Expr]:
        small = Binary("le", Unary("abs", y, dtype), k(tiny), "bool")
        s = Select(small, y, Unary("sin", y, dtype), dtype)
        c = Select(small, k(1.0), Unary("cos", y, dtype), dtype)
        once = Binary("gt", x, k(t), "bool")
        x1 = Select(once, Binary("sub", x, k(t), dtype), x, dtype)
        s1 = Select(once, Binary("mul", s, k(exp_t), dtype), s, dtype)
        c1 = Select(once, Binary("mul", c, k(exp_t), dtype), c, dtype)
        twice = Binary("gt", x1, k(t), "bool")
        x2 = Select(twice, Binary("sub", x1, k(t), dtype), x1, dtype)
        s2 = Select(twice, Binary("mul", s1, k(exp_t), dtype), s1, dtype)
        c2 = Select(twice, Binary("mul", c1, k(exp_t), dtype), c1, dtype)
        over = Binary("gt", x2, k(t), "bool")  # beyond any finite result: MAX * (c, s)
        e = Select(over, k(largest), Unary("exp", Select(over, k(0.0), x2, dtype), dtype), dtype)
        re, im = Binary("mul", e, c2, dtype), Binary("mul", e, s2, dtype)
        finite_y = float_predicate("isfinite", y)
        zero_y = Binary("eq", y, k(0.0), "bool")
        # no NaN constant (it would make the kernel a precise one): a NaN result is sin's of
        # an infinite or NaN imaginary part, or the NaN real part itself
        inf, zero = k(float("inf")), k(0.0)
        # x = +inf: (inf, +-0) for y = +-0, (inf, nan) for y inf or NaN, else inf * (c, s):
        # infinities with c's and s's signs (neither is 0 for a finite non-zero y), computed
        # without the product, whose inf * 0 (for y = 0, not selected) would report invalid
        plus_inf = Binary("eq", x, inf, "bool")
        re = Select(plus_inf, Select(finite_y, Select(zero_y, inf, Binary("copysign", inf, c,
                                                                          dtype), dtype),
                                     inf, dtype), re, dtype)
        im = Select(plus_inf, Select(zero_y, y, Select(finite_y, Binary("copysign", inf, s, dtype),
                                                        s, dtype), dtype), im, dtype)
        # x = -inf: 0 * (c, s) for finite y, else (+0, +-0 with y's sign, +0 for NaN)
        minus_inf = Binary("eq", x, k(float("-inf")), "bool")
        signed = Select(float_predicate("isnan", y), zero, Binary("copysign", zero, y, dtype),
                        dtype)
        re = Select(minus_inf, Select(finite_y, Binary("mul", zero, c, dtype), zero, dtype), re,
                    dtype)
        im = Select(minus_inf, Select(finite_y, Binary("mul", zero, s, dtype), signed, dtype), im,
                    dtype)
        # x NaN: (nan, +-0) for y = +-0, else (nan, nan)
        nan_x = float_predicate("isnan", x)
        re = Select(nan_x, x, re, dtype)
        im = Select(nan_x, Select(zero_y, y, x, dtype), im, dtype)
        return re, im
    lazy = function_of_parts(ctx, node, cexp)
    assert lazy is not None  # exp keeps its operand's complex dtype
    return lazy


@complex_lowers("isnan", "isinf", "isfinite")
def _predicate(ctx: LoopLowering, node: Node) -> Lazy:
    a, b = _operand_parts(ctx, node)
    op, join = node.target, "and" if node.target == "isfinite" else "or"
    meta = node.tensor
    return Lazy(meta.shape, "bool", lambda i: Binary(join, float_predicate(op, a(i)),
                                                      float_predicate(op, b(i)), "bool"))


@complex_lowers("eq", "ne")
def _equality(ctx: LoopLowering, node: Node) -> Lazy:
    """Complex equality: both parts equal (NaN parts never are); ``!=`` its negation."""
    meta = node.tensor
    common = np.result_type(*(v.tensor.np_dtype if isinstance(v, Node) else v for v in node.args))
    dtype = PARTS_OF[common.name]
    (a, b), (c, d) = (parts_of(ctx, v, meta.shape, dtype) for v in node.args)
    op, join = node.target, "and" if node.target == "eq" else "or"
    return Lazy(meta.shape, "bool", lambda i: Binary(join, Binary(op, a(i), c(i), "bool"),
                                                      Binary(op, b(i), d(i), "bool"), "bool"))


# -- selection, building, casts, views --------------------------------------------------------------

@complex_lowers("where")
def _where(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    cond = node.args[0]
    # a real result from complex operands (``b[b] = 1 + 2j`` into a bool array casts the
    # constant), or a complex condition: NumPy's call
    if not is_complex(meta.dtype) or \
            (isinstance(cond, Node) and (cond.tensor is None or is_complex(cond.tensor.dtype))):
        from .externs import op_as_extern
        return op_as_extern(ctx, node)
    dtype = PARTS_OF[meta.dtype]
    test = ctx.operand(cond, meta.shape, "bool")
    (a, b), (c, d) = (parts_of(ctx, v, meta.shape, dtype) for v in node.args[1:])
    return from_parts(meta.shape, dtype, lambda i: Select(test(i), a(i), c(i), dtype),
                      lambda i: Select(test(i), b(i), d(i), dtype))


@complex_lowers("full")
def _full(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    dtype = PARTS_OF[meta.dtype]
    value = np.dtype(meta.dtype).type(node.kwargs["value"])
    re, im = Const(float(value.real), dtype), Const(float(value.imag), dtype)
    return from_parts(meta.shape, dtype, lambda i: re, lambda i: im)


@complex_lowers("cast")
def _cast(ctx: LoopLowering, node: Node) -> Lazy:
    """Between complex dtypes, and from real ones (imaginary part +0.0). Complex to real stays
    NumPy's call: it warns that the imaginary part is discarded."""
    from .externs import op_as_extern
    meta = node.tensor
    source = node.args[0].tensor.dtype
    if not is_complex(meta.dtype) or (not ctx.native(source) and not is_complex(source)):
        return op_as_extern(ctx, node)
    dtype = PARTS_OF[meta.dtype]
    a, b = parts_of(ctx, node.args[0], meta.shape, dtype)
    return from_parts(meta.shape, dtype, a, b)


@complex_lowers("view")
def _view(ctx: LoopLowering, node: Node) -> Lazy:
    """A view of a complex value (a transpose, slice, reshape, broadcast) reads its parts
    through the view's map, extended by the part dimension."""
    meta, source = node.tensor, node.args[0]
    lazy = ctx.values[source]
    if lazy.memory is None:
        lazy = ctx.values[source] = ctx.realize(lazy, output_strides(source.tensor), source)
    buffer, base, strides = lazy.memory
    measured = part_strides(source.tensor.strides)
    mapped = rebase_view(2 * node.kwargs["offset"], part_strides(node.kwargs["strides"]),
                         (*meta.shape, 2), (*source.tensor.shape, 2), measured, strides)
    if mapped is None:  # not affine in the buffer's layout: a copy in capture's layout
        if output_strides(source.tensor) != tuple(source.tensor.strides):
            raise ctx.unsupported("a view of a complex value whose layout the loops do not "
                                  "reproduce")
        lazy = ctx.values[source] = ctx.realize(lazy, tuple(source.tensor.strides), source)
        buffer, base, strides = lazy.memory
        mapped = (2 * node.kwargs["offset"], part_strides(node.kwargs["strides"]))
    return LoopLowering.stored_parts(buffer, meta.shape, lazy.dtype, mapped[1], base + mapped[0],
                                     view=True)


# -- reductions -------------------------------------------------------------------------------------

@complex_lowers("sum")
def _sum(ctx: LoopLowering, node: Node) -> Lazy:
    """Each part summed on its own, as NumPy's complex add loop does (the part dimension kept)."""
    from .externs import op_as_extern
    meta, x = node.tensor, node.args[0]
    if not is_complex(meta.dtype) or not is_complex(x.tensor.dtype):
        return op_as_extern(ctx, node)
    dtype = PARTS_OF[meta.dtype]
    shape = tuple(x.tensor.shape)
    axes, keepdims = tuple(node.kwargs["axis"]), node.kwargs["keepdims"]
    a, b = parts_of(ctx, x, shape, dtype)
    if not shape or len(shape) - 1 in axes:
        # along the pairs in memory: each part a reduction of its own (one kernel reduces both,
        # its loads a stride-2 group LLVM vectorizes); the part as a kept axis of two columns
        # summed them in order, a scalar loop (100,000 complex128: 83 us, NumPy 27)
        real = ctx.reduce_values(a, shape, axes, keepdims, "sum", dtype)
        imag = ctx.reduce_values(b, shape, axes, keepdims, "sum", dtype)
        return from_parts(real.shape, dtype, real.loader, imag.loader)
    lazy = ctx.values[x]
    floats = _as_floats(lazy, shape, dtype)
    if floats is not None:
        # pairs laid along the last axis in memory: the sum of the float array they are, its
        # last axis twice as long (a columns nest runs across 2n columns, not 2: down (1000,
        # 100) complex128 columns, 81 us, NumPy 50)
        total = ctx.reduce_values(floats, (*shape[:-1], 2 * shape[-1]), axes, keepdims, "sum",
                                  dtype)
        return Lazy((*total.shape[:-1], shape[-1], 2), dtype,
                    lambda i: total.loader((*i[:-2], i[-2] * 2 + i[-1])), parts=True)
    result = ctx.reduce_values(from_parts(shape, dtype, a, b).loader, (*shape, 2), axes,
                               keepdims, "sum", dtype)
    return Lazy(result.shape, dtype, result.loader, parts=True)


def _as_floats(lazy: Lazy, shape: tuple[int, ...], dtype: str) -> Any:
    """A loader of the complex value ``lazy`` of ``shape`` as the float array of its parts,
    its last axis twice as long, where its parts lie in memory with the pairs consecutive along
    that axis; else None."""
    if not lazy.parts or lazy.memory is None or lazy.dtype != dtype or not shape:
        return None
    name, offset, strides = lazy.memory
    if len(strides) != len(shape) + 1 or strides[-1] != 1 or strides[-2] != 2:
        return None
    flat = (*strides[:-2], 1)

    def load(index: tuple[Affine, ...]) -> Expr:
        return Load(name, linear_index(index, flat) + offset, dtype)
    return load


# -- the part ops of real values ----------------------------------------------------------------------

@lowers("real", "conjugate")
def _real_itself(ctx: LoopLowering, node: Node) -> Lazy:
    """np.real of a real value: the value; np.conjugate: the value in the result's dtype (a
    bool's conjugate is int8, as NumPy's loops have none for bool)."""
    meta = node.tensor
    return Lazy(meta.shape, meta.dtype, ctx.operand(node.args[0], meta.shape, meta.dtype))


@lowers("imag")
def _real_imag(ctx: LoopLowering, node: Node) -> Lazy:
    """np.imag of a real value: zeros."""
    meta = node.tensor
    zero = Const(np.dtype(meta.dtype).type(0).item(), meta.dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: zero)
