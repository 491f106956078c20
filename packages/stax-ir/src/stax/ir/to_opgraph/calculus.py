"""Capture rules for NumPy's small numerical helpers written in Python over ufuncs:
``np.average`` with weights, ``np.trapezoid`` and ``np.gradient`` of a vector at a uniform
spacing. Each emits NumPy's own formula, operation for operation (the same roundings; only a
sum's order is the reduction's), instead of a NumPy step between kernels: a program of a few
such calls ran them all from Python (two weighted averages: 33 us, NumPy 24)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Node
from .arguments import bind
from .context import LoweringContext, dense_meta
from .registry import NotNative, rule
from .standard import lower_reduction


def _real(x: Any, kinds: str = "f") -> bool:
    return isinstance(x, Node) and x.tensor is not None and np.dtype(x.tensor.dtype).kind in kinds


def _number(value: Any) -> bool:
    """A Python int or float (a NumPy scalar is not weak: it may promote the result)."""
    return type(value) in (int, float)


@rule("numpy.average", emits=("mean", "mul", "sum", "eq", "decline_if", "truediv"))
def _average(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Node:
    """``np.average(a, axis, weights)``: without weights ``a.mean(axis)``, which is what NumPy
    calls; with weights of ``a``'s shape and dtype (a float), NumPy's ``scl = w.sum(axis)``, its
    zero test (NumPy raises ZeroDivisionError: the call declines and NumPy raises it), then
    ``(a * w).sum(axis) / scl``. Other forms (``returned=True``, weights along one axis, mixed
    dtypes) run as NumPy's call."""
    params = bind(lambda a, axis=None, weights=None, returned=False, *, keepdims=False: None,
                  args, kwargs)
    a, w, meta = params["a"], params.get("weights"), node.tensor
    keepdims = params.get("keepdims", False)
    if params.get("returned") or not _real(a, "iuf") or meta is None or \
            not isinstance(keepdims, bool):
        raise NotNative
    axis = params.get("axis")
    if w is None:
        return lower_reduction(ctx, node, "mean", {"a": a, "axis": axis, "keepdims": keepdims})
    if not _real(a) or not _real(w) or tuple(w.tensor.shape) != tuple(a.tensor.shape) or \
            not a.tensor.dtype == w.tensor.dtype == meta.dtype:
        raise NotNative
    scale = lower_reduction(ctx, node, "sum", {"a": w, "axis": axis, "keepdims": keepdims})
    zero = ctx.emit("eq", (scale, 0.0), meta=dense_meta(scale.tensor.shape, "bool"))
    scale = ctx.emit("decline_if", (scale, zero),
                     {"why": "np.average of weights that sum to zero (NumPy raises "
                             "ZeroDivisionError)"}, meta=scale.tensor)
    weighted = ctx.emit("mul", (a, w), meta=dense_meta(a.tensor.shape, meta.dtype))
    total = lower_reduction(ctx, node, "sum", {"a": weighted, "axis": axis, "keepdims": keepdims})
    return ctx.emit("truediv", (total, scale), meta=meta)


def _neighbours(ctx: LoweringContext, x: Node, first: int, count: int) -> Node:
    """``x[first:first + count]`` of a vector, as a view."""
    stride = x.tensor.strides[0]
    return ctx.view(x, first * stride, (stride,), (count,))


def _vector(ctx: LoweringContext, op: str, operands: tuple[Any, ...], count: int,
            dtype: str) -> Node:
    """An element-wise ``op`` giving a vector of ``count`` elements of ``dtype``."""
    return ctx.emit(op, operands, meta=dense_meta((count,), dtype))


@rule("numpy.trapezoid", emits=("view", "sub", "add", "mul", "truediv", "sum"))
def _trapezoid(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Node:
    """``np.trapezoid(y, x=None, dx=1.0)`` of a float vector: NumPy's ``d * (y[1:] + y[:-1]) /
    2.0`` summed, ``d`` the number ``dx`` or ``np.diff(x)`` of a vector of y's length."""
    params = bind(lambda y, x=None, dx=1.0, axis=-1: None, args, kwargs)
    y, x, dx, meta = params["y"], params.get("x"), params.get("dx", 1.0), node.tensor
    if not _real(y) or y.tensor.ndim != 1 or y.tensor.shape[0] < 2 or meta is None or \
            meta.dtype != y.tensor.dtype or params.get("axis", -1) not in (-1, 0):
        raise NotNative
    n = y.tensor.shape[0]
    if x is None:
        if not _number(dx):
            raise NotNative
        d: Any = dx
    elif _real(x) and x.tensor.ndim == 1 and x.tensor.shape[0] == n and \
            x.tensor.dtype == y.tensor.dtype:
        d = _vector(ctx, "sub", (_neighbours(ctx, x, 1, n - 1), _neighbours(ctx, x, 0, n - 1)),
                    n - 1, meta.dtype)
    else:
        raise NotNative
    pairs = _vector(ctx, "add", (_neighbours(ctx, y, 1, n - 1), _neighbours(ctx, y, 0, n - 1)),
                    n - 1, meta.dtype)
    halves = _vector(ctx, "truediv", (_vector(ctx, "mul", (d, pairs), n - 1, meta.dtype), 2.0),
                     n - 1, meta.dtype)
    return lower_reduction(ctx, node, "sum", {"a": halves, "axis": None})


@rule("numpy.gradient", emits=("view", "sub", "truediv", "concatenate"))
def _gradient(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
    """``np.gradient(f)`` or ``np.gradient(f, dx)`` of a float vector of 3 elements or more at a
    uniform spacing (a Python number), first-order edges: NumPy's ``(f[2:] - f[:-2]) / (2. *
    dx)`` inside, ``(f[1] - f[0]) / dx`` and ``(f[-1] - f[-2]) / dx`` at the ends."""
    if set(kwargs) - {"edge_order"} or kwargs.get("edge_order", 1) != 1 or len(args) > 2:
        raise NotNative
    f, meta = args[0], node.tensor
    dx = args[1] if len(args) == 2 else 1.0
    if not _real(f) or f.tensor.ndim != 1 or f.tensor.shape[0] < 3 or not _number(dx) or \
            meta is None or meta.dtype != f.tensor.dtype:
        raise NotNative
    n = f.tensor.shape[0]
    dtype = meta.dtype

    def quotient(high: int, low: int, count: int, step: Any) -> Node:
        difference = _vector(ctx, "sub", (_neighbours(ctx, f, high, count),
                                          _neighbours(ctx, f, low, count)), count, dtype)
        return _vector(ctx, "truediv", (difference, step), count, dtype)
    inside = quotient(2, 0, n - 2, 2. * dx)
    first = quotient(1, 0, 1, dx)
    last = quotient(n - 1, n - 2, 1, dx)
    return ctx.emit("concatenate", (first, inside, last), {"axis": 0}, meta=meta)
