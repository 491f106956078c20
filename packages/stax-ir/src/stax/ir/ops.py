"""The operator set of the op graph: each op declared once (STYLE.md habit 2).

An ``OpDef`` holds the op's kind, its attributes and its NumPy reference (the semantics every
backend must reproduce). Later layers register their own rules for an op by its name (loop
lowering in ``stax.loop``, CPU emission in ``stax.codegen``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np


class OpKind(str, Enum):
    POINTWISE = "pointwise"
    REDUCTION = "reduction"
    COMPOSITE = "composite"  # a whole operator (layer_norm, mse_loss) a backend may implement
    EXTERN = "extern"  # a NumPy call run as is, between compiled kernels
    SCAN = "scan"  # a running reduction along one axis (cumsum, cumprod)


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


OPS: dict[str, OpDef] = {}


def _declare(name: str, kind: OpKind, arity: int, reference: Callable[..., Any],
             attrs: tuple[str, ...] = (), doc: str = "",
             decompose: Callable[..., Any] | None = None, random: bool = False) -> None:
    OPS[name] = OpDef(name, kind, arity, reference, attrs, doc, decompose, random)


P, R = OpKind.POINTWISE, OpKind.REDUCTION
_declare("add", P, 2, np.add, doc="x + y (logical or on bool)")
_declare("sub", P, 2, np.subtract)
_declare("mul", P, 2, np.multiply, doc="x * y (logical and on bool)")
_declare("truediv", P, 2, np.true_divide)
_declare("floordiv", P, 2, np.floor_divide, doc="x // y: floor of the quotient (integers: 0 when "
         "y == 0, wrapping at the minimum // -1)")
_declare("mod", P, 2, np.remainder, doc="x % y with the sign of y (integers: 0 when y == 0)")
# bits, logic, predicates and signs: exact, as NumPy's ufuncs (stax.loop.bits lowers them)
for _name, _ufunc in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                      ("bitwise_xor", np.bitwise_xor), ("left_shift", np.left_shift),
                      ("right_shift", np.right_shift), ("logical_and", np.logical_and),
                      ("logical_or", np.logical_or), ("logical_xor", np.logical_xor),
                      ("copysign", np.copysign), ("fmax", np.fmax), ("fmin", np.fmin),
                      ("heaviside", np.heaviside)):
    _declare(_name, P, 2, _ufunc, doc=f"numpy.{_ufunc.__name__}, exactly")
for _name, _ufunc in (("invert", np.invert), ("logical_not", np.logical_not),
                      ("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                      ("signbit", np.signbit), ("sign", np.sign), ("positive", np.positive),
                      ("reciprocal", np.reciprocal)):
    _declare(_name, P, 1, _ufunc, doc=f"numpy.{_ufunc.__name__}, exactly")
_declare("hypot", P, 2, np.hypot, doc="within a measured ulp bound of NumPy")
_declare("arctan2", P, 2, np.arctan2, doc="within a measured ulp bound of NumPy (float32)")
_declare("ldexp", P, 2, np.ldexp, doc="x * 2**n, exact then rounded once (float32)")
_declare("bitwise_count", P, 1, np.bitwise_count, doc="set bits of |x| (uint8), as NumPy")
_declare("nextafter", P, 2, np.nextafter, doc="numpy.nextafter, exactly")
_declare("spacing", P, 1, np.spacing, doc="numpy.spacing, exactly")
_declare("frexp_mantissa", P, 1, lambda x: np.frexp(x)[0], doc="numpy.frexp's mantissa, exactly")
_declare("frexp_exponent", P, 1, lambda x: np.frexp(x)[1], doc="numpy.frexp's exponent (int32)")
_declare("logaddexp", P, 2, np.logaddexp, doc="within a measured ulp bound of NumPy (float32)")
_declare("logaddexp2", P, 2, np.logaddexp2, doc="within a measured ulp bound of NumPy (float32)")
_declare("pow", P, 2, np.power, doc="x ** y, within a measured ulp bound of NumPy (float32)")
_declare("maximum", P, 2, np.maximum, doc="NaN-propagating; returns y when x == y")
_declare("minimum", P, 2, np.minimum, doc="NaN-propagating; returns y when x == y")
_declare("neg", P, 1, np.negative)
for _name, _ufunc in (("abs", np.absolute), ("sqrt", np.sqrt), ("floor", np.floor),
                      ("ceil", np.ceil), ("trunc", np.trunc), ("rint", np.rint)):
    _declare(_name, P, 1, _ufunc, doc="exactly NumPy's ufunc (IEEE: correctly rounded)")
for _name, _ufunc in (("exp", np.exp), ("log", np.log), ("tanh", np.tanh), ("sin", np.sin),
                      ("cos", np.cos), ("log2", np.log2), ("log10", np.log10),
                      ("log1p", np.log1p), ("expm1", np.expm1), ("exp2", np.exp2),
                      ("sinh", np.sinh), ("cosh", np.cosh), ("cbrt", np.cbrt),
                      ("arctan", np.arctan), ("arcsin", np.arcsin), ("arccos", np.arccos),
                      ("arcsinh", np.arcsinh), ("arccosh", np.arccosh), ("arctanh", np.arctanh),
                      ("tan", np.tan)):
    _declare(_name, P, 1, _ufunc, doc="within a measured ulp bound of NumPy (not bit-exact: "
             "neither is libm)")
class _Memory:
    """Memory of ``owner`` seen through another shape and strides (NumPy keeps this as the
    view's base, and it keeps ``owner`` alive)."""

    def __init__(self, owner: Any, address: int, shape: tuple[int, ...],
                 strides: tuple[int, ...]) -> None:
        self.owner = owner
        self.__array_interface__ = {
            "data": (address, not owner.flags.writeable), "shape": tuple(shape),
            "strides": tuple(strides), "typestr": owner.dtype.str, "version": 3}


def _view_reference(x: Any, offset: int, strides: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    x = np.asarray(x)
    address = x.__array_interface__["data"][0] + offset * x.itemsize
    return np.asarray(_Memory(x, address, shape, tuple(s * x.itemsize for s in strides)))


_declare("view", P, 1, _view_reference, attrs=("offset", "strides", "shape"),
         doc="the elements of the operand's memory at element offset + sum(i * strides): how "
             "transposes, slices, reshapes and broadcasts of an operand read it")
_declare("where", P, 3, np.where, doc="cond ? a : b; cond is any value's truth (NaN is true)")
_declare("cast", P, 1, lambda x, dtype: np.asarray(x).astype(dtype), attrs=("dtype",),
         doc="x.astype(dtype)")
for _name, _ufunc in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                      ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)):
    _declare(_name, P, 2, _ufunc, doc="comparison in the operands' common dtype; NaN compares "
             "unequal to everything")
COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")
_declare("sum", R, 1,
         lambda x, axis, keepdims, dtype: np.sum(x, axis=axis, keepdims=keepdims, dtype=dtype),
         attrs=("axis", "keepdims", "dtype"),
         doc="sum over the axes in ``axis`` (a tuple), accumulating in ``dtype``")


_declare("max", R, 1, lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
         attrs=("axis", "keepdims"), doc="NaN-propagating maximum over ``axis``")
_declare("min", R, 1, lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims),
         attrs=("axis", "keepdims"), doc="NaN-propagating minimum over ``axis``")
_declare("prod", R, 1,
         lambda x, axis, keepdims, dtype: np.prod(x, axis=axis, keepdims=keepdims, dtype=dtype),
         attrs=("axis", "keepdims", "dtype"), doc="product over ``axis`` in ``dtype``")
for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    _declare(_name, R, 1,
             lambda x, axis, keepdims, _fn=_fn: _arg_reference(_fn, x, axis, keepdims),
             attrs=("axis", "keepdims"),
             doc="index of the first extreme value (a NaN counts as the extreme), flattened "
                 "over ``axis`` when it names every axis")
_declare("any", R, 1, lambda x, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims),
         attrs=("axis", "keepdims"))
_declare("all", R, 1, lambda x, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims),
         attrs=("axis", "keepdims"))
for _name, _fn in (("var", np.var), ("std", np.std)):
    _declare(_name, R, 1,
             lambda x, axis, keepdims, ddof, dtype, _fn=_fn: _fn(x, axis=axis, keepdims=keepdims,
                                                                  ddof=ddof, dtype=dtype),
             attrs=("axis", "keepdims", "ddof", "dtype"),
             doc="two-pass: the mean, then the mean squared deviation (as NumPy computes it)")
_declare("mean", R, 1,
         lambda x, axis, keepdims, dtype: np.mean(x, axis=axis, keepdims=keepdims, dtype=dtype),
         attrs=("axis", "keepdims", "dtype"), doc="mean over ``axis``, accumulating in ``dtype``")


def _mse_loss_reference(x: Any, y: Any) -> Any:
    d = np.subtract(x, y)
    return np.mean(np.multiply(d, d))


def _decompose_mse_loss(emit: Callable[..., Any], node: Any) -> Any:
    """mse_loss(x, y) = mean((x - y) * (x - y)) — spec example 4.3."""
    from .meta import TensorMeta, contiguous_strides

    x, y = node.args
    shape = tuple(np.broadcast_shapes(x.tensor.shape, y.tensor.shape))
    dtype = np.result_type(x.tensor.np_dtype, y.tensor.np_dtype).name
    elementwise = TensorMeta(shape, dtype, contiguous_strides(shape))
    sub = emit("sub", (x, y), {}, elementwise)
    mul = emit("mul", (sub, sub), {}, elementwise)
    return emit("mean", (mul,), {"axis": tuple(range(len(shape))), "keepdims": False,
                                 "dtype": node.tensor.dtype}, node.tensor)


def _layer_norm_reference(x: Any, weight: Any, bias: Any, normalized_ndim: int,
                          eps: float) -> Any:
    axes = tuple(range(x.ndim - normalized_ndim, x.ndim))
    mean = np.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    var = np.mean(centered * centered, axis=axes, keepdims=True)
    out = centered / np.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


_declare("mse_loss", OpKind.COMPOSITE, 2, _mse_loss_reference, doc="mean squared error",
         decompose=_decompose_mse_loss)
_declare("layer_norm", OpKind.COMPOSITE, 3,
         lambda x, w, b, normalized_ndim, eps: _layer_norm_reference(x, w, b, normalized_ndim,
                                                                     eps),
         attrs=("normalized_ndim", "eps"),
         doc="layer normalization over the last ``normalized_ndim`` axes (kept whole: a backend "
             "computes mean and variance in one pass, Welford, spec §6.5)")


def _extern(*args: Any, fn: str, method: bool, call_kwargs: dict[str, Any]) -> Any:
    from .interpreter import call_method, resolve_function

    if method:
        return call_method(args[0], fn, args[1:], call_kwargs)
    return resolve_function(fn)(*args, **call_kwargs)


_declare("cumsum", OpKind.SCAN, 1, lambda x, axis, dtype: np.cumsum(x, axis=axis, dtype=dtype),
         attrs=("axis", "dtype"), doc="running sum along ``axis``, accumulated in ``dtype`` in "
         "order (bit-exact with NumPy's sequential loop)")
_declare("cumprod", OpKind.SCAN, 1, lambda x, axis, dtype: np.cumprod(x, axis=axis, dtype=dtype),
         attrs=("axis", "dtype"), doc="running product along ``axis``, in order")
# building arrays: concatenation, stacking, constant padding, triangles, and creation functions
_declare("concatenate", P, -1, lambda *xs, axis: np.concatenate(xs, axis=axis), attrs=("axis",),
         doc="the operands joined along ``axis`` (each cast to the result dtype)")
_declare("stack", P, -1, lambda *xs, axis: np.stack(xs, axis=axis), attrs=("axis",),
         doc="the operands stacked along a new ``axis``")
_declare("pad", P, 1, lambda x, pad_width, value: np.pad(x, pad_width, constant_values=value),
         attrs=("pad_width", "value"), doc="constant padding: ``pad_width`` a (before, after) "
         "pair per axis")
_declare("reshape", P, 1, lambda x, shape: np.reshape(x, shape), attrs=("shape",),
         doc="a C-order reshape that NumPy computes as a copy (a view becomes a ``view`` op)")
_declare("take", P, 2, lambda x, indices, axis: np.take(x, indices, axis=axis), attrs=("axis",),
         doc="np.take / x[indices]: gathers along ``axis``; an index out of bounds is NumPy's "
         "IndexError")
_declare("take_const", P, 1, lambda x, axis, indices: np.take(x, list(indices), axis=axis),
         attrs=("axis", "indices"), doc="x[[i, j, ...]] with a constant list of positions")
_declare("roll", P, 1, lambda x, shift, axis: np.roll(x, shift, axis=axis),
         attrs=("shift", "axis"), doc="np.roll along one axis")
_declare("setitem", P, -1, lambda x, *value, key, scalar=None: _setitem_op(x, key, value, scalar),
         attrs=("key", "scalar"), doc="x with x[key] = value (a copy): ``key`` per axis "
         "('slice', start, stop, step) with step +-1, or ('int', k); the value an operand or "
         "``scalar``")
_declare("tril", P, 1, lambda x, k: np.tril(x, k), attrs=("k",), doc="np.tril of the last two axes")
_declare("triu", P, 1, lambda x, k: np.triu(x, k), attrs=("k",), doc="np.triu of the last two axes")
_declare("full", P, 0, lambda shape, value, dtype: np.full(shape, value, dtype),
         attrs=("shape", "value", "dtype"), doc="np.full (zeros, ones and the *_like forms too)")
_declare("arange", P, 0,
         lambda start, step, n, dtype: np.arange(start, start + step * n, step, dtype=dtype)[:n],
         attrs=("start", "step", "n", "dtype"), doc="integer np.arange: start + step * i")
_declare("eye", P, 0, lambda n, m, k, dtype: np.eye(n, m, k, dtype=dtype),
         attrs=("n", "m", "k", "dtype"), doc="np.eye")
_declare("extern", OpKind.EXTERN, -1, _extern, attrs=("fn", "method", "call_kwargs"),
         doc="calls capture target ``fn`` (a method of the first operand when ``method``) with "
             "NumPy; its operands may nest nodes inside tuples and lists")


def _arg_reference(fn: Any, x: Any, axis: tuple[int, ...], keepdims: bool) -> Any:
    x = np.asarray(x)
    if len(axis) == x.ndim and x.ndim != 1:
        return fn(x, axis=None, keepdims=keepdims)
    return fn(x, axis=axis[0] if axis else None, keepdims=keepdims)


def get_op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}; known ops: {sorted(OPS)}") from None


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


def _setitem(x: Any, key: Any, value: Any) -> Any:
    """``x[key] = value`` as a pure function: a copy of ``x`` (same layout) with the update."""
    y = np.copy(x, order="K")
    y[key] = value
    return y


def _setitem_op(x: Any, key: Any, value: Any, scalar: Any) -> Any:
    index = tuple(slice(e[1], e[2], e[3]) if e[0] == "slice" else e[1] for e in key)
    return _setitem(x, index, value[0] if value else scalar)


def _layer_norm(x: Any, normalized_shape: Any, weight: Any = None, bias: Any = None,
                eps: float = 1e-5) -> Any:
    ndim = 1 if isinstance(normalized_shape, int) else len(tuple(normalized_shape))
    return _layer_norm_reference(x, weight, bias, ndim, eps)


NN_FUNCTIONS: dict[str, Callable[..., Any]] = {
    # whole operators a backend may call as library functions (``stax.ops.<op>``)
    "stax.ops.layer_norm": _layer_norm_reference,
    "stax.ops.mse_loss": _mse_loss_reference,
    "stax.ops.view": _view_reference,
    "stax.nn.relu": _relu,
    "stax.nn.selu": _selu,
    "stax.nn.mse_loss": _mse_loss_reference,
    "stax.nn.layer_norm": _layer_norm,
    "stax.functional.setitem": _setitem,
}
