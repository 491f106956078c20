"""What values an integer expression can take: an interval analysis of loop-IR expressions.

A gather's positions computed from clamps (``np.interp``'s segment ``minimum(maximum(count - 1,
0), n - 2)``, binary lifting's probes) are in bounds by construction; when the analysis proves it,
the gather needs no bounds check (a reduction over its positions, a kernel of its own).
Conservative: anything it does not follow (a load from an input, a division) may be any value of
its dtype, so a clamp of it (``np.clip(i, 0, n - 1)``: a maximum, then a minimum) is still known.
A load from a buffer the program computed has the values of that buffer's body (``stored``):
binary lifting's positions are used twice per step, so each step's lies in a buffer, and the
gathers that read them would otherwise each need a check (a kernel of its own per step, and the
positions written out for it: np.interp on 500 points ran at 0.65x NumPy)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from stax.ir.sizes import Size

from .expr import Binary, Cast, Const, Expr, Index, Load, Select
from .ir import ComputedBuffer, Pointwise, xvar

Interval = tuple[int, int]


Stored = Callable[[str], "Interval | None"]


def integer_interval(e: Expr, extents: Mapping[str, int], stored: Stored | None = None
                     ) -> Interval | None:
    """The smallest and largest value of integer expression ``e`` over the loop variables'
    ``extents`` (each ``0 <= x < extent``); None for a value that is not an integer.
    ``stored(name)``: what a computed buffer holds, or None (``buffer_intervals``)."""
    memo: dict[int, Interval | None] = {}

    def visit(node: Expr) -> Interval | None:
        key = id(node)
        if key not in memo:
            memo[key] = _interval(node, visit, extents, stored)
        return memo[key]
    return visit(e)


def buffer_intervals(buffers: Mapping[str, ComputedBuffer]) -> Stored:
    """``stored`` for ``integer_interval``: the values a computed integer buffer holds, from its
    body over its own ranges (and, for a region update, the values it keeps of the buffer it
    updates); None for anything else (an input, a reduction, a scatter into a fresh buffer)."""
    memo: dict[str, Interval | None] = {}

    def stored(name: str) -> Interval | None:
        if name not in memo:
            memo[name] = None  # a cycle (none expected) proves nothing
            memo[name] = _held(buffers.get(name), stored)
        return memo[name]
    return stored


def _held(made: ComputedBuffer | None, stored: Stored) -> Interval | None:
    if made is None or not isinstance(made.data, Pointwise) or \
            (made.store_offset is not None and made.updates is None):
        return None
    extents = {xvar(d): n for d, n in enumerate(made.data.ranges)}
    body = integer_interval(made.data.body, extents, stored)
    if body is None or made.updates is None:
        return body
    kept = stored(made.updates)
    return None if kept is None else (min(body[0], kept[0]), max(body[1], kept[1]))


def _interval(e: Expr, visit, extents: Mapping[str, int], stored: Stored | None
              ) -> Interval | None:
    if np.dtype(e.dtype).kind not in "iu":
        return None
    info = np.iinfo(e.dtype)
    anything = (int(info.min), int(info.max))
    if isinstance(e, Load) and stored is not None:
        held = stored(e.buffer)
        return anything if held is None else held
    if isinstance(e, Const):  # a size (a generic version's ``n``): any value of its dtype
        return anything if isinstance(e.value, Size) else (int(e.value), int(e.value))
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
