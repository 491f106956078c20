"""A loop's locals before its first iteration was traced, put back when the whole loop is lifted.

``loops.run_loop`` traces a loop's first iteration to learn what one iteration records and
binds. When the loop is then lifted into one step, that step can run every item, the first
included, from the locals as they were before the loop: the first iteration's recorded
operations then feed nothing and are dropped as dead code, and the compiled program is the
step alone (with the first iteration kept, its kernels run before the step on every call).

Tracing an iteration updates proxies in place (``x[i] = v``, ``x += v``: the proxy stands for
the updated value, and a view's base for its own update), so the proxies' values are saved
before it and restored here, and saved again after it, to go on unrolling if the lift declines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from stax.ir import LIFTED_LOOP, Node, Opcode, ancestors

from .proxy import Proxy
from .source import drop_held, held_mark
from .traced_scalars import TracedScalar
from .traced_sizes import TracedNumber

#: a local's state: the proxies it reaches (itself, the bases it views), each with its value
Saved = list[tuple[Proxy, Any, Any]]


class _Unbound:
    """A local variable without a value (``del`` in the body makes it unbound again)."""

    def __repr__(self) -> str:
        return "<unbound>"


UNBOUND = _Unbound()


def save(values: Any) -> Saved:
    """The node and value of every proxy among ``values`` and of the arrays they view."""
    saved: Saved = []
    seen: set[int] = set()
    for value in values:
        while isinstance(value, Proxy) and id(value) not in seen:
            seen.add(id(value))
            saved.append((value, value.node, value.value))
            value = value.view_of[0] if value.view_of is not None else None
    return saved


def restore(saved: Saved) -> None:
    for proxy, node, value in saved:
        proxy.node, proxy.value = node, value


_INDEXING = frozenset({"operator.getitem", "stax.functional.setitem"})


def _from_data(index: Any, item: str) -> bool:
    """Whether an index (a number, a node, a tuple of them) is computed from an argument other
    than the placeholder ``item``."""
    if isinstance(index, tuple):
        return any(_from_data(i, item) for i in index)
    return isinstance(index, Node) and any(
        n.op is Opcode.PLACEHOLDER and n.target != item for n in ancestors([index]))


def _python_float(value: Any) -> float | None:
    """A Python float's value, a traced scalar argument's or one computed from them in Python
    (``TracedScalar``) too; None for anything else."""
    value = value.value if isinstance(value, TracedScalar) else value
    return value if type(value) is float else None


def _float_constants(value: Any) -> set[float]:
    """The floats that are not whole numbers of a stored constant (none where a traced node
    is part of it)."""
    if isinstance(value, tuple | list):
        if any(isinstance(v, Node) for v in value):
            return set()
        return set().union(*(_float_constants(v) for v in value))
    return {value} if isinstance(value, float) and not value.is_integer() else set()


class FirstIteration:
    """What a loop's traced first iteration changed: made before it, it records where the
    graph, the gates and capture's held reports ended and what the locals held."""

    def __init__(self, tracer: Any, state: dict[str, Any]) -> None:
        self.state = dict(state)
        self.marks = marks(tracer)
        self.held = held_mark()
        self.saved = save(self.state.values())

    def lifted_inside(self, tracer: Any) -> bool:
        """Whether the first iteration lifted an inner loop (called right after it)."""
        return any(n.target == LIFTED_LOOP for n in tracer.graph.nodes[self.marks[0]:])

    def recorded(self, tracer: Any, limit: int) -> int:
        """Operations the first iteration recorded (called right after it; ``recorded_since``)."""
        return recorded_since(tracer, self.marks[0], limit)

    def indexes_by_data(self, tracer: Any, item: str) -> bool:
        """Whether the first iteration read and then wrote one array at positions computed
        from the data (``h[v] += 1`` for an item ``v`` of an array): unrolled, each item is a
        gather and a scatter on the array the previous item wrote, which no rerolling or fusion
        joins (called right after it). A gather alone (``out[i] = x[idx[i]]``) or a scatter of
        other values (``out[idx[i]] = v[i]``) rerolls into one kernel (200 items: 0.8 us
        unrolled, 33 us lifted). The item of an enclosing lifted loop (the placeholder
        ``item``) is an index, not data: ``D[i, j] = ...`` in a loop over ``j``."""
        read, written = set(), set()
        for n in tracer.graph.nodes[self.marks[0]:]:
            if n.target in _INDEXING and len(n.args) > 1 and isinstance(n.args[0], Node) and \
                    _from_data(n.args[1], item):
                (written if n.target == "stax.functional.setitem" else read).add(n.args[0])
        return bool(read & written)

    def stores_float_state(self, tracer: Any, after: dict[str, Any]) -> bool:
        """Whether the first iteration rebound a local Python float (``s = s - ds``: state
        the loop computes in Python) and wrote its new value into an array as a constant
        (``out[k] = s, i, r``; not ``out[k] = 0.5`` beside ``t += 0.1``, which rerolls):
        unrolled, each item stores other constants, which no rerolling joins (only whole
        numbers that step by the same amount do), so each is a kernel of its own and past the
        kernel budget the program is refused after seconds of lowering (an SIR model of 400
        steps on Python floats: 0.75 s of a 1.05 s first call). Called right after it,
        ``after`` the locals it left."""
        rebound = {_python_float(value) for name, value in after.items()
                   if _python_float(value) is not None and
                   _python_float(self.state.get(name)) not in (None, _python_float(value))}
        return bool(rebound) and any(
            n.target == "stax.functional.setitem" and len(n.args) > 2 and
            bool(_float_constants(n.args[2]) & rebound)
            for n in tracer.graph.nodes[self.marks[0]:])

    def lift_all(self, tracer: Any, site: Any, after: dict[str, Any], unbound: Any,
                 lift: Callable[[dict[str, Any]], dict[str, Any] | None]
                 ) -> dict[str, Any] | None:
        """``lift(start)`` with the locals put back as they were before the loop, and the first
        iteration forgotten when it lifts (its reports too: the step runs that item again);
        None, with the locals as the iteration left them, when it cannot or does not. Called
        right after the first iteration."""
        end, held_end = len(tracer.graph.nodes), held_mark()
        start = start_of_loop(tracer, site, self.state, after, unbound) \
            if forgettable(tracer, self.marks) else None
        if start is None:
            return None
        then = save([*self.state.values(), *after.values()])
        restore(self.saved)
        lifted = lift(start)
        if lifted is None:
            restore(then)
            return None
        forget(tracer, self.marks[0], end)
        drop_held(self.held, held_end)
        return lifted


def recorded_since(tracer: Any, mark: int, limit: int) -> int:
    """Operations recorded since the graph had ``mark`` nodes; an inner loop lifted into one
    step counts ``limit`` (unrolled, the outer loop would lift the inner one at each item, each
    its own step: lifted, it compiles one body holding one)."""
    nodes = tracer.graph.nodes[mark:]
    return len(nodes) + sum(limit for n in nodes if n.target == LIFTED_LOOP)


def marks(tracer: Any) -> tuple[int, int, int]:
    """What ``forgettable`` compares: the graph's and the gates' lengths, pending selections."""
    return len(tracer.graph.nodes), len(tracer.gates), len(tracer.selections)


def forgettable(tracer: Any, before: tuple[int, int, int]) -> bool:
    """Whether the operations recorded since ``marks`` gave ``before`` (one traced iteration)
    can be dropped once the loop is lifted: they were appended, no data gate was recorded (its
    outcome would be checked on later calls), no ``max``/``min`` of traced values is pending
    and none has an effect (a random draw advances its generator)."""
    nodes = tracer.graph.nodes
    return before[1:] == marks(tracer)[1:] and len(nodes) >= before[0] and \
        not any(n.effectful for n in nodes[before[0]:])


def forget(tracer: Any, first: int, last: int) -> None:
    """Drop nodes ``first`` to ``last`` (the traced first iteration, which feeds nothing now:
    the lifted step runs that item too), last first, and what the tracer noted about them."""
    graph = tracer.graph
    dropped = graph.nodes[first:last]
    for node in reversed(dropped):
        graph.erase_node(node)
    gone = set(dropped)
    tracer.superseded[:] = [n for n in tracer.superseded if n not in gone]
    for noted in (tracer.constants, tracer.shape_read):
        noted -= gone
    for keyed in (tracer.masked_reads, tracer.scalar_values):
        for node in gone & keyed.keys():
            del keyed[node]
    counts = tracer.sizes.counts  # selections' lengths (``selection_counts``) of erased nodes
    for name in [n for n, nodes in counts.items() if gone.intersection(nodes)]:
        del counts[name]
        tracer.sizes.stale.add(name)


def start_of_loop(tracer: Any, site: Any, before: dict[str, Any],
                  after: dict[str, Any], unbound: Any) -> dict[str, Any] | None:
    """The locals to run every item from: each as it was before the loop, a value the body
    binds before reading it (unbound before the loop) a zero of the kind the first iteration
    made. None when a local changes kind in the first iteration (``acc = 0.0``, then a NumPy
    scalar), or is unbound before the loop and may be read before the body binds it (``try:
    acc + prev``): the lift then starts after the first iteration."""
    start: dict[str, Any] = {}
    for name in site.params:
        if name in site.scratch:  # bound before read, read nowhere else: the step skips it
            start[name] = unbound
            continue
        old, new = before.get(name, unbound), after.get(name, unbound)
        if name in (site.target, site.row) and old is not unbound:
            start[name] = old  # (an earlier loop's): each item binds it before the body reads it
            continue
        if old is unbound or (name in site.bound_first and isinstance(new, Proxy) and
                              not isinstance(old, Proxy)):
            # (bound before read: its value before the loop is read only where the loop runs
            # no item, and a lifted one runs one at least: ``loop_exits``' flag, ``False``)
            if name not in site.bound_first and name not in (site.target, site.row):
                return None
            start[name] = _placeholder(tracer, new) if isinstance(new, Proxy) else new
        elif isinstance(old, Proxy) != isinstance(new, Proxy) or (
                isinstance(old, Proxy) and not _same_kind(old.value, new.value)):
            return None
        elif name in site.counters and type(old) is int and type(new) is int:
            start[name] = old  # a counter (``it += 1``): the lift carries it traced, from here
        elif name in site.floats and type(_number(old)) is float and \
                type(_number(new)) is float:  # a float the loop carries (``carried_floats``):
            start[name] = old  # from its value before the loop, compared with nothing (a read)
        elif not isinstance(old, Proxy) and (type(old) is not type(new) or (old is not new and
                                              not _equal(old, new))):
            return None  # a Python value the body changes: the loop unrolls in any case
        else:
            start[name] = old
    return start


def _number(value: Any) -> Any:
    """A followed number's value, not read (``TracedNumber.read``); anything else as it is."""
    return value.value if isinstance(value, TracedNumber) else value


def _same_kind(a: Any, b: Any) -> bool:
    return type(a) is type(b) and np.shape(a) == np.shape(b) and \
        getattr(a, "dtype", None) == getattr(b, "dtype", None)


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _placeholder(tracer: Any, value: Proxy) -> Any:
    """A traced zero of ``value``'s shape, dtype and kind (array or NumPy scalar), made from
    nothing the first iteration recorded: the item binds the local before it reads it, so the
    value is never seen."""
    array = np.asarray(value.value)
    zero = tracer.created_array("numpy.zeros", (array.shape,), {"dtype": array.dtype},
                                np.zeros(array.shape, array.dtype), None)
    return zero[()] if isinstance(value.value, np.generic) else zero


def bound_views(names: tuple[str, ...], before: dict[str, Any], after: dict[str, Any],
                item: Any) -> dict[str, Proxy] | None:
    """The locals the first iteration bound to a row of an array it did not bind (``r =
    x[i]``), by name: the array. A lifted loop's step returns such a local as an array of its
    own; after the loop it must be the row ``x[last item]``, a view. None when a local views
    an array some other way (``x[i + 1]``, ``x[:, i]``): the loop unrolls."""
    views: dict[str, Proxy] = {}
    for name in names:
        value = after.get(name)
        if not isinstance(value, Proxy) or value.view_of is None or value is before.get(name):
            continue  # (the same view, updated in place: ``u += v``)
        base, key = value.view_of
        if type(key) is not int or key != item or not any(v is base for v in before.values()):
            return None
        views[name] = base
    return views


def step(site: Any, body: Callable[..., tuple[Any, ...]], item: Any,
         state: dict[str, Any]) -> Any:
    """Run one item, binding its results in ``state``; whether the loop goes on after it
    (a body ending the loop at a test returns it, maybe traced: its truth is a gate)."""
    if site.row is not None:
        # the body binds the row first: the previous item's row, a view of the array, is not
        # kept alive while this item's row updates the array in place (``for r in x: r *= 2``
        # was refused: "an argument another value views")
        state.pop(site.row, None)
    out = body(item, *[state.get(name, UNBOUND) for name in site.params])
    for name, value in zip(site.returned, out):
        state[name] = value
    return out[len(site.returned)] if site.stops else True


def turned_traced(site: Any, before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether an iteration bound a local that held a Python number to a traced value (``s1 =
    v + c * s1`` of a float ``s1``): the next iteration may do so to another local it passes
    that one on to (``s2 = s1``), which a lift from these locals would take as a constant."""
    return any(isinstance(_number(before.get(name)), (int, float, complex)) and
               isinstance(after.get(name), Proxy) for name in site.assigned)
