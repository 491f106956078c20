"""Capture rules for products that are a reduction of element-wise work: the dot product of two
vectors (``np.dot``, ``np.inner``, ``np.vdot``, ``a @ b``, ``a.dot(b)`` of 1-D operands), the
product of a matrix and a vector (``A @ v``, ``v @ A``, ``np.dot``, ``A.T @ r``: the vector read
as a broadcast view, a sum over the shared axis) and the Euclidean norm (``np.linalg.norm``
with ``ord=None``, over everything or one axis).

A matrix-vector product reads the matrix once and does one multiply-add per element: it is bound
by memory, so a kernel that fuses it with the work around it (the logistic gradient's
``X.T @ (sigmoid(X @ w) - y)``) beats BLAS's call plus a separate pass; ``A.T @ r`` sums down
the columns of ``A`` in a columns nest. Products of two matrices stay BLAS's (compute-bound).

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
from .arguments import axis_arg, bind, cast_to
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


@rule("numpy.inner", "numpy.vdot", emits=("cast", "mul", "sum"))
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


def _real_array(value: Any, ndim: int) -> bool:
    return isinstance(value, Node) and value.tensor is not None and value.tensor.ndim == ndim \
        and np.dtype(value.tensor.dtype).kind in "iuf"


@rule("numpy.dot", "numpy.matmul", "operator.matmul", "method:dot",
      emits=("cast", "view", "mul", "sum"))
def _product(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Node:
    """The dot product of two vectors, or a matrix-vector product."""
    if not kwargs and len(args) == 2 and all(_real_vector(a) for a in args):
        return _vector_dot(ctx, node, args, kwargs)
    return _matrix_vector(ctx, node, args, kwargs)


def _matrix_vector(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Node:
    """``A @ v`` (a sum along each row of ``A * v``) and ``v @ A`` (down each column of
    ``v[:, None] * A``) of a real 2-D ``A`` and 1-D ``v``, in NumPy's result dtype."""
    if kwargs or len(args) != 2:
        raise NotNative
    meta = node.tensor
    if meta is None or meta.ndim != 1 or np.dtype(meta.dtype).kind not in "iuf":
        raise NotNative
    a, b = args
    if _real_array(a, 2) and _real_array(b, 1):
        matrix, vector, axis = a, b, 1
    elif _real_array(a, 1) and _real_array(b, 2):
        matrix, vector, axis = b, a, 0
    else:
        raise NotNative  # vectors (the rule above), matrices, batches, out=: NumPy's call
    shape = matrix.tensor.shape
    if shape[axis] != vector.tensor.shape[0] or "bool" in (matrix.tensor.dtype, vector.tensor.dtype):
        raise NotNative
    dtype = meta.dtype
    matrix, vector = cast_to(ctx, matrix, dtype), cast_to(ctx, vector, dtype)
    stride = vector.tensor.strides[0]
    spread = ctx.view(vector, 0, (0, stride) if axis == 1 else (stride, 0), shape)
    product = ctx.emit("mul", (matrix, spread) if axis == 1 else (spread, matrix),
                       meta=dense_meta(shape, dtype))
    return ctx.emit("sum", (product,), {"axis": (axis,), "keepdims": False, "dtype": dtype},
                    meta=meta)


@rule("numpy.linalg.norm", emits=("cast", "mul", "sum", "sqrt", "abs", "max", "min", "ne"))
def _norm(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """The 2-norm ``sqrt(sum(x * x))`` of a real array (integers as float64, as NumPy), over all
    of it or over one axis, with ``keepdims``; a vector's (a 1-d array's, or along one axis)
    norms of ``ord`` inf, -inf, 1 and 0 as NumPy writes them (``_vector_norm``); other orders
    and matrix norms run as NumPy."""
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
    other = type(order) in (int, float) and order in _VECTOR_ORDERS
    if axis is None:
        if not (order is None or (order == 2 and ndim == 1) or (other and ndim == 1)):
            raise NotNative
        axes = tuple(range(ndim))
    else:
        axis = axis[0] if isinstance(axis, tuple) and len(axis) == 1 else axis
        if not (order in (None, 2) or other) or not ndim:
            raise NotNative
        axes = (axis_arg(axis, ndim),)
    keepdims = params.get("keepdims", False)
    keepdims = bool(keepdims) if keepdims is not NO_VALUE else False
    kept = tuple(1 if d in axes else n for d, n in enumerate(x.tensor.shape)) if keepdims else \
        tuple(n for d, n in enumerate(x.tensor.shape) if d not in axes)
    if other:
        return _vector_norm(ctx, x, order, axes, keepdims, meta)
    squares = _sum_of_squares(ctx, x, meta.dtype, axes=axes, keepdims=keepdims,
                              meta=dense_meta(kept, meta.dtype))
    return ctx.emit("sqrt", (squares,))


#: the vector norms NumPy computes by a reduction of ``abs(x)`` (or of ``x != 0``)
_VECTOR_ORDERS = (np.inf, -np.inf, 1, 0)


def _vector_norm(ctx: LoweringContext, x: Node, order: float, axes: tuple[int, ...],
                 keepdims: bool, meta: TensorMeta) -> Node:
    """``np.linalg.norm(x, ord)`` of a vector as NumPy computes it on ``x`` in the result's
    dtype: ``abs(x).max()`` (inf), ``.min()`` (-inf), ``add.reduce(abs(x))`` (1), the count of
    nonzero elements (0); an empty one is NumPy's to raise on."""
    if any(x.tensor.shape[d] == 0 for d in axes):
        raise NotNative
    dtype, shape = meta.dtype, x.tensor.shape
    x = cast_to(ctx, x, dtype)
    reduced = {"axis": axes, "keepdims": keepdims}
    if order == 0:
        nonzero = ctx.emit("ne", (x, 0), meta=dense_meta(shape, "bool"))
        return ctx.emit("sum", (cast_to(ctx, nonzero, dtype),), {**reduced, "dtype": dtype},
                        meta=meta)
    magnitude = ctx.emit("abs", (x,), meta=dense_meta(shape, dtype))
    if order == 1:
        return ctx.emit("sum", (magnitude,), {**reduced, "dtype": dtype}, meta=meta)
    return ctx.emit("max" if order > 0 else "min", (magnitude,), reduced, meta=meta)



@rule("numpy.trace", "method:trace", emits=("view", "sum"))
def _trace(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> Node:
    """``np.trace(a, offset)`` of a 2-D ``a``: the sum (NumPy's ``add.reduce``, in its
    dtype) of its ``offset``-th diagonal, read as a strided view; other axes, ``dtype=`` and
    ``out=``: NumPy's call."""
    params = bind(lambda a, offset=0, axis1=0, axis2=1, dtype=None, out=None: None, args, kwargs)
    a, k = params["a"], params.get("offset", 0)
    if not isinstance(a, Node) or a.tensor is None or a.tensor.ndim != 2 or \
            np.dtype(a.tensor.dtype).kind not in "biufc" or type(k) is not int or \
            (params.get("axis1", 0), params.get("axis2", 1)) != (0, 1) or \
            params.get("dtype") is not None or params.get("out") is not None or \
            node.tensor is None or not all(type(d) is int for d in a.tensor.shape):
        raise NotNative  # (sizes of a generic version: NumPy's call, one version for all)
    (n, m), (rows, columns) = a.tensor.shape, a.tensor.strides
    length = max(0, min(n, m - k) if k >= 0 else min(n + k, m))
    start = k * columns if k >= 0 else -k * rows
    diagonal = ctx.view(a, start if length else 0, (rows + columns,), (length,))
    return ctx.emit("sum", (diagonal,), {"axis": (0,), "keepdims": False,
                                        "dtype": node.tensor.dtype}, meta=node.tensor)
