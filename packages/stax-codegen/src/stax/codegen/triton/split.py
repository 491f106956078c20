"""Column reductions split across programs (issue 12 item 2): a reduction whose kept axis runs
along memory (a ``columns`` nest, ``x.sum(0)``) over few kept elements and many reduced ones
gives too few programs to keep the GPU's memory busy (64 column blocks of (16384, 4096) on 132
processors). Such a reduction is rewritten in the loop IR, before planning, as two:

- ``<name>_part``: the reduction of ``S`` slices of the outermost reduced axis, each kept element
  of each slice (``(S, kept...)``, the slice outermost), a ``columns`` nest with ``S`` times the
  programs, each reading wide rows;
- ``<name>``: the same reduction kind over the ``S`` partial results.

Sum, product, max and min (and bool any/all) combine partial results with themselves: max and
min keep NumPy's NaN rule (a NaN in any slice is a NaN in its partial result), integers are
exact, and a float sum or product is a tree of partial sums, within the rounding bound of spec
§13. ``S`` divides the reduced axis (no ragged slice); argmax/argmin are not split.

A size-generic plan (issue 15) whose reduced extent is a size ``n`` cannot take a divisor of
it: its slices are ``launch.ragged_slice_rows`` rows long, ``ceil(n / rows)`` of them (a size
expression: the slice count grows with ``n`` as an exact plan's does), and the last slice's
rows past ``n`` are masked (their loads guarded, their value the reduction's identity).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from stax.ir.ops import reduction_identity
from stax.ir.sizes import Size, hint
from stax.loop import (
    Affine,
    Binary,
    ComputedBuffer,
    Const,
    Expr,
    Index,
    Load,
    LoopProgram,
    Reduction,
    Select,
    loads,
    rewrite,
    rvar,
    xvar,
)
from stax.loop.context import INDEX, guarded

from ..nesting import NestPlan
from ..program_plan import plan_program
from .launch import LaunchPolicy, column_split, ragged_slice_rows

#: reductions whose partial results combine by the same reduction
SPLITS = frozenset({"sum", "prod", "max", "min"})


def split_columns(program: LoopProgram, policy: LaunchPolicy,
                  nests: Mapping[tuple[str, ...], NestPlan] | None = None) -> LoopProgram:
    """``program`` with every ``columns`` reduction that ``launch.column_split`` splits made two
    reductions (unchanged when none is, or when the caller chose the nests)."""
    if nests:
        return program
    plan = plan_program(program)
    chosen: dict[str, tuple[Any, int]] = {}  # buffer -> (slices, rows of each slice)
    for group in plan.groups:
        if group.nest is None or group.nest.kind != "columns":
            continue
        for node in group.nodes:
            if isinstance(node, ComputedBuffer) and isinstance(node.data, Reduction) \
                    and node.data.reduction_type in SPLITS:
                kept, reduced = hint(math.prod(node.ranges)), node.data.reduction_ranges[0]
                if isinstance(reduced, Size):  # slices of a fixed length, as many as needed
                    rows = ragged_slice_rows(kept, policy)
                    if rows is not None and _plain_loads(node.data.body):
                        chosen[node.name] = ((reduced + rows - 1) // rows, rows)
                    continue
                slices = column_split(kept, reduced, policy)
                if slices > 1:
                    chosen[node.name] = (slices, reduced // slices)
    if not chosen:
        return program
    taken = {b.name for b in (*program.inputs, *program.buffers)}
    buffers: list = []
    for b in program.buffers:
        if b.name in chosen:
            buffers.extend(_split(b, *chosen[b.name], taken))  # type: ignore[arg-type]
        else:
            buffers.append(b)
    return dataclasses.replace(program, buffers=buffers)


def _split(node: ComputedBuffer, slices: Any, length: int, taken: set[str]
           ) -> tuple[ComputedBuffer, ComputedBuffer]:
    """``node`` reduced in ``slices`` slices of ``length`` rows: exactly the reduced extent, or,
    where that is a size, past it in the last slice (those rows masked)."""
    data = node.data
    assert isinstance(data, Reduction)
    kept = tuple(node.ranges)
    reduced = data.reduction_ranges[0]
    # the partial reduction: x0 the slice, x1... the kept axes, r0 within the slice
    mapping: dict[str, int | Affine] = {xvar(i): Affine.var(xvar(i + 1)) for i in range(len(kept))}
    row = Affine.var(xvar(0)) * length + Affine.var(rvar(0))
    mapping[rvar(0)] = row
    body = _substitute(data.body, mapping)
    if isinstance(reduced, Size):  # rows past the end: not read, the reduction's identity
        inside = Binary("lt", Index(row + Affine.of(reduced * -1), INDEX), Const(0, INDEX), "bool")
        body = Select(inside, guarded(body, inside),
                      Const(reduction_identity(data.reduction_type, body.dtype), body.dtype), body.dtype)
    name = f"{node.name}_part"
    while name in taken:
        name += "_"
    taken.add(name)
    shape = (slices, *kept)
    strides = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
    flat = sum((Affine.var(xvar(i)) * s for i, s in enumerate(strides)), Affine())
    dtype = data.body.dtype
    part = ComputedBuffer(name, shape, dtype, strides, flat,
                          Reduction(shape, (length, *data.reduction_ranges[1:]), data.reduction_type,
                                    body))
    # the final reduction over the slices: r0 the slice, x... the kept axes
    inner = math.prod(kept)
    kept_flat = sum((Affine.var(xvar(i)) * strides[i + 1] for i in range(len(kept))), Affine())
    read = Load(name, Affine.var(rvar(0)) * inner + kept_flat, dtype)
    final = dataclasses.replace(node, data=Reduction(kept, (slices,), data.reduction_type, read))
    return part, final


def _plain_loads(body: Expr) -> bool:
    """Whether every read of ``body`` is a plain affine load (one a guard can mask)."""
    return all(type(e) is Load for e in loads(body))


def _substitute(expr: Expr, mapping: Mapping[str, int | Affine]) -> Expr:
    """``expr`` with its loop variables replaced (every affine index: loads, guarded loads and
    their guards, index values, computed offsets)."""
    def replace(e: Expr) -> Expr | None:
        if isinstance(e, Load | Index):
            children = tuple(_substitute(c, mapping) for c in e.children())
            moved = dataclasses.replace(e, index=e.index.substitute(mapping))
            return moved.with_children(children) if children else moved
        return None
    return rewrite(expr, replace)


__all__ = ["SPLITS", "split_columns"]
