"""Capture rules for reductions beyond the standard ones (``np.sum``, ``x.max()``: see
``standard``): ufunc methods (``np.add.reduce``, ``np.multiply.accumulate``), the NaN-ignoring
reductions (``np.nansum``..., ``np.nanvar``, ``np.nanstd``), and the whole operators of
``stax.nn`` (mse_loss, layer_norm)."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ..graph import Node
from ..meta import TensorMeta, fresh_strides
from ..ops import NN_FUNCTIONS
from ..sizes import product
from .arguments import axis_arg, bind, cast_to, int_arg
from .context import LoweringContext, dense_meta
from .registry import NotNative, RuleFunction, register, rule
from .standard import NO_VALUE, lower_reduction


def _ufunc_reduce(op: str) -> RuleFunction:
    """``np.add.reduce`` and friends: the reduction op (their axis defaults to 0)."""
    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        params = bind(lambda array, axis=0, dtype=None, out=None, keepdims=False: None, args,
                      kwargs)
        params.setdefault("axis", 0)
        params["a"] = params.pop("array")
        return lower_reduction(ctx, node, op, params)
    return lower


def _ufunc_accumulate(op: str) -> RuleFunction:
    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        params = bind(lambda array, axis=0, dtype=None, out=None: None, args, kwargs)
        x = params["array"]
        if not isinstance(x, Node) or x.tensor is None or params.get("out") is not None or \
                x.tensor.ndim == 0:
            raise NotNative
        axis = params.get("axis", 0)
        if axis is None and x.tensor.ndim == 1:  # NumPy takes None for one axis
            axis = 0
        return ctx.emit(op, (x,), {"axis": axis_arg(axis, x.tensor.ndim),
                                   "dtype": node.tensor.dtype})
    return lower


for _ufunc, _op in (("add", "sum"), ("multiply", "prod"), ("maximum", "max"), ("minimum", "min")):
    register((f"numpy.{_ufunc}.reduce",), (_op,), _ufunc_reduce(_op))
for _ufunc, _op in (("add", "cumsum"), ("multiply", "cumprod"), ("maximum", "cummax"),
                    ("minimum", "cummin")):
    register((f"numpy.{_ufunc}.accumulate",), (_op,), _ufunc_accumulate(_op))


def _nan_reduction(kind: str) -> RuleFunction:
    """np.nansum/nanprod/nanmax/nanmin/nanmean as NumPy defines them: NaNs replaced by the
    reduction's identity (max/min: a slice of only NaNs declines the call, NumPy warns; mean:
    the sum over the count of numbers, NaN for none), composed of native ops."""
    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        params = bind(lambda a, axis=None, dtype=None, out=None, keepdims=False: None, args,
                      kwargs)
        x = params["a"]
        if not isinstance(x, Node) or x.tensor is None or params.get("out") is not None or \
                np.dtype(x.tensor.dtype).kind != "f" or np.dtype(node.tensor.dtype).kind != "f":
            raise NotNative
        if kind in ("max", "min") and params.get("dtype") is not None:
            raise NotNative
        ndim, meta = x.tensor.ndim, x.tensor
        axis = params.get("axis")
        axes = tuple(range(ndim)) if axis is None else tuple(
            sorted(axis_arg(a, ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))))
        keepdims = bool(params.get("keepdims", False))
        if kind == "mean" and 0 in [meta.shape[a] for a in axes]:
            raise NotNative  # over no element NumPy warns "Mean of empty slice" itself
        # element-wise results: laid out as NumPy lays out a fresh result (a reversed or
        # stepped operand gives a dense one), or the extern NumPy step's check fails every call
        layout = fresh_strides(tuple(meta.shape), tuple(meta.strides))
        bool_meta = TensorMeta(meta.shape, "bool", layout)

        def missing() -> Node:  # one per reader (see _nan_variance)
            return ctx.emit("isnan", (x,), meta=bool_meta)
        fill = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[kind]
        numbers = ctx.emit("where", (missing(), fill, x),
                           meta=TensorMeta(meta.shape, meta.dtype, layout))
        attrs: dict[str, Any] = {"axis": axes, "keepdims": keepdims}
        if kind in ("sum", "prod"):
            return ctx.emit(kind, (numbers,), {**attrs, "dtype": node.tensor.dtype})
        if kind in ("max", "min"):
            # NumPy's fmax.reduce gives NaN for a slice of only NaNs and then warns "All-NaN
            # slice encountered" (warnings.warn, whatever the error state): such a call declines
            # and NumPy runs it
            extreme = ctx.emit(kind, (numbers,), attrs)
            reduced = TensorMeta(node.tensor.shape, "bool", node.tensor.strides)
            none = ctx.emit("all", (missing(),), attrs, meta=reduced)
            # fmax.reduce keeps the first of equal values, -0.0 or 0.0 (Stax's max the other:
            # a probe's find): where the extreme is a zero and both zeros are in the slice,
            # NumPy decides the sign
            zero = ctx.emit("eq", (numbers, 0.0), meta=bool_meta)
            negative = ctx.emit("signbit", (numbers,), meta=bool_meta)
            signs = [ctx.emit("any", (ctx.emit("logical_and", (zero, sign), meta=bool_meta),),
                              attrs, meta=reduced)
                     for sign in (negative, ctx.emit("logical_not", (negative,), meta=bool_meta))]
            both = ctx.emit("logical_and", (signs[0], signs[1]), meta=reduced)
            tie = ctx.emit("logical_and", (both, ctx.emit("eq", (extreme, 0.0), meta=reduced)),
                           meta=reduced)
            return ctx.emit("decline_if", (extreme, ctx.emit("logical_or", (none, tie),
                                                             meta=reduced)),
                            {"why": f"np.nan{kind} of a slice of only NaNs, or of both zeros"},
                            meta=node.tensor)
        # mean: float(total) / count, computed as NumPy's _divide_by_count does (in float64 for
        # float32 data, then rounded), a slice of only NaNs giving 0 / 0 = NaN
        total_meta = TensorMeta(node.tensor.shape, node.tensor.dtype, node.tensor.strides)
        total = ctx.emit("sum", (numbers,), {**attrs, "dtype": node.tensor.dtype}, meta=total_meta)
        wide = TensorMeta(node.tensor.shape, "float64", node.tensor.strides)
        present = ctx.emit("logical_not", (missing(),), meta=bool_meta)
        count = ctx.emit("sum", (present,), {**attrs, "dtype": "int64"},
                         meta=TensorMeta(node.tensor.shape, "int64", node.tensor.strides))
        quotient = ctx.emit("truediv", (cast_to(ctx, total, "float64"),
                                        cast_to(ctx, count, "float64")), meta=wide)
        mean = ctx.emit("cast", (quotient,), {"dtype": node.tensor.dtype}, meta=node.tensor)
        # a slice of only NaNs: NumPy warns "Mean of empty slice" (warnings.warn, whatever the
        # error state, which only decides about 0 / 0's invalid): the call declines, NumPy runs it
        none = ctx.emit("eq", (count, 0),
                        meta=TensorMeta(node.tensor.shape, "bool", node.tensor.strides))
        return ctx.emit("decline_if", (mean, none),
                        {"why": "np.nanmean of a slice of only NaNs"}, meta=node.tensor)
    return lower


#: what each NaN-ignoring reduction emits
NAN_REDUCTIONS = {
    "sum": ("isnan", "where", "sum"), "prod": ("isnan", "where", "prod"),
    "max": ("isnan", "where", "max", "all", "decline_if", "eq", "signbit", "logical_and",
            "logical_not", "logical_or", "any"),
    "min": ("isnan", "where", "min", "all", "decline_if", "eq", "signbit", "logical_and",
            "logical_not", "logical_or", "any"),
    "mean": ("isnan", "where", "sum", "logical_not", "truediv", "cast", "eq", "decline_if"),
}
for _kind, _emits in NAN_REDUCTIONS.items():
    register((f"numpy.nan{_kind}",), _emits, _nan_reduction(_kind))


def _nan_variance(kind: str) -> RuleFunction:
    """np.nanvar/np.nanstd as NumPy 2's ``_nanvar`` computes them: NaNs replaced by 0, the count
    of numbers (intp), the mean as the sum over that count (``_divide_by_count``: float64 for
    float32 data, rounded back), deviations from it with 0 put back where the NaNs were, squared,
    summed and divided by ``count - ddof`` the same way; std is the square root. Where
    ``count - ddof <= 0`` NumPy warns and puts NaN: the compiled call declines there, so NumPy
    runs it and warns itself."""
    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        params = bind(lambda a, axis=None, dtype=None, out=None, ddof=0, keepdims=NO_VALUE, *,
                      where=NO_VALUE, mean=NO_VALUE, correction=NO_VALUE: None, args, kwargs)
        x, meta = params["a"], node.tensor
        if not isinstance(x, Node) or x.tensor is None or meta is None or \
                x.tensor.dtype not in ("float32", "float64") or meta.dtype != x.tensor.dtype or \
                params.get("out") is not None or params.get("dtype") is not None or \
                any(params.get(name, NO_VALUE) is not NO_VALUE
                    for name in ("where", "mean", "correction")):
            raise NotNative
        ddof, ndim = int_arg(params.get("ddof", 0)), x.tensor.ndim
        axis = params.get("axis")
        axes = tuple(range(ndim)) if axis is None else tuple(
            sorted(axis_arg(a, ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))))
        n = product(x.tensor.shape[a] for a in axes)  # sizes of a generic graph stay sizes
        if n == 0 or n - ddof <= 0:
            raise NotNative  # every slice has too few numbers: NumPy warns on each call
        keepdims = params.get("keepdims", NO_VALUE)
        squared_sum, dof = _squared_deviations(ctx, x, axes, keepdims is not NO_VALUE and
                                               bool(keepdims), ddof)
        checked = ddof >= 0  # else count - ddof > 0 everywhere
        # the last op emitted carries the call's own metadata (a NumPy scalar stays one)
        inner = dense_meta(tuple(meta.shape), meta.dtype)
        result = _divide_by_count(ctx, squared_sum, dof,
                                  inner if checked or kind == "std" else meta)
        if kind == "std":
            result = ctx.emit("sqrt", (result,), meta=inner if checked else meta)
        if not checked:
            return result
        bad = ctx.emit("le", (dof, 0), meta=dense_meta(tuple(meta.shape), "bool"))
        return ctx.emit("decline_if", (result, bad),
                        {"why": "Degrees of freedom <= 0 for slice (NumPy warns, puts NaN)"},
                        meta=meta)
    return lower


def _squared_deviations(ctx: LoweringContext, x: Node, axes: tuple[int, ...], keepdims: bool,
                        ddof: int) -> tuple[Node, Node]:
    """``_nanvar`` up to its last division: the sum over ``axes`` of the squared deviations of
    ``x``'s numbers from their mean (NaNs counting 0), and ``count - ddof`` (int64), both in the
    result's shape."""
    shape, dtype = tuple(x.tensor.shape), x.tensor.dtype
    kept = tuple(1 if k in axes else s for k, s in enumerate(shape))
    out_shape = kept if keepdims else tuple(s for k, s in enumerate(shape) if k not in axes)
    values, flags = dense_meta(shape, dtype), dense_meta(shape, "bool")

    def missing() -> Node:
        """One ``isnan`` per reader: the op graph has no CSE, so each reader recomputes the
        compare inside its own loop instead of reading back a materialized mask (about twice as
        fast on (2000, 16) float64 columns)."""
        return ctx.emit("isnan", (x,), meta=flags)
    numbers = ctx.emit("where", (missing(), 0.0, x), meta=values)
    present = ctx.emit("logical_not", (missing(),), meta=flags)
    attrs: dict[str, Any] = {"axis": axes, "keepdims": True}
    count = ctx.emit("sum", (present,), {**attrs, "dtype": "int64"},
                     meta=dense_meta(kept, "int64"))
    total = ctx.emit("sum", (numbers,), {**attrs, "dtype": dtype}, meta=dense_meta(kept, dtype))
    deviation = ctx.emit("sub", (numbers, _divide_by_count(ctx, total, count)), meta=values)
    deviation = ctx.emit("where", (missing(), 0.0, deviation), meta=values)
    squares = ctx.emit("mul", (deviation, deviation), meta=values)
    squared_sum = ctx.emit("sum", (squares,), {"axis": axes, "keepdims": keepdims, "dtype": dtype},
                           meta=dense_meta(out_shape, dtype))
    if not keepdims:  # the count with the reduced axes dropped (a view: they have size 1)
        strides = count.tensor.strides
        count = ctx.view(count, 0, tuple(s for k, s in enumerate(strides) if k not in axes),
                         out_shape)
    return squared_sum, ctx.emit("sub", (count, ddof), meta=dense_meta(out_shape, "int64"))


def _divide_by_count(ctx: LoweringContext, total: Node, count: Node,
                     meta: TensorMeta | None = None) -> Node:
    """NumPy's ``_divide_by_count``: the float ``total`` over the intp ``count`` in float64 (the
    loop NumPy picks for a float and an int64), cast back into ``total``'s dtype; ``meta`` is the
    quotient's (a fresh array by default)."""
    dtype, shape = total.tensor.dtype, tuple(total.tensor.shape)
    meta = meta or dense_meta(shape, dtype)
    wide = meta if dtype == "float64" else dense_meta(shape, "float64")
    quotient = ctx.emit("truediv", (cast_to(ctx, total, "float64"), cast_to(ctx, count, "float64")),
                        meta=wide)
    return quotient if dtype == "float64" else ctx.emit("cast", (quotient,), {"dtype": dtype},
                                                        meta=meta)


#: what np.nanvar emits (np.nanstd: these and ``sqrt``)
NAN_VARIANCE_OPS = ("isnan", "where", "logical_not", "sum", "cast", "truediv", "sub", "mul", "view",
                    "le", "decline_if")
register(("numpy.nanvar",), NAN_VARIANCE_OPS, _nan_variance("var"))
register(("numpy.nanstd",), (*NAN_VARIANCE_OPS, "sqrt"), _nan_variance("std"))


@rule("stax.nn.mse_loss", emits=("mse_loss",))
def _mse_loss(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
    x, y = args
    if kwargs or not (isinstance(x, Node) and isinstance(y, Node)):
        raise NotNative
    return ctx.emit("mse_loss", (x, y))


@rule("stax.nn.layer_norm", emits=("layer_norm",))
def _layer_norm(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Node:
    params = inspect.signature(NN_FUNCTIONS["stax.nn.layer_norm"]).bind(*args, **kwargs)
    params.apply_defaults()
    p = params.arguments
    shape = p["normalized_shape"]
    ndim = 1 if isinstance(shape, int) else len(tuple(shape))
    if not isinstance(p["x"], Node):
        raise NotNative
    return ctx.emit("layer_norm", (p["x"], p["weight"], p["bias"]),
                    {"normalized_ndim": ndim, "eps": float(p["eps"])})


@rule("numpy.count_nonzero", emits=("ne", "sum"))
def _count_nonzero(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Node:
    """``np.count_nonzero(a, axis, keepdims)`` of a real or bool array: the sum of ``a != 0`` in
    NumPy's result dtype (intp)."""
    params = bind(lambda a, axis=None, *, keepdims=False: None, args, kwargs)
    x = params["a"]
    meta = node.tensor
    if not isinstance(x, Node) or x.tensor is None or meta is None or \
            np.dtype(x.tensor.dtype).kind not in "biuf" or np.dtype(meta.dtype).kind not in "iu":
        raise NotNative
    mask = ctx.emit("ne", (x, False if x.tensor.dtype == "bool" else 0),
                    meta=TensorMeta(x.tensor.shape, "bool",
                                    fresh_strides(tuple(x.tensor.shape), tuple(x.tensor.strides))))
    return lower_reduction(ctx, node, "sum", {"a": mask, "axis": params.get("axis"),
                                              "keepdims": bool(params.get("keepdims"))})
