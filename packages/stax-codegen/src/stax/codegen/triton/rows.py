"""What a ``rows`` kernel's programs split among them (``emit.KernelWriter.row_kernel``).

The CPU's row nest runs one x0 at a time and, inside it, each phase over the axes it keeps
beyond x0 and then its reduced ones (``cpu/nests.py``). A Triton program takes ``XBLOCK`` rows
at once, a row being one index of the *row axes*: x0 and every further leading axis all phases
keep alike, flattened into ``xindex`` as a plain nest's axes are (``x0 = xindex // n1``,
``x1 = xindex % n1``). So ``(x[:, None, :] - x[None, :, :]).sum(-1) ** 2`` is a reduction over
the last axis for each of ``n * n`` rows, then its square; a 3-D softmax is per (x0, x1).

An axis joins the row only while every read of what an earlier phase stored stays within what
the same row stored (``nesting.row_axes``, which the CPU's row nest follows too): a program
reads back only what it wrote. What a reduction phase keeps beyond the row axes (``y.sum(1)``
beside ``y.sum(2)``, rows of x0 only) it loops over (``PhaseShape.kept``).
"""

from __future__ import annotations

from dataclasses import dataclass

from stax.loop import Reduction

from ..nesting import Nest, row_axes


@dataclass(frozen=True)
class PhaseShape:
    """One phase of a ``rows`` kernel: its inner extent (along ``r0_index``) and the variables
    spelling it, the axes it keeps beyond the row (a reduction's; looped over) and where their
    variables start (``x{first}``...)."""

    inner: tuple[int, ...]
    variables: list[str]
    kept: tuple[int, ...]
    first: int


def kept_loops(nest: Nest) -> bool:
    """Whether a reduction phase of the ``rows`` nest ``nest`` loops over axes it keeps beyond
    the row."""
    count = row_axes(nest)
    return any(isinstance(phase[0].data, Reduction) and len(phase[0].ranges) > count
               for phase in nest.phases)


__all__ = ["PhaseShape", "kept_loops", "row_axes"]
