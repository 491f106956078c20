"""Buffers only their own kernel reads, at the element it computes: never stored.

The loop program realizes a value several nodes read (a GELU's ``x @ w1 + b``, read four
times), and fusion may put every reader in the kernel computing it; that kernel still stored
the value, and the plan gave it a block of memory: the gradient program of a 2-layer MLP wrote
two 8 MiB buffers nothing read again (peak 48 MiB where torch.compile's step took 40).

A buffer is *transient* when it is element-wise (not a region update, not a scatter), no other
step and no output or check reads it, no reduction spills into it, and each of its readers is
an element-wise node of the same phase of its kernel, after it, loading it only at exactly its
store index: the element the emitter has just computed and holds (``KernelEmitter.local``). The
CPU then computes it as it computes a value kept only for its events (``KernelSpec.discard``):
not stored, no kernel argument, no storage, its float events still tested
(``fpchecks.keep_for_events``). Triton keeps its own rule (``triton/generate.unread``): its
element-wise kernels skip a discarded node altogether."""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import Any

from stax.loop import ComputedBuffer, ExternCall, Pointwise, node_loads
from stax.loop.expr import Load

from .scheduler import Group


def transient_buffers(groups: Sequence[Group], kept: Set[str],
                      unstored: Set[str] = frozenset()) -> frozenset[str]:
    """The transient buffers of the scheduled ``groups`` (their nests chosen); ``kept``: the
    buffers read after the last step (outputs, checks) or written over arguments;
    ``unstored``: those computed for their events only. A kernel keeps at least one stored
    buffer (one storing nothing would be a kernel without arguments)."""
    read_by: dict[str, int] = {}
    for g in groups:
        for name in g.reads | g.after:
            read_by[name] = read_by.get(name, 0) + 1
    found: set[str] = set()
    for g in groups:
        if g.nest is None or any(isinstance(n, ExternCall) for n in g.nodes):
            continue
        spilled = {s.buffer for s in g.nest.shares}
        held = set()
        index = KernelReads(g.nodes)
        for phase in g.nest.phases:
            for at, node in enumerate(phase):
                if node.name in kept or node.name in spilled or not _element_wise(node):
                    continue
                # the group's own reads count once (``Group.reads`` is the union of its nodes')
                if read_by.get(node.name, 0) > (1 if node.name in g.reads | g.after else 0):
                    continue
                if _only_read_here(node, phase[at + 1:], g.nodes, index):
                    held.add(node.name)
        if any(n.name not in held and n.name not in unstored for n in g.nodes):
            found |= held
    return frozenset(found)


def _element_wise(node: ComputedBuffer) -> bool:
    return isinstance(node.data, Pointwise) and node.updates is None and \
        node.store_offset is None


def _only_read_here(node: ComputedBuffer, later: Sequence[ComputedBuffer],
                    group: Sequence[ComputedBuffer | ExternCall], index: KernelReads) -> bool:
    """Whether ``node`` is read in its kernel, and every read is a plain load at its store index
    by an element-wise node of ``later`` (the rest of its phase). A buffer nothing reads is no
    one's to hold (a kernel of only such buffers would have no argument at all)."""
    later_names = {n.name for n in later}
    readers = kernel_readers(node, group, index)
    return bool(readers) and all(
        other.name in later_names and _element_wise(other) and
        all(type(r) is Load and r.index == node.store_index for r in reads)
        for other, reads in readers)


class KernelReads:
    """Which nodes of one kernel read each buffer, with their loads of it, and which buffers
    its nodes update in place: read from every node's expressions once (asking each node's
    loads per buffer made the transient-buffer pass quadratic in the kernel's size: an
    unrolled recurrence of 200 steps spent a second there)."""

    def __init__(self, group: Sequence[ComputedBuffer | ExternCall]) -> None:
        self.readers: dict[str, list[tuple[ComputedBuffer, list[Any]]]] = {}
        self.updated: dict[str, list[ComputedBuffer]] = {}  # buffer -> nodes updating it
        for other in group:
            if isinstance(other, ExternCall):
                continue
            if other.updates is not None:
                self.updated.setdefault(other.updates, []).append(other)
            by_buffer: dict[str, list[Any]] = {}
            for r in node_loads(other):
                by_buffer.setdefault(r.buffer, []).append(r)
            for buffer, reads in by_buffer.items():
                self.readers.setdefault(buffer, []).append((other, reads))

    def of(self, node: ComputedBuffer) -> list[tuple[ComputedBuffer, list[Any]]] | None:
        """``kernel_readers`` of ``node``."""
        if any(other is not node for other in self.updated.get(node.name, ())):
            return None
        return [(other, reads) for other, reads in self.readers.get(node.name, ())
                if other is not node]


def kernel_readers(node: ComputedBuffer, group: Sequence[ComputedBuffer | ExternCall],
                   index: KernelReads | None = None
                   ) -> list[tuple[ComputedBuffer, list[Any]]] | None:
    """The nodes of ``node``'s kernel that read it, each with its loads of it; None when one
    of them updates it in place (a region update: never held). ``index``: the kernel's
    ``KernelReads``, for many questions about one kernel."""
    return (index or KernelReads(group)).of(node)
