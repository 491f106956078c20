"""Capture rules for reductions beyond the standard ones (``np.sum``, ``x.max()``: see
``standard``): ufunc methods (``np.add.reduce``, ``np.multiply.accumulate``), the NaN-ignoring
reductions (``np.nansum``...), and the whole operators of ``stax.nn`` (mse_loss, layer_norm)."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ..graph import Node
from ..meta import TensorMeta
from ..ops import NN_FUNCTIONS
from .arguments import bind, cast_to, int_arg
from .context import LoweringContext
from .registry import NotNative, RuleFunction, register, rule
from .standard import lower_reduction


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
        axis = int_arg(params.get("axis", 0)) % x.tensor.ndim
        return ctx.emit(op, (x,), {"axis": axis, "dtype": node.tensor.dtype})
    return lower


for _ufunc, _op in (("add", "sum"), ("multiply", "prod"), ("maximum", "max"), ("minimum", "min")):
    register((f"numpy.{_ufunc}.reduce",), (_op,), _ufunc_reduce(_op))
for _ufunc, _op in (("add", "cumsum"), ("multiply", "cumprod")):
    register((f"numpy.{_ufunc}.accumulate",), (_op,), _ufunc_accumulate(_op))


def _nan_reduction(kind: str) -> RuleFunction:
    """np.nansum/nanprod/nanmax/nanmin/nanmean as NumPy defines them: NaNs replaced by the
    reduction's identity (max/min: a slice of only NaNs gives NaN; mean: the sum over the
    count of numbers, NaN for none), composed of native ops."""
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
            sorted(int_arg(a) % ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))))
        keepdims = bool(params.get("keepdims", False))
        if kind == "mean" and 0 in [meta.shape[a] for a in axes]:
            raise NotNative  # over no element NumPy warns "Mean of empty slice" itself
        bool_meta = TensorMeta(meta.shape, "bool", meta.strides)
        missing = ctx.emit("isnan", (x,), meta=bool_meta)
        fill = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[kind]
        numbers = ctx.emit("where", (missing, fill, x), meta=meta)
        attrs: dict[str, Any] = {"axis": axes, "keepdims": keepdims}
        if kind in ("sum", "prod"):
            return ctx.emit(kind, (numbers,), {**attrs, "dtype": node.tensor.dtype})
        if kind in ("max", "min"):
            extreme = ctx.emit(kind, (numbers,), attrs)
            none = ctx.emit("all", (missing,), attrs,
                            meta=TensorMeta(node.tensor.shape, "bool", node.tensor.strides))
            return ctx.emit("where", (none, np.nan, extreme))
        # mean: float(total) / count, computed as NumPy's _divide_by_count does (in float64 for
        # float32 data, then rounded), a slice of only NaNs giving 0 / 0 = NaN
        total_meta = TensorMeta(node.tensor.shape, node.tensor.dtype, node.tensor.strides)
        total = ctx.emit("sum", (numbers,), {**attrs, "dtype": node.tensor.dtype}, meta=total_meta)
        wide = TensorMeta(node.tensor.shape, "float64", node.tensor.strides)
        present = ctx.emit("logical_not", (missing,), meta=bool_meta)
        count = ctx.emit("sum", (present,), {**attrs, "dtype": "int64"},
                         meta=TensorMeta(node.tensor.shape, "int64", node.tensor.strides))
        quotient = ctx.emit("truediv", (cast_to(ctx, total, "float64"),
                                        cast_to(ctx, count, "float64")), meta=wide)
        return ctx.emit("cast", (quotient,), {"dtype": node.tensor.dtype})  # the call's own meta
    return lower


#: what each NaN-ignoring reduction emits
NAN_REDUCTIONS = {
    "sum": ("isnan", "where", "sum"), "prod": ("isnan", "where", "prod"),
    "max": ("isnan", "where", "max", "all"), "min": ("isnan", "where", "min", "all"),
    "mean": ("isnan", "where", "sum", "logical_not", "truediv", "cast"),
}
for _kind, _emits in NAN_REDUCTIONS.items():
    register((f"numpy.nan{_kind}",), _emits, _nan_reduction(_kind))


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
                    meta=TensorMeta(x.tensor.shape, "bool", x.tensor.strides))
    return lower_reduction(ctx, node, "sum", {"a": mask, "axis": params.get("axis"),
                                              "keepdims": bool(params.get("keepdims"))})
