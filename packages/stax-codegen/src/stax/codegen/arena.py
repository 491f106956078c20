"""Offsets of a plan's storage blocks in one arena (static memory planning; spec 003, 内存规划).

``plan_storage`` lets buffers whose lives do not overlap share a block, but only a block of the
same size: a 64 MiB buffer that dies early leaves its memory idle while a later 32 MiB and
16 MiB buffer get blocks of their own, and every block is held for the whole call. Here each
block gets a byte offset in one arena allocated once per call: two blocks may take the same
bytes when their live intervals (the first step writing any of their buffers to the last step
reading one) do not overlap. Offsets are chosen greedily by size (the largest block first, each
at the lowest offset that fits beside the blocks already placed that are live at the same
time), the common answer to a problem that is NP-hard in general.

Steps run one after another (a kernel's threads all belong to its step), so time is the step
index. Intervals are closed: a block read for the last time at step ``k`` and one first written
at step ``k`` overlap (the kernel reads the one while writing the other); writing in place over
a dying input is ``plan_storage``'s decision and puts both buffers in one block.

Blocks that hold a result (alive to the end of the call and after it) stay outside the arena: a
result viewing the arena would keep all of it alive in the caller's hands.
"""

from __future__ import annotations

from collections.abc import Sequence

#: offsets are multiples of this (a cache line and an AVX-512 vector); the arena's base is too
ALIGN = 64


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def place_blocks(sizes: Sequence[int], lives: dict[int, list[tuple[int, int]]]
                 ) -> tuple[dict[int, int], int]:
    """``(offsets, arena_bytes)`` for the blocks in ``lives`` (block -> the live intervals of
    its buffers, each ``(first step, last step)``, both inclusive) of byte sizes
    ``sizes[block]``: no two blocks live at one step share a byte."""
    placed: list[tuple[int, int, list[tuple[int, int]]]] = []  # (offset, end, lives)
    offsets: dict[int, int] = {}
    order = sorted(lives, key=lambda b: (-sizes[b], min(lives[b]), b))
    for block in order:
        size, mine = _aligned(max(1, sizes[block])), lives[block]
        busy = sorted((lo, hi) for lo, hi, theirs in placed if _meet(mine, theirs))
        best: tuple[int, int] | None = None  # (gap, offset): the smallest gap that fits
        cursor = 0
        for lo, hi in busy:
            if lo - cursor >= size and (best is None or lo - cursor < best[0]):
                best = (lo - cursor, cursor)
            cursor = max(cursor, hi)
        offset = best[1] if best is not None else cursor
        offsets[block] = offset
        placed.append((offset, offset + size, mine))
    return offsets, max((end for _, end, _ in placed), default=0)


def _meet(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    """Whether some step lies in an interval of ``a`` and in one of ``b``."""
    return any(f1 <= l2 and f2 <= l1 for f1, l1 in a for f2, l2 in b)
