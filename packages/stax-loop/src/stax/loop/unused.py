"""Steps whose values the program does not use, computed for their floating-point events.

NumPy computes every step a program writes and reports the floating-point events of each
(``np.errstate``: warn, raise, call) whether or not its value is read: ``_ = np.log(x)`` warns
"divide by zero encountered in log" for a zero in ``x``. The passes keep such steps, marked
(``stax.ir.passes.dce``, ``Node.events_only``); here each one that no other value reads gets a
buffer of its own, listed in ``LoopProgram.events_only``, so the kernels compute it and report
its events like any other step's. Buffers whose operations NumPy never reports an event for
(``reports``: comparisons, selections, data movement, exact operations such as ``abs`` or
``maximum``, integer arithmetic other than division) are then dropped, and with them what only
they read: they cost nothing.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from stax.ir import Node

from .context import output_strides
from .expr import Binary, Cast, Const, Expr, Unary, loads, postorder
from .ir import ComputedBuffer, ExternCall, OutputRef, Reduction, Scan
from .operators import get_operator

if TYPE_CHECKING:
    from .context import LoopLowering


def _float(dtype: str) -> bool:
    return np.dtype(dtype).kind == "f"


def may_report(e: Expr) -> bool:
    """Whether NumPy may report a floating-point event computing the operation ``e`` (its own,
    not its operands'): float arithmetic other than the exact operations without events
    (``LoopOperator.exact``, ``events``: ``abs``, ``maximum``, ``floor``...), a cast
    from a float to a narrower float or to an integer, integer division and remainder (by zero,
    and ``MIN // -1``: not by another constant). Comparisons and casts to bool never report."""
    if isinstance(e, Cast):
        if not _float(e.x.dtype) or e.dtype == "bool":
            return False
        return not _float(e.dtype) or np.dtype(e.dtype).itemsize < np.dtype(e.x.dtype).itemsize
    if isinstance(e, Binary) and e.op in ("floordiv", "mod"):  # integers (floats: py_floordiv)
        return not (isinstance(e.b, Const) and e.b.value not in (0, -1)) and e.dtype != "bool"
    if isinstance(e, Binary) and _shrinks(e):
        return False
    if isinstance(e, Unary | Binary):
        operator = get_operator(e.op)  # bitcast to a float (nextafter, spacing) may overflow
        return _float(e.dtype) and not (operator.exact and operator.events is None)
    return False


def _shrinks(e: Binary) -> bool:
    """A float product with a constant of magnitude at most 1 (``x * 0.25``), or a quotient by
    one of at least 1 (``x / 4.0``), neither zero nor infinite nor NaN: no result is larger than
    its operand, an infinity stays one, NaN stays quiet, so its only event is underflow, which
    no call meets heeded (calls under a heeded ``under`` run eagerly from the start)."""
    if not _float(e.dtype) or e.op not in ("mul", "truediv"):
        return False
    constants = [e.b] if e.op == "truediv" else [e.a, e.b]
    for c in constants:
        if isinstance(c, Const) and c.dtype == e.dtype and isinstance(c.value, float) and \
                math.isfinite(c.value) and c.value != 0.0 and \
                (abs(c.value) <= 1.0 if e.op == "mul" else abs(c.value) >= 1.0):
            return True
    return False


def reports(buffer: ComputedBuffer) -> bool:
    """Whether computing ``buffer`` may raise a floating-point event NumPy reports: one of its
    operations may (``may_report``), or it is a float sum or product (a step may overflow)."""
    data = buffer.data
    kind = data.scan_type if isinstance(data, Scan) else \
        data.reduction_type if isinstance(data, Reduction) else None
    if kind in ("sum", "prod") and _float(buffer.dtype):
        return True
    return any(may_report(e) for e in postorder(data.body))


def keep_for_events(ctx: LoopLowering, node: Node, first: int) -> list[str]:
    """After the rule of ``node`` (an unused op-graph value kept for its events) ran: the
    buffers it made, from position ``first`` on, are computed for their events (its checks
    stay checks), and an element-wise value it left unrealized gets a buffer. Their names."""
    lazy = ctx.values[node]
    if lazy.buffer is None and lazy.memory is None and ctx.native(lazy.dtype) and \
            node.tensor is not None:
        ctx.node = node
        ctx.realize(lazy, output_strides(node.tensor))  # the value itself stays lazy: none reads it
    return [b.name for b in ctx.buffers[first:] if b.name not in ctx.checks]


def drop_silent(buffers: list[ComputedBuffer | ExternCall], kept: list[str],
                outputs: list[OutputRef], checks: dict[str, str]
                ) -> tuple[list[ComputedBuffer | ExternCall], list[str]]:
    """``buffers`` without the buffers kept for their events (``kept``) that nothing reads and
    that cannot report an event, nor what only those read, latest first; and the kept buffers
    that remain and that nothing reads (the events-only buffers). NumPy calls stay: whether
    they report is NumPy's to say."""
    candidates = set(kept)
    readers: dict[str, int] = {}
    for name in (*(o.buffer for o in outputs if o.buffer is not None), *checks):
        readers[name] = readers.get(name, 0) + 1
    for b in buffers:
        for name in _reads(b):
            readers[name] = readers.get(name, 0) + 1
    dropped: set[str] = set()
    for b in reversed(buffers):
        if b.name in candidates and not readers.get(b.name) and isinstance(b, ComputedBuffer) \
                and not reports(b):
            dropped.add(b.name)
            for name in _reads(b):
                readers[name] -= 1
    remaining = [b for b in buffers if b.name not in dropped]
    return remaining, [b.name for b in remaining if b.name in candidates and not readers.get(b.name)]


def _reads(b: ComputedBuffer | ExternCall) -> set[str]:
    if isinstance(b, ExternCall):
        return set(b.reads)
    return {ld.buffer for ld in loads(b.data.body)}
