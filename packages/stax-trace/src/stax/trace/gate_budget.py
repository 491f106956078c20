"""The data gates one capture may record (``MAX_GATES``) before it stops.

A data gate is a decision Python made from the data (``if x[i] > 1``, a ``while`` test, a
selection's size): the version holds only for calls whose data decide the same. A capture that
meets many — a loop over elements with a branch per element (``out.append(v)`` under ``if v >
1``), a scan until an element passes a test — compiles a version that new data almost never
match: it cost seconds of capture (a probe's 500-element loop: 4.2 s) for a version that served
one call before the key ran eagerly. Past ``MAX_GATES`` the capture of a function without an
effect its caller could see (``budgeted``) stops at once (``TooManyGates``): the runtime
captures once more with every loop lifted where it may, else the function runs eagerly for
that key, saying which line decided.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import inspect
import textwrap
import types
import weakref
from collections.abc import Iterator
from typing import Any

from stax.ir import Gate, UnsupportedError

from . import loop_body
from .isolation import refused

MAX_GATES = 64
#: whether the capture running stops at the budget: a function with no Python effect (the
#: runtime says so, ``stax.trace.loops.recapturable``); one with effects (``log.append(1)``)
#: runs them, and an eager run after a stopped capture would run them again
BUDGETED: contextvars.ContextVar[bool] = contextvars.ContextVar("stax_gate_budget",
                                                                default=False)


@contextlib.contextmanager
def gate_budget(on: bool = True) -> Iterator[None]:
    token = BUDGETED.set(on)
    try:
        yield
    finally:
        BUDGETED.reset(token)


class TooManyGates(UnsupportedError):
    """A capture met more than ``MAX_GATES`` data gates."""


_budgeted: weakref.WeakKeyDictionary[Any, tuple[Any, bool]] = weakref.WeakKeyDictionary()


def budgeted(fn: Any) -> bool:
    """Whether a capture of ``fn`` may stop at the budget: a Python function whose source
    shows no effect its caller could see (``loop_body.outside_effects``: a list it made and
    appends to is none)."""
    fn = getattr(fn, "__func__", fn)
    if not isinstance(fn, types.FunctionType):
        return False
    held = _budgeted.get(fn)  # (its code, whether): a replaced ``__code__`` is read again
    found = held[1] if held is not None and held[0] is fn.__code__ else None
    if found is None:
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
            function = tree.body[0]
            found = isinstance(function, ast.FunctionDef) and \
                loop_body.outside_effects(function) is None
        except (OSError, TypeError, SyntaxError, IndexError):
            found = False
        _budgeted[fn] = (fn.__code__, found)
    return found


def add_gate(gates: list[Gate], gate: Gate) -> None:
    """Record ``gate``, or stop the capture past the budget."""
    if len(gates) >= MAX_GATES and BUDGETED.get():
        raise refused(TooManyGates(
            f"Python decided something from the data {MAX_GATES} times (a branch or a loop's "
            "exit per element: each data gate is another version on new data)",
            source=gate.source, hint="the function runs eagerly for this key; decide on whole "
            "arrays (np.where, masks) or keep such a value out of the key with "
            "stax.runtime.gate(...)"))
    gates.append(gate)
