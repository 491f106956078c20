"""Row reductions that share an operand, several rows at a time (unroll and jam).

A matrix-vector product ``A @ x`` is a sum along each row of ``A * x``: one row at a time, every
vector of the row loads a vector of ``A`` and one of ``x``, two loads a multiply-add, and the
core's load ports bound it, not its arithmetic. Reducing ``ROWS`` consecutive rows in one pass
over the reduced loop loads each vector of ``x`` once for all of them (the copies load the same
address, which LLVM merges): ``1 + 1/ROWS`` loads a multiply-add. Each row keeps accumulators of
its own, in blocks summed as a tree (``pairwise.py``): the same accuracy class (LLVM may choose
fewer accumulators a row, so the last bits can differ from a row reduced alone).

Taken where a plain nest's phase of reductions, or a row nest's one reduction phase before what
reads its rows (``sigmoid(X @ w)``), has: no arg reductions (their second pass); a load the same
for every row (the shared operand: without one nothing is saved); reduced rows longer than
``MIN_VECTORS`` vectors; a matrix under ``MAX_BYTES``; and no check of each step's
floating-point events (a precise kernel's reductions do not vectorize). A thread's range of rows
is taken ``ROWS`` at a time, the rest one by one. Indices are 64-bit there: 32-bit ones were
sign-extended at every load, and LLVM packed the rows' index arithmetic into vectors only to
extract each index again (float32 (2000, 200) @ (200,): 26.6 us jammed with 32-bit indices,
22.1 with 64-bit, 24.1 a row at a time).

AMD EPYC (Zen 4, 512-bit vectors), one thread, a row at a time -> jammed (OpenBLAS's gemv):
float64 (500, 200) @ (200,) 11.3 -> 9.9 us (10.7); (2000, 64) 13.5 -> 11.1 (12.9); (64, 4096)
43.0 -> 27.5 (31.2); float32 (1000, 96) 6.1 -> 4.1 (5.9); (2000, 24) 15.2 -> 2.8 (4.8);
(2000, 150) 22.0 -> 17.8 (20.2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from stax.ir.sizes import hint, is_symbolic
from stax.loop import ComputedBuffer, Load, Reduction, postorder, xvar

from .registry import TWO_PASSES

#: rows reduced together
ROWS = 4
#: the shortest reduced row jammed, in vectors of the kernel's widest dtype: half a vector and
#: less gained nothing (float32 (2000, 8) @ (8,) 1.9 -> 2.1 us)
MIN_VECTORS = 0.5
#: the bytes of the rows' own operands (the matrix) from which the nest runs a row at a time:
#: a matrix beyond a core's L2 cache streams from memory, where one sequential stream of whole
#: rows is what the hardware prefetches best (float32 (2000, 256) @ (256,), 2 MiB: 23.4 us a
#: row at a time, 27.1 jammed; (1000, 256), 1 MiB: 12.5 -> 12.0)
MAX_BYTES = 2 << 20


def jammed_rows(nodes: Sequence[ComputedBuffer], lanes: int, precise: bool,
                spills: bool) -> int:
    """How many rows of the plain nest's phase ``nodes`` to reduce at once: ``ROWS`` or 1."""
    first = nodes[0]
    if precise or spills or not first.ranges or not first.reduction_ranges or \
            not all(isinstance(n.data, Reduction) and n.data.reduction_type not in TWO_PASSES
                    and n.ranges == first.ranges for n in nodes):
        return 1
    inner = first.reduction_ranges[-1]
    if not is_symbolic(inner) and hint(inner) <= MIN_VECTORS * lanes:
        return 1
    row = xvar(len(first.ranges) - 1)
    loads = [e for n in nodes for e in postorder(n.data.body) if isinstance(e, Load)]
    moving = [e for e in loads if e.index.coefficient(row) != 0]
    shared = [e for e in loads if e.index.coefficient(row) == 0]
    visits = math.prod(hint(n) for n in (*first.ranges, *first.reduction_ranges))
    moved = visits * sum(np.dtype(e.dtype).itemsize for e in moving)
    return ROWS if moving and shared and moved < MAX_BYTES else 1
