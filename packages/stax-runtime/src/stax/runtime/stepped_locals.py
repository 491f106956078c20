"""A lifted ``for`` loop's counters (``n += 1`` in a Welford update; ``stax.trace.loop_counters
.stepped``): locals that hold a Python int the loop steps by the same amount at every item.

Carried from item to item, such a local would be a constant of the compiled body that changes
(the loop unrolled: a 400-row Welford loop took 3.6 s to compile). But its value at an item is
known: its value at the step's first item plus the steps of the items before. So the compiled
body takes the item alone and computes each counter from it (``counting``): integer arithmetic
on the item, which ``item_uses`` checks as it checks the item's own uses (a Python int and an
int64 must mean the same there, else the loop runs in NumPy as written); the runner's NumPy
runs bind the counter's value at their first item (``Runner.count_at``), and after the loop it
is the Python int the loop leaves: its value before plus one step per item.
"""

from __future__ import annotations

from typing import Any

from stax.trace.loops import LoopSite
from stax.trace.selection_counts import count_symbols
from stax.trace.traced_sizes import TracedSize

from .lift_plan import named_parameters

#: counters whose values stay below it: the item's arithmetic is exact (``item_uses.EXACT``)
_BOUND = 2 ** 52


def counted_locals(site: LoopSite, state: dict[str, Any], items: range, traced_stop: bool
                   ) -> dict[str, tuple[int, int]]:
    """Per counter of ``site`` the step computes: (its value at ``items``' first item, what an
    item adds). None where the count is a run-time input (the value after the loop would be
    too), or where a counter holds no Python int (a float, an array: carried as before); a
    size read from a shape is read (the version exact in it)."""
    if traced_stop:
        return {}
    counted = {}
    for name, step in site.steps:
        value = state.get(name)
        if isinstance(value, TracedSize) and not count_symbols(value.expression):
            value = value.read()  # ``n = len(X)``: a size, which unrolled the loop reads too
        if type(value) is int and abs(value) + abs(step) * (len(items) + 1) < _BOUND:
            counted[name] = (value, step)
    return counted


def count_at(counted: dict[str, tuple[int, int]], items: range, item: Any) -> dict[str, Any]:
    """Each counter's value at ``item`` (one of ``items``, the step's), before the body runs;
    the item an int, or the traced one of a compiled body (``counting``: its arithmetic, no
    division by a unit step, no product by a zero one)."""
    position = item - items.start if items.step == 1 else (item - items.start) // items.step
    return {name: value + step * position if step else value
            for name, (value, step) in counted.items()}


def after_loop(counted: dict[str, tuple[int, int]], items: range) -> dict[str, int]:
    """Each counter's value after the step ran every one of ``items``."""
    return {name: value + step * len(items) for name, (value, step) in counted.items()}


def counting(body: Any, params: tuple[str, ...], counted: dict[str, tuple[int, int]],
             items: range) -> Any:
    """``body`` (of the item and ``params``) as a function of the item and the parameters that
    are not counters: each counter is computed from the item (traced: the item's arithmetic)."""
    taken = [p for p in params if p not in counted]

    def counting(item: Any, *args: Any) -> Any:
        values = dict(zip(taken, args))
        values.update(count_at(counted, items, item))
        return body(item, *[values[p] for p in params])

    counting.__name__ = counting.__qualname__ = getattr(body, "__name__", "body")
    counting.__signature__ = named_parameters(taken)  # type: ignore[attr-defined]
    return counting
