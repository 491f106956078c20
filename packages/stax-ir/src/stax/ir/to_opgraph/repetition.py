"""Capture rules for ``np.tile`` and ``np.repeat``: gathers along each repeated axis by computed
positions (``i % n`` for a tile, ``i // k`` for a repeat), so the copies fuse into their
consumers instead of running NumPy's call between kernels. The positions are in bounds by
construction; the gather's own bounds check stays (it costs one pass over the positions)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Node
from .arguments import axis_arg, bind, int_arg
from .context import LoweringContext, dense_meta
from .registry import NotNative, rule


def _gather(ctx: LoweringContext, x: Node, axis: int, count: int, position: str, by: int,
            last: bool, node: Node) -> Node:
    """``x`` read along ``axis`` at ``arange(count) <position> by`` (``mod`` or ``floordiv``)."""
    ramp = ctx.emit("arange", (), {"start": 0, "step": 1, "n": count, "dtype": "int64"},
                    meta=dense_meta((count,), "int64"))
    index = ctx.emit(position, (ramp, by), {}, meta=dense_meta((count,), "int64"))
    shape = tuple(count if d == axis else e for d, e in enumerate(x.tensor.shape))
    meta = node.tensor if last else dense_meta(shape, x.tensor.dtype)
    return ctx.emit("take", (x, index), {"axis": axis}, meta=meta)


def _array(value: Any) -> Node:
    if not isinstance(value, Node) or value.tensor is None or not value.tensor.ndim:
        raise NotNative
    return value


@rule("numpy.tile", emits=("arange", "mod", "take", "view", "cast"))
def _tile(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """``np.tile(x, reps)``: more repetitions than x has axes add leading axes, read as a
    broadcast (stride 0) view of x; each repeated axis of x is a gather."""
    params = bind(lambda A, reps: None, args, kwargs)
    x = _array(params["A"])
    reps = params["reps"]
    reps = (int_arg(reps),) if not isinstance(reps, (tuple, list)) else tuple(map(int_arg, reps))
    ndim = x.tensor.ndim
    if any(r < 1 for r in reps) or not all(x.tensor.shape):
        raise NotNative  # an empty array: NumPy's call
    lead = max(len(reps) - ndim, 0)
    reps = (1,) * (ndim - len(reps)) + reps
    repeated = [d for d, r in enumerate(reps) if r > 1 and d >= lead]
    if not repeated and not any(r > 1 for r in reps[:lead]):
        raise NotNative  # a copy: NumPy's call
    value = x
    if lead:
        shape = reps[:lead] + tuple(x.tensor.shape)
        strides = (0,) * lead + tuple(x.tensor.strides)
        value = ctx.view(x, 0, strides, shape)
    for d in repeated:
        n = value.tensor.shape[d]
        value = _gather(ctx, value, d, n * reps[d], "mod", n, d == repeated[-1], node)
    if not repeated:  # leading axes only: the broadcast view copied
        value = ctx.emit("cast", (value,), {"dtype": node.tensor.dtype}, meta=node.tensor)
    return value


@rule("numpy.repeat", emits=("arange", "floordiv", "take"))
def _repeat(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """``np.repeat(x, k, axis)`` with one count for every element; ``axis=None`` of a 1-D x."""
    params = bind(lambda a, repeats, axis=None: None, args, kwargs)
    x = _array(params["a"])
    k = int_arg(params["repeats"]) if not isinstance(params["repeats"], Node) else 0
    axis = params.get("axis")
    if axis is None and x.tensor.ndim != 1:
        raise NotNative  # the flattened array first: NumPy's call
    axis = 0 if axis is None else axis_arg(axis, x.tensor.ndim)
    if k < 2 or not x.tensor.shape[axis] or np.dtype(x.tensor.dtype).kind not in "biuf":
        raise NotNative
    return _gather(ctx, x, axis, x.tensor.shape[axis] * k, "floordiv", k, True, node)
