"""What the forward keeps for the backward: a min-cut over the joint program (issue 16, §5.4).

The backward reads forward values. Each is either kept from the forward (its buffer lives until
the backward's last read: memory) or recomputed by the backward from values that are kept (its
computation runs again, fused into the backward's kernels: time). The choice is a minimum cut
of a flow network over the forward values the backward needs, directly or to recompute them:

- each value ``v`` is two vertices ``v.in -> v.out`` joined by an edge of capacity its bytes
  (cutting it keeps ``v``); an input or a result of the program costs nothing to keep (it is
  alive anyway), so its edge has capacity 0;
- an edge ``u.out -> v.in`` of infinite capacity for each operand ``u`` of ``v``;
- the source feeds every input, and every value that cannot be recomputed in one element-wise
  pass (anything but element-wise ops, views, casts and constants: a matrix product, a
  reduction, a NumPy step), or that a NumPy step of the backward reads (materialized there
  anyway), with infinite capacity: such a value is kept, or the cut lies below it;
- the source feeds a transcendental function's value (``exp``, ``tanh``: ``CostClass.FUNCTION``)
  with ``RECOMPUTE_FUNCTION`` times its bytes: recomputing it is allowed at that price, paid
  in time rather than memory. Softmax's ``exp`` (64 MiB in a transformer block's attention),
  kept, cost as much memory as the scores it is computed from, which the backward keeps anyway
  (``max``'s rule reads them); recomputed, the backward's kernel reads the scores instead of the
  kept ``exp`` (the same traffic) and computes ``exp`` again;
- every value the backward reads feeds the sink with infinite capacity.

A minimum cut separates the source from the sink, so every value the backward reads is
computed from kept values alone, and it keeps the fewest bytes that allow it. The values that
are read but not kept are recomputed: their computations, from the kept values up, are copied
before the backward's first node and its reads moved to the copies.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .graph import Graph, Node, Opcode
from .ops import OPS, CostClass
from .slicing import ancestors

INFINITE = float("inf")
#: the price of recomputing a transcendental value, per byte of it (keeping it costs 1): an
#: element's exp or tanh costs about what moving a quarter of its bytes does, in a backward
#: kernel that streams its operands anyway (the module's doc)
RECOMPUTE_FUNCTION = 0.25
#: ops a backward may compute again: one cheap pass over elements each
RECOMPUTABLE = frozenset({"view", "cast", "full", "arange", "where"})


@dataclass
class Partition:
    """The cut: the values kept (with their bytes), those recomputed, and the two extremes."""

    kept: dict[str, int] = field(default_factory=dict)
    recomputed: list[str] = field(default_factory=list)
    save_everything: int = 0  # bytes kept when every value the backward reads is
    recompute_everything: int = 0  # when only what cannot be recomputed is (and inputs)

    @property
    def kept_bytes(self) -> int:
        return sum(self.kept.values())

    def describe(self) -> str:
        kept = ", ".join(f"%{n} ({_size(b)})" for n, b in self.kept.items()) or "none"
        again = ", ".join(f"%{n}" for n in self.recomputed) or "none"
        return (f"kept for the backward: {kept}; recomputed: {again}; cut {_size(self.kept_bytes)}"
                f" (keeping every value read: {_size(self.save_everything)}; recomputing all "
                f"that can be: {_size(self.recompute_everything)})")


def rematerialize(graph: Graph, backward: set[Node], outputs: set[Node]) -> Partition:
    """Cut the forward of ``graph`` (every node not in ``backward``) for its ``backward`` and
    rewrite the backward's reads of values not kept to recomputed copies."""
    forward = [n for n in graph.nodes if n not in backward and n.op is not Opcode.OUTPUT]
    read = {u for b in backward for u in b.inputs if u not in backward}
    if not read:
        return Partition()
    needed = ancestors(read)
    free = {n for n in needed if n.op is Opcode.PLACEHOLDER or n in outputs}
    # a value a NumPy step of the backward reads (``g @ h.T``) is materialized there anyway:
    # kept, it is not computed twice
    stepped = {u for b in backward if b.target == "extern" for u in _through_views(b, backward)
               if u in read}
    fixed = {n for n in needed if not _recomputable(n)} | stepped
    net = _Network()
    for v in needed:
        net.edge(("in", v), ("out", v), 0 if v in free else _bytes(v))
        if v.op is Opcode.PLACEHOLDER or v in fixed:
            net.edge("source", ("in", v), INFINITE)
        elif _transcendental(v):
            net.edge("source", ("in", v), RECOMPUTE_FUNCTION * _bytes(v))
        for u in v.inputs:
            if u in needed:
                net.edge(("out", u), ("in", v), INFINITE)
    for v in read:
        net.edge(("out", v), "sink", INFINITE)
    side = net.source_side()
    kept = [v for v in forward if v in needed and ("in", v) in side and ("out", v) not in side]
    partition = Partition(
        kept={v.name: _bytes(v) for v in kept if v not in free},
        save_everything=sum(_bytes(v) for v in read if v not in free),
        recompute_everything=_recompute_everything(read, free))
    partition.recomputed = _recompute(graph, backward, read, set(kept) | free)
    return partition


def _recomputable(node: Node) -> bool:
    if node.op is not Opcode.CALL_FUNCTION or node.effectful:
        return False
    op = OPS.get(node.target)
    return op is not None and (op.elementwise or node.target in RECOMPUTABLE)


def _transcendental(node: Node) -> bool:
    op = OPS.get(node.target) if node.op is Opcode.CALL_FUNCTION else None
    return op is not None and op.cost_class is CostClass.FUNCTION


def _through_views(step: Node, backward: set[Node]) -> list[Node]:
    """The values a NumPy step reads, through the backward's views of them (``h.T``)."""
    found, todo = [], list(step.inputs)
    while todo:
        node = todo.pop()
        if node in backward and node.target == "view":
            todo.extend(node.inputs)
        else:
            found.append(node)
    return found


def _recompute_everything(read: set[Node], free: set[Node]) -> int:
    """Bytes kept when every recomputable value is recomputed: the values that cannot be, met
    walking up from what the backward reads through recomputable ones."""
    kept, seen, todo = set(), set(), list(read)
    while todo:
        node = todo.pop()
        if node in seen or node in free:
            continue
        seen.add(node)
        if _recomputable(node):
            todo.extend(node.inputs)
        else:
            kept.add(node)
    return sum(_bytes(n) for n in kept)


def _recompute(graph: Graph, backward: set[Node], read: set[Node], kept: set[Node]
               ) -> list[str]:
    """Copies of the values the backward reads and the cut does not keep, placed before the
    backward's first node; the backward's reads moved to them. The names of the recomputed."""
    first = next(n for n in graph.nodes if n in backward)
    copies: dict[Node, Node] = {}

    def copy(node: Node) -> Node:
        if node in kept or node.op is Opcode.PLACEHOLDER:
            return node
        if node not in copies:
            args = tuple(copy(a) if isinstance(a, Node) else a for a in node.args)
            with graph.inserting_before(first):
                copies[node] = graph.call_function(node.target, args, dict(node.kwargs),
                                                   name=f"{node.name}_again",
                                                   meta=dict(node.meta))
        return copies[node]

    for b in [n for n in graph.nodes if n in backward]:
        if any(isinstance(a, Node) and a in read and a not in kept for a in b.args):
            b.set_args(tuple(copy(a) if isinstance(a, Node) and a in read and a not in kept
                             else a for a in b.args), dict(b.kwargs))
    return [n.name for n in copies]


def _bytes(node: Node) -> int:
    meta = node.tensor
    if meta is None:
        return 0
    return int(np.prod(meta.shape, dtype=np.int64)) * np.dtype(meta.dtype).itemsize


def _size(n: int) -> str:
    return f"{n / 2 ** 20:.1f} MiB" if n >= 2 ** 20 else f"{n / 1024:.1f} KiB" if n >= 1024 \
        else f"{n} B"


class _Network:
    """A flow network, its maximum flow found by shortest augmenting paths (Edmonds-Karp):
    joint programs have hundreds of vertices, not millions."""

    def __init__(self) -> None:
        self.capacity: dict[Any, dict[Any, float]] = {}

    def edge(self, a: Any, b: Any, capacity: float) -> None:
        self.capacity.setdefault(a, {})
        self.capacity.setdefault(b, {})
        self.capacity[a][b] = self.capacity[a].get(b, 0) + capacity
        self.capacity[b].setdefault(a, 0)

    def source_side(self) -> set[Any]:
        """The vertices the source reaches in the residual network of a maximum flow."""
        residual = {a: dict(out) for a, out in self.capacity.items()}
        if "source" not in residual or "sink" not in residual:
            return set(residual) - {"sink"}
        while True:
            parent = {"source": None}
            queue = deque(["source"])
            while queue and "sink" not in parent:
                a = queue.popleft()
                for b, c in residual[a].items():
                    if c > 0 and b not in parent:
                        parent[b] = a
                        queue.append(b)
            if "sink" not in parent:
                return set(parent)
            path, b = [], "sink"
            while parent[b] is not None:
                path.append((parent[b], b))
                b = parent[b]
            push = min(residual[a][b] for a, b in path)
            if push == INFINITE:
                raise ValueError("the backward reads a value the forward cannot keep")
            for a, b in path:
                residual[a][b] -= push
                residual[b][a] += push
