"""Which scheduled groups depend on which (``scheduler.py``): the order they run in and the
acyclicity test of a pair that may fuse (fusing two groups with a path between them through a
third would make the third run both before and after the fused kernel)."""

from __future__ import annotations

import heapq
from typing import Protocol


class Group(Protocol):
    """What ordering asks of a scheduler group (``scheduler.Group``)."""

    @property
    def needs(self) -> set[str]: ...

    @property
    def writes(self) -> set[str]: ...

    @property
    def label(self) -> str: ...


def path_through_others(a: Group, b: Group, groups: list[Group]) -> Group | None:
    """A group on a dependency path from ``a`` to ``b`` other than the direct edge, if any: such
    a path makes one loop nest for ``a`` and ``b`` impossible (the acyclicity condition). The
    walk goes from ``a`` through each group's consumers in list order; the first group reached
    that ``b`` reads from is named."""
    consumers: list[list[int]] = [[] for _ in groups]
    for i, preds in enumerate(group_producers(groups)):
        for p in preds:
            consumers[p].append(i)
    position = {id(g): i for i, g in enumerate(groups)}
    start, end = position[id(a)], position[id(b)]
    reached: list[int] = []
    seen = {start, end}
    frontier = [start]
    while frontier:
        for c in sorted(consumers[frontier.pop()]):
            if c not in seen:
                seen.add(c)
                reached.append(c)
                frontier.append(c)
    for i in reached:
        if b.needs & groups[i].writes:
            return groups[i]
    return None


class Reach:
    """Which groups depend on which, transitively, as bitsets over the groups' positions (the
    groups in topological order): the acyclicity test of a pair without a walk per pair, which
    made scheduling an unrolled loop's hundreds of groups take minutes."""

    def __init__(self, groups: list[Group]) -> None:
        self.position = {id(g): i for i, g in enumerate(groups)}
        self.ancestors: list[int] = []
        for preds in group_producers(groups):
            mask = 0
            for p in preds:
                mask |= (1 << p) | self.ancestors[p]
            self.ancestors.append(mask)

    def path_through_others(self, a: Group, b: Group) -> bool:
        """Whether some group other than ``a`` and ``b`` depends on ``a`` and ``b`` on it."""
        i, j = self.position[id(a)], self.position[id(b)]
        between = self.ancestors[j] & ~(1 << i) & ~(1 << j)
        while between:
            low = between & -between
            if self.ancestors[low.bit_length() - 1] >> i & 1:
                return True
            between ^= low
        return False


def group_producers(groups: list[Group]) -> list[set[int]]:
    """For each group, the positions of the groups that write what it needs."""
    owner: dict[str, int] = {}
    for i, g in enumerate(groups):
        for name in g.writes:
            owner[name] = i
    return [{owner[name] for name in g.needs if name in owner and owner[name] != i}
            for i, g in enumerate(groups)]


def topological(groups: list[Group]) -> list[Group]:
    """Groups in an order where producers come first, keeping the given order where free: each
    step takes the earliest group whose producers are all placed (Kahn's algorithm, a heap by
    position)."""
    producers = group_producers(groups)
    waiting = [len(p) for p in producers]
    consumers: list[list[int]] = [[] for _ in groups]
    for i, preds in enumerate(producers):
        for p in preds:
            consumers[p].append(i)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    ordered: list[Group] = []
    while ready:
        i = heapq.heappop(ready)
        ordered.append(groups[i])
        for c in consumers[i]:
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, c)
    if len(ordered) != len(groups):
        raise AssertionError("cycle among scheduled groups")
    return ordered


class Closure:
    """``Reach`` kept up to date as groups join, for the heap's fusion: ancestors and
    descendants as bitsets over each group's first position (a joined group keeps the earlier
    one's), updated per join for the groups the join connects, and the groups put in order
    once at the end (rebuilt per join, order and bitsets cost a DFT's 60 unrolled
    coefficients 0.4 s of scheduling)."""

    def __init__(self, groups: list[Group]) -> None:
        self.index = {id(g): i for i, g in enumerate(groups)}
        self._groups = dict(enumerate(groups))
        self.ancestors = Reach(groups).ancestors
        self.descendants = [0] * len(groups)
        for i, mask in enumerate(self.ancestors):
            while mask:
                low = mask & -mask
                self.descendants[low.bit_length() - 1] |= 1 << i
                mask ^= low

    def groups(self) -> list[Group]:
        """The groups left, by first position (``topological`` puts them in order)."""
        return [self._groups[i] for i in sorted(self._groups)]

    def first(self, a: Group, b: Group) -> bool:
        """Whether ``a`` runs before ``b``: ``b`` depends on it, or neither depends on the
        other and ``a`` came first."""
        i, j = self.index[id(a)], self.index[id(b)]
        if self.ancestors[j] >> i & 1:
            return True
        return not self.ancestors[i] >> j & 1 and i < j

    def through(self, a: Group, b: Group) -> Group | None:
        """A group other than ``a`` and ``b`` on a path from ``a`` to ``b``: the first, by
        position, that ``b`` reads from, else the first; None where there is none."""
        i, j = self.index[id(a)], self.index[id(b)]
        between = self.ancestors[j] & self.descendants[i]
        first = None
        while between:
            low = between & -between
            k = self._groups[low.bit_length() - 1]
            if b.needs & k.writes:
                return k
            first = k if first is None else first
            between ^= low
        return first

    def join(self, a: Group, b: Group) -> None:
        """``b`` has joined ``a`` (no path between them through another group): what depended
        on either depends on both, and on what both depended on."""
        i, j = self.index[id(a)], self.index.pop(id(b))
        del self._groups[j]
        both = (1 << i) | (1 << j)
        up = (self.ancestors[i] | self.ancestors[j]) & ~both
        down = (self.descendants[i] | self.descendants[j]) & ~both
        for bits, table, gained in ((down, self.ancestors, up), (up, self.descendants, down)):
            while bits:
                low = bits & -bits
                k = low.bit_length() - 1
                table[k] = (table[k] & ~(1 << j)) | gained | (1 << i)
                bits ^= low
        self.ancestors[i], self.descendants[i] = up, down
        self.ancestors[j] = self.descendants[j] = 0
