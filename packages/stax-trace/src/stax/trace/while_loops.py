"""Python ``while`` loops whose test reads the data, taken by capture as one lifted step.

A ``while`` loop's trip count is the data's (``while err > tol``, ``while active.any()``):
unrolled, each iteration's test is a data gate, so capture records as many iterations as this
call ran, and a later call that runs another number of them misses every gate and compiles
again (a Collatz iteration over 2,000 integers: 4-6 s on each call with new data). ``loops``
rewrites the loop (``_Rewriter.lift_while``) into its body and its test, each a function of the
locals they touch, and the whole loop as written; ``run_while`` runs them. Under capture, when
the test is a traced value and true, the first iteration is traced (to learn what an iteration
binds) and the loop is offered to the *lifter* (installed by ``stax.runtime``:
``install_while_lifter``), which compiles the body together with the next test once and runs the
iterations until the test is false, from the locals before the loop. A first test in Python
values that holds (``err = np.inf`` before the loop) runs its iteration as written, and the
loop from there is offered the same way. Where the lifter declines (a Python number the body
changes, a body that does not compile on its own...), the loop is captured as written,
unrolled: each test a gate.
"""

from __future__ import annotations

import ast
import copy
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from . import loop_counters, loop_state
from .creation import active_tracer
from .loop_names import SCOPES, jumps
from .proxy import Proxy

#: the names the rewritten code reads ``run_while`` and ``goes_on`` from (closure cells, as
#: ``loops``' helpers)
HELPER = "__stax_while__"
GOES_ON_HELPER = "__stax_goes_on__"


def goes_on(stop: Any) -> Any:
    """``not stop`` for a loop body that ends the loop at ``stop`` (``loop_names.BreakForm``):
    a traced ``stop`` gives its traced negation (no gate: the lifted step tests it), anything
    else Python's ``not``."""
    if isinstance(stop, Proxy):
        return np.logical_not(stop)
    return not stop


def traced(value: Any) -> bool:
    """Whether ``value`` is one traced value (a test the data decides)."""
    return isinstance(value, Proxy) and np.size(value.value) == 1

#: installed by ``stax.runtime``: ``lift(tracer, site, test, body, whole, state, going,
#: elsewhere)``, the state after the loop or None
_lifter: Callable[..., dict[str, Any] | None] | None = None


def install_while_lifter(lift: Callable[..., dict[str, Any] | None] | None) -> None:
    global _lifter
    _lifter = lift


def run_while(site: Any, test: Callable[..., Any], body: Callable[..., tuple[Any, ...]],
              whole: Callable[..., tuple[Any, ...]], values: tuple[Any, ...]) -> tuple[Any, ...]:
    """The rewritten ``while`` loop: the final values of ``site.assigned``. ``test`` evaluates
    the loop's test on the locals, ``body`` runs one iteration (its first argument, the item
    of a ``for`` body, unused), ``whole`` runs the loop as written (its first argument unused)."""
    from .loops import UNBOUND  # loops imports this module for its rewrite

    count = len(site.assigned)
    tracer = active_tracer()
    if tracer is None or _lifter is None or site.effect is not None:
        return whole(None, *values)[:count]
    state = dict(zip(site.params, values))
    initial = dict(state)
    elsewhere = _held_elsewhere(sys._getframe(1), site)
    first = loop_state.FirstIteration(tracer, state)
    outcome = test(*values)
    # a test that updated a local in place (through a helper: ``loop_body.while_effects`` sees
    # the test's own calls): what it recorded is the local's value from now on
    if any(proxy.node is not node for proxy, node, _ in first.saved):
        return _as_written(site, test, body, state, outcome)  # each test once, as written
    if _traced_and_true(outcome):
        goes = _iteration(site, body, state, UNBOUND)
        lifted = first.lift_all(tracer, site, state, UNBOUND,
                                lambda start: _lift(tracer, site, test, body, whole, start,
                                                    None, elsewhere))
        if lifted is not None:
            return tuple(lifted.get(name, UNBOUND) for name in site.assigned)
        bool(outcome)  # unrolled: the gate that let the first iteration run
    elif not isinstance(outcome, Proxy) and outcome:
        # a first test in Python values (``err = np.inf`` before the loop, ``while True``):
        # that iteration as written, then the loop from there, offered where it reads the data
        goes = _iteration(site, body, state, UNBOUND)
    elif loop_state.forgettable(tracer, first.marks):
        # no iteration here, or a test in Python values: what the test recorded feeds nothing
        loop_state.forget(tracer, first.marks[0], len(tracer.graph.nodes))
        return whole(None, *values)[:count]
    else:
        return whole(None, *values)[:count]
    # after an iteration as written: offered once the Python values the body binds stay what
    # they are (``lam_old = lam``, a Python number in the first iteration only), each
    # iteration before that as written, its test a gate
    before = initial
    for _ in range(_SETTLING):
        following = goes_on_after(goes, test, [state.get(n, UNBOUND) for n in site.params])
        if not _traced_and_true(following):
            break
        if _settled(site, before, state):  # the step goes on only where ``following`` holds
            lifted = _lift(tracer, site, test, body, whole, state, following, elsewhere)
            if lifted is not None:
                return tuple(lifted.get(name, UNBOUND) for name in site.assigned)
            break
        bool(following)
        before = dict(state)
        goes = _iteration(site, body, state, UNBOUND)
    if goes:  # a gate where traced: the iteration did not end the loop (``break``)
        rest = whole(None, *[state.get(name, UNBOUND) for name in site.params])
        state.update(zip(site.returned, rest))
    return tuple(state.get(name, UNBOUND) for name in site.assigned)


def _lift(tracer: Any, site: Any, test: Any, body: Any, whole: Any, state: dict[str, Any],
          following: Any, elsewhere: Any) -> dict[str, Any] | None:
    """The lifter's state after the loop, its counters (``loop_counters``) carried as traced
    int64 scalars; None (their Python values put back) where it unrolls."""
    assert _lifter is not None
    replaced = loop_counters.traced_counters(tracer, state, site.counters)
    lifted = _lifter(tracer, site, test, body, whole, state, following, elsewhere)
    if lifted is None:
        state.update(replaced)
    return lifted


def goes_on_after(goes: Any, test: Callable[..., Any], args: list[Any]) -> Any:
    """Whether another iteration runs after one that said ``goes`` (True, or for a body
    ending the loop at a test, ``not`` that test): ``goes and test(*args)``, traced where
    either is, without a gate."""
    if not traced(goes) and not goes:
        return False
    outcome = test(*args)
    if not traced(goes):
        return outcome
    if traced(outcome):
        return np.logical_and(goes, outcome)
    return goes if outcome else False


#: iterations traced as written, at most, before the Python values the body binds settle
_SETTLING = 3


def _settled(site: Any, before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether an iteration left each Python value the body binds as it was, or made it a
    traced value (``err = np.inf`` before the loop, the data's error after an iteration: an
    input of the step from there on); a Python value it changed (``lam_old = lam``, the
    Python number ``lam`` was) would change again."""
    for name in site.assigned:
        if name in site.counters:  # carried traced once lifted (``loop_counters``)
            continue
        old, new = before.get(name), after.get(name)
        if not isinstance(new, Proxy) and old is not new and (
                type(old) is not type(new) or not _equal(old, new)):
            return False
    return True


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _held_elsewhere(frame: Any, site: Any) -> list[Proxy]:
    """The traced values the function's other locals hold (themselves, or in a list, tuple or
    dict): a loop's local bound to one of them is no private object (``z = y`` before the
    loop: a call running no iteration must give ``y`` as that same object)."""
    found: list[Proxy] = []
    for name, value in frame.f_locals.items():
        if name in site.params or name.startswith("__stax"):
            continue
        items = value.values() if isinstance(value, dict) else \
            value if isinstance(value, (list, tuple)) else (value,)
        found.extend(v for v in items if isinstance(v, Proxy))
    return found


def _iteration(site: Any, body: Callable[..., tuple[Any, ...]], state: dict[str, Any],
               unbound: Any) -> Any:
    """One iteration traced as written: the locals it binds or updates, in ``state``; whether
    the loop goes on after it (a body ending the loop at a test says, maybe traced)."""
    out = body(None, *[state.get(name, unbound) for name in site.params])
    state.update(zip(site.returned, out))
    return out[len(site.returned)] if site.stops else True


def _as_written(site: Any, test: Callable[..., Any], body: Callable[..., tuple[Any, ...]],
                state: dict[str, Any], outcome: Any) -> tuple[Any, ...]:
    """The loop traced as written after its first test gave ``outcome``: each test a gate,
    run once (a test that updates a local in place must not run again)."""
    from .loops import UNBOUND
    going = outcome
    while bool(going):
        goes = _iteration(site, body, state, UNBOUND)
        going = goes_on_after(goes, test, [state.get(n, UNBOUND) for n in site.params])
    return tuple(state.get(name, UNBOUND) for name in site.assigned)


def _traced_and_true(outcome: Any) -> bool:
    """Whether the test is one traced value that is true on the capture's example."""
    if not isinstance(outcome, Proxy) or np.size(outcome.value) != 1:
        return False
    return bool(np.asarray(outcome.value))


def rotate_breaks(node: ast.AST) -> None:
    """Each ``while True: S1; if C: break; S2`` in ``node`` (a function, not the scopes in it;
    no other ``break`` or ``continue`` of its own, no ``else``) as ``S1; while
    __stax_goes_on__(C): S2; S1``, in place, inner loops first: the same statements in the same
    order on every path (S1, C, then S2, S1, C until C holds), as a loop whose test reads the
    data, which lifts (a fixed-point iteration unrolled with a gate per iteration before: a
    second to compile, a version per iteration count)."""
    for field in ("body", "orelse", "finalbody", "handlers"):
        block = getattr(node, field, None)
        if not isinstance(block, list):
            continue
        for child in block:
            if not isinstance(child, SCOPES):
                rotate_breaks(child)
        if block and isinstance(block[0], ast.stmt):
            setattr(node, field, [s for statement in block for s in _rotated(statement)])


def _rotated(node: ast.stmt) -> list[ast.stmt]:
    if not (isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and
            node.test.value is True and not node.orelse):
        return [node]
    exits = [k for k, s in enumerate(node.body) if isinstance(s, ast.If) and not s.orelse and
             len(s.body) == 1 and isinstance(s.body[0], ast.Break)]
    if len(exits) != 1:
        return [node]
    k = exits[0]
    before, test, after = node.body[:k], node.body[k].test, node.body[k + 1:]
    if any(jumps(s) for s in (*before, *after)) or \
            any(isinstance(n, ast.NamedExpr) for n in ast.walk(test)):
        return [node]
    goes = ast.Call(ast.Name(GOES_ON_HELPER, ast.Load()), [test], [])
    loop = ast.While(ast.copy_location(goes, test), [*after, *copy.deepcopy(before)], [])
    return [*before, ast.copy_location(loop, node)]
