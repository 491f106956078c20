"""The data gates one capture may record (``MAX_GATES``) before it stops.

A data gate is a decision Python made from the data (``if x[i] > 1``, a ``while`` test, a
selection's size): the version holds only for calls whose data decide the same. A capture that
meets many — a loop over elements with a branch per element (``out.append(v)`` under ``if v >
1``), a scan until an element passes a test — compiles a version that new data almost never
match: it cost seconds of capture (a probe's 500-element loop: 4.2 s) for a version that served
one call before the key ran eagerly. Past ``MAX_GATES`` the capture stops at once
(``TooManyGates``): the runtime captures once more with every loop lifted where it may, else the
function runs eagerly for that key, saying which line decided.
"""

from __future__ import annotations

from stax.ir import Gate, UnsupportedError

from .isolation import refused

MAX_GATES = 64


class TooManyGates(UnsupportedError):
    """A capture met more than ``MAX_GATES`` data gates."""


def add_gate(gates: list[Gate], gate: Gate) -> None:
    """Record ``gate``, or stop the capture past the budget."""
    if len(gates) >= MAX_GATES:
        raise refused(TooManyGates(
            f"Python decided something from the data {MAX_GATES} times (a branch or a loop's "
            "exit per element: each data gate is another version on new data)",
            source=gate.source, hint="the function runs eagerly for this key; decide on whole "
            "arrays (np.where, masks) or keep such a value out of the key with "
            "stax.runtime.gate(...)"))
    gates.append(gate)
