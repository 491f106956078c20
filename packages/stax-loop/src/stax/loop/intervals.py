"""What values an integer expression can take: an interval analysis of loop-IR expressions.

A gather's positions computed from clamps (``np.interp``'s segment ``minimum(maximum(count - 1,
0), n - 2)``, binary lifting's probes) are in bounds by construction; when the analysis proves it,
the gather needs no bounds check (a reduction over its positions, a kernel of its own).
Conservative: anything it does not follow (a load from memory, a division) may be any value of
its dtype, so a clamp of it (``np.clip(i, 0, n - 1)``: a maximum, then a minimum) is still known."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .expr import Binary, Cast, Const, Expr, Index, Select

Interval = tuple[int, int]


def integer_interval(e: Expr, extents: Mapping[str, int]) -> Interval | None:
    """The smallest and largest value of integer expression ``e`` over the loop variables'
    ``extents`` (each ``0 <= x < extent``); None for a value that is not an integer."""
    memo: dict[int, Interval | None] = {}

    def visit(node: Expr) -> Interval | None:
        key = id(node)
        if key not in memo:
            memo[key] = _interval(node, visit, extents)
        return memo[key]
    return visit(e)


def _interval(e: Expr, visit, extents: Mapping[str, int]) -> Interval | None:
    if np.dtype(e.dtype).kind not in "iu":
        return None
    info = np.iinfo(e.dtype)
    anything = (int(info.min), int(info.max))
    if isinstance(e, Const):
        return int(e.value), int(e.value)
    if isinstance(e, Index):
        if any(extents.get(v, 0) <= 0 for v, _ in e.index.terms):
            return anything
        return e.index.bounds(extents)
    if isinstance(e, Cast):
        inner = visit(e.x)
        return inner if inner is not None and info.min <= inner[0] and inner[1] <= info.max \
            else anything
    if isinstance(e, Select):
        a, b = visit(e.a), visit(e.b)
        return (min(a[0], b[0]), max(a[1], b[1]))
    if isinstance(e, Binary) and e.op in ("mod", "floordiv") and isinstance(e.b, Const) and \
            int(e.b.value) > 0:  # NumPy's (Python's) floor division and remainder
        c = int(e.b.value)
        if e.op == "mod":
            return 0, c - 1
        a = visit(e.a)
        return a[0] // c, a[1] // c
    if isinstance(e, Binary) and e.op in ("add", "sub", "maximum", "minimum"):
        a, b = visit(e.a), visit(e.b)
        if e.op == "add":
            low, high = a[0] + b[0], a[1] + b[1]
        elif e.op == "sub":
            low, high = a[0] - b[1], a[1] - b[0]
        elif e.op == "maximum":
            low, high = max(a[0], b[0]), max(a[1], b[1])
        else:
            low, high = min(a[0], b[0]), min(a[1], b[1])
        return (low, high) if info.min <= low and high <= info.max else anything  # may wrap
    return anything
