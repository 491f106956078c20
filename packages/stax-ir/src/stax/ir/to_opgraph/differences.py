"""Capture rules for calls that are element-wise work over shifted or broadcast views of their
operands: ``np.diff`` (``x[1:] - x[:-1]`` along an axis, n times), ``np.outer``
(``a[:, None] * b[None, :]``) and ``np.meshgrid`` (each vector broadcast along the others).
Each emits ``view`` ops, affine reads of the operand's memory that fuse into the arithmetic,
instead of running NumPy's call between kernels."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Node
from ..meta import TensorMeta, contiguous_strides
from .arguments import axis_arg, bind, int_arg, result_metas
from .context import LoweringContext
from .registry import NotNative, rule


@rule("numpy.diff", emits=("view", "sub", "full", "concatenate"))
def _diff(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """``np.diff(x, n, axis, prepend, append)`` of a numeric array: n differences of
    neighbours, each in NumPy's dtype (bool's is ``!=``: it runs as NumPy). ``prepend`` and
    ``append`` (a number, a traced scalar broadcast along the axis, or an array of the other
    axes' sizes) are joined first, as NumPy's ``np.concatenate``: in their common dtype."""
    params = bind(lambda a, n=1, axis=-1, prepend=None, append=None: None, args, kwargs)
    x = params["a"]
    if not isinstance(x, Node) or x.tensor is None or not x.tensor.ndim or \
            np.dtype(x.tensor.dtype).kind not in "iuf":
        raise NotNative
    n, ndim = int_arg(params.get("n", 1)), x.tensor.ndim
    axis = axis_arg(params.get("axis", -1), ndim)
    if "prepend" in params or "append" in params:
        x = _joined(ctx, x, axis, params)
    if n < 1 or n >= x.tensor.shape[axis]:
        raise NotNative  # n == 0 is x itself; an empty result is NumPy's to make
    value = x
    for step in range(n):
        meta = value.tensor
        shape = tuple(e - 1 if d == axis else e for d, e in enumerate(meta.shape))
        high = ctx.view(value, meta.strides[axis], meta.strides, shape)
        low = ctx.view(value, 0, meta.strides, shape)
        last = step == n - 1
        out = TensorMeta(shape, meta.dtype, contiguous_strides(shape))
        if last and node.tensor.dtype != meta.dtype:
            raise NotNative
        value = ctx.emit("sub", (high, low), {}, meta=node.tensor if last else out)
    return value


def _joined(ctx: LoweringContext, x: Node, axis: int, params: dict[str, Any]) -> Node:
    """``np.concatenate([prepend, x, append], axis)`` as ``np.diff`` makes it."""
    parts = []
    for name in ("prepend", "append"):
        if name not in params:
            continue
        value = params[name]
        edge = tuple(1 if d == axis else e for d, e in enumerate(x.tensor.shape))
        if isinstance(value, Node) and value.tensor is not None and value.tensor.ndim == 0:
            part = ctx.view(value, 0, (0,) * len(edge), edge)  # NumPy's broadcast_to
        elif isinstance(value, Node) and value.tensor is not None and \
                value.tensor.ndim == x.tensor.ndim and all(
                    e == v for d, (e, v) in enumerate(zip(x.tensor.shape, value.tensor.shape))
                    if d != axis):
            part = value
        elif type(value) in (bool, int, float):
            dtype = np.asarray(value).dtype.name  # np.asanyarray's: not a weak scalar here
            part = ctx.emit("full", (), {"shape": edge, "value": value, "dtype": dtype},
                            meta=TensorMeta(edge, dtype, contiguous_strides(edge)))
        else:
            raise NotNative
        parts.append((name, part))
    operands = [p for name, p in parts if name == "prepend"] + [x] + \
        [p for name, p in parts if name == "append"]
    dtype = np.result_type(*(np.dtype(p.tensor.dtype) for p in operands))
    if dtype.kind not in "iuf":
        raise NotNative
    shape = tuple(sum(p.tensor.shape[axis] for p in operands) if d == axis else e
                  for d, e in enumerate(x.tensor.shape))
    return ctx.emit("concatenate", tuple(operands), {"axis": axis},
                    meta=TensorMeta(shape, dtype.name, contiguous_strides(shape)))


@rule("numpy.outer", emits=("view", "mul"))
def _outer(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """``np.outer(a, b)`` of 1-D operands: both read as broadcast views of the result's shape."""
    params = bind(lambda a, b, out=None: None, args, kwargs)
    a, b = params["a"], params["b"]
    if params.get("out") is not None or not all(
            isinstance(v, Node) and v.tensor is not None and v.tensor.ndim == 1 for v in (a, b)):
        raise NotNative
    shape = (a.tensor.shape[0], b.tensor.shape[0])
    rows = ctx.view(a, 0, (a.tensor.strides[0], 0), shape)
    columns = ctx.view(b, 0, (0, b.tensor.strides[0]), shape)
    return ctx.emit("mul", (rows, columns), {})


@rule("numpy.meshgrid", emits=("view", "cast"))
def _meshgrid(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> tuple[Node, ...]:
    """``np.meshgrid(x, y, ...)`` of vectors, copied (NumPy's default): result k is vector k
    read along its own axis of the grid (``indexing="xy"`` swaps the first two) and copied in
    its dtype. ``sparse=True`` and ``copy=False`` return views: NumPy's call."""
    if set(kwargs) - {"indexing", "sparse", "copy"} or kwargs.get("sparse", False) or \
            not kwargs.get("copy", True) or kwargs.get("indexing", "xy") not in ("xy", "ij"):
        raise NotNative
    if not args or not all(isinstance(v, Node) and v.tensor is not None and v.tensor.ndim == 1
                           for v in args):
        raise NotNative
    metas = result_metas(node)
    sizes = [v.tensor.shape[0] for v in args]
    axes = list(range(len(args)))
    if kwargs.get("indexing", "xy") == "xy" and len(args) > 1:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(args)
    for v, axis in zip(sizes, axes):
        shape[axis] = v
    results = []
    for v, axis, meta in zip(args, axes, metas):
        if tuple(meta.shape) != tuple(shape):
            raise NotNative
        strides = tuple(v.tensor.strides[0] if d == axis else 0 for d in range(len(shape)))
        grid = ctx.view(v, 0, strides, tuple(shape))
        results.append(ctx.emit("cast", (grid,), {"dtype": meta.dtype}, meta=meta))
    return tuple(results)
