"""The next row's inputs asked for while this row's later phases compute (a row nest's
software prefetch).

A row nest (``nests.row_nest``) reads a row from memory in its first phase (softmax's
maximum, layer norm's mean) and then computes over it from cache in the later phases (the
exponentials, the division). While those phases run, nothing asks memory for the next row: the
hardware prefetcher follows the stream it saw, a few lines ahead, and the read of row ``r + 1``
waits until its first phase starts. Each row is then a burst of reads followed by a burst of
arithmetic and writes, on a host where either alone leaves the memory system half idle.

After the first phase has read row ``r``, one ``prefetcht2`` per cache line of row ``r + 1`` of
every input that phase streams (unit stride along the row, a row stride that is not zero) asks
for it into the L2 cache, so its read overlaps this row's arithmetic. Measured on a 2-core
Intel Xeon (AVX-512; softmax (4096, 4096) float32, layer norm (8192, 1024), interleaved runs):
softmax 7.0-7.4 ms -> 6.4-6.7 ms, layer norm 1.39-1.45 -> 1.28-1.38 ms; ``prefetcht0`` (into
L1) gained half as much, ``prefetchnta`` made softmax twice as slow, and asking for the next
row's outputs for writing (``prefetchw``) made both slower. The row past a thread's last is
asked for too: a prefetch never faults, and the address is only arithmetic (no ``inbounds``).

Rows shorter than ``MIN_ROW_BYTES`` are left to the hardware: one line or a few is what its
stream prefetcher fetches anyway, and the loop would cost more than it hides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from llvmlite import ir

from stax.ir.sizes import is_symbolic
from stax.loop import ComputedBuffer, Load, Pointwise, Reduction, postorder, rvar, xvar

from .types import I64

#: bytes of a cache line: one prefetch each
LINE_BYTES = 64
#: rows shorter than this (per input) are not prefetched
MIN_ROW_BYTES = 1024
#: ``llvm.prefetch`` locality 1: ``prefetcht2`` on x86 (into L2; ``nta``, 0, was 2x slower)
LOCALITY = 1
#: rows ahead: 1 (2 or 3 rows ahead made layer norm (8192, 1024) 10% slower, softmax no faster)
DISTANCE = 1

I8P = ir.IntType(8).as_pointer()
I32 = ir.IntType(32)


def streamed_rows(nodes: Sequence[ComputedBuffer], count: int, computed: set[str]
                  ) -> list[tuple[Load, str, int]]:
    """The reads of the first phase ``nodes`` of a row nest with ``count`` row axes that stream
    a row of an input: ``(load, inner variable, row length)``, one per buffer, for a single
    row axis, a unit stride along the row and a nonzero stride between rows; none for rows
    shorter than ``MIN_ROW_BYTES``."""
    if count != 1:
        return []
    found: dict[str, tuple[Load, str, int]] = {}
    for node in nodes:
        data = node.data
        if isinstance(data, Reduction) and len(data.reduction_ranges) == 1 and \
                len(data.ranges) == 1:
            inner, extent = rvar(0), data.reduction_ranges[0]
        elif isinstance(data, Pointwise) and len(node.ranges) == 2:
            inner, extent = xvar(1), node.ranges[1]
        else:
            continue
        if is_symbolic(extent):
            continue
        for e in postorder(data.body):
            if type(e) is not Load or e.buffer in computed or e.buffer in found:
                continue
            if e.index.coefficient(inner) != 1 or e.index.coefficient(xvar(0)) == 0:
                continue
            if extent * np.dtype(e.dtype).itemsize < MIN_ROW_BYTES:
                continue
            found[e.buffer] = (e, inner, extent)
    return list(found.values())


def prefetch_next_row(em: Any, nodes: Sequence[ComputedBuffer], count: int) -> None:
    """Ask for row ``x0 + DISTANCE`` of what the first phase ``nodes`` streams (``streamed_rows``),
    one ``prefetcht2`` per cache line, at the builder's position (after that phase's loop).
    ``em`` is the kernel emitter (``emit.KernelEmitter``)."""
    computed = {n.name for n in em.spec.nodes}
    reads = streamed_rows(nodes, count, computed)
    if not reads:
        return
    b: ir.IRBuilder = em.builder
    module = em.fn.module
    prefetch = module.declare_intrinsic("llvm.prefetch", [I8P],
                                        ir.FunctionType(ir.VoidType(), [I8P, I32, I32, I32]))
    saved_vars = dict(em.vars)
    saved_memo = em.memo
    next_row = b.add(saved_vars[xvar(0)], ir.Constant(I64, DISTANCE), name="next_row")
    for load, inner, extent in reads:
        per_line = max(1, LINE_BYTES // np.dtype(load.dtype).itemsize)

        def line(_: Sequence[ir.Value], load: Load = load, inner: str = inner,
                 per_line: int = per_line) -> Sequence[ir.Value]:
            em.vars[xvar(0)] = next_row
            em.vars[inner] = b.mul(em.vars["prefetch_line"],
                                   ir.Constant(I64, per_line))
            em.memo = {}
            at = b.gep(em.pointers[load.buffer], [em.index(load.index)])
            b.call(prefetch, [b.bitcast(at, I8P), ir.Constant(I32, 0), ir.Constant(I32, LOCALITY),
                              ir.Constant(I32, 1)])
            return []
        em.loop("prefetch_line", ir.Constant(I64, 0),
                ir.Constant(I64, -(-extent // per_line)), [], line)
        em.vars.clear()
        em.vars.update(saved_vars)
    em.memo = saved_memo
