"""Rerolling: a run of region updates that an unrolled Python loop made becomes one loop again.

Capture unrolls ``for i in range(n): out[i, :] = x[i] * w + b`` into n assignments, and lowering
makes each a region update of the same buffer (``updates.py``): n kernels, n compilations (a
60-row fill took a second to compile) and n launches. Their bodies differ only in constants that
step by the same amount from one to the next (row ``i``'s offsets), so they are one kernel with
one more loop, outermost, over the iteration ``i``: the loop the program wrote.

An iteration may also compute values of its own before its assignment, in buffers of their own
(*satellites*): ``D[i, j] = np.sqrt(((A[:, i] - B[:, j]) ** 2).sum())`` makes a reduction, then
the update that reads it. A satellite that only its iteration reads, and that reads nothing the
run writes, does not depend on the order of the iterations: the satellites of all iterations are
one buffer with one more dimension, outermost (one reduction kernel over every ``(i, j)``),
computed before the rerolled update, which reads iteration ``k``'s value at ``k``.

A run qualifies when its iterations follow one another in the program, each update updating the
one before, with the same satellites and ranges, and their expressions are the same but for
affine constants (indices) and whole-number constants that grow by the same step at each
iteration. The rerolled update runs its new loop in order (``ComputedBuffer.ordered``) when an
iteration may read what an earlier one stored (``out[i] = max(out[i - 1], x[i])``) or a later
one overwrites an earlier one's element, as the program's own order does; otherwise (the
dependence test: no read of the updated buffer, a store index one-to-one over the loops) it is
a plain update, split across threads like any kernel (blocks on a diagonal, lagged columns).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from stax.ir import contiguous_strides

from .expr import Cast, Const, Expr, GuardedLoad, Index, IndirectLoad, Load, loads, postorder, rewrite
from .index import Affine, linear_index
from .ir import ComputedBuffer, ExternCall, Pointwise, Reduction, node_loads, rvar, xvar
from .order_bound_scalars import inline_order_bound_scalars

#: the fewest iterations worth one loop (two kernels cost about what one loop of two costs)
MIN_RUN = 3

Buffer = ComputedBuffer | ExternCall


#: the most assignments one iteration may make (``mean[i] = ...; std[i] = ...``)
MAX_UPDATES = 4


@dataclass(frozen=True)
class _Iteration:
    """One iteration of an unrolled loop: the buffers it computes for itself (satellites) and
    its updates, one per array it assigns into, in program order."""

    members: tuple[ComputedBuffer, ...]
    #: buffers among the members' that an update updates (a run's first iteration only: the
    #: array's first value, written to memory after the iteration's own values were computed)
    heads: tuple[ComputedBuffer, ...] = ()

    @property
    def span(self) -> int:
        return len(self.members) + len(self.heads)

    @property
    def satellites(self) -> tuple[ComputedBuffer, ...]:
        return tuple(m for m in self.members if m.updates is None)

    @property
    def updates(self) -> tuple[ComputedBuffer, ...]:
        return tuple(m for m in self.members if m.updates is not None)


#: each buffer's loads while this thread's reroll runs (by ``id``, the buffer kept: buffers
#: are immutable): every candidate run rescans its iterations' loads, and an unrolled loop of
#: 150 items spent 3 s walking them
_LOADS = threading.local()


def _loads(node: ComputedBuffer) -> list[Any]:
    cache = getattr(_LOADS, "found", None)
    if cache is None:
        cache = _LOADS.found = {}
    found = cache.get(id(node))
    if found is None or found[0] is not node:
        found = cache[id(node)] = (node, node_loads(node))
    return found[1]


def reroll_updates(buffers: Sequence[Buffer], kept: Iterable[str] = (),
                   checks: dict[str, str] | None = None) -> list[Buffer]:
    """``buffers`` with each run of similar iterations made one ordered update (and one buffer
    per satellite). ``kept``: buffers read from outside the program's buffers (its outputs),
    which are never a satellite. ``checks`` (the program's, updated in place): an iteration's
    check (a 0-d bool buffer nothing else reads: ``x[i] * 4`` of integer scalars must not
    overflow) is a satellite too, whose rerolled buffer one more reduction turns into one check."""
    checks = {} if checks is None else checks
    # values computed from the array an iteration updates, read by that update alone, inlined
    # into it: the iteration is its update, which rerolls (``order_bound_scalars.py``)
    out = inline_order_bound_scalars(buffers, _readers(buffers, kept, checks))
    try:
        while True:  # a nested loop: its inner loops first, then runs of those
            rolled = _reroll_once(out, _readers(out, kept, checks), checks)
            if len(rolled) == len(out):
                return rolled
            out = rolled
    finally:
        _LOADS.found = _LOADS.signatures = None


def _reroll_once(buffers: Sequence[Buffer], readers: dict[str, set[str]],
                 checks: dict[str, str]) -> list[Buffer]:
    out: list[Buffer] = []
    names = _Names(buffers)
    # an iteration holds an update: past the last one, nothing rerolls (a chain of functional
    # steps, ``y = y + dt * f(y)`` unrolled, would otherwise be scanned from every buffer)
    last = max((k for k, b in enumerate(buffers) if _updates(b)), default=-1)
    i = 0
    while i < len(buffers):
        if i > last:
            out += buffers[i:]
            break
        run, length = _run_from(buffers, i, readers)
        if len(run) >= MIN_RUN:
            out += _rerolled(run, checks, names, readers)
            i += length
        else:
            out.append(buffers[i])
            i += 1
    return out


#: the reader standing for the program's checks
CHECK = "?check"


def _readers(buffers: Sequence[Buffer], kept: Iterable[str], checks: dict[str, str]
             ) -> dict[str, set[str]]:
    """Each buffer's readers by name (``""`` for a read from outside the buffers, ``CHECK``
    for the program's checks)."""
    readers: dict[str, set[str]] = {name: {""} for name in kept}
    for name in checks:
        readers.setdefault(name, set()).add(CHECK)
    for b in buffers:
        names = b.reads if isinstance(b, ExternCall) else [r.buffer for r in _loads(b)]
        for name in names:
            readers.setdefault(name, set()).add(b.name)
    return readers


class _Names:
    """Fresh ``bufN`` names past every name in ``buffers``."""

    def __init__(self, buffers: Sequence[Buffer]) -> None:
        numbers = [int(b.name[3:]) for b in buffers if b.name[:3] == "buf" and b.name[3:].isdigit()]
        self.next = max(numbers, default=-1) + 1

    def fresh(self) -> str:
        self.next += 1
        return f"buf{self.next - 1}"


def _updates(b: Any) -> bool:
    """Whether ``b`` may be an iteration's update: a region update or a scatter (``x[i, 3] = v``
    with a traced ``i``: its stored offset computed), or a rerolled run of them (an inner
    loop)."""
    return isinstance(b, ComputedBuffer) and b.updates is not None and \
        isinstance(b.data, Pointwise)


def _satellite(b: Any) -> bool:
    """Whether ``b`` may be an iteration's own value: a plain kernel stored contiguously (its
    shape its loops', or those with length-1 axes added: a reduction kept with ``keepdims``)."""
    if not isinstance(b, ComputedBuffer) or b.updates is not None or b.store_offset is not None \
            or b.ordered or not isinstance(b.data, Pointwise | Reduction) or \
            [n for n in b.ranges if n != 1] != [n for n in b.shape if n != 1]:
        return False
    index = linear_index([Affine.var(xvar(d)) for d in range(len(b.ranges))],
                         contiguous_strides(b.ranges))
    return b.strides == contiguous_strides(b.shape) and b.store_index == index


def _iteration_at(buffers: Sequence[Buffer], start: int, count: int, first: bool = False
                  ) -> _Iteration | None:
    """The iteration whose first buffer is ``buffers[start]`` making ``count`` updates, with
    satellites among them: several arrays, and several regions of one array (``out[i, 0] = m;
    out[i, 1] = s``: the second update updates the first, a chain); the ``first`` of a run may
    also hold the arrays' first values (heads)."""
    members: list[ComputedBuffer] = []
    for b in buffers[start:]:
        if not (_updates(b) or _satellite(b)):
            return None
        members.append(b)
        it = _Iteration(tuple(members))
        if len(it.updates) == count:
            inside = {u.name for u in it.updates}
            entries = [u.updates for u in it.updates if u.updates not in inside]
            heads = tuple(m for m in members if m.name in entries)
            names = {m.name for m in members}
            if len(set(entries)) != len(entries) or (heads and not first) or any(
                    h.updates is not None or any(r.buffer in names for r in _loads(h))
                    for h in heads) or any(
                    sum(u.updates == v.name for u in it.updates) > 1 for v in it.updates):
                return None  # a head goes first when rerolled: it may read none of these
            return _Iteration(tuple(m for m in members if m not in heads), heads)
    return None


def _parents(it: _Iteration) -> list[int | None]:
    """For each update, the position of the update of the same iteration it updates (a chain
    of regions of one array), else None (it updates the array as the iteration found it)."""
    position = {u.name: j for j, u in enumerate(it.updates)}
    return [position.get(u.updates) for u in it.updates]


def _chain_ends(parents: list[int | None]) -> list[int]:
    """For each update, the last update of its chain (what the array is after the iteration)."""
    child = {p: j for j, p in enumerate(parents) if p is not None}
    ends = []
    for j in range(len(parents)):
        end = j
        while end in child:
            end = child[end]
        ends.append(end)
    return ends


def _follows(it: _Iteration, previous: _Iteration) -> bool:
    """Whether ``it`` makes the updates of ``previous`` again: the same chains, each starting
    from what the same array's chain left in ``previous``."""
    parents = _parents(it)
    if parents != _parents(previous):
        return False
    ends = _chain_ends(parents)
    return all(p is not None or u.updates == previous.updates[ends[j]].name
               for j, (u, p) in enumerate(zip(it.updates, parents)))


def _run_from(buffers: Sequence[Buffer], start: int, readers: dict[str, set[str]]
              ) -> tuple[list[_Iteration], int]:
    """The longest run of rerollable iterations starting at ``start`` (iterations of the fewest
    updates that make one), and how many buffers it spans."""
    for count in range(1, MAX_UPDATES + 1):
        run, length = _run_of(buffers, start, readers, count)
        if len(run) >= MIN_RUN:
            return run, length
    return [], 0


def _run_of(buffers: Sequence[Buffer], start: int, readers: dict[str, set[str]], count: int
            ) -> tuple[list[_Iteration], int]:
    first = _iteration_at(buffers, start, count, first=True)
    if first is None or not _own(first, readers):
        return [], 0
    run, length = [first], first.span
    step: list[int] | None = None
    signature = _signature(first)
    written = {name for u in first.updates for name in (u.updates, u.name)}
    while True:
        it = _iteration_at(buffers, start + length, count)
        if it is None or not _follows(it, run[-1]) or not _own(it, readers):
            break
        following = _signature(it)
        if following[0] != signature[0]:
            break
        deltas = [y - x for x, y in zip(signature[1], following[1])]
        if (step is not None and deltas != step) or \
                any(d for d, h in zip(deltas, signature[2]) if isinstance(h, _Fixed)):
            break
        written.update(u.name for u in it.updates)
        step, signature = deltas, following
        run.append(it)
        length += it.span
    if any(ld.buffer in written for it in run for s in it.satellites for ld in _loads(s)):
        return [], 0  # a satellite reads what the run writes: the order of iterations matters
    if len(run) >= MIN_RUN and _chained(first):  # each region of one array, over the run
        steps = {h.member: d for h, d in zip(signature[2], step or ()) if isinstance(h, _Store)}
        if not _apart(first, steps, len(run)):
            return [], 0
    return run, length


def _own(it: _Iteration, readers: dict[str, set[str]]) -> bool:
    """Whether only the iteration's later members read each of its satellites, affinely, and
    no update reads another's array (each array's iterations then run apart)."""
    names = {m.name for m in it.members}
    for s in it.satellites:
        found = readers.get(s.name, set())
        if not (found <= names or (found == {CHECK} and s.dtype == "bool" and not s.shape)):
            return False
    updated = {u.name for u in it.updates}
    if any(r.buffer in updated - {u.name} for u in it.updates for r in _loads(u)):
        return False
    if _chained(it) and not _chains_apart(it):
        return False
    return not any(isinstance(r, IndirectLoad) and r.buffer in names
                   for m in it.members for r in loads(m.data.body))


def _chained(it: _Iteration) -> bool:
    return any(p is not None for p in _parents(it))


def _chains_apart(it: _Iteration) -> bool:
    """Whether an iteration's chains may run one update at a time over every iteration (all
    the first updates, then all the second ones), as rerolling them does: no update reads the
    array it updates, and the regions of one chain's updates are the same affine map but for
    their constant, none reaching an element another reaches in any iteration (checked below,
    on the run's steps: ``_apart``)."""
    bases = {u.name for u in it.updates} | {u.updates for u in it.updates}
    return not any(r.buffer in bases for u in it.updates for r in _loads(u)) and \
        not any(u.store_offset is not None for u in it.updates)


def _apart(first: _Iteration, steps: dict[int, int], count: int) -> bool:
    """Whether the chained updates of a run of ``count`` iterations (``steps``: each update's
    store step from one iteration to the next, by its position among the members) never store
    to one element twice across the run: the same store terms, ranges and step, and each
    pair's constants apart (``_one_to_one`` of the store with one more variable, of extent 2,
    for the pair's gap)."""
    updates = [(j, u) for j, u in enumerate(first.members) if u.updates is not None]
    chains: dict[int, list[tuple[int, ComputedBuffer]]] = {}
    for (j, u), end in zip(updates, _chain_ends(_parents(first))):
        chains.setdefault(end, []).append((j, u))
    for chain in chains.values():
        for (ja, a), (jb, b) in itertools.combinations(chain, 2):
            if a.store_index.terms != b.store_index.terms or a.ranges != b.ranges or \
                    steps.get(ja) != steps.get(jb):
                return False
            ranks = len(a.ranges)
            index = a.store_index.substitute(
                {xvar(d): Affine.var(xvar(d + 1)) for d in range(ranks)})
            index = index + Affine.var(xvar(0)) * steps.get(ja, 0) + \
                Affine.var(xvar(ranks + 1)) * (b.store_index.const - a.store_index.const)
            if not _one_to_one(index, (count, *a.ranges, 2)):
                return False
    return True


@dataclass(frozen=True)
class _Fixed:
    """Holds a number that must not step: a satellite's store index or a read of a satellite
    (the iteration's own value, wherever the iteration is)."""


@dataclass(frozen=True)
class _Store:
    """Holds an update's store index constant (the update's position among the members)."""

    member: int


def _signature(it: _Iteration) -> tuple[list[Any], list[int], list[Any]]:
    """``_signature_of(it)``, once per iteration while this thread's reroll runs: each start
    tries iterations of several sizes, and a run's iterations are the next start's (400 rows
    of a recurrence that does not reroll: 3,200 signatures of a few hundred iterations)."""
    cache = getattr(_LOADS, "signatures", None)
    if cache is None:
        cache = _LOADS.signatures = {}
    key = tuple(id(m) for m in it.members)
    found = cache.get(key)
    if found is None or any(a is not b for a, b in zip(found[0], it.members)):
        found = cache[key] = (it.members, _signature_of(it))
    return found[1]


def _signature_of(it: _Iteration) -> tuple[list[Any], list[int], list[Any]]:
    """The shape of an iteration (every field but affine constants; satellites named by their
    position, the buffer an update updates named ``@``), its affine constants, and what holds
    each (a node of a body, or a marker), over each member's body DAG in operand-first order."""
    position = {s.name: i for i, s in enumerate(it.satellites)}
    shape: list[Any] = []
    numbers: list[int] = []
    holders: list[Any] = []
    for j, m in enumerate(it.members):
        data = m.data
        shape.append((m.shape, m.dtype, m.strides, m.ordered, type(data).__name__, data.ranges,
                      getattr(data, "reduction_ranges", None), getattr(data, "reduction_type",
                                                                       None),
                      m.store_index.terms))
        numbers.append(m.store_index.const)
        holders.append(_Store(j) if m.updates is not None else _Fixed())

        def named(buffer: str | None) -> Any:
            if buffer is not None and buffer == m.updates:
                return "@"
            return ("satellite", position[buffer]) if buffer in position else buffer
        order = list(postorder(data.body))
        if m.store_offset is not None:  # a scatter's offset steps like its body
            shape.append("offset")
            order += postorder(m.store_offset)
        seat = {id(e): i for i, e in enumerate(order)}
        for e in order:
            kids = tuple(seat[id(c)] for c in e.children())
            if isinstance(e, Load | Index):
                buffer = getattr(e, "buffer", None)
                shape.append((type(e).__name__, named(buffer), e.index.terms, e.dtype, kids))
                numbers.append(e.index.const)
                holders.append(_Fixed() if buffer in position else e)
            elif isinstance(e, Const) and _counted(e):  # ``i * x``: the loop index as a number
                shape.append(("count", e.dtype))
                numbers.append(int(e.value))
                holders.append(e)
            elif isinstance(e, Const):
                shape.append(("const", repr(e.value), e.dtype))
            else:
                shape.append((type(e).__name__, getattr(e, "op", None),
                              named(getattr(e, "buffer", None)), e.dtype, kids))
    return shape, numbers, holders


def _counted(e: Const) -> bool:
    """Whether a constant may step with the iteration: a whole number (no -0.0) that its dtype
    holds exactly, so ``Cast(Index(c0 + k * step))`` gives each iteration's constant bit for
    bit (a Python loop index multiplying or added to a value)."""
    v = e.value
    if isinstance(v, bool) or not isinstance(v, (int, float)) or e.dtype == "bool":
        return False
    if isinstance(v, float) and (not v.is_integer() or (v == 0 and str(v).startswith("-"))):
        return False
    limit = 2 ** 24 if e.dtype == "float32" else 2 ** 53 if e.dtype == "float64" else 2 ** 31
    return abs(v) < limit


def _rerolled(run: list[_Iteration], checks: dict[str, str], names: _Names,
              readers: dict[str, set[str]]) -> list[ComputedBuffer]:
    """Each satellite over ``(len(run),) + its shape`` and one update over ``(len(run),) +
    ranges``: the first iteration's expressions with every loop variable one further in, each
    affine constant stepping with the new ``x0``, and a satellite read at iteration ``x0``'s."""
    first, last = run[0], run[-1]
    _, numbers0, holders = _signature(first)
    deltas = [y - x for x, y in zip(numbers0, _signature(run[1])[1])]
    k = Affine.var(xvar(0))
    step = {id(h): d for h, d in zip(holders, deltas) if isinstance(h, Expr)}
    store_step = {h.member: d for h, d in zip(holders, deltas) if isinstance(h, _Store)}
    size = {s.name: math.prod(s.shape) for s in first.satellites}

    def moved(index: Affine, delta: int, ranks: int) -> Affine:
        shift = {xvar(d): Affine.var(xvar(d + 1)) for d in range(ranks)}
        return index.substitute(shift) + k * delta

    def body_of(m: ComputedBuffer, expr: Expr | None = None) -> Expr:
        ranks = len(m.ranges)

        def replace_node(e: Expr) -> Expr | None:
            if type(e) in (Load, GuardedLoad) and e.buffer in size:
                index = moved(e.index, size[e.buffer], ranks)
            elif type(e) in (Load, GuardedLoad, Index):
                index = moved(e.index, step[id(e)], ranks)
            elif type(e) is Const and step.get(id(e)):  # the constant of iteration k
                count = Index(k * step[id(e)] + int(e.value), "int64")
                return count if e.dtype == "int64" else Cast(count, e.dtype)
            else:
                return None
            if type(e) is Load:
                return Load(e.buffer, index, e.dtype)
            if type(e) is GuardedLoad:
                return GuardedLoad(e.buffer, index, e.dtype, rewrite(e.guard, replace_node))
            return Index(index, e.dtype)
        return rewrite(m.data.body if expr is None else expr, replace_node)

    out: list[ComputedBuffer] = list(first.heads)
    # a chain's later update updates the one before it: after rerolling, that one's whole run
    last_name = {u.name: v.name for u, v in zip(first.members, last.members)
                 if u.updates is not None}
    for j, s in enumerate(first.satellites):
        n = len(run)
        ranges = (n, *s.ranges)
        data = replace(s.data, ranges=ranges, body=body_of(s))
        store = moved(s.store_index, size[s.name], len(s.ranges))
        out.append(replace(s, shape=ranges, strides=(size[s.name], *contiguous_strides(s.ranges)),
                           store_index=store, data=data))
        if s.name in checks:  # every iteration's check: one, true where any iteration's is
            why = checks[s.name]
            for it in run:
                del checks[it.satellites[j].name]
            flags = out[-1]
            name = names.fresh()
            out.append(ComputedBuffer(name, (), "bool", (), Affine(), Reduction(
                (), (n,), "max", Load(flags.name, Affine.var(rvar(0)), "bool"))))
            checks[name] = why
    for j, u in enumerate(first.members):
        if u.updates is None:
            continue
        store = moved(u.store_index, store_step[j], len(u.ranges))
        ranges = (len(run), *u.ranges)
        body = body_of(u)
        # in order unless no iteration reads what another writes: it reads nothing of the
        # buffer it updates, and no two store to one element (a parallel loop computes the same)
        offset = None if u.store_offset is None else body_of(u, u.store_offset)
        ordered = u.ordered or offset is not None or \
            any(r.buffer == u.updates for r in loads(body)) or not _one_to_one(store, ranges)
        head = next((h for h in first.heads if h.name == u.updates), None)
        if head is not None and not ordered and readers.get(head.name, set()) <= {u.name} and \
                _covers(store, ranges, head):
            # every element written once, none read: the array's first value is never seen
            out.remove(head)
            out.append(replace(last.members[j], store_index=store, updates=None,
                               data=Pointwise(ranges, body)))
            continue
        out.append(replace(last.members[j], store_index=store,
                           updates=last_name.get(u.updates, u.updates),
                           ordered=ordered, data=Pointwise(ranges, body), store_offset=offset))
    return out


def _covers(store: Affine, ranges: tuple[int, ...], buffer: ComputedBuffer) -> bool:
    """Whether ``store`` (one-to-one over ``ranges``) reaches every element of ``buffer``, a
    dense row-major array: as many points as elements, all within it."""
    size = math.prod(buffer.shape)
    if buffer.strides != contiguous_strides(buffer.shape) or math.prod(ranges) != size or \
            size == 0:
        return False
    low, high = store.bounds({xvar(d): n for d, n in enumerate(ranges)})
    return low == 0 and high == size - 1


def _one_to_one(index: Affine, ranges: tuple[int, ...]) -> bool:
    """Whether ``index`` gives every point of ``ranges`` its own element: with the variables'
    coefficients sorted by magnitude, each exceeds the span of all smaller ones (a mixed-radix
    layout: strides of a block, rows of a matrix). Sufficient, not necessary."""
    extents = {xvar(d): n for d, n in enumerate(ranges)}
    if any(n == 0 for n in ranges):
        return True
    terms = sorted((abs(c), extents[v]) for v, c in index.terms if extents.get(v, 1) > 1)
    span = 0
    for c, n in terms:
        if c <= span:
            return False
        span += c * (n - 1)
    return len(terms) == sum(1 for n in ranges if n > 1)
