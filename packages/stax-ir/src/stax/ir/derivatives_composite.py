"""Derivative rules of patterns of several ops, where the pattern's own derivative needs less
than its ops' rules chained: softmax.

``y = e / e.sum(axis, keepdims=True)`` with ``e = exp(t)`` — softmax along ``axis``, as users
write it — chained op by op, differentiates ``exp`` by ``g * e``: the backward reads ``e``, so
the forward keeps it (or the scores it is recomputed from) beside ``y``, which the product that
follows a softmax keeps anyway. As a whole its derivative is ``y * (g - sum(g * y))``: it reads
``y`` alone. And where ``t = x - m`` with ``m`` constant along ``axis`` (the row maximum users
subtract for range), softmax does not depend on ``m`` at all: its cotangent is exactly zero (op
by op it is ``-sum(g_t)``, zero up to rounding, and its rule reads ``x`` again to find the
maxima). So the backward of attention keeps the probabilities and nothing else of the softmax:
a transformer block's gradient program no longer keeps its 64 MiB scores and their 16 MiB mask
of maxima (``test_autodiff.py``).

The pattern applies only where its inner values have no other use (``e`` read by the sum and
the division alone, the sum by the division alone, ``t`` by ``exp`` alone); anything else is
differentiated op by op. The values differ from the op-by-op chain by rounding only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .derivatives import Need, elem, meta, unbroadcast, wants


@dataclass(frozen=True)
class Softmax:
    """``y = exp(t) / sum(exp(t), axes)``; ``shifted``: ``t = x - m``, ``m`` constant along
    ``axes`` (then the rule gives ``x`` its cotangent and ``m`` none)."""

    y: Any
    t: Any
    axes: tuple[int, ...]
    shifted: tuple[Any, Any] | None  # (x, m)

    def rule(self, emit: Any, g: Any, need: Need) -> list[tuple[Any, Any]]:
        """(operand, cotangent) pairs: ``t``'s, or ``x``'s where the shift is dropped."""
        y, dtype = self.y, self.y.tensor.dtype
        kept = tuple(1 if d in self.axes else n for d, n in enumerate(y.tensor.shape))
        total = emit("sum", (elem(emit, "mul", g, y, like=y),),
                     {"axis": self.axes, "keepdims": True, "dtype": dtype}, meta(kept, dtype))
        gt = elem(emit, "mul", y, elem(emit, "sub", g, total, like=y), like=y)
        if self.shifted is None:
            return [(self.t, gt)] if wants(need, self.t) else []
        x = self.shifted[0]
        return [(x, unbroadcast(emit, gt, x))] if wants(need, x) else []


def softmaxes(nodes: Any) -> dict[Any, Softmax]:
    """The softmax patterns among ``nodes`` (the forward graph's), by their result ``y``."""
    found = {}
    for node in nodes:
        match = _softmax(node)
        if match is not None:
            found[node] = match
    return found


def _call(value: Any, target: str) -> bool:
    return getattr(value, "target", None) == target and hasattr(value, "users")


def _softmax(y: Any) -> Softmax | None:
    if not _call(y, "truediv") or len(y.args) != 2:
        return None
    e, z = y.args
    if not (_call(e, "exp") and _call(z, "sum")) or z.args[0] is not e:
        return None
    if set(e.users) != {z, y} or set(z.users) != {y} or not z.kwargs.get("keepdims"):
        return None
    dtype = y.tensor.dtype
    if np.dtype(dtype).kind != "f" or e.tensor.dtype != dtype or z.tensor.dtype != dtype or \
            tuple(e.tensor.shape) != tuple(y.tensor.shape):
        return None
    rank = len(y.tensor.shape)
    axes = tuple(sorted(a % rank for a in z.kwargs.get("axis") or range(rank)))
    t = e.args[0]
    shifted = None
    if _call(t, "sub") and set(t.users) == {e} and len(t.args) == 2:
        x, m = t.args
        if hasattr(x, "tensor") and tuple(x.tensor.shape) == tuple(y.tensor.shape) and \
                _constant_along(m, axes, rank):
            shifted = (x, m)
    return Softmax(y, t, axes, shifted)


def _constant_along(m: Any, axes: tuple[int, ...], rank: int) -> bool:
    """Whether ``m`` broadcast to rank ``rank`` has length 1 on every axis of ``axes``."""
    if not hasattr(m, "tensor"):
        return isinstance(m, (int, float, np.number))
    shape = tuple(m.tensor.shape)
    padded = (1,) * (rank - len(shape)) + shape
    return len(padded) == rank and all(padded[a] == 1 for a in axes)
