"""The operator set of the op graph: each op declared once (STYLE.md habit 2).

An ``OpDef`` holds the op's kind, its attributes and its NumPy reference (the semantics every
backend must reproduce), and its properties: element-wise, commutative, comparison, accuracy
(bit-exact, or within NumPy's ulp threshold), cost class, and the capture targets that are the op.
Every other list of op properties is derived from these declarations through the queries at the
end of this module (``commutative_ops()``, ``op_info(name).cost_class``...), never kept by hand.
Later layers register their own rules for an op by its name: capture rules in
``stax.ir.to_opgraph``, loop lowering in ``stax.loop``, CPU emission in ``stax.codegen``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from . import derivatives as d
from . import derivatives_functions as df
from . import derivatives_products as dp
from .libm import python_pow_reference
from .lifted_loops import LIFTED_LOOP, run_lifted_loop
from .op_references import (
    arg_reference,
    decline_if_reference,
    decompose_mse_loss,
    dynamic_slice_reference,
    layer_norm_reference,
    mse_loss_reference,
    view_reference,
)


class OpKind(str, Enum):
    POINTWISE = "pointwise"
    REDUCTION = "reduction"
    COMPOSITE = "composite"  # a whole operator (layer_norm, mse_loss) a backend may implement
    EXTERN = "extern"  # a NumPy call run as is, between compiled kernels
    SCAN = "scan"  # a running reduction along one axis (cumsum, cumprod)


class Accuracy(str, Enum):
    """How close a backend's result must be to the op's NumPy reference."""

    EXACT = "exact"  # bit for bit (IEEE operations, bit manipulation, selection, integer math)
    #: within NumPy's own ulp threshold of the correctly rounded result (its umath validation
    #: data: 1 ulp for float64, 2 for cbrt and tanh, 2-4 for float32). Neither NumPy's libm nor
    #: a backend's routine is correctly rounded, so the last bits may differ from NumPy's.
    ULP = "ulp"


class CostClass(str, Enum):
    """What one element of the op costs, in kind (a target's cost model prices each class)."""

    UNIT = "unit"  # one vector instruction
    DIVIDE = "divide"  # one long-latency instruction (division, square root)
    FUNCTION = "function"  # a vectorized math routine of tens of instructions (exp, pow, hypot)


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: OpKind
    arity: int  # -1: any number of operands
    reference: Callable[..., Any]
    attrs: tuple[str, ...] = ()
    doc: str = ""
    #: spec §4.8: ``decompose(emit, node)`` rewrites the op into others, for backends whose basis
    #: lacks it; ``emit(op, operands, attrs, meta)`` creates a node before it
    decompose: Callable[..., Any] | None = None
    #: the op draws random numbers (changes a generator's state): each of its nodes is a side
    #: effect (``Node.effectful``), never removed, merged or moved. The ``extern`` op is not: a
    #: draw from a generator argument is one of its nodes marked at capture (meta ``random``)
    random: bool = False
    #: each result element is computed from the operands' elements at its index (broadcast)
    elementwise: bool = False
    #: op(x, y) == op(y, x) bit for bit, so a constant may be moved to either side
    commutative: bool = False
    #: compares its operands in their common dtype; the result is bool
    comparison: bool = False
    accuracy: Accuracy = Accuracy.EXACT
    cost_class: CostClass = CostClass.UNIT
    #: capture targets that are this op, one call for one op, lowered by the standard capture
    #: rule of the op's kind (``stax.ir.to_opgraph.standard``): ``numpy.exp``, ``operator.add``,
    #: ``method:sum``. Calls lowered by a rule of their own (``np.fmod``: abs, mod, copysign) are
    #: not listed: that rule names the ops it emits.
    captures: tuple[str, ...] = ()
    #: no capture rule produces the op natively: it is a NumPy step run between kernels
    numpy_step_only: bool = False
    #: reverse mode (issue 16): ``vjp(emit, node, g)`` -> one cotangent per operand, or None
    #: (``derivatives.py``); an op without one cannot be differentiated through
    vjp: Callable[..., Any] | None = None


OPS: dict[str, OpDef] = {}


def _declare(name: str, kind: OpKind, arity: int, reference: Callable[..., Any],
             attrs: tuple[str, ...] = (), doc: str = "", **properties: Any) -> None:
    if name in OPS:
        raise ValueError(f"op {name!r} is declared twice")
    OPS[name] = OpDef(name, kind, arity, reference, attrs, doc, **properties)


def _elementwise(name: str, arity: int, reference: Callable[..., Any], captures: tuple[str, ...],
                 doc: str = "", **properties: Any) -> None:
    _declare(name, OpKind.POINTWISE, arity, reference, doc=doc, elementwise=True,
             captures=captures, **properties)


P, R = OpKind.POINTWISE, OpKind.REDUCTION
_IEEE_DOC = "exactly NumPy's ufunc (IEEE: correctly rounded)"
_elementwise("add", 2, np.add, ("operator.add", "numpy.add"), "x + y (logical or on bool)",
             commutative=True, vjp=d.add)
_elementwise("sub", 2, np.subtract, ("operator.sub", "numpy.subtract"), vjp=d.sub)
_elementwise("mul", 2, np.multiply, ("operator.mul", "numpy.multiply"),
             "x * y (logical and on bool)", commutative=True, vjp=d.mul)
_elementwise("truediv", 2, np.true_divide,
             ("operator.truediv", "numpy.true_divide", "numpy.divide"),
             cost_class=CostClass.DIVIDE, vjp=d.truediv)
_elementwise("floordiv", 2, np.floor_divide, ("operator.floordiv", "numpy.floor_divide"),
             "x // y: floor of the quotient (integers: 0 when y == 0, wrapping at the minimum "
             "// -1)", vjp=d.zero)
_elementwise("mod", 2, np.remainder, ("operator.mod", "numpy.remainder", "numpy.mod"),
             "x % y with the sign of y (integers: 0 when y == 0)", vjp=df.mod)
# bits, logic, predicates and signs: exact, as NumPy's ufuncs (stax.loop.bits lowers them)
_SYMMETRIC = {"commutative": True}
for _name, _ufunc, _captures, _props in (
        ("bitwise_and", np.bitwise_and, ("operator.and_", "numpy.bitwise_and"), _SYMMETRIC),
        ("bitwise_or", np.bitwise_or, ("operator.or_", "numpy.bitwise_or"), _SYMMETRIC),
        ("bitwise_xor", np.bitwise_xor, ("operator.xor", "numpy.bitwise_xor"), _SYMMETRIC),
        ("left_shift", np.left_shift,
         ("operator.lshift", "numpy.left_shift", "numpy.bitwise_left_shift"), {}),
        ("right_shift", np.right_shift,
         ("operator.rshift", "numpy.right_shift", "numpy.bitwise_right_shift"), {}),
        ("logical_and", np.logical_and, ("numpy.logical_and",), _SYMMETRIC),
        ("logical_or", np.logical_or, ("numpy.logical_or",), _SYMMETRIC),
        ("logical_xor", np.logical_xor, ("numpy.logical_xor",), _SYMMETRIC),
        ("copysign", np.copysign, ("numpy.copysign",), {"vjp": df.copysign}),
        ("fmax", np.fmax, ("numpy.fmax",), {"vjp": df.fmax}),
        ("fmin", np.fmin, ("numpy.fmin",), {"vjp": df.fmin}),
        ("heaviside", np.heaviside, ("numpy.heaviside",), {"vjp": d.zero})):
    _elementwise(_name, 2, _ufunc, _captures, f"numpy.{_ufunc.__name__}, exactly", **_props)
for _name, _ufunc in (("gcd", np.gcd), ("lcm", np.lcm)):  # integers, of the magnitudes, wrapping
    _elementwise(_name, 2, _ufunc, (f"numpy.{_name}",), f"numpy.{_name}, exactly", commutative=True)
for _name, _ufunc, _captures, _vjp in (
        ("invert", np.invert, ("operator.invert", "numpy.invert", "numpy.bitwise_not",
                               "numpy.bitwise_invert"), d.zero),
        ("logical_not", np.logical_not, ("numpy.logical_not",), d.zero),
        ("isnan", np.isnan, ("numpy.isnan",), d.zero), ("isinf", np.isinf, ("numpy.isinf",), d.zero),
        ("isfinite", np.isfinite, ("numpy.isfinite",), d.zero),
        ("signbit", np.signbit, ("numpy.signbit",), d.zero),
        ("sign", np.sign, ("numpy.sign",), d.zero),
        ("positive", np.positive, ("operator.pos", "numpy.positive"), d.positive),
        ("reciprocal", np.reciprocal, ("numpy.reciprocal",), d.reciprocal)):
    _elementwise(_name, 1, _ufunc, _captures, f"numpy.{_ufunc.__name__}, exactly", vjp=_vjp)
_APPROXIMATE = {"accuracy": Accuracy.ULP, "cost_class": CostClass.FUNCTION}
_elementwise("hypot", 2, np.hypot, ("numpy.hypot",), "within NumPy's ulp threshold",
             vjp=df.hypot, **_APPROXIMATE)
_elementwise("arctan2", 2, np.arctan2, ("numpy.arctan2",), "within NumPy's ulp threshold",
             vjp=df.arctan2, **_APPROXIMATE)
_elementwise("ldexp", 2, np.ldexp, ("numpy.ldexp",), "x * 2**n, exact then rounded once (float32)")
_elementwise("bitwise_count", 1, np.bitwise_count, ("numpy.bitwise_count",),
             "set bits of |x| (uint8), as NumPy")
_elementwise("nextafter", 2, np.nextafter, ("numpy.nextafter",), "numpy.nextafter, exactly",
             vjp=df.nextafter)
_elementwise("spacing", 1, np.spacing, ("numpy.spacing",), "numpy.spacing, exactly", vjp=d.zero)
# numpy.frexp's two results: its own capture rule emits both ops
_elementwise("frexp_mantissa", 1, lambda x: np.frexp(x)[0], (), "numpy.frexp's mantissa, exactly")
_elementwise("frexp_exponent", 1, lambda x: np.frexp(x)[1], (),
             "numpy.frexp's exponent (int32)")
_elementwise("logaddexp", 2, np.logaddexp, ("numpy.logaddexp",), "within NumPy's ulp threshold",
             vjp=df.logaddexp, **_APPROXIMATE)
_elementwise("logaddexp2", 2, np.logaddexp2, ("numpy.logaddexp2",),
             "within NumPy's ulp threshold", vjp=df.logaddexp2, **_APPROXIMATE)
# x ** y: its capture rule computes constant exponents exactly (x * x, sqrt, 1 / x)
_elementwise("pow", 2, np.power, (), "x ** y, within NumPy's ulp threshold", vjp=d.pow,
             **_APPROXIMATE)
# Python's float ``**`` of numbers computed from scalar arguments (``scalar_inputs.py``): C's
# pow, the function CPython calls, bit for bit (``libm.py``)
_elementwise("python_pow", 2, python_pow_reference, ("stax.functional.python_pow",),
             "C's pow of doubles (Python's float **), exactly", vjp=d.pow,
             cost_class=CostClass.FUNCTION)
_elementwise("maximum", 2, np.maximum, ("numpy.maximum",),
             "NaN-propagating; returns y when x == y", vjp=d.maximum)
_elementwise("minimum", 2, np.minimum, ("numpy.minimum",),
             "NaN-propagating; returns y when x == y", vjp=d.minimum)
_elementwise("neg", 1, np.negative, ("operator.neg", "numpy.negative"), vjp=d.neg)
# complex numbers (``stax.loop.complex_values``): the parts and the conjugate; of a real value
# the value itself, zeros and the value itself
_elementwise("real", 1, np.real, ("numpy.real",), "the real part")
_elementwise("imag", 1, np.imag, ("numpy.imag",), "the imaginary part")
_elementwise("conjugate", 1, np.conjugate, (), "the complex conjugate")
_elementwise("abs", 1, np.absolute, ("numpy.absolute", "operator.abs", "numpy.fabs"), _IEEE_DOC,
             vjp=d.abs)
_elementwise("sqrt", 1, np.sqrt, ("numpy.sqrt",), _IEEE_DOC, cost_class=CostClass.DIVIDE,
             vjp=d.sqrt)
for _name, _ufunc in (("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc),
                      ("rint", np.rint)):
    _elementwise(_name, 1, _ufunc, (f"numpy.{_name}",), _IEEE_DOC, vjp=d.zero)
for _name, _ufunc, _vjp in (
        ("exp", np.exp, d.exp), ("log", np.log, d.log), ("tanh", np.tanh, d.tanh),
        ("sin", np.sin, d.sin), ("cos", np.cos, d.cos), ("log2", np.log2, d.log2),
        ("log10", np.log10, d.log10), ("log1p", np.log1p, d.log1p),
        ("expm1", np.expm1, d.expm1), ("exp2", np.exp2, df.exp2), ("sinh", np.sinh, d.sinh),
        ("cosh", np.cosh, d.cosh), ("cbrt", np.cbrt, df.cbrt), ("arctan", np.arctan, d.arctan),
        ("arcsin", np.arcsin, df.arcsin), ("arccos", np.arccos, df.arccos),
        ("arcsinh", np.arcsinh, df.arcsinh), ("arccosh", np.arccosh, df.arccosh),
        ("arctanh", np.arctanh, df.arctanh), ("tan", np.tan, df.tan)):
    _elementwise(_name, 1, _ufunc, (f"numpy.{_name}",), "within NumPy's ulp threshold (not "
                 "bit-exact: neither is libm)", vjp=_vjp, **_APPROXIMATE)


_declare("view", P, 1, view_reference, attrs=("offset", "strides", "shape"), vjp=d.view,
         doc="the elements of the operand's memory at element offset + sum(i * strides): how "
             "transposes, slices, reshapes and broadcasts of an operand read it")
# np.where's own rule: its one-operand form is np.nonzero
_declare("where", P, 3, np.where, doc="cond ? a : b; cond is any value's truth (NaN is true)",
         elementwise=True, vjp=d.where)
_declare("cast", P, 1, lambda x, dtype: np.asarray(x).astype(dtype), attrs=("dtype",),
         doc="x.astype(dtype)", elementwise=True, vjp=d.cast)
for _name, _ufunc, _props in (("lt", np.less, {}), ("le", np.less_equal, {}),
                              ("gt", np.greater, {}), ("ge", np.greater_equal, {}),
                              ("eq", np.equal, _SYMMETRIC),
                              ("ne", np.not_equal, _SYMMETRIC)):
    _elementwise(_name, 2, _ufunc, (f"operator.{_name}", f"numpy.{_ufunc.__name__}"),
                 "comparison in the operands' common dtype; NaN compares unequal to everything",
                 comparison=True, vjp=d.zero, **_props)


def _reduction_captures(name: str, *aliases: str) -> tuple[str, ...]:
    return (f"numpy.{name}", *(f"numpy.{a}" for a in aliases), f"method:{name}")


_declare("sum", R, 1,
         lambda x, axis, keepdims, dtype: np.sum(x, axis=axis, keepdims=keepdims, dtype=dtype),
         attrs=("axis", "keepdims", "dtype"),
         doc="sum over the axes in ``axis`` (a tuple), accumulating in ``dtype``",
         captures=_reduction_captures("sum"), vjp=d.sum)


_declare("max", R, 1, lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
         attrs=("axis", "keepdims"), doc="NaN-propagating maximum over ``axis``",
         captures=_reduction_captures("max", "amax"), vjp=d.max)
_declare("min", R, 1, lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims),
         attrs=("axis", "keepdims"), doc="NaN-propagating minimum over ``axis``",
         captures=_reduction_captures("min", "amin"), vjp=d.min)
_declare("prod", R, 1,
         lambda x, axis, keepdims, dtype: np.prod(x, axis=axis, keepdims=keepdims, dtype=dtype),
         attrs=("axis", "keepdims", "dtype"), doc="product over ``axis`` in ``dtype``",
         captures=_reduction_captures("prod"), vjp=df.prod)
for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    _declare(_name, R, 1,
             lambda x, axis, keepdims, _fn=_fn: arg_reference(_fn, x, axis, keepdims),
             attrs=("axis", "keepdims"),
             doc="index of the first extreme value (a NaN counts as the extreme), flattened "
                 "over ``axis`` when it names every axis", captures=_reduction_captures(_name))
_declare("any", R, 1, lambda x, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims),
         attrs=("axis", "keepdims"), captures=_reduction_captures("any"))
_declare("all", R, 1, lambda x, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims),
         attrs=("axis", "keepdims"), captures=_reduction_captures("all"))
for _name, _fn, _vjp in (("var", np.var, d.var), ("std", np.std, d.std)):
    _declare(_name, R, 1,
             lambda x, axis, keepdims, ddof, dtype, _fn=_fn: _fn(x, axis=axis, keepdims=keepdims,
                                                                  ddof=ddof, dtype=dtype),
             attrs=("axis", "keepdims", "ddof", "dtype"),
             doc="two-pass: the mean, then the mean squared deviation (as NumPy computes it)",
             captures=_reduction_captures(_name), vjp=_vjp)
_declare("mean", R, 1,
         lambda x, axis, keepdims, dtype: np.mean(x, axis=axis, keepdims=keepdims, dtype=dtype),
         attrs=("axis", "keepdims", "dtype"), doc="mean over ``axis``, accumulating in ``dtype``",
         captures=_reduction_captures("mean"), vjp=d.mean)


_declare("mse_loss", OpKind.COMPOSITE, 2, mse_loss_reference, doc="mean squared error",
         decompose=decompose_mse_loss)
_declare("layer_norm", OpKind.COMPOSITE, 3,
         lambda x, w, b, normalized_ndim, eps: layer_norm_reference(x, w, b, normalized_ndim,
                                                                     eps),
         attrs=("normalized_ndim", "eps"),
         doc="layer normalization over the last ``normalized_ndim`` axes (kept whole: a backend "
             "computes mean and variance in one pass, Welford, spec §6.5)", vjp=df.layer_norm)


def _extern(*args: Any, fn: str, method: bool, call_kwargs: dict[str, Any]) -> Any:
    from .interpreter import call_method, resolve_function

    if method:
        return call_method(args[0], fn, args[1:], call_kwargs)
    return resolve_function(fn)(*args, **call_kwargs)


_declare("cumsum", OpKind.SCAN, 1, lambda x, axis, dtype: np.cumsum(x, axis=axis, dtype=dtype),
         attrs=("axis", "dtype"), doc="running sum along ``axis``, accumulated in ``dtype`` in "
         "order (bit-exact with NumPy's sequential loop)", captures=_reduction_captures("cumsum"),
         vjp=d.cumsum)
_declare("cumprod", OpKind.SCAN, 1, lambda x, axis, dtype: np.cumprod(x, axis=axis, dtype=dtype),
         attrs=("axis", "dtype"), doc="running product along ``axis``, in order",
         captures=_reduction_captures("cumprod"), vjp=df.cumprod)
_declare("cummax", OpKind.SCAN, 1,
         lambda x, axis, dtype: np.maximum.accumulate(x, axis=axis, dtype=dtype),
         attrs=("axis", "dtype"), doc="running maximum along ``axis`` (np.maximum.accumulate: a "
         "NaN stays, a tie takes the later element)")
_declare("cummin", OpKind.SCAN, 1,
         lambda x, axis, dtype: np.minimum.accumulate(x, axis=axis, dtype=dtype),
         attrs=("axis", "dtype"), doc="running minimum along ``axis`` (np.minimum.accumulate)")
# building arrays: concatenation, stacking, constant padding, triangles, and creation functions
_declare("concatenate", P, -1, lambda *xs, axis: np.concatenate(xs, axis=axis), attrs=("axis",),
         vjp=d.concatenate,
         doc="the operands joined along ``axis`` (each cast to the result dtype)")
_declare("stack", P, -1, lambda *xs, axis: np.stack(xs, axis=axis), attrs=("axis",), vjp=d.stack,
         doc="the operands stacked along a new ``axis``")
_declare("pad", P, 1, lambda x, pad_width, value: np.pad(x, pad_width, constant_values=value),
         vjp=d.pad,
         attrs=("pad_width", "value"), doc="constant padding: ``pad_width`` a (before, after) "
         "pair per axis")
_declare("reshape", P, 1, lambda x, shape: np.reshape(x, shape), attrs=("shape",), vjp=d.reshape,
         doc="a C-order reshape that NumPy computes as a copy (a view becomes a ``view`` op)")
_declare("take", P, 2, lambda x, indices, axis: np.take(x, indices, axis=axis), attrs=("axis",),
         vjp=d.take,
         doc="np.take / x[indices]: gathers along ``axis``; an index out of bounds is NumPy's "
         "IndexError")
_declare("dynamic_slice", P, 2,
         lambda x, start, axis, length: dynamic_slice_reference(x, start, axis, length),
         attrs=("axis", "length"),
         doc="x[..., s:s + length, ...] along ``axis`` from the traced 0-d integer ``start``, "
             "clamped to [0, extent - length] (XLA's rule: nothing outside x is read); a "
             "lifted loop's ``x[i * bs:(i + 1) * bs]``, whose bounds capture checks first")
_declare("take_const", P, 1, lambda x, axis, indices: np.take(x, list(indices), axis=axis),
         vjp=d.take_const,
         attrs=("axis", "indices"), doc="x[[i, j, ...]] with a constant list of positions")
_declare("roll", P, 1, lambda x, shift, axis: np.roll(x, shift, axis=axis),
         attrs=("shift", "axis"), doc="np.roll along one axis", vjp=df.roll)
_declare("scatter", P, -1, lambda x, *rest, count, accumulate, scalar=None, axes=None:
         _scatter_op(x, *rest, count=count, accumulate=accumulate, scalar=scalar, axes=axes),
         attrs=("count", "accumulate", "scalar", "axes"),
         doc="x with x[i0, ..., ik] = value (accumulate: np.add.at's unbuffered sums), the index "
             "arrays for x's leading axes (negative from the end; out of bounds: NumPy's error); "
             "with ``axes``, 0-d indices for those axes of x, every other axis whole "
             "(``x[:, i] = v``)")
_declare("scatter_maximum", P, -1, lambda x, *rest, count, scalar=None: _scatter_extreme(
    np.maximum, x, *rest, count=count, scalar=scalar), attrs=("count", "scalar"),
         doc="x with np.maximum.at(x, (i0, ..., ik), value): each position the maximum of what "
             "the positions before it left and its value, in order (NaN as np.maximum); the "
             "index arrays for x's leading axes (negative from the end; out of bounds: NumPy's "
             "error)")
_declare("scatter_minimum", P, -1, lambda x, *rest, count, scalar=None: _scatter_extreme(
    np.minimum, x, *rest, count=count, scalar=scalar), attrs=("count", "scalar"),
         doc="x with np.minimum.at(x, (i0, ..., ik), value), as ``scatter_maximum``")
_declare("setitem", P, -1, lambda x, *value, key, scalar=None: _setitem_op(x, key, value, scalar),
         attrs=("key", "scalar"), doc="x with x[key] = value (a copy): ``key`` per axis "
         "('slice', start, stop, step) with step +-1, or ('int', k); the value an operand or "
         "``scalar``", vjp=df.setitem)
_declare("tril", P, 1, lambda x, k: np.tril(x, k), attrs=("k",), doc="np.tril of the last two axes",
         vjp=df.tril)
_declare("triu", P, 1, lambda x, k: np.triu(x, k), attrs=("k",), doc="np.triu of the last two axes",
         vjp=df.triu)
_declare("full", P, 0, lambda shape, value, dtype: np.full(shape, value, dtype),
         attrs=("shape", "value", "dtype"), doc="np.full (zeros, ones and the *_like forms too)")
_declare("arange", P, 0,
         lambda start, step, n, dtype: np.arange(start, start + step * n, step, dtype=dtype)[:n],
         attrs=("start", "step", "n", "dtype"), doc="integer np.arange: start + step * i")
_declare("eye", P, 0, lambda n, m, k, dtype: np.eye(n, m, k, dtype=dtype),
         attrs=("n", "m", "k", "dtype"), doc="np.eye")
_declare("decline_if", P, 2, lambda x, bad, why: decline_if_reference(x, bad, why),
         attrs=("why",),
         doc="x, where no element of ``bad`` is true; else the compiled call declines and NumPy "
             "runs it (a precondition only the data shows: ``np.searchsorted``'s sorted array)")
_declare("extern", OpKind.EXTERN, -1, _extern, attrs=("fn", "method", "call_kwargs"),
         doc="calls capture target ``fn`` (a method of the first operand when ``method``) with "
             "NumPy; its operands may nest nodes inside tuples and lists", numpy_step_only=True,
         vjp=dp.extern)


def get_op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}; known ops: {sorted(OPS)}") from None


# -- queries: every list of op properties elsewhere is one of these ------------------------------

op_info = get_op  # the declaration of an op, by name: ``op_info("exp").cost_class``


def _where(test: Callable[[OpDef], bool]) -> frozenset[str]:
    return frozenset(name for name, op in OPS.items() if test(op))


def elementwise_ops() -> frozenset[str]:
    return _where(lambda op: op.elementwise)


def commutative_ops() -> frozenset[str]:
    return _where(lambda op: op.commutative)


def comparison_ops() -> frozenset[str]:
    return _where(lambda op: op.comparison)


def approximate_ops() -> frozenset[str]:
    """Ops whose results are within NumPy's ulp threshold, not bit for bit (``Accuracy.ULP``)."""
    return _where(lambda op: op.accuracy is Accuracy.ULP)


def ops_of_cost(*classes: CostClass) -> frozenset[str]:
    """Ops whose cost class is one of ``classes`` (``ops_of_cost(CostClass.FUNCTION)``)."""
    return _where(lambda op: op.cost_class in classes)


def capture_targets_of(ops: frozenset[str] | set[str]) -> frozenset[str]:
    """The capture targets declared as one of ``ops`` (``OpDef.captures``)."""
    return frozenset(t for name in ops for t in get_op(name).captures)


# -- functions NumPy lacks (``stax.runtime.nn``): their eager semantics, declared here so every
# -- layer (and the reference interpreter) agrees on them without importing the runtime.
def _relu(x: Any) -> Any:
    return np.maximum(x, 0)


def _selu(x: Any) -> Any:
    """SELU, written exactly as its decomposition (spec example 4.2), so both give the same bits."""
    return 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1))


def same_index_key(a: Any, b: Any) -> bool:
    """Whether two indexing keys made of ints, slices, None and Ellipsis select the same
    elements (keys holding arrays or nodes are never treated as equal)."""
    if a is b:
        return True
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_index_key(x, y) for x, y in zip(a, b))
    plain = (int, slice, type(None), type(Ellipsis))
    return isinstance(a, plain) and isinstance(b, plain) and a == b


def _setitem(x: Any, key: Any, value: Any, scalar: bool = False) -> Any:
    """``x[key] = value`` as a pure function: a copy of ``x`` (same layout) with the update.
    ``scalar``: the value was a NumPy scalar, which a NumPy step receives as a 0-d array —
    NumPy converts the two differently into an integer array (a float scalar out of range
    raises ``OverflowError``; a 0-d array wraps)."""
    y = np.copy(x, order="K")
    y[key] = value[()] if scalar and type(value) is np.ndarray and value.ndim == 0 else value
    return y


def _at(ufunc: Any, x: Any, indices: Any, values: Any) -> Any:
    """``ufunc.at(x, indices, values)`` as a pure function: a copy of ``x`` combined with the
    values unbuffered (a repeated index combines each time, in order)."""
    y = np.copy(x, order="K")
    ufunc.at(y, indices, values)
    return y


def _add_at(x: Any, indices: Any, values: Any = None) -> Any:
    """``np.add.at(x, indices, values)`` as a pure function."""
    return _at(np.add, x, indices, values)


def _subtract_at(x: Any, indices: Any, values: Any = None) -> Any:
    """``np.subtract.at(x, indices, values)`` as a pure function."""
    return _at(np.subtract, x, indices, values)


def _maximum_at(x: Any, indices: Any, values: Any = None) -> Any:
    """``np.maximum.at(x, indices, values)`` as a pure function."""
    return _at(np.maximum, x, indices, values)


def _minimum_at(x: Any, indices: Any, values: Any = None) -> Any:
    """``np.minimum.at(x, indices, values)`` as a pure function."""
    return _at(np.minimum, x, indices, values)


def _scatter_extreme(ufunc: Any, x: Any, *rest: Any, count: int, scalar: Any = None) -> Any:
    """``scatter_maximum``/``scatter_minimum`` as a pure function."""
    return _at(ufunc, x, tuple(rest[:count]), rest[count] if len(rest) > count else scalar)


def _scatter_op(x: Any, *rest: Any, count: int, accumulate: bool, scalar: Any = None,
                axes: Any = None) -> Any:
    """``x[i0, ..., ik] = value`` (or ``np.add.at(x, (i0, ..., ik), value)``, ``accumulate``) with
    ``count`` index arrays for x's leading axes, or for ``axes`` (0-d ones), as a pure function."""
    indices, value = tuple(rest[:count]), (rest[count] if len(rest) > count else scalar)
    if axes is not None:
        indices = scatter_key(np.ndim(x), indices, axes)
    return _add_at(x, indices, value) if accumulate else _setitem(x, indices, value)


def scatter_key(ndim: int, indices: tuple[Any, ...], axes: tuple[int, ...]) -> tuple[Any, ...]:
    """The index of a scatter with ``axes``: each index at its axis, every other axis whole."""
    key: list[Any] = [slice(None)] * ndim
    for axis, index in zip(axes, indices):
        key[axis] = index
    return tuple(key)


def _setitem_op(x: Any, key: Any, value: Any, scalar: Any) -> Any:
    # slice.indices() triples: a reversed slice through the start stops at -1, which as a slice
    # stop would mean "the last element" (an empty slice)
    index = tuple(slice(e[1], e[2] if e[2] >= 0 else None, e[3]) if e[0] == "slice" else e[1]
                  for e in key)
    return _setitem(x, index, value[0] if value else scalar)


def _layer_norm(x: Any, normalized_shape: Any, weight: Any = None, bias: Any = None,
                eps: float = 1e-5) -> Any:
    ndim = 1 if isinstance(normalized_shape, int) else len(tuple(normalized_shape))
    return layer_norm_reference(x, weight, bias, ndim, eps)


#: Python operators on NumPy integer scalars, which NumPy computes with its scalar math: unlike
#: its ufunc loops (``np.add``, array arithmetic), that math reports integer overflow as a
#: floating-point event — ``np.int64(2**63 - 1) + 1`` warns "overflow encountered in scalar add"
#: under ``np.errstate(over="warn")``, raises under "raise" (NEP 50: a Python int operand takes
#: the scalar's type). Capture records such an operation under one of these names
#: (``stax.trace.proxy``), so that it runs as NumPy's own operator on NumPy scalars in a NumPy
#: step of the compiled program, whose events decline the call (``stax.codegen.errstate``): its
#: eager run then warns or raises as NumPy does. ``//`` is not among them: its scalar events
#: (``MIN // -1``, division by zero) are integer division's, which the kernels report as such.
SCALAR_OPERATORS: dict[str, Callable[..., Any]] = {
    "stax.scalar.add": operator.add, "stax.scalar.sub": operator.sub,
    "stax.scalar.mul": operator.mul, "stax.scalar.neg": operator.neg,
    "stax.scalar.abs": operator.abs,
}


def reduction_identity(kind: str, dtype: Any) -> Any:
    """What ``kind`` reduces no element to in ``dtype``, as a Python scalar (which keeps an
    array's dtype in ``np.where``): the value an unselected or masked element becomes (a
    masked selection's reduction in capture, a ragged slice's rows past the end in Triton)."""
    dtype = np.dtype(dtype)
    if kind in ("sum", "mean", "any", "count_nonzero"):
        return False if dtype.kind == "b" else 0
    if kind in ("prod", "all"):
        return True if dtype.kind == "b" else 1
    high = kind == "min"
    if dtype.kind == "b":
        return high
    if dtype.kind == "f":
        return float("inf") if high else float("-inf")
    info = np.iinfo(dtype)
    return int(info.max if high else info.min)

def _scalar_operator(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` on NumPy scalars: a NumPy step receives a 0-d buffer where capture saw a scalar
    (``x[()]`` is that scalar), and gives NumPy's result, events and exceptions."""
    def apply(*operands: Any) -> Any:
        return fn(*(o[()] if type(o) is np.ndarray and o.ndim == 0 else o for o in operands))
    apply.__name__ = apply.__qualname__ = f"scalar_{fn.__name__}"
    return apply


NN_FUNCTIONS: dict[str, Callable[..., Any]] = {
    # Python operators on NumPy integer scalars (``SCALAR_OPERATORS``)
    **{name: _scalar_operator(fn) for name, fn in SCALAR_OPERATORS.items()},
    # whole operators a backend may call as library functions (``stax.ops.<op>``)
    "stax.ops.layer_norm": layer_norm_reference,
    "stax.ops.mse_loss": mse_loss_reference,
    "stax.ops.view": view_reference,
    "stax.ops.decline_if": decline_if_reference,
    "stax.ops.dynamic_slice": dynamic_slice_reference,
    # a precondition a rewrite made at capture relies on (``stax.trace.masked_reductions``)
    "stax.functional.decline_if": decline_if_reference,
    "stax.functional.python_pow": python_pow_reference,
    "stax.nn.relu": _relu,
    "stax.nn.selu": _selu,
    "stax.nn.mse_loss": mse_loss_reference,
    "stax.nn.layer_norm": _layer_norm,
    "stax.functional.setitem": _setitem,
    "stax.functional.add_at": _add_at,
    "stax.functional.subtract_at": _subtract_at,
    "stax.functional.maximum_at": _maximum_at,
    "stax.functional.minimum_at": _minimum_at,
    # a loop run by a compiled body per item (``lifted_loops.py``, ``stax.trace.loops``)
    LIFTED_LOOP: run_lifted_loop,
}
