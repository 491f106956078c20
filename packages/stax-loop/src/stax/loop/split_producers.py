"""Element-wise buffers laid out as the split reduction that reads them (spec §6.5, §7).

A long 1-D reduction runs as partial results over ``k`` chunks of ``c`` elements (``ranges
(k,)``, ``reduction_ranges (c,)``), the chunks shared by the threads. When what it reduces is an
element-wise buffer kept in memory anyway — a result the function returns, or an argument's new
value written back (``np.clip(x, -2, 2, out=x); return x.sum()``) — that buffer ran as a loop
over its ``k * c`` elements in a kernel of its own, and the reduction read it back: two passes
over memory. Given the same two loops, ``(k, c)``, its chunk ``x0`` is the reduction's chunk
``x0``, and the scheduler makes them phases of one row kernel: each chunk computed, stored and
summed while it is in cache.

Only the loops change: the buffer's elements, their values and its layout stay as they were
(``store_index`` ``c*x0 + x1`` walks the same memory in the same order), so every other reader is
unaffected.
"""

from __future__ import annotations

from dataclasses import replace

from .expr import Expr, GuardedLoad, Index, Load, affine_loads, rewrite
from .index import Affine
from .ir import ComputedBuffer, ExternCall, Pointwise, Reduction, rvar, xvar


def align_with_split_reductions(buffers: list[ComputedBuffer | ExternCall]
                                ) -> list[ComputedBuffer | ExternCall]:
    """``buffers`` with each 1-D element-wise buffer a split reduction reads whole, chunk by
    chunk, iterated over that reduction's ``(chunks, chunk)`` loops."""
    by_name = {b.name: b for b in buffers}
    loops: dict[str, tuple[int, int]] = {}
    for node in buffers:
        match = _split_read(node, by_name)
        if match is not None:
            loops.setdefault(*match)
    for node in buffers:
        for sibling, split in _split_siblings(node, buffers):
            loops.setdefault(sibling, split)
    if not loops:
        return buffers
    return [_iterated_as(b, *loops[b.name]) if b.name in loops else b for b in buffers]


def _split_read(node: ComputedBuffer | ExternCall,
                by_name: dict[str, ComputedBuffer | ExternCall]) -> tuple[str, tuple[int, int]] | None:
    """(buffer, (chunks, chunk)) when ``node`` is a split reduction whose one read is a whole 1-D
    element-wise buffer at ``chunk*x0 + r0``."""
    if not isinstance(node, ComputedBuffer) or not isinstance(node.data, Reduction) or \
            len(node.ranges) != 1 or len(node.reduction_ranges) != 1:
        return None
    (chunks,), (chunk,) = node.ranges, node.reduction_ranges
    reads = affine_loads(node.data.body)
    if len({ld.buffer for ld in reads}) != 1:
        return None
    source = by_name.get(reads[0].buffer)
    want = Affine.var(xvar(0)) * chunk + Affine.var(rvar(0))
    if not _plain_pointwise(source) or source.ranges != (chunks * chunk,) or \
            any(ld.index != want or type(ld) is not Load for ld in reads):
        return None
    return source.name, (chunks, chunk)


def _split_siblings(node: ComputedBuffer | ExternCall, buffers: list[ComputedBuffer | ExternCall]
                    ) -> list[tuple[str, tuple[int, int]]]:
    """(buffer, (chunks, chunk)) for each 1-D element-wise buffer that reads, element by
    element, what ``node`` (a split reduction reading its buffers whole, chunk by chunk) reads:
    the two walk the same memory in the same order and, on the same loops, fuse into one pass
    (a float-to-int cast and its range check, ``x.astype(np.int32)``: the check's pass and the
    cast's read ``x`` twice)."""
    if not isinstance(node, ComputedBuffer) or not isinstance(node.data, Reduction) or \
            len(node.ranges) != 1 or len(node.reduction_ranges) != 1:
        return []
    (chunks,), (chunk,) = node.ranges, node.reduction_ranges
    reads = affine_loads(node.data.body)
    want = Affine.var(xvar(0)) * chunk + Affine.var(rvar(0))
    if not reads or any(ld.index != want or type(ld) is not Load for ld in reads):
        return []
    read = {ld.buffer for ld in reads}
    found = []
    for other in buffers:
        if not _plain_pointwise(other) or other.ranges != (chunks * chunk,):
            continue
        assert isinstance(other, ComputedBuffer)
        loads = affine_loads(other.data.body)
        if any(ld.buffer in read and ld.index == Affine.var(xvar(0)) for ld in loads):
            found.append((other.name, (chunks, chunk)))
    return found


def _plain_pointwise(node: ComputedBuffer | ExternCall | None) -> bool:
    """A 1-D element-wise buffer stored in order, one element per iteration."""
    return isinstance(node, ComputedBuffer) and isinstance(node.data, Pointwise) and \
        node.updates is None and node.store_offset is None and not node.ordered and \
        node.store_index == Affine.var(xvar(0)) and len(node.ranges) == 1


def _iterated_as(node: ComputedBuffer, chunks: int, chunk: int) -> ComputedBuffer:
    """``node`` over loops ``(chunks, chunk)``: ``x0`` becomes ``chunk*x0 + x1`` everywhere."""
    flat = {xvar(0): Affine.var(xvar(0)) * chunk + Affine.var(xvar(1))}

    def moved(e: Expr) -> Expr | None:
        if type(e) is GuardedLoad:
            return replace(e, index=e.index.substitute(flat), guard=rewrite(e.guard, moved))
        if type(e) in (Load, Index):
            return replace(e, index=e.index.substitute(flat))
        return None
    body = rewrite(node.data.body, moved)
    return replace(node, store_index=node.store_index.substitute(flat),
                   data=Pointwise((chunks, chunk), body))
