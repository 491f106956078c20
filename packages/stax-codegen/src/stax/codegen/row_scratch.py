"""Buffers only later phases of their own row kernel read: kept one row at a time, never stored.

Softmax's backward computes, per row, ``g = dp * p`` (an element-wise phase), then its sum (a
reduction phase), then ``p * (g... - sum)`` (an element-wise phase reading ``g`` again): the
row nest runs the three phases row by row, so ``g`` is wanted only until its row is done. Stored
as a buffer it took a whole block (64 MiB in a transformer block's attention backward) and a
write and a read of every element through memory. Held in a row of scratch on the kernel's
stack (``KernelSpec.row_scratch``; each thread has its own), it costs neither.

A buffer is held per row when its kernel is a ``rows`` nest and it is element-wise (not a
region update, not a scatter), computed in a phase that runs inside the row loop (not one of
the phases of one value per row the CPU runs after the rows, ``nesting.per_row_phases``), read
by no other step, output or check, not a row value a reduction shares (``rowshare``), read
only by later phases of that loop — within the same row, which ``nesting.row_axes`` proved for
every read of an earlier phase — and laid out in C order over its own loops, so that a row is
``row_elements`` consecutive elements from the row's first (the scratch stands in for them:
``KernelEmitter.row_scratch_at_row``). Rows longer than ``MAX_ROW_BYTES`` stay stored. The
CPU's plan only (``plan_program(transient=True)``); a kernel keeps at least one stored buffer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence, Set

import numpy as np

from stax.loop import ComputedBuffer, ExternCall, Pointwise, xvar

from .nesting import per_row_phases, row_axes
from .scheduler import Group
from .transient import KernelReads

#: the longest row held on a kernel's stack (a thread of the native pool has megabytes)
MAX_ROW_BYTES = 64 << 10


def row_scratch_buffers(groups: Sequence[Group], kept: Set[str],
                        unstored: Set[str] = frozenset()) -> dict[str, int]:
    """The buffers of the scheduled ``groups`` held one row at a time, each with its row's
    element count; ``kept``: buffers read after the last step or written over arguments;
    ``unstored``: buffers already not stored (events only, held at their element)."""
    read_by: dict[str, int] = {}
    for g in groups:
        for name in g.reads | g.after:
            read_by[name] = read_by.get(name, 0) + 1
    found: dict[str, int] = {}
    for g in groups:
        nest = g.nest
        if nest is None or nest.kind != "rows" or any(isinstance(n, ExternCall) for n in g.nodes):
            continue
        count = row_axes(nest)
        inside = nest.phases[:len(nest.phases) - per_row_phases(nest, count)]
        phase_of = {n.name: i for i, phase in enumerate(nest.phases) for n in phase}
        spilled = {s.buffer for s in nest.shares}
        held: dict[str, int] = {}
        index = KernelReads(g.nodes)
        for phase in inside:
            for node in phase:
                if node.name in kept or node.name in unstored or node.name in spilled:
                    continue
                if read_by.get(node.name, 0) > (1 if node.name in g.reads | g.after else 0):
                    continue  # another step reads it
                elements = _row_elements(node, count)
                if elements is None or not _read_in_later_phases(node, index, phase_of,
                                                                 len(inside)):
                    continue
                held[node.name] = elements
        if any(n.name not in held and n.name not in unstored for n in g.nodes):
            found.update(held)
    return found


def _row_elements(node: ComputedBuffer, count: int) -> int | None:
    """The elements of one row of ``node`` when it is element-wise over its own shape in C
    order (a row consecutive in memory) and its row is short enough; else None."""
    if not isinstance(node.data, Pointwise) or node.updates is not None or \
            node.store_offset is not None or len(node.ranges) <= count:
        return None
    shape, ranges = tuple(node.shape), tuple(node.ranges)
    if not all(type(n) is int for n in (*shape, *ranges)) or shape != ranges:
        return None
    stride = 1
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] > 1 and node.store_index.coefficient(xvar(d)) != stride:
            return None
        stride *= shape[d]
    if node.store_index.const != 0:
        return None
    elements = math.prod(shape[count:])
    return elements if elements * np.dtype(node.dtype).itemsize <= MAX_ROW_BYTES else None


def _read_in_later_phases(node: ComputedBuffer, index: KernelReads,
                          phase_of: dict[str, int], inside: int) -> bool:
    """Whether ``node`` is read in its kernel, only by later phases that run inside the rows
    (or its own phase at the element it computes), never updated in place."""
    mine = phase_of[node.name]
    readers = index.of(node)
    return bool(readers) and all(
        mine <= phase_of[other.name] < inside and (phase_of[other.name] > mine or all(
            getattr(r, "index", None) == node.store_index for r in reads))
        for other, reads in readers)
