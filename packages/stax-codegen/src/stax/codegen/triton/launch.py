"""Block sizes, warps and grids of the Triton kernels (issue 12 item 4): heuristics by size and
occupancy that need no tuning, and the few alternatives an autotuning search tries
(``candidates``, ``autotune.py``).

A 1-D kernel takes ``XBLOCK`` elements per program; a 2-D kernel ``XBLOCK`` rows of ``R0_BLOCK``
lanes, about ``block_elements`` in all (the registers a program holds). A reduced (or row-phase)
extent of at most ``max_persistent`` is persistent: one block holds the whole row. The number of
warps gives each thread ``elements_per_thread`` elements of the block (2-D) or
``pointwise_elements_per_thread`` (1-D: 16 bytes of float32, one vector load). A ``columns``
nest (reductions whose kept axis runs along memory) takes up to ``columns_xblock`` kept elements
(long runs of each row) and as many rows per step as keep ``columns_step`` loads in flight, with
narrower column blocks (down to 16: two sectors) where too few programs would cover the GPU's
``processors`` twice; a long reduction over few kept elements is split across programs first
(``split.py``, ``column_split``). A scan of a few long rows runs across programs
(``lookback_blocks``, ``scans.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..artifact import Launch


def next_power_of_2(n: int) -> int:
    return 1 << max(0, (max(n, 1) - 1).bit_length())


@dataclass(frozen=True)
class LaunchPolicy:
    max_xblock: int = 512
    block_elements: int = 4096
    #: a row of at least this many elements is one program's alone (layer norm's 1024: 1.5%
    #: faster on an H200 than four rows a program)
    row_alone: int = 1024
    max_persistent: int = 4096
    looped_r0_block: int = 1024
    columns_xblock: int = 1024
    max_warps: int = 8
    #: elements of a block each thread holds (the warps follow from it): 1-D kernels and 2-D
    #: kernels (measured on an H200, ``benchmarks/results/gpu-notes.md``: 4 per thread in 1-D
    #: kernels beat 8 by 1% in float32 and by 23% in float64 sin*exp, whose libdevice calls take
    #: 156 registers a thread at 8)
    elements_per_thread: int = 8
    pointwise_elements_per_thread: int = 4
    #: streaming multiprocessors of the GPU the heuristics aim at (an H100/H200: 132)
    processors: int = 132
    #: elements a ``columns`` program loads per step of its loop (in flight at once)
    columns_step: int = 8192
    #: a scan across programs (``scans.py``): the elements of each program's block, and the
    #: rows under which a scan too long for one block is made one
    lookback_block: int = 8192
    lookback_rows: int = 264
    #: a ``columns`` reduction is split (``split.py``) to about this many programs of
    #: ``columns_xblock`` kept elements each, each slice at least ``split_rows`` long
    split_programs: int = 528
    split_rows: int = 128
    #: a ``tiled`` element-wise kernel (``x.T + y``): tiles of ``tile`` elements of the last
    #: axis by ``tile_elements // tile`` rows
    tile: int = 64
    tile_elements: int = 4096
    #: L2 eviction hints on the loads of 2-D kernels (rows streamed once go first, weights stay)
    eviction_hints: bool = False


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

    def label(self) -> str:
        return f"{self.describe().replace(', ', ',')},warps={self.num_warps}"

    def launch(self, xnumel: int) -> Launch:
        blocks = (("XBLOCK", self.xblock),) + ((("R0_BLOCK", self.r0_block),) if self.r0_block else ())
        return Launch((cdiv(xnumel, self.xblock),), blocks, self.num_warps)


def cdiv(n: Any, block: int) -> Any:
    """``ceil(n / block)``, for a size expression too (a size-generic kernel's grid)."""
    return (n + block - 1) // block


def _warps(elements: int, policy: LaunchPolicy, per_thread: int | None = None) -> int:
    """A warp per ``32 * elements_per_thread`` elements of the block, at least 1, at most
    ``max_warps``."""
    per_thread = per_thread or policy.elements_per_thread
    return min(policy.max_warps, next_power_of_2(max(1, elements // (32 * per_thread))))


def choose_blocks(xnumel: int, inner: int | None, columns: bool, policy: LaunchPolicy,
                  itemsize: int = 4) -> Blocks:
    """The block shape of a kernel over ``xnumel`` outer elements and, for a 2-D kernel, an inner
    extent of ``inner`` (the largest of its phases'). A 1-D kernel's threads take 16 bytes of its
    widest buffer (``itemsize``) each: 4 float32 or 2 float64 elements."""
    if inner is None:
        per_thread = max(1, policy.pointwise_elements_per_thread * 4 // max(itemsize, 1))
        scaled = policy.max_xblock * per_thread // policy.pointwise_elements_per_thread
        xblock = min(next_power_of_2(xnumel), scaled)
        return Blocks(xblock, 0, _warps(xblock, policy, per_thread))
    if columns:
        xblock = min(next_power_of_2(xnumel), policy.columns_xblock)
        # narrower column blocks until the programs cover the GPU twice (16 floats: 64 bytes,
        # two sectors of each row, stay the narrowest)
        while xblock > 16 and math.ceil(xnumel / xblock) < 2 * policy.processors:
            xblock //= 2
        step = policy.columns_step
        r0_block = min(next_power_of_2(inner), max(1, step // xblock))
        return Blocks(xblock, r0_block, _warps(xblock * r0_block, policy))
    fits = next_power_of_2(inner) <= policy.max_persistent
    r0_block = next_power_of_2(inner) if fits else policy.looped_r0_block
    xblock = 1 if r0_block >= policy.row_alone else \
        min(next_power_of_2(xnumel), max(1, policy.block_elements // r0_block))
    return Blocks(xblock, r0_block, _warps(xblock * r0_block, policy))


def spread_rows(blocks: Blocks, xnumel: int, policy: LaunchPolicy) -> Blocks:
    """Fewer rows a program, until the programs cover the GPU twice or each has one row: for a
    ``rows`` kernel whose reductions loop over axes they keep beyond the row (``rows.py``),
    where a program's rows are that much serial work each."""
    xblock = blocks.xblock
    while xblock > 1 and math.ceil(xnumel / xblock) < 2 * policy.processors:
        xblock //= 2
    if xblock == blocks.xblock:
        return blocks
    return Blocks(xblock, blocks.r0_block, _warps(xblock * blocks.r0_block, policy))


def tile_blocks(rows: int, cols: int, policy: LaunchPolicy) -> Blocks:
    """The tile of a ``tiled`` element-wise kernel: ``tile`` elements of the last axis (a
    power of two, at most its extent's) by as many rows as make ``tile_elements``."""
    r0_block = min(next_power_of_2(cols), policy.tile)
    xblock = min(next_power_of_2(rows), max(1, policy.tile_elements // r0_block))
    return Blocks(xblock, r0_block, _warps(xblock * r0_block, policy))


def column_split(kept: int, reduced: int, policy: LaunchPolicy) -> int:
    """Into how many slices a ``columns`` reduction over ``kept`` elements and ``reduced`` rows is
    split: 1 where its column blocks fill the GPU already, else the divisor of ``reduced``
    nearest to what makes ``split_programs`` programs, each slice ``split_rows`` long at least."""
    blocks = math.ceil(kept / policy.columns_xblock)
    if blocks >= policy.split_programs // 2 or reduced < 2 * policy.split_rows:
        return 1
    want = math.ceil(policy.split_programs / blocks)
    most = min(4 * want, reduced // policy.split_rows)
    found = [s for s in range(2, most + 1) if reduced % s == 0]
    return min(found, key=lambda s: abs(math.log(s / want))) if found else 1


def ragged_slice_rows(kept: int, policy: LaunchPolicy) -> int | None:
    """The rows of each slice of a ``columns`` reduction whose reduced extent is a size (a
    size-generic plan): ``split_rows``, so the slice count grows with the size as
    ``column_split``'s choice does for an exact one (the last slice masked); None where the
    kept elements' blocks fill the GPU already (``kept`` at its hint: a speed choice)."""
    if math.ceil(kept / policy.columns_xblock) >= policy.split_programs // 2:
        return None
    return policy.split_rows


def lookback_blocks(rows: int, extent: int, policy: LaunchPolicy) -> Blocks | None:
    """A scan's blocks across programs (one program per ``lookback_block`` elements of a row),
    or None where it scans per row: a row that fits one block (``lookback_block`` or a
    persistent one), or enough rows to fill the GPU."""
    if extent <= max(policy.max_persistent, policy.lookback_block) or rows >= policy.lookback_rows:
        return None
    r0_block = min(policy.lookback_block, next_power_of_2(extent))
    # 64 elements a thread: 8192-element blocks in 4 warps ran at 0.91 of a copy on an H200,
    # 8 warps at 0.87 (benchmarks/results/gpu-notes.md)
    return Blocks(1, r0_block, _warps(r0_block, policy, 8 * policy.elements_per_thread))


def candidates(xnumel: int, inner: int | None, kind: str, policy: LaunchPolicy,
               limit: int = 8, itemsize: int = 4) -> list[Blocks]:
    """The heuristic's choice first, then up to ``limit - 1`` alternatives around it: other block
    sizes and warps per block (what ``options={"autotune": True}`` times). ``kind``:
    ``pointwise``, ``rows``, ``kept`` (rows looping over kept axes), ``columns``, ``tiled`` or
    ``lookback`` (``generate.kernel_shapes``)."""
    columns = kind == "columns"
    if kind == "tiled":
        assert inner is not None
        found = [tile_blocks(xnumel, inner, policy)]
        for tile, elements in ((32, 1024), (32, 2048), (64, 2048), (128, 4096), (32, 4096), (128, 8192)):
            blocks = tile_blocks(xnumel, inner, LaunchPolicy(tile=tile, tile_elements=elements))
            if blocks not in found:
                found.append(blocks)
        return found[:limit]
    if kind == "lookback":
        assert inner is not None
        first = lookback_blocks(xnumel, inner, policy) or choose_blocks(xnumel, inner, False, policy)
        found = [first]
        for r0, warps in ((8192, 8), (16384, 8), (16384, 4), (4096, 4), (32768, 8), (4096, 2),
                          (16384, 16)):
            blocks = Blocks(1, r0, warps)
            if blocks not in found and r0 <= next_power_of_2(inner):
                found.append(blocks)
        return found[:limit]
    first = choose_blocks(xnumel, inner, columns, policy, itemsize)
    if kind == "kept":
        first = spread_rows(first, xnumel, policy)
    found = [first]

    def add(xblock: int, r0_block: int, warps: int) -> None:
        blocks = Blocks(max(1, xblock), r0_block, max(1, min(16, warps)))
        if blocks not in found and blocks.xblock <= max(next_power_of_2(xnumel), 1):
            found.append(blocks)
    if inner is None:
        for xblock, warps in ((first.xblock, first.num_warps * 2), (first.xblock * 2, first.num_warps),
                              (first.xblock * 2, first.num_warps * 2), (first.xblock // 2, first.num_warps),
                              (first.xblock, max(1, first.num_warps // 2)), (first.xblock * 4, 8),
                              (first.xblock // 4, max(1, first.num_warps // 2))):
            add(xblock, 0, warps)
    elif columns:
        for xblock, r0 in ((1024, 16), (512, 16), (256, 32), (2048, 4), (64, 128), (16, 512)):
            r0 = min(r0, next_power_of_2(inner))
            add(xblock, r0, _warps(xblock * r0, policy))
        add(first.xblock, first.r0_block, first.num_warps // 2)
    else:
        r0 = first.r0_block
        if first.xblock > 1:  # a row a program, fewer warps
            add(1, r0, _warps(r0, policy))
            add(1, r0, max(1, _warps(r0, policy) // 2))
        for xblock, warps in ((first.xblock, first.num_warps * 2), (first.xblock, first.num_warps // 2),
                              (first.xblock * 2, first.num_warps), (first.xblock * 2, first.num_warps * 2),
                              (max(1, first.xblock // 2), first.num_warps),
                              (max(1, first.xblock // 2), max(1, first.num_warps // 2))):
            add(xblock, r0, warps)
        if r0 < next_power_of_2(inner):  # looped: longer or shorter steps
            add(first.xblock, r0 * 2, first.num_warps)
            add(first.xblock, r0 // 2, first.num_warps)
    return found[:limit]
