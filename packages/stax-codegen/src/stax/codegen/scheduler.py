"""Scheduling: which loop-IR buffers share a kernel (spec §7).

Each ``ComputedBuffer`` starts as a scheduler node with its read and write sets. An extern call
with an effect (a random draw) also waits for the effectful call before it (``effect_order``): an
ordering edge that every order and every legality test here honours as if it were a read, so
draws run in program order. Pairs of groups are fused greedily by the bytes fusion saves, and
only when legal. Legality and score are kept
apart (STYLE.md habit 9): ``why_not_fusable`` returns the reason a pair cannot share a loop nest,
and every refusal is recorded so ``STAX_LOGS=kernels`` can say what was not fused and why. Each
group that becomes a kernel then gets its loop nest (``nesting.choose_nest``: plain, rows,
columns, tiled or scan, and the row values it shares), which the plan records and emitters follow.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stax.ir.sizes import Size, hint, product, same_size
from stax.loop import (
    Affine,
    ComputedBuffer,
    ExternCall,
    IndirectLoad,
    LoopProgram,
    Reduction,
    Scan,
    effect_order,
    node_loads,
    xvar,
)

from .group_order import Closure, Reach, path_through_others, topological
from .nesting import Nest, choose_nest, same_row


@dataclass
class Group:
    """Buffers computed by one kernel, in order."""

    nodes: list[ComputedBuffer | ExternCall]
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    #: buffers whose step must run first though this group does not read them (ordering edges)
    after: set[str] = field(default_factory=set)
    #: how its loops are arranged (``nesting.py``), set once fusion is done; None for an extern
    nest: Nest | None = None
    #: what pair tests ask of its nodes, kept up to the node count it was found at (a group
    #: only grows): an unrolled loop of 800 operations fused into one group spent 2 s walking
    #: the grown group at every pair test
    _index: _NodeIndex | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, node: ComputedBuffer | ExternCall, after: str | None = None) -> Group:
        if isinstance(node, ExternCall):
            return cls([node], set(node.reads), {node.name}, {after} if after else set())
        reads = {ld.buffer for ld in node_loads(node)}
        if node.updates is not None:  # a region update: the buffer it overwrites, whole
            reads.add(node.updates)
        return cls([node], reads, {node.name})

    @property
    def needs(self) -> set[str]:
        """What must be written before this group runs: what it reads, and its ordering edges."""
        return self.reads | self.after

    @property
    def extern(self) -> ExternCall | None:
        first = self.nodes[0]
        return first if isinstance(first, ExternCall) else None

    @property
    def domain(self) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
        first = self.nodes[0]
        if isinstance(first, ExternCall):
            return "extern", first.shape, ()
        if isinstance(first.data, Scan):  # a scan runs alone: its loop stores every step
            return f"scan {first.name}", first.ranges, first.reduction_ranges
        kind = "reduction" if isinstance(first.data, Reduction) else "pointwise"
        return kind, first.ranges, first.reduction_ranges

    @property
    def label(self) -> str:
        return "+".join(n.name for n in self.nodes)

    def indexed(self, memo: dict[str, Any]) -> _NodeIndex:
        """Its nodes' shared nest, producers by name and loads by buffer, brought up to date
        (``memo``: each node's loads, as ``_pair_reason`` keeps them)."""
        if self._index is None:
            self._index = _NodeIndex()
        index = self._index
        if index.count != len(self.nodes):
            index.add(self.nodes[index.count:], memo)
        return index


class _NodeIndex:
    """A group's nodes as pair tests read them, extended as the group grows."""

    def __init__(self) -> None:
        self.count = 0
        self.nest: Any = None  # the loop nest every node shares (``_nest``), else ``MIXED``
        self.scan: ComputedBuffer | None = None  # its first scan
        self.update: ComputedBuffer | None = None  # its first region update
        self.produced: dict[str, Any] = {}  # buffer name -> its node
        #: buffer -> (reader's position, load's position, reader, load)
        self.loads: dict[str, list[tuple[int, int, ComputedBuffer, Any]]] = {}
        #: buffer -> the loops its reductions walk it along (``_walks_of``), first read first
        self.walks: dict[str, set[Any]] = {}

    def add(self, nodes: list[ComputedBuffer | ExternCall], memo: dict[str, Any]) -> None:
        for node in nodes:
            nest = _nest(node)
            if self.count == 0:
                self.nest = nest
            elif self.nest is not MIXED and not same_size(nest, self.nest):
                self.nest = MIXED
            self.produced[node.name] = node
            if not isinstance(node, ExternCall):
                if self.scan is None and isinstance(node.data, Scan):
                    self.scan = node
                if self.update is None and node.updates is not None:
                    self.update = node
                for k, ld in enumerate(_loads_of(node, memo)):
                    self.loads.setdefault(ld.buffer, []).append((self.count, k, node, ld))
                if isinstance(node.data, Reduction):
                    for buffer, variable in _walks_of(node, memo):
                        self.walks.setdefault(buffer, set()).add(variable)
            self.count += 1


#: ``Group.uniform_nest`` of a group whose nodes run in different nests
MIXED = ("mixed",)


@dataclass(frozen=True)
class FusionDecision:
    producer: str
    consumer: str
    fused: bool
    reason: str
    bytes_saved: int


def why_not_fusable(a: Group, b: Group, groups: list[Group], reach: Reach | None = None,
                    local: str | bool | None = False) -> str | None:
    """``None`` when ``b`` (later) may join ``a``'s loop nest; otherwise the reason it may not.
    ``reach`` (the groups' dependences, built once per round) answers the acyclicity test
    without walking the groups for every pair; ``local``, when given (not False), is the pair's
    own reason (``_pair_reason``) found before."""
    if local is False:
        local = _pair_reason(a, b)
    if local is not None:
        return local
    if reach is not None and not reach.path_through_others(a, b):
        return None
    through = path_through_others(a, b, groups)
    if through is not None:
        return f"fusing would create a cycle through {through.label}"
    return None


def _pair_reason(a: Group, b: Group, memo: dict[str, Any] | None = None) -> str | None:
    """The reasons that depend on the two groups alone (not on the others). ``memo`` keeps each
    node's loads and reduction walks (by buffer name) between pairs."""
    memo = {} if memo is None else memo
    for group in (a, b):
        if group.extern is not None:
            return f"{group.label} is an extern call ({group.extern.target}) run by NumPy"
        index = group.indexed(memo)
        if index.scan is not None:
            return f"{group.label} is a scan (its loop stores every step in order)"
        if index.update is not None:
            return f"{index.update.name} updates {index.update.updates} in place (a region " \
                "update runs alone)"
    first, second = a.indexed(memo), b.indexed(memo)
    same_nest = same_size(a.domain, b.domain) and MIXED not in (first.nest, second.nest) and \
        same_size(first.nest, second.nest)  # as expressions: a speed choice
    if not same_nest:
        rows = {n.ranges[0] if n.ranges else None for n in (*a.nodes, *b.nodes)}
        if len(rows) != 1 or None in rows:
            return f"different iteration spaces {a.domain[1:]} and {b.domain[1:]}"
    reads = sorted(read for buffer in first.produced.keys() & second.loads.keys()
                   for read in second.loads[buffer])  # in b's order, as its nodes load
    for _, _, node, ld in reads:
        src = first.produced[ld.buffer]
        if isinstance(ld, IndirectLoad):
            return f"{node.name} reads {src.name} at computed positions"
        if _nest(src) != _nest(node):  # an earlier phase of the same row: done before
            if not _reads_own_row(_without_unit_loops(ld.index, node), src):
                return f"{node.name} reads {src.name} outside the row being computed"
            continue
        if isinstance(src.data, Reduction):
            if src.ranges and _reads_own_row(ld.index, src):
                continue  # the emitter starts a new phase of the row after the reduction
            return f"{node.name} reads reduction {src.name} inside the same loop nest"
        if ld.index != src.store_index:
            return f"{node.name} reads {src.name} at another element than the one computed"
    return _crossing_reads(a, b, memo)


def _loads_of(node: ComputedBuffer, memo: dict[str, Any]) -> list[Any]:
    found = memo.get(node.name)
    if found is None:
        found = memo[node.name] = node_loads(node)
    return found


def _innermost(index: Any, node: ComputedBuffer) -> str | None:
    """The loop variable along which ``index`` walks memory (coefficient +-1), innermost first."""
    loops = [xvar(d) for d in range(len(node.ranges))] + \
        [f"r{j}" for j in range(len(node.reduction_ranges))]
    for var in reversed(loops):
        coefficient = index.coefficient(var)
        if not isinstance(coefficient, Size) and abs(coefficient) == 1:  # (a size's: not 1)
            return var
    return None


def _crossing_reads(a: Group, b: Group, memo: dict[str, Any] | None = None) -> str | None:
    """A profitability refusal, kept with the legal ones so it is recorded: two groups that read
    one buffer along different loops of a shared nest (``x.sum(0)`` and ``x.sum(1)``) would
    make one of them walk memory with a stride; apart, each runs along memory."""
    memo = {} if memo is None else memo
    walks = {buffer: set(variables) for buffer, variables in a.indexed(memo).walks.items()}
    for buffer, variables in b.indexed(memo).walks.items():
        walks.setdefault(buffer, set()).update(variables)
    for buffer, variables in walks.items():
        if len(variables) > 1:
            return f"they read {buffer} along different loops (one would stride)"
    return None


def _walks_of(node: ComputedBuffer, memo: dict[str, Any]) -> list[tuple[str, str | None]]:
    """Each buffer a reduction reads, with the loop it walks that buffer along (an indirect read
    walks no loop of its own: None, as its zero index did before)."""
    key = f"walks:{node.name}"
    found = memo.get(key)
    if found is None:
        found = memo[key] = [(ld.buffer, None if isinstance(ld, IndirectLoad)
                              else _innermost(ld.index, node)) for ld in _loads_of(node, memo)]
    return found


def _nest(node: ComputedBuffer | ExternCall) -> Any:
    if isinstance(node, ExternCall):
        return ("extern", node.name)
    if isinstance(node.data, Scan):
        return ("scan", node.name)
    return isinstance(node.data, Reduction), node.ranges, node.reduction_ranges


def _without_unit_loops(index: Any, node: ComputedBuffer) -> Any:
    """``index`` without the terms of ``node``'s loops of extent 1 beyond the row (x0) (their
    variable is always 0: a keepdims axis, ``(64, 1)``), which say nothing of where it reads."""
    units = {xvar(d) for d, n in enumerate(node.ranges) if d and n == 1}
    if not units or not any(v in units for v, _ in index.terms):
        return index
    return Affine(tuple((v, c) for v, c in index.terms if v not in units), index.const)


def _reads_own_row(index: Any, src: ComputedBuffer) -> bool:
    """Whether a read at ``index`` only touches what ``src`` stores for the same x0 (row): the
    same dependence on x0, and the rest of the address the same affine map of loop variables of
    the same extents (renamed; ``nesting.same_row`` with x0 the row)."""
    return same_row(index, _without_unit_loops(src.store_index, src), {xvar(0)})


def bytes_saved(a: Group, b: Group, sizes: dict[str, int]) -> int:
    """Bytes one fused kernel avoids moving: shared inputs read once, a's outputs not reread."""
    return sum(sizes.get(name, 0) for name in (a.reads | a.writes) & b.reads)


#: up to this many groups, fusion rescans every pair each round (decisions in scan order, as the
#: documents and fixtures record them); beyond it, candidate pairs wait in a heap by bytes saved
#: (an unrolled Python loop makes hundreds of groups: the rescans made that cubic, minutes)
EXACT_SCAN_LIMIT = 64

PairKey = tuple[int, int, int, int]
#: pairs the heap's fusion weighs at most: the most bytes first, so what is left when it runs
#: out saves the least. The corpus's largest unrolled loop weighs 400; a Python loop of 150
#: items each updating a histogram at a position read from the data (no item fusing with
#: another) weighed 200,000 for 14 s before the plan was refused for its 451 kernels
PAIR_BUDGET = 20_000
#: groups apart in program order within which every pair is a candidate at first (beyond it,
#: only a producer and its consumers are): the corpus's unrolled loops fuse within a few dozen
PAIR_WINDOW = 128


def schedule(program: LoopProgram, phased_columns: bool = False
             ) -> tuple[list[Group], list[FusionDecision]]:
    sizes = {b.name: hint(product(b.shape)) * np.dtype(b.dtype).itemsize  # bytes, at the hints
             for b in (*program.inputs, *program.buffers)}
    edges = effect_order(program.buffers)
    groups = [Group.of(node, edges.get(node.name)) for node in program.buffers]
    _after_old_readers(groups)
    # (an ordering edge may point at a reader later in program order: a read of a region the
    # update leaves untouched reads the old buffer. Fusion's dependences are built over groups
    # in an order where producers come first: an IndexError sent such programs to NumPy)
    groups = topological(groups)
    fuse = _fuse_by_rounds if len(groups) <= EXACT_SCAN_LIMIT else _fuse_by_heap
    groups, decisions = fuse(groups, sizes)
    for group in groups:
        if group.extern is None:
            group.nest = choose_nest(group.nodes, phased_columns)
    return groups, decisions


def _after_old_readers(groups: list[Group]) -> None:
    """A region update writes over the buffer it updates (``ComputedBuffer.updates``): every
    other reader of that buffer's old value runs first, an ordering edge, so fusion cannot move
    one after it (two overflow checks of ``s[1] = s[0] + x[0]; s[2] = s[1] + x[1]`` on NumPy
    integer scalars, fused, put the first check after the update of ``s`` it reads before)."""
    readers: dict[str, set[str]] = {}
    for group in groups:
        for name in group.reads:
            readers.setdefault(name, set()).add(group.nodes[0].name)
    for group in groups:
        node = group.nodes[0]
        if isinstance(node, ComputedBuffer) and node.updates is not None:
            group.after |= readers.get(node.updates, set()) - {node.name}


def _key(a: Group, b: Group) -> PairKey:
    """A pair's state: a group only grows, so its identity and size name what it holds (merged
    groups are kept alive by the caller, so no identity is reused)."""
    return id(a), len(a.nodes), id(b), len(b.nodes)


def _join(a: Group, b: Group, saved: int, decisions: list[FusionDecision]) -> None:
    """``b``'s nodes join ``a``'s loop nest, after them."""
    decisions.append(FusionDecision(a.label, b.label, True, "same loop nest", saved))
    a.nodes += b.nodes
    a.reads |= b.reads
    a.writes |= b.writes
    a.after |= b.after


def _merge(groups: list[Group], a: Group, b: Group, saved: int,
           decisions: list[FusionDecision]) -> list[Group]:
    _join(a, b, saved, decisions)
    groups.remove(b)
    return topological(groups)


def _fuse_by_rounds(groups: list[Group], sizes: dict[str, int]
                    ) -> tuple[list[Group], list[FusionDecision]]:
    """Each round, the fusable pair that saves the most bytes (the first in scan order on a tie)
    joins; refusals are recorded as the scan meets them. What depends on the pair alone (bytes
    saved, its own reasons, a settled refusal) is kept by the pair's state between rounds."""
    decisions: list[FusionDecision] = []
    settled: set[PairKey] = set()
    saved_by_pair: dict[PairKey, int] = {}
    local_by_pair: dict[PairKey, str | None] = {}
    merged: list[Group] = []
    memo: dict[str, Any] = {}
    while True:
        best: tuple[int, Group, Group] | None = None
        reach = Reach(groups)
        for i, a in enumerate(groups):
            for b in groups[i + 1:]:
                key = _key(a, b)
                if key in settled:
                    continue
                saved = saved_by_pair.get(key)
                if saved is None:
                    saved = saved_by_pair[key] = bytes_saved(a, b, sizes)
                if saved == 0:
                    settled.add(key)
                    continue
                if key not in local_by_pair:
                    local_by_pair[key] = _pair_reason(a, b, memo)
                reason = why_not_fusable(a, b, groups, reach, local_by_pair[key])
                if reason is not None:
                    settled.add(key)
                    decisions.append(FusionDecision(a.label, b.label, False, reason, saved))
                elif best is None or saved > best[0]:
                    best = (saved, a, b)
        if best is None:
            return groups, decisions
        saved, a, b = best
        merged.append(b)
        groups = _merge(groups, a, b, saved, decisions)


def _fuse_by_heap(groups: list[Group], sizes: dict[str, int]
                  ) -> tuple[list[Group], list[FusionDecision]]:
    """The same greedy choice (most bytes saved first) for many groups: every pair that saves
    bytes waits in a heap; a popped pair is checked against the groups as they are then (a stale
    entry, whose group has grown, is dropped: the grown group's pairs were pushed anew), refused
    or joined. Each join pushes the grown group's pairs, so the work is about the number of
    pairs, not pairs times rounds."""
    decisions: list[FusionDecision] = []
    merged: list[Group] = []
    memo: dict[str, Any] = {}
    heap: list[tuple[int, int, PairKey, Group, Group]] = []
    order = itertools.count()
    # who touches each buffer: a pair saves bytes only through a buffer both touch (one of
    # them reading it), so a grown group's new pairs are found without trying every group
    touching: dict[str, dict[int, Group]] = {}
    for g in groups:
        for name in g.reads | g.writes:
            touching.setdefault(name, {})[id(g)] = g

    def push(a: Group, b: Group) -> None:
        saved = bytes_saved(a, b, sizes) or bytes_saved(b, a, sizes)
        if saved:
            heapq.heappush(heap, (-saved, next(order), _key(a, b), a, b))

    # the pairs that may fuse: near ones in program order, and each producer with its later
    # consumers (an unrolled loop's hundreds of groups all touching one array made every pair
    # a candidate: 300,000 pushes)
    readers: dict[str, list[int]] = {}
    for j, g in enumerate(groups):
        for name in g.reads:
            readers.setdefault(name, []).append(j)
    for i, a in enumerate(groups):
        near = set(range(i + 1, min(len(groups), i + 1 + PAIR_WINDOW)))
        near.update(j for name in a.writes for j in readers.get(name, ()) if j > i)
        for j in sorted(near):
            push(a, groups[j])
    closure = Closure(groups)
    budget = PAIR_BUDGET
    while heap and budget:
        _, _, key, a, b = heapq.heappop(heap)
        if key != _key(a, b) or id(a) not in closure.index or id(b) not in closure.index:
            continue  # a group of it has grown or joined another since
        budget -= 1
        if closure.first(b, a):
            a, b = b, a  # the later group joins the earlier one's loop nest
        saved = bytes_saved(a, b, sizes)
        reason = _pair_reason(a, b, memo) if saved else "nothing to save"
        if reason is None:
            through = closure.through(a, b)
            reason = None if through is None else \
                f"fusing would create a cycle through {through.label}"
        if reason is not None:
            if saved:
                decisions.append(FusionDecision(a.label, b.label, False, reason, saved))
            continue
        merged.append(b)
        for name in b.reads | b.writes:
            users = touching[name]
            users.pop(id(b), None)
            users[id(a)] = a
        _join(a, b, saved, decisions)
        closure.join(a, b)
        near = {id(g): g for name in a.reads | a.writes for g in touching[name].values()}
        for g in near.values():
            if g is not a:
                push(g, a)
    return topological(closure.groups()), decisions
