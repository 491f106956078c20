"""What a ``rows`` kernel's programs split among them (``emit.KernelWriter.row_kernel``).

The CPU's row nest runs one x0 at a time and, inside it, each phase over the axes it keeps
beyond x0 and then its reduced ones (``cpu/nests.py``). A Triton program takes ``XBLOCK`` rows
at once, a row being one index of the *row axes*: x0 and every further leading axis all phases
keep alike, flattened into ``xindex`` as a plain nest's axes are (``x0 = xindex // n1``,
``x1 = xindex % n1``). So ``(x[:, None, :] - x[None, :, :]).sum(-1) ** 2`` is a reduction over
the last axis for each of ``n * n`` rows, then its square; a 3-D softmax is per (x0, x1).

An axis joins the row only while every read of what an earlier phase stored stays within what
the same row stored (the same dependence on the row axes, the same offset, the rest of the
address the same map: the scheduler's own test for x0, ``scheduler._reads_own_row``): a
program reads back only what it wrote. What a reduction phase keeps beyond the row axes (``y.sum(1)``
beside ``y.sum(2)``, rows of x0 only) it loops over (``PhaseShape.kept``).
"""

from __future__ import annotations

from dataclasses import dataclass

from stax.loop import Affine, Reduction, loads, xvar

from ..nesting import Nest


@dataclass(frozen=True)
class PhaseShape:
    """One phase of a ``rows`` kernel: its inner extent (along ``r0_index``) and the variables
    spelling it, the axes it keeps beyond the row (a reduction's; looped over) and where their
    variables start (``x{first}``...)."""

    inner: tuple[int, ...]
    variables: list[str]
    kept: tuple[int, ...]
    first: int


def row_axes(nest: Nest) -> int:
    """How many leading axes make a row of the ``rows`` nest ``nest`` (1: x0 alone)."""
    ranges = [phase[0].ranges for phase in nest.phases]
    common = 0
    while common < min(len(r) for r in ranges) and len({r[common] for r in ranges}) == 1:
        common += 1
    for count in range(common, 1, -1):
        if _reads_own_rows(nest, count):
            return count
    return 1


def kept_loops(nest: Nest) -> bool:
    """Whether a reduction phase of the ``rows`` nest ``nest`` loops over axes it keeps beyond
    the row."""
    count = row_axes(nest)
    return any(isinstance(phase[0].data, Reduction) and len(phase[0].ranges) > count
               for phase in nest.phases)


def _reads_own_rows(nest: Nest, count: int) -> bool:
    """Whether every read of a buffer an earlier phase of ``nest`` stores touches only what that
    phase stores for the same index of the first ``count`` axes."""
    stores: dict[str, tuple[int, Affine]] = {}
    where = {}
    for i, phase in enumerate(nest.phases):
        for node in phase:
            stores[node.name] = (i, node.store_index)
            where[node.name] = i
    for spill in nest.shares:
        stores[spill.buffer] = (where[spill.reduction], spill.index)
    row = {xvar(i) for i in range(count)}
    for i, phase in enumerate(nest.phases):
        for node in phase:
            for ld in loads(node.data.body):
                found = stores.get(ld.buffer)
                if found is None or found[0] >= i:
                    continue
                index = getattr(ld, "index", None)
                if not isinstance(index, Affine) or not _same_row(index, found[1], row):
                    return False
    return True


def _same_row(index: Affine, store: Affine, row: set[str]) -> bool:
    if index.const != store.const or any(index.coefficient(v) != store.coefficient(v) for v in row):
        return False
    return sorted(c for v, c in index.terms if v not in row) == \
        sorted(c for v, c in store.terms if v not in row)


__all__ = ["PhaseShape", "kept_loops", "row_axes"]
