"""Step order and storage for the buffers a plan allocates (spec §7.5, and §7's ordering).

After fusion, a plan is a sequence of steps (kernels and NumPy calls) over buffers. Two decisions
remain, both about memory, neither about the CPU:

- the order: among the steps whose inputs are ready (and whose ordering edges are met: a random
  draw waits for the draw before it, ``Group.after``), run the one that leaves the least memory
  allocated afterwards (bytes it allocates minus bytes it lets go), keeping program order on
  ties — a greedy answer to an NP-complete problem (minimal peak memory over topological orders);
- the storage: a buffer lives from the step that writes it to the last step that reads it (to
  the end, for results). Buffers whose lives do not overlap share one block of the same size, and
  an element-wise kernel whose input dies at that kernel writes its output over it — in place —
  when size, dtype, layout and index agree and no other computation of that kernel reads it. A
  region update (``ComputedBuffer.updates``) always lives in the block of the buffer it updates.

Buffers NumPy produces (extern steps) and the caller's arrays are never reused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stax.ir.sizes import hint, same_size
from stax.loop import ComputedBuffer, ExternCall, IndirectLoad, Load, Pointwise, loads, xvar

from .arena import place_blocks
from .nesting import Nest, per_row_phases, row_axes, same_row
from .scheduler import Group

_END = 1 << 60


@dataclass
class StoragePlan:
    """``storage[buffer]`` is the index of the block a buffer lives in; ``sizes[i]`` its bytes;
    ``in_place[out] = in`` when a kernel writes ``out`` over ``in``."""

    storage: dict[str, int] = field(default_factory=dict)
    sizes: list[int] = field(default_factory=list)
    in_place: dict[str, str] = field(default_factory=dict)
    peak_bytes: int = 0          # the most bytes of planned buffers alive at once (at the
    #                              traced sizes, for a size-generic plan)
    unshared_bytes: int = 0      # what every buffer in its own block would take
    #: block -> byte offset in the call's one arena (``arena.py``), for the blocks placed there
    #: (none in a size-generic plan, none holding a result); the others are allocated alone
    offsets: dict[int, int] = field(default_factory=dict)
    arena_bytes: int = 0

    def shared(self, name: str) -> bool:
        index = self.storage.get(name)
        return index is not None and sum(1 for s in self.storage.values() if s == index) > 1


def _writes(group: Group) -> list[str]:
    return [n.name for n in group.nodes]


def order_steps(groups: Sequence[Group], sizes: dict[str, int], outputs: set[str]) -> list[Group]:
    """A topological order of ``groups`` that keeps live memory low (greedy list scheduling)."""
    produced_by = {name: g for g in groups for name in _writes(g)}
    users: dict[str, int] = {}
    for g in groups:
        for name in g.reads - set(_writes(g)):
            users[name] = users.get(name, 0) + 1
    pending = list(groups)
    position = {id(g): i for i, g in enumerate(groups)}  # pending keeps this order
    ordered: list[Group] = []
    done: set[int] = set()
    while pending:
        ready = [g for g in pending
                 if all(id(produced_by[r]) in done for r in g.needs if r in produced_by
                        and produced_by[r] is not g)]

        def growth(g: Group) -> int:
            allocated = sum(sizes.get(n, 0) for n in _writes(g))
            freed = sum(sizes.get(r, 0) for r in g.reads - set(_writes(g))
                        if r in produced_by and r not in outputs and users.get(r) == 1)
            return allocated - freed
        # (a memory choice, not a result's: sizes compared at their hints, no guard)
        best = min(ready, key=lambda g: (hint(growth(g)), position[id(g)]))
        pending.remove(best)
        ordered.append(best)
        done.add(id(best))
        for r in best.reads - set(_writes(best)):
            if r in users:
                users[r] -= 1
    return ordered


#: NumPy functions and methods whose result is always a new array (never a view of an operand)
NEW_ARRAY = frozenset({
    "numpy.sum", "numpy.mean", "numpy.prod", "numpy.max", "numpy.min", "numpy.amax", "numpy.amin",
    "numpy.cumsum", "numpy.cumprod", "numpy.argmax", "numpy.argmin", "numpy.var", "numpy.std",
    "numpy.median", "numpy.percentile", "numpy.quantile", "numpy.any", "numpy.all",
    "numpy.matmul", "numpy.dot", "numpy.einsum", "numpy.outer", "numpy.tensordot", "numpy.inner",
    "numpy.concatenate", "numpy.stack", "numpy.vstack", "numpy.hstack", "numpy.sort",
    "numpy.argsort", "numpy.unique", "numpy.where", "numpy.copy", "numpy.clip", "numpy.round",
    "numpy.around", "numpy.diff", "numpy.pad", "numpy.tile", "numpy.repeat", "numpy.nonzero",
    "operator.matmul", "numpy.linalg.norm", "numpy.linalg.inv", "numpy.linalg.solve",
})
NEW_ARRAY_METHODS = frozenset({"sum", "mean", "prod", "max", "min", "cumsum", "cumprod", "argmax",
                               "argmin", "var", "std", "any", "all", "copy", "round", "dot",
                               "clip", "flatten", "argsort"})


def may_return_a_view(call: ExternCall) -> bool:
    """False only when the call is known to return new memory (so its operands may die when it
    has run); ``out=`` and ``copy=False`` keep the conservative answer."""
    if "out" in call.kwargs or call.kwargs.get("copy") is False:
        return True
    if call.method:
        return call.target not in NEW_ARRAY_METHODS and not (
            call.target == "astype" and call.kwargs.get("copy", True))
    if call.target in NEW_ARRAY:
        return False
    module, _, name = call.target.rpartition(".")
    return not (module == "numpy" and isinstance(getattr(np, name, None), np.ufunc))


def _elementwise_over(out: ComputedBuffer, dead: ComputedBuffer, readers: dict[str, list[Any]],
                      loads_of: Callable[[ComputedBuffer], dict[str, list[Any]]],
                      order: list[Any]) -> bool:
    """Whether ``out`` can be written over ``dead`` inside its group's kernel (of one loop
    nest: ``_one_nest``; ``readers``: the group's nodes by the buffers they read; ``order``: the
    group's nodes, in the order the kernel computes them at each element): element-wise,
    ``dead`` read only at the element ``out`` writes, by ``out`` or by nodes computed before it
    there (a value held, not stored: the GELU derivative's terms read the incoming cotangent
    it then overwrites)."""
    if not isinstance(out.data, Pointwise) or not _same_layout(out, dead):
        return False
    users = readers.get(dead.name, [])
    if any(order.index(node) > order.index(out) for node in users):
        return False
    return not any(isinstance(ld, IndirectLoad) or ld.index != out.store_index
                   for node in users for ld in loads_of(node).get(dead.name, ()))


def _same_layout(out: ComputedBuffer, dead: ComputedBuffer | ExternCall) -> bool:
    """Whether ``out`` has ``dead``'s dtype, shape and strides (compared as expressions: a
    speed choice decides no size, issue 15)."""
    return out.dtype == dead.dtype and same_size(tuple(out.shape), tuple(dead.shape)) and \
        same_size(tuple(out.strides), tuple(dead.strides))


def _over_in_rows(out: ComputedBuffer, dead: ComputedBuffer | ExternCall, nest: Nest,
                  loads_of: Callable[[ComputedBuffer], dict[str, list[Any]]]) -> bool:
    """Whether the row kernel ``nest`` can write ``out`` over ``dead`` (an input that dies
    there): ``out`` element-wise over ``dead``'s layout in a phase run inside the rows, and
    ``dead`` read only before it in its row — by earlier phases within the row ``out`` writes
    (``nesting.row_axes``), or in ``out``'s phase at the element it writes by ``out`` or a node
    computed before it. A row is written only after every read of it; threads own whole rows."""
    if not isinstance(out.data, Pointwise) or out.updates is not None or \
            out.store_offset is not None or not _same_layout(out, dead):
        return False
    count = row_axes(nest)
    inside = len(nest.phases) - per_row_phases(nest, count)
    # (phase, position in it): a phase computes its nodes in order, each element in turn
    order = {n.name: (i, k) for i, phase in enumerate(nest.phases) for k, n in enumerate(phase)}
    mine, position = order[out.name]
    if mine >= inside:
        return False
    row = {xvar(i) for i in range(count)}
    for node in nest.nodes:
        for ld in loads_of(node).get(dead.name, ()):
            if type(ld) is not Load:  # not an indirect or guarded read
                return False
            at, k = order[node.name]
            if at == mine and k <= position and ld.index == out.store_index:
                continue
            if at < mine and same_row(ld.index, out.store_index, row):
                continue
            return False
    return True


def _one_nest(group: Group) -> bool:
    return len({(type(n.data), n.ranges) for n in group.nodes}) == 1


def plan_storage(groups: Sequence[Group], buffers: dict[str, ComputedBuffer | ExternCall],
                 sizes: dict[str, int], outputs: set[str],
                 unstored: frozenset[str] = frozenset(),
                 externs: frozenset[str] = frozenset(), rows_in_place: bool = False
                 ) -> StoragePlan:
    """Blocks for the buffers the plan allocates, steps given in execution order; ``unstored``
    buffers are computed but never written (values kept only for their floating-point events,
    ``KernelSpec.discard``): they get no block; the NumPy steps ``externs`` write their result
    into a block (``extern_results.py``), never over an operand; ``rows_in_place``: a row
    kernel may write an element-wise result over an input it reads only within the row
    (``_over_in_rows``; the CPU's row nest)."""
    last_use: dict[str, int] = {name: _END for name in outputs}
    for step, g in enumerate(groups):
        for name in g.reads:
            if name not in outputs:
                last_use[name] = max(last_use.get(name, -1), step)
    # NumPy may return a view of an operand (a reshape, a slice): the operand's block must then
    # live as long as the result does, transitively along chains of such calls
    # (and a kernel reading such a view reads the operand's memory under another name: no
    # result is written over a viewed buffer)
    viewed: set[str] = set()
    for g in reversed(groups):
        if g.extern is not None and may_return_a_view(g.extern):
            result = last_use.get(g.extern.name, -1)
            viewed |= g.reads
            for name in g.reads:
                if name not in outputs:
                    last_use[name] = max(last_use.get(name, -1), result)
    plan = StoragePlan()
    # each node's loads, walked once: a group's bodies are read for every dying input of every
    # node it writes, and a fused body can be deep (a while loop of 100 steps unrolled: 4.9 s
    # of a 6.2 s plan walked the same trees again and again)
    walked: dict[str, dict[str, list[Any]]] = {}

    def loads_of(node: ComputedBuffer) -> dict[str, list[Any]]:
        """``node``'s loads by the buffer they read."""
        found = walked.get(node.name)
        if found is None:
            found = walked[node.name] = {}
            for load in loads(node.data.body):
                found.setdefault(load.buffer, []).append(load)
        return found

    free: list[int] = []           # blocks no live buffer uses
    write_step: dict[str, int] = {}  # buffer -> the step writing it
    holder: dict[int, str] = {}    # block -> the buffer living in it now
    live_bytes = 0
    for step, g in enumerate(groups):
        written = [n for n in g.nodes if (isinstance(n, ComputedBuffer) and n.name not in unstored)
                   or (isinstance(n, ExternCall) and n.name in externs)]
        one_nest = bool(written) and g.extern is None and _one_nest(g)
        readers: dict[str, list[Any]] | None = None  # the group's nodes by what they read
        for node in written:
            if node.name not in last_use:
                last_use[node.name] = step  # written, never read: dies where it is made
            # in place over an input of this kernel that dies here
            dying = [buffers[r] for r in g.reads if r in plan.storage and last_use.get(r) == step
                     and holder.get(plan.storage[r]) == r
                     and (isinstance(buffers[r], ComputedBuffer) or r in externs)]
            if isinstance(node, ExternCall):
                over = None
            elif node.updates is not None:  # a region update: the old value's block, always
                # even where a NumPy step may have made a view of it: the update reads no such
                # step's result, the loop layer computes what it would read into a buffer of
                # its own first (``updates._reads_a_step_of``)
                over = buffers[node.updates]
                assert over.name in [d.name for d in dying], \
                    f"{node.name} updates {over.name}, which is read later or not its own"
            elif not (dying := [d for d in dying if d.name not in viewed]):
                over = None
            elif one_nest:
                if readers is None:
                    readers = {}
                    for reader in g.nodes:
                        for name in loads_of(reader):
                            readers.setdefault(name, []).append(reader)
                over = next((d for d in dying
                             if _elementwise_over(node, d, readers, loads_of, g.nodes)), None)
            elif rows_in_place and g.nest is not None and g.nest.kind == "rows":
                over = next((d for d in dying if _over_in_rows(node, d, g.nest, loads_of)), None)
            else:
                over = None
            if over is not None:
                block = plan.storage[over.name]
                plan.in_place[node.name] = over.name
            else:
                fits = [b for b in free if same_size(plan.sizes[b], sizes[node.name])]
                if fits:
                    block = fits[0]
                    free.remove(block)
                else:
                    block = len(plan.sizes)
                    plan.sizes.append(sizes[node.name])
                live_bytes += sizes[node.name]
            plan.storage[node.name] = block
            write_step[node.name] = step
            holder[block] = node.name
            plan.unshared_bytes += sizes[node.name]
        if hint(live_bytes) > hint(plan.peak_bytes):  # a report: at the traced sizes
            plan.peak_bytes = live_bytes
        for name, block in plan.storage.items():
            if last_use.get(name) == step and holder.get(block) == name:
                del holder[block]
                free.append(block)
                live_bytes -= sizes[name]
    _place_in_arena(plan, write_step, last_use)
    return plan


def _place_in_arena(plan: StoragePlan, written: dict[str, int], last_use: dict[str, int]) -> None:
    """Offsets in one arena for the blocks of known size that hold no result, when that takes
    fewer bytes than the blocks alone (``written``: the step writing each stored buffer)."""
    lives: dict[int, list[tuple[int, int]]] = {}
    ended: set[int] = set()  # blocks holding a buffer alive after the call (a result)
    for name, block in plan.storage.items():
        last = last_use.get(name, _END)
        if last >= _END or type(plan.sizes[block]) is not int:
            ended.add(block)
        lives.setdefault(block, []).append((written[name], last))
    lives = {b: v for b, v in lives.items() if b not in ended}
    if len(lives) < 2:
        return
    offsets, nbytes = place_blocks(plan.sizes, lives)
    if nbytes < sum(plan.sizes[b] for b in lives):
        plan.offsets, plan.arena_bytes = offsets, nbytes
