"""Float sums with NumPy's accuracy: the innermost reduced loop in blocks, summed as a tree.

NumPy adds a contiguous run pairwise (its ``pairwise_sum``: blocks of 128 elements over eight
accumulators, halves recursively above), so a float32 sum of n elements errs by O(log n) ulps.
A reassociable loop LLVM vectorizes keeps VF x IC accumulators instead, each adding n / (VF x IC)
elements in turn: 64M float32 0.1s summed 2.2e-4 off (NumPy 7.8e-8), 4M 2.4e-5, 200,000 ones
8.8e-7 (a CI failure of a 1e-6 test). Here a float sum's innermost reduced loop runs in blocks
(``block_elements``), each vectorized by LLVM from fresh accumulators; each block's sum goes
into a binary counter (a cascade: one partial a level, in a stack array, the ``k``-th block
merging with the partials of the levels where ``k`` has a 1 bit), and the run's sum is the
levels' partials added smallest first. Errors are O(PER_ACCUMULATOR + log2(n / block)) ulps.

What runs around the innermost loop is NumPy's rule too: each run's sum is added to the value
carried from the loops around (NumPy's ``*out += pairwise_sum(run)``), and the partial sums of
a reduction split across threads are added in order by the kernel after. Reductions other than
float sums in the same nest (a max, an integer count) carry straight through the blocks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from llvmlite import ir

from .blocks import Restarted
from .types import I64

#: elements an accumulator adds in a block: NumPy's eight accumulators add 16 each in its blocks
#: of 128, and LLVM keeps INTERLEAVE vectors of accumulators in a vectorized sum
PER_ACCUMULATOR = 16
INTERLEAVE = 4


def block_elements(dtype: str, vector_bits: int) -> int:
    """Elements a block for a sum in ``dtype`` on vectors of ``vector_bits``: each of the loop's
    lanes x INTERLEAVE accumulators adds PER_ACCUMULATOR of them, NumPy's accuracy class, while
    the cascade's step and the vector sum ending a block (a dozen instructions) cost little
    against the block's 16 vector iterations. float32 on 512-bit vectors: 1024 (blocks of 512
    there were 8 vector iterations, and a layer norm's rows of 1024 ran 20-30% slower split in
    two than summed at once, with the same accuracy); on 256-bit vectors and float64 on 512:
    512; float64 on 256: 256."""
    lanes = max(1, vector_bits // (8 * np.dtype(dtype).itemsize))
    return PER_ACCUMULATOR * INTERLEAVE * lanes


#: the cascade's levels: a run of 2^64 blocks fits
LEVELS = 64


def cascade(em: Any, identities: Sequence[ir.Value], sums: Sequence[int]) -> Restarted:
    """The float sums at positions ``sums`` (``identities``: their first values) in blocks
    (``blocks.blocked``): each block's sum pushed into its cascade, the carried sum added to
    once, after the run (see the module's doc)."""
    b = em.builder
    stacks = [em.stack_array(first.type, LEVELS) for first in identities]

    def end(k: ir.Value, low: ir.Value, before: Sequence[ir.Value],
            after: Sequence[ir.Value]) -> dict[int, ir.Value]:
        for s, stack in zip(sums, stacks):
            _push(b, em.fn, stack, k, after[s])
        return {s: before[s] for s in sums}

    def finish(blocks: ir.Value, before: Sequence[ir.Value], finals: Sequence[ir.Value]
               ) -> dict[int, ir.Value]:
        return {s: b.fadd(before[s], _fold(b, em.fn, stack, blocks, first))
                for s, stack, first in zip(sums, stacks, identities)}
    return Restarted(tuple(sums), tuple(identities), end, finish)


def _push(b: ir.IRBuilder, fn: ir.Function, stack: ir.Value, k: ir.Value,
          partial: ir.Value) -> None:
    """Block ``k``'s sum into the cascade: while bit ``level`` of ``k`` is set, the level's
    partial (the earlier blocks, left) is added to it and it moves up a level; it is stored
    at the first level whose bit is clear."""
    one = ir.Constant(I64, 1)
    pre = b.block
    head = fn.append_basic_block("cascade")
    merge = fn.append_basic_block("cascade_merge")
    done = fn.append_basic_block("cascade_done")
    b.branch(head)
    b.position_at_end(head)
    level = b.phi(I64, name="level")
    bits = b.phi(I64, name="bits")
    total = b.phi(partial.type, name="partial")
    level.add_incoming(ir.Constant(I64, 0), pre)
    bits.add_incoming(k, pre)
    total.add_incoming(partial, pre)
    b.cbranch(b.trunc(bits, ir.IntType(1)), merge, done)
    b.position_at_end(merge)
    earlier = b.load(b.gep(stack, [ir.Constant(I64, 0), level]))
    level.add_incoming(b.add(level, one), merge)
    bits.add_incoming(b.lshr(bits, one), merge)
    total.add_incoming(b.fadd(earlier, total), merge)
    b.branch(head)
    b.position_at_end(done)
    b.store(total, b.gep(stack, [ir.Constant(I64, 0), level]))


def _fold(b: ir.IRBuilder, fn: ir.Function, stack: ir.Value, blocks: ir.Value,
          first: ir.Value) -> ir.Value:
    """The run's sum: the partials of the levels where ``blocks`` has a 1 bit, the smallest
    level first, added to ``first`` (the identity: a run of no block sums to it)."""
    pre = b.block
    head = fn.append_basic_block("fold")
    add = fn.append_basic_block("fold_add")
    done = fn.append_basic_block("fold_done")
    b.branch(head)
    b.position_at_end(head)
    bits = b.phi(I64, name="fold_bits")
    total = b.phi(first.type, name="fold_total")
    bits.add_incoming(blocks, pre)
    total.add_incoming(first, pre)
    b.cbranch(b.icmp_unsigned("!=", bits, ir.Constant(I64, 0)), add, done)
    b.position_at_end(add)
    cttz = fn.module.declare_intrinsic("llvm.cttz", [I64],
                                       ir.FunctionType(I64, [I64, ir.IntType(1)]))
    level = b.call(cttz, [bits, ir.Constant(ir.IntType(1), 1)])
    partial = b.load(b.gep(stack, [ir.Constant(I64, 0), level]))
    bits.add_incoming(b.and_(bits, b.sub(bits, ir.Constant(I64, 1))), add)
    total.add_incoming(b.fadd(total, partial), add)
    b.branch(head)
    b.position_at_end(done)
    return total
