"""``stax.functional.decline_if(value, bad, why=...)``: a capture-level precondition.

A rewrite made at capture may equal NumPy only where a condition on the data holds (the mean of
a masked selection needs a selected element: NumPy warns and returns NaN for an empty one, and
its ``max`` raises). The value passes through unchanged; where any element of ``bad`` is true the
compiled call declines and runs as NumPy, which then gives its own result, warnings and errors.

It lowers to the op ``decline_if`` (one of the loop program's ``checks``); its NumPy reference
and capture rule are stax-ir's (``NN_FUNCTIONS``, ``to_opgraph.indexing``).
"""

from __future__ import annotations

from typing import Any

from stax.ir import Node, Opcode

DECLINE_IF = "stax.functional.decline_if"


def decline_if(graph: Any, value: Node, bad: Node, why: str) -> Node:
    """A node standing for ``value``, on the condition that ``bad`` holds nowhere."""
    meta = {"tensor": value.tensor, "source": value.source}
    return graph.create_node(Opcode.CALL_FUNCTION, DECLINE_IF, (value, bad), {"why": why},
                             name="decline_if", meta=meta)
