"""``LoopSite``: one loop the rewrite of a function's source made into body functions
(``loops.py``), and which of the function's locals its body touches."""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class LoopSite:
    """One rewritten loop: where it is and which of the function's locals its body touches."""

    source: str  # file:line of the ``for``
    params: tuple[str, ...]  # locals the body reads or binds: the body function's parameters
    assigned: tuple[str, ...]  # those it binds (the body returns their values)
    mutated: tuple[str, ...]  # those whose object it may update in place (x[k] = v, x += v)
    rebound: tuple[str, ...]  # those it binds other than by an augmented assignment (x = ...)
    target: str | None  # the loop's target, when it is one name (``for i in ...``)
    target_rebound: bool = False  # the body binds the target too (``i = i + 1``)
    #: rows of an array local: ``for row in x`` / ``for i, row in enumerate(x)``: x's name, and
    #: the name bound to the row (``target`` is then the index's name, or None)
    array: str | None = None
    row: str | None = None
    bound_first: frozenset[str] = frozenset()  # params bound before read (``loop_body``)
    effect: str | None = None  # a call with a Python effect in the body (``loop_body``)
    scratch: frozenset[str] = frozenset()  # bound first, read nowhere else (``loop_body``)
    #: updated in place only after the body bound them anew (``loop_body.rebound_before_update``)
    fresh: frozenset[str] = frozenset()
    kind: str = "for"  # or "while": no item, a test before each iteration (``while_loops``)
    #: the body ends the loop at a test (``loop_names.BreakForm``): it returns whether the
    #: loop goes on after its results
    stops: bool = False
    #: such a loop's target is read after it, as a returned result: a lifted step gives the
    #: last item it ran (``result_conversions.convert_results``)
    item_returned: bool = False
    #: a ``while`` loop's counters (``it += 1``; ``loop_counters``): traced int64 scalars once
    #: the loop is lifted, returned as Python ints
    counters: frozenset[str] = frozenset()
    #: a ``for`` loop's locals it may carry as Python floats (``loop_counters.carried_floats``):
    #: inputs and results of the lifted step where they hold floats, returned as floats
    floats: frozenset[str] = frozenset()
    #: the names of each returned element of arithmetic on such floats (``return out, s + i``;
    #: ``result_conversions.arithmetic_results``): the loop lifts only where each of a group's
    #: names holds a Python float it carries (a NumPy scalar among them keeps eager's promotion
    #: only unrolled)
    float_groups: tuple[frozenset[str], ...] = ()
    #: a ``for`` loop's counters and what an iteration adds to each (``n += 1``;
    #: ``loop_counters.stepped``): a lifted step computes them from its item
    steps: tuple[tuple[str, int], ...] = ()
    #: nothing outside the loop reads its target (``loop_body.unread_after``: not after it,
    #: nor before it, which an enclosing loop runs after it): a lifted step's count may be a
    #: run-time input (``loop_ranges``), the target's value after it unseen
    target_unread: bool = False
    #: locals the body swaps (``a, b = b, a``) that hold arrays nothing else in the function
    #: can reach (``swapped_buffers.own_buffers``): a lifted step may leave the arrays' values
    #: by name where eager's trade places
    own_buffers: frozenset[str] = frozenset()

    @functools.cached_property
    def returned(self) -> tuple[str, ...]:
        """What the body function returns the final values of: the locals it binds, then those
        it only updates in place (a compiled body returns them instead of writing them back)."""
        return self.assigned + tuple(n for n in self.mutated if n not in self.assigned)
