"""The innermost reduced loop in blocks, for reductions that restart their accumulators every
block and fold each block's result into what they carry (``KernelEmitter.nest``).

Two kinds do: a float sum (``pairwise.py``: each block's sum into a cascade, NumPy's accuracy
class) and an arg reduction (``arg_blocks.py``: each block's extreme against the best so far,
the block where it was found kept; pass two reads that block again). Each block's loop starts
from fresh accumulators, which LLVM's vectorizer takes as an ordinary reduction; the block's
end (a vector reduced to one value, a compare) costs a dozen instructions against the block's
16 vector iterations. Reductions of other kinds in the same nest carry straight through."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llvmlite import ir

from .types import I64

#: (block number, the block's first value of the loop variable, the carried values before the
#: block, after it) -> the carried values it sets, by position
BlockEnd = Callable[[ir.Value, ir.Value, Sequence[ir.Value], Sequence[ir.Value]],
                    dict[int, ir.Value]]
#: (the number of blocks, the carried values before the run, after its last block) -> the final
#: values it sets
RunEnd = Callable[[ir.Value, Sequence[ir.Value], Sequence[ir.Value]], dict[int, ir.Value]]


@dataclass(frozen=True)
class Restarted:
    """Carried values restarted at ``identities`` every block (``positions`` among the carried
    values), what a block's end makes of the carried values (``end``), and the run's end."""

    positions: Sequence[int]
    identities: Sequence[ir.Value]
    end: BlockEnd
    finish: RunEnd | None = None


def blocked(em: Any, var: str, extent: Any, carried: Sequence[ir.Value],
            parts: Sequence[Restarted], block: int,
            body: Callable[[Sequence[ir.Value]], Sequence[ir.Value]]) -> list[ir.Value]:
    """``for var in range(extent)`` carrying ``carried`` through ``body``, run in blocks of
    ``block`` iterations, the ``parts``' values restarted every block; returns the final
    values. A run known to fit one block is that block alone (its loop keeps the extent's
    hints, ``KernelEmitter.loop``)."""
    b = em.builder
    n = em.size(extent)
    width = ir.Constant(I64, block)

    def one_block(k: ir.Value, low: ir.Value, high: ir.Value, values: Sequence[ir.Value],
                  length: Any = None) -> list[ir.Value]:
        fresh = list(values)
        for part in parts:
            for p, first in zip(part.positions, part.identities):
                fresh[p] = first
        inner = em.loop(var, low, high, fresh, body, extent=length)
        out = list(inner)
        for part in parts:
            for p, v in part.end(k, low, values, inner).items():
                out[p] = v
        return out

    if isinstance(extent, int) and extent <= block:
        zero = ir.Constant(I64, 0)
        finals = one_block(zero, zero, n, carried, extent)
        blocks: ir.Value = ir.Constant(I64, 1)
    else:
        blocks = b.udiv(b.add(n, ir.Constant(I64, block - 1)), width, name=f"{var}_blocks")

        def each(values: Sequence[ir.Value]) -> Sequence[ir.Value]:
            # one loop for the full blocks and the last (its bounds a select): a second copy
            # of the body for constant-length blocks measured no faster and doubles the IR
            k = em.vars[f"{var}_block"]
            low = b.mul(k, width)
            end = b.add(low, width)
            return one_block(k, low, b.select(b.icmp_signed("<", end, n), end, n), values)
        finals = em.loop(f"{var}_block", ir.Constant(I64, 0), blocks, carried, each)
    for part in parts:
        if part.finish is not None:
            for p, v in part.finish(blocks, carried, finals).items():
                finals[p] = v
    return finals


#: a nest's restarted values for its innermost loop, given whether that loop is longer than a
#: block (a float sum shorter than a block is not restarted; an arg reduction always is)
Restarts = Callable[[bool], Sequence[Restarted]]
