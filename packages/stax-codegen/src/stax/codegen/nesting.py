"""Loop nests: how the loops of one scheduled group are arranged (spec §6-8), chosen from the loop
IR by where memory runs, and recorded in the plan (``KernelPlan.nest``) so that every backend
follows the same choice instead of re-deriving it.

The kinds (``NEST_KINDS``):

- ``plain``: the group's loops in order, ``x0`` split across threads, one phase;
- ``rows``: ``x0`` split across threads and, inside each row, the group's phases in order: a later
  phase reads what an earlier one stored for the row while it is still in cache (row fusion, §7:
  softmax's max, sum and division); an expensive value a reduction phase computed may be kept for
  a later phase instead of recomputed (``shares``, ``rowshare.py``);
- ``columns``: reductions or a scan whose contiguous axis is kept (``x.sum(0)``, ``cumsum(axis=0)``
  of a C matrix), loops interchanged so the innermost runs along memory over the kept axis and the
  result buffer holds the running values; with several phases (column statistics: the mean, then
  the squared deviations from it, then the standard deviation), each phase over the thread's
  whole block of columns in turn, a later one reading what an earlier one stored (on a target
  with ``Target.phased_columns``; elsewhere such a group takes a row nest, one column a row);
- ``tiled``: element-wise work that reads an operand across its memory order (``x.T + y``), the
  last two loops in ``tile`` x ``tile`` blocks;
- ``scan``: a running sum or product along ``r0``, its total carried in a register.

``choose_nest`` decides (the scheduler calls it for every group); ``legal_kinds`` says which kinds
a group may take at all, and ``nest_as`` builds a given plan for a group (a document's choice,
replayed or edited), refusing an illegal one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stax.ir.sizes import hint
from stax.loop import (
    Affine,
    ComputedBuffer,
    Pointwise,
    Reduction,
    Scan,
    affine_loads,
    loads,
    rows_apart,
    rvar,
    xvar,
)

from .rowshare import Spill, share_row_values

NEST_KINDS = ("plain", "rows", "columns", "tiled", "scan")
TILE = 16  # measured on 2048^2 float32 transposes: 16 beats 32 and 64 (set conflicts of power-of-two rows)


@dataclass(frozen=True)
class NestPlan:
    """A loop nest as the ``stax.kernels/1`` document records it (names only).

    ``phases`` are the names of the buffers computed by each phase, in order (one phase unless
    ``rows``); ``shares`` the row values kept, as (reduction, buffer whose element it also stores);
    ``tile`` the block size of a ``tiled`` nest (else 0)."""

    kind: str
    phases: tuple[tuple[str, ...], ...]
    shares: tuple[tuple[str, str], ...] = ()
    tile: int = 0

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": self.kind}
        if self.kind == "rows" or len(self.phases) > 1:
            doc["phases"] = [list(phase) for phase in self.phases]
        if self.shares:
            doc["shares"] = [{"reduction": r, "buffer": b} for r, b in self.shares]
        if self.kind == "tiled":
            doc["tile"] = self.tile
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any], computes: Sequence[str]) -> NestPlan:
        """The plan of a kernel computing ``computes``: a nest of one phase does not list it."""
        phases = tuple(tuple(p) for p in doc["phases"]) if "phases" in doc else (tuple(computes),)
        return cls(doc["kind"], phases,
                   tuple((s["reduction"], s["buffer"]) for s in doc.get("shares", ())),
                   int(doc.get("tile", TILE)) if doc["kind"] == "tiled" else 0)


@dataclass(frozen=True)
class Nest:
    """A group's loop nest with its nodes as a backend emits them: the phases in order, each a
    tuple of nodes (a node that rereads a shared row value already rewritten to load it), and the
    stores a reduction adds for the values it shares (``rowshare.Spill``)."""

    kind: str
    phases: tuple[tuple[ComputedBuffer, ...], ...]
    shares: tuple[Spill, ...] = ()
    tile: int = 0

    @property
    def nodes(self) -> tuple[ComputedBuffer, ...]:
        return tuple(n for phase in self.phases for n in phase)

    @property
    def plan(self) -> NestPlan:
        return NestPlan(self.kind, tuple(tuple(n.name for n in phase) for phase in self.phases),
                        tuple((s.reduction, s.buffer) for s in self.shares), self.tile)


def is_arg(node: ComputedBuffer) -> bool:
    """An arg reduction (argmax, argmin): it carries the best value and its index."""
    return isinstance(node.data, Reduction) and node.data.reduction_type in ("argmax", "argmin")


def phases(nodes: Sequence[ComputedBuffer]) -> list[list[ComputedBuffer]]:
    """Consecutive nodes with the same loop nest form one phase, unless a node needs a reduction
    of the phase being built (it must wait for the reduction to finish)."""
    out: list[list[ComputedBuffer]] = []
    for node in nodes:
        current = out[-1] if out else None
        reads = {ld.buffer for ld in loads(node.data.body)}
        waits = current is not None and any(
            isinstance(n.data, Reduction) and n.name in reads for n in current)
        if current is not None and _phase_key(current[0]) == _phase_key(node) and not waits:
            current.append(node)
        else:
            out.append([node])
    return out


def _phase_key(node: ComputedBuffer) -> tuple[bool, tuple[int, ...], tuple[int, ...]]:
    return isinstance(node.data, Reduction), node.ranges, node.reduction_ranges


def transposed(nodes: Sequence[ComputedBuffer]) -> bool:
    """Element-wise nodes over at least two large axes where some load runs along memory on the
    second-to-last loop and strides on the last one: worth tiling."""
    first = nodes[0]
    if not isinstance(first.data, Pointwise) or len(first.ranges) < 2 or \
            min(hint(r) for r in first.ranges[-2:]) < 2 * TILE:  # speed only: at the hints
        return False
    a, c = xvar(len(first.ranges) - 2), xvar(len(first.ranges) - 1)
    for node in nodes:
        for ld in affine_loads(node.data.body):
            if abs(ld.index.coefficient(a)) == 1 and abs(ld.index.coefficient(c)) > 1:
                return True
        if abs(node.store_index.coefficient(a)) == 1 and abs(node.store_index.coefficient(c)) > 1:
            return True
    return False


def rows_outermost(nodes: Sequence[Any]) -> bool:
    """Whether a group is one ordered update run rows outermost, its iterations innermost and
    in order, rows split across threads (``stax.loop.rows_apart``): ``plain_order``, the
    plan's threads, the CPU emitter's unrolling."""
    return len(nodes) == 1 and isinstance(nodes[0], ComputedBuffer) and rows_apart(nodes[0])


def plain_order(nodes: Sequence[ComputedBuffer]) -> tuple[int, ...]:
    """The order of a plain nest's loops, outermost first (by their ``xvar`` numbers): C order,
    but an element-wise group whose first result is stored along memory on another loop than
    the last gets that loop innermost (a rerolled chain of column assignments, ``out[:, j] =
    x[j:j + n]``: the iterations' loop, over the columns, came first, and every store of the
    inner loop over the rows jumped a whole row, scalar: 12 columns of 8000 rows ran 75 us,
    slower than NumPy's twelve strided copies). Order does not matter to element-wise nodes
    whose loops may run in any order (not ``ordered``, no scatter). An ordered update whose
    iterations touch rows of their own (``stax.loop.interchange.rows_apart``: ``V[:, k] =
    V[:, k - 1] * x``) runs its rows outermost, its iterations in order within each row."""
    first = nodes[0]
    identity = tuple(range(len(first.ranges)))
    if rows_outermost(nodes):
        return (*identity[1:], 0)
    if len(first.ranges) < 2 or not all(isinstance(n.data, Pointwise) for n in nodes) or \
            any(n.ordered or n.store_offset is not None for n in nodes):
        return identity
    unit = [d for d in identity if abs(first.store_index.coefficient(xvar(d))) == 1]
    if not unit or unit[-1] == identity[-1] or \
            abs(first.store_index.coefficient(xvar(identity[-1]))) == 1:
        return identity
    inner = unit[-1]
    return tuple(d for d in identity if d != inner) + (inner,)


def columnwise(nodes: Sequence[ComputedBuffer]) -> bool:
    """Reductions that read memory contiguously along their last kept axis and with a stride
    along the reduced ones: their loops are better interchanged. With several phases, every
    node keeps the same axes and the element-wise ones run along memory there too."""
    first = nodes[0]
    if "columns" not in legal_kinds(nodes) or not isinstance(first.data, Reduction):
        return False
    last = xvar(len(first.ranges) - 1)
    # speed only, at the hints: two columns already gain (``A.T @ y`` with A (100000, 3) read
    # each row three times at stride 3, one column a thread: 304 us, 99 us as columns; NumPy's
    # BLAS 76); one column is the plain nest's strided reduction itself
    if hint(first.ranges[-1]) < 2:
        return False
    contiguous = strided = False
    for node in nodes:
        if abs(node.store_index.coefficient(last)) != 1:
            return False
        reduced = node.reduction_ranges if isinstance(node.data, Reduction) else ()
        for ld in affine_loads(node.data.body):
            step = abs(ld.index.coefficient(last))
            if step > 1:
                return False
            contiguous |= step == 1
            strided |= any(abs(ld.index.coefficient(rvar(j))) > 1 for j in range(len(reduced)))
    return contiguous and strided


def _phased_columns(nodes: Sequence[ComputedBuffer]) -> bool:
    """Whether a group of several phases may run as a columns nest: every node keeps the same
    axes (each phase covers the same block of columns), every reduction one the columns nest
    holds in its result buffer, and the first phase reduces (what the nest is for)."""
    first = nodes[0]
    return bool(first.ranges) and isinstance(first.data, Reduction) and \
        all(n.ranges == first.ranges and not n.ordered and n.store_offset is None and
            isinstance(n.data, Pointwise | Reduction) for n in nodes) and \
        all(_holds_accumulator(n) for n in nodes if isinstance(n.data, Reduction))


def _holds_accumulator(node: ComputedBuffer) -> bool:
    """The result buffer holds the accumulator: one value each (no arg reductions), in the
    accumulator's own type (no booleans: stored as bytes, accumulated as bits)."""
    return bool(node.reduction_ranges) and not is_arg(node) and node.dtype != "bool" and \
        node.data.body.dtype != "bool"


def columnwise_scan(node: ComputedBuffer) -> bool:
    """A scan along a strided axis whose last kept axis is contiguous (``cumsum(axis=0)`` of a C
    matrix): each step reads the previous step's output row, so the inner loop runs along memory."""
    ranges = node.ranges
    if not ranges:
        return False
    last = xvar(len(ranges) - 1)
    return abs(node.store_index.coefficient(last)) == 1 and \
        abs(node.store_index.coefficient(rvar(0))) > 1 and ranges[-1] >= 4


def legal_kinds(nodes: Sequence[ComputedBuffer]) -> tuple[str, ...]:
    """Every nest kind that computes ``nodes`` (a scheduled group) correctly, the plain or row
    nest first: what a plan may choose among."""
    first = nodes[0]
    if first.ordered or first.store_offset is not None:
        return ("plain",)  # its loops in order
    if isinstance(first.data, Scan):
        return ("scan", "columns") if first.ranges else ("scan",)
    if len(phases(nodes)) > 1:
        return ("rows", "columns") if _phased_columns(nodes) else ("rows",)
    if not first.ranges:
        return ("plain",)
    if isinstance(first.data, Reduction):
        return ("plain", "columns") if all(_holds_accumulator(n) for n in nodes) else ("plain",)
    return ("plain", "tiled") if len(first.ranges) >= 2 else ("plain",)


def choose_nest(nodes: Sequence[ComputedBuffer], phased_columns: bool = False) -> Nest:
    """The loop nest for one scheduled group (its nodes in order); ``phased_columns``: the
    target emits a columns nest of several phases (``Target.phased_columns``)."""
    first = nodes[0]
    if first.ordered or first.store_offset is not None:  # its loops in order
        return _build(nodes, "plain", share=False)
    if isinstance(first.data, Scan):
        return _build(nodes, "columns" if columnwise_scan(first) else "scan", share=False)
    if len(phases(nodes)) > 1:
        if phased_columns and columnwise(nodes):
            return _build(nodes, "columns", share=False)
        return _build(nodes, "rows", share=True)
    if columnwise(nodes):
        return _build(nodes, "columns", share=False)
    if first.ranges and transposed(nodes):
        return _build(nodes, "tiled", share=False)
    return _build(nodes, "plain", share=False)


def nest_as(nodes: Sequence[ComputedBuffer], plan: NestPlan) -> Nest:
    """The nest ``plan`` describes, for the group computing ``nodes``; ``ValueError`` when the
    plan is not one this group may take (another kind, other phases, other shared values)."""
    names = [n.name for n in nodes]
    allowed = legal_kinds(nodes)
    if plan.kind not in allowed:
        raise ValueError(f"a {plan.kind!r} nest cannot compute {', '.join(names)} "
                         f"(it may take {', '.join(allowed)})")
    if plan.kind == "tiled" and plan.tile < 1:
        raise ValueError(f"a tiled nest needs a tile of at least 1, not {plan.tile}")
    nest = _build(nodes, plan.kind, share=bool(plan.shares), tile=plan.tile)
    if nest.plan.phases != plan.phases:
        raise ValueError(f"the phases of {', '.join(names)} are {nest.plan.phases}, "
                         f"not {plan.phases}")
    if plan.shares and nest.plan.shares != plan.shares:
        raise ValueError(f"the row values {', '.join(names)} may share are {nest.plan.shares} "
                         f"(or none), not {plan.shares}")
    return nest


def _build(nodes: Sequence[ComputedBuffer], kind: str, share: bool, tile: int = TILE) -> Nest:
    if kind not in ("rows", "columns"):
        return Nest(kind, (tuple(nodes),), (), tile if kind == "tiled" else 0)
    split = phases(nodes)
    spills: list[Spill] = []
    if share:
        split, spills = share_row_values(split)
    return Nest(kind, tuple(tuple(p) for p in split), tuple(spills))


def per_row_phases(nest: Nest, count: int) -> int:
    """How many of the ``rows`` nest's last phases are element-wise over one value per row
    (``count`` row axes): the CPU runs them after the rows, over the thread's rows at once."""
    found = 0
    while found < len(nest.phases) - 1:
        phase = nest.phases[len(nest.phases) - 1 - found]
        if len(phase[0].ranges) != count or not all(isinstance(n.data, Pointwise) for n in phase):
            break
        found += 1
    return found


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
                if not isinstance(index, Affine) or not same_row(index, found[1], row):
                    return False
    return True


def same_row(index: Affine, store: Affine, row: set[str]) -> bool:
    """Whether a read at ``index`` touches only what a store at ``store`` writes for the same
    index of the ``row`` variables: the same dependence on them, the same offset, the rest of
    the address the same map of (renamed) variables."""
    if index.const != store.const or any(index.coefficient(v) != store.coefficient(v) for v in row):
        return False
    return sorted(c for v, c in index.terms if v not in row) == \
        sorted(c for v, c in store.terms if v not in row)
