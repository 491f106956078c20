"""Capture rules for products that are a reduction of element-wise work: the dot product of two
vectors (``np.dot``, ``np.inner``, ``np.vdot``, ``a @ b``, ``a.dot(b)`` of 1-D operands) and the
Euclidean norm (``np.linalg.norm`` with ``ord=None``, over everything or one axis).

NumPy computes them through BLAS (``ddot``) or as ``sqrt(add.reduce(x * x))``: emitted as a
``mul`` and a ``sum``, they fuse with what makes their operands and what reads their result, and
a loop of them over rows rerolls into one reduction kernel (``stax.loop.reroll``). The sum's order
is not BLAS's, so the result is NumPy's within rounding, as every float sum here is (NumPy's own
results differ with the BLAS it links). A product that overflows or makes NaN declines the
call to NumPy (a floating-point event), so BLAS's silence there is NumPy's. Matrices, complex
operands and ``out=`` run as NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Node
from ..meta import TensorMeta
from .arguments import bind, cast_to, int_arg
from .context import LoweringContext, dense_meta
from .registry import NotNative, rule
from .standard import NO_VALUE


def _real_vector(value: Any) -> bool:
    return isinstance(value, Node) and value.tensor is not None and value.tensor.ndim == 1 and \
        np.dtype(value.tensor.dtype).kind in "iuf"


def _sum_of_squares(ctx: LoweringContext, x: Node, dtype: str, y: Node | None = None,
                    axes: tuple[int, ...] | None = None, keepdims: bool = False,
                    meta: TensorMeta | None = None) -> Node:
    """``sum(x * y)`` (``y`` defaults to ``x``) in ``dtype`` over ``axes`` (all by default)."""
    shape = x.tensor.shape
    x = cast_to(ctx, x, dtype)
    y = x if y is None else cast_to(ctx, y, dtype)
    product = ctx.emit("mul", (x, y), meta=dense_meta(shape, dtype))
    axes = tuple(range(len(shape))) if axes is None else axes
    return ctx.emit("sum", (product,), {"axis": axes, "keepdims": keepdims, "dtype": dtype},
                    meta=meta)


@rule("numpy.dot", "numpy.inner", "numpy.vdot", "numpy.matmul", "operator.matmul",
      "method:dot", emits=("cast", "mul", "sum"))
def _vector_dot(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Node:
    """The dot product of two real vectors of one length: ``sum(a * b)`` in NumPy's dtype."""
    if kwargs or len(args) != 2 or not all(_real_vector(a) for a in args):
        raise NotNative  # matrices, out=, complex (vdot conjugates), scalars: NumPy's call
    a, b = args
    meta = node.tensor
    if a.tensor.shape != b.tensor.shape or meta is None or meta.ndim or \
            np.dtype(meta.dtype).kind not in "iuf" or "bool" in (a.tensor.dtype, b.tensor.dtype):
        raise NotNative
    return _sum_of_squares(ctx, a, meta.dtype, b)


@rule("numpy.linalg.norm", emits=("cast", "mul", "sum", "sqrt"))
def _norm(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """The 2-norm ``sqrt(sum(x * x))`` of a real array (integers as float64, as NumPy), over all
    of it or over one axis, with ``keepdims``; other orders and axes run as NumPy."""
    params = bind(lambda x, ord=None, axis=None, keepdims=False: None, args, kwargs)
    x, order, axis = params["x"], params.get("ord"), params.get("axis")
    meta = node.tensor
    if not isinstance(x, Node) or x.tensor is None or meta is None:
        raise NotNative
    kind = np.dtype(x.tensor.dtype).kind
    want = "float64" if kind in "iu" else x.tensor.dtype if kind == "f" else None
    if want not in ("float32", "float64") or meta.dtype != want:
        raise NotNative
    ndim = x.tensor.ndim
    if axis is None:
        if not (order is None or (order == 2 and ndim == 1)):
            raise NotNative
        axes = tuple(range(ndim))
    else:
        axis = axis[0] if isinstance(axis, tuple) and len(axis) == 1 else axis
        if order not in (None, 2) or not ndim:
            raise NotNative
        axes = (int_arg(axis) % ndim,)
    keepdims = params.get("keepdims", False)
    keepdims = bool(keepdims) if keepdims is not NO_VALUE else False
    kept = tuple(1 if d in axes else n for d, n in enumerate(x.tensor.shape)) if keepdims else \
        tuple(n for d, n in enumerate(x.tensor.shape) if d not in axes)
    squares = _sum_of_squares(ctx, x, meta.dtype, axes=axes, keepdims=keepdims,
                              meta=dense_meta(kept, meta.dtype))
    return ctx.emit("sqrt", (squares,))
