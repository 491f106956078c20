"""Comparisons of scalar arguments Python branched on, as guards of a generic version.

``if k > 100.0: ...`` decides something from ``k``, which used to keep ``k``'s value in the key:
a version per value, then eager calls past the version limit (7.5 us against 0.6 eagerly). What
the trace depends on is only the comparison's outcome. Capture records it
(``info["scalar_predicates"]``: ``[operator, left, right, outcome]``, the operands as the
computed-scalar expressions of ``stax.trace.traced_scalars``: an argument, a constant, or
arithmetic and NumPy float functions of them) and returns the outcome as Python did; the scalar
stays a run-time input, and the generic version applies to a call only where every recorded
comparison comes out the same (``holds``). A call where one does not is a miss: capture runs
again, takes the other branch, and records its own outcomes (``if k > 100`` has two versions
for every ``k``).

The check computes each operand exactly as the user's Python did — the same operators on the
same types — so it decides what the user's code would decide; only comparisons whose operands
cost no error or warning to compute are recorded (``testable``: arguments, constants, and
``+ - *``, negation and ``abs`` of Python numbers), so every version with predicates has a key
entry testing them (``stax.runtime.key_entry``) and a check never raises or warns.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any

import numpy as np

from .scalar_inputs import OPERATORS, leaves_of, number

#: the comparisons recorded, by operator name
COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne}
#: what a failed predicate guard says it got (``explain()``, the recompile log)
OTHER_OUTCOME = "another outcome"
#: a capture records at most this many (past them, a comparison reads its operands)
MAX_PREDICATES = 16

#: the operators as Python source (the recompile log, ``stax.runtime.key_entry``)
SYMBOLS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
           "add": "+", "sub": "-", "mul": "*"}
#: arithmetic a key entry computes as the user's Python did, raising and warning nothing
#: where the operands are Python numbers (a NumPy float64's overflow warns; a division raises)
TESTABLE = frozenset({"add", "sub", "mul", "neg", "pos", "abs"})


def testable(expr: Sequence[Any]) -> bool:
    """Whether a comparison's operand is recorded as a predicate: an argument, a constant, or
    ``TESTABLE`` arithmetic of Python numbers (of arguments and constants of kind ``float`` or
    ``int``). Others (a NumPy function, a division, arithmetic on NumPy float64s: their errors
    and warnings would be the check's, not the call's) read their arguments instead."""
    head = expr[0]
    if head in ("arg", "const"):
        return True
    return head in TESTABLE and all(
        testable(e) and (e[0] not in ("arg", "const") or e[-2] in ("float", "int"))
        for e in expr[1:])


def evaluate(expr: Sequence[Any], leaves: Mapping[int, Any]) -> Any:
    """The value of a computed-scalar expression for the flat argument values ``leaves`` (an
    argument missing from it: its value at capture, recorded in the expression)."""
    head = expr[0]
    if head in ("arg", "const"):
        if head == "arg" and expr[1] in leaves:
            return leaves[expr[1]]
        return number(*expr[-2:])
    operands = [evaluate(e, leaves) for e in expr[1:]]
    if head.startswith("numpy."):
        with np.errstate(all="ignore"):  # the call itself reports what NumPy reports
            return getattr(np, head.split(".", 1)[1])(*operands)
    return OPERATORS[head](*operands)


def on_inputs(predicates: Sequence[Sequence[Any]], inputs: Set[int]) -> list[Any]:
    """The predicates that read one of the flat arguments ``inputs`` (the run-time inputs of a
    generic version): the others read only arguments whose values are in the key, so they come
    out as at capture at every call the key admits."""
    return [p for p in predicates if (leaves_of(p[1]) | leaves_of(p[2])) & inputs]


def holds(predicates: Sequence[Sequence[Any]], leaves: Mapping[int, Any]) -> bool:
    """Whether every recorded comparison has its recorded outcome for these argument values
    (one that cannot be computed, a division by zero, does not)."""
    try:
        return all(bool(COMPARISONS[op](evaluate(a, leaves), evaluate(b, leaves))) is outcome
                   for op, a, b, outcome in predicates)
    except (ArithmeticError, TypeError, ValueError):
        return False


def describe(predicate: Sequence[Any]) -> str:
    """``inputs[1] > 100.0 is False``: a predicate as the recompile log says it."""
    op, a, b, outcome = predicate
    return f"({_text(a)} {SYMBOLS[op]} {_text(b)}) is {outcome}"


def _text(expr: Sequence[Any]) -> str:
    head = expr[0]
    if head == "arg":
        return f"inputs[{expr[1]}]"
    if head == "const":
        return str(expr[2]) if expr[1] == "int" else repr(float.fromhex(expr[2]))
    return f"{head}({', '.join(_text(e) for e in expr[1:])})"
