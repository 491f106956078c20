"""Block sizes, warps and grids of the Triton kernels: first heuristics by size, no tuning yet
(issue 12 item 4). A 1-D kernel takes up to ``max_xblock`` elements per program; a 2-D kernel
``XBLOCK`` rows of ``R0_BLOCK`` lanes, about ``block_elements`` in all (the registers a program
holds). A reduced (or row-phase) extent of at most ``max_persistent`` is persistent: one block
holds the whole row. A ``columns`` nest (reductions whose kept axis runs along memory) takes
wide rows, ``columns_xblock``, so a warp reads consecutive kept elements."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..artifact import Launch


def next_power_of_2(n: int) -> int:
    return 1 << max(0, (max(n, 1) - 1).bit_length())


@dataclass(frozen=True)
class LaunchPolicy:
    max_xblock: int = 1024
    block_elements: int = 4096
    max_persistent: int = 4096
    looped_r0_block: int = 1024
    columns_xblock: int = 64
    max_warps: int = 8


@dataclass(frozen=True)
class Blocks:
    """A kernel's block shape: ``r0_block`` 0 for a 1-D kernel."""

    xblock: int
    r0_block: int
    num_warps: int

    def describe(self) -> str:
        if not self.r0_block:
            return f"XBLOCK={self.xblock}"
        return f"XBLOCK={self.xblock}, R0_BLOCK={self.r0_block}"

    def launch(self, xnumel: int) -> Launch:
        blocks = (("XBLOCK", self.xblock),) + ((("R0_BLOCK", self.r0_block),) if self.r0_block else ())
        return Launch((math.ceil(xnumel / self.xblock),), blocks, self.num_warps)


def _warps(elements: int, policy: LaunchPolicy) -> int:
    """A warp per 256 elements of the block (8 a thread), at least 1, at most ``max_warps``."""
    return min(policy.max_warps, next_power_of_2(max(1, elements // 256)))


def choose_blocks(xnumel: int, inner: int | None, columns: bool, policy: LaunchPolicy) -> Blocks:
    """The block shape of a kernel over ``xnumel`` outer elements and, for a 2-D kernel, an inner
    extent of ``inner`` (the largest of its phases')."""
    if inner is None:
        xblock = min(next_power_of_2(xnumel), policy.max_xblock)
        return Blocks(xblock, 0, _warps(xblock, policy))
    if columns:
        xblock = min(next_power_of_2(xnumel), policy.columns_xblock)
        r0_block = min(next_power_of_2(inner), max(1, policy.block_elements // xblock))
    else:
        fits = next_power_of_2(inner) <= policy.max_persistent
        r0_block = next_power_of_2(inner) if fits else policy.looped_r0_block
        xblock = min(next_power_of_2(xnumel), max(1, policy.block_elements // r0_block))
    return Blocks(xblock, r0_block, _warps(xblock * r0_block, policy))
