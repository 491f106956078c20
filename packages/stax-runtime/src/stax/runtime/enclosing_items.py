"""An inner loop lifted inside a lifted body, reading the outer loop's item (issue 13: nested
loops, ``for i in range(n): for j in range(m): ... pos[i] - pos[j] ...``).

The outer body is captured once with its item as a traced 0-d int64 (``item_uses``); its inner
loop, lifted in that capture, is a step whose inputs include that item. Eagerly the inner loop
reads a Python int there, where the step's NumPy runs would get a 0-d array and its compiled
body an int64: the outer body was refused ("uses its index where a Python int and an int64
differ: an operand of stax.functional.lifted_loop") and ran in NumPy. Here the inner step knows
which of its inputs is the enclosing item (``enclosing_items``), with the span of values the
outer loop gives it: its NumPy runs take it as the Python int it stands for, its compiled body
traces it as the scalar (views on indexing) and checks its uses as the item's own
(``check_item_uses``'s ``others``), and the outer body's check accepts the item as such an
input (``accepted_operand``).
"""

from __future__ import annotations

import contextvars
import functools
from typing import Any

from stax.ir import LIFTED_LOOP, Node, Opcode, lifted_loop_runner
from stax.trace.loops import ITEM_ARGUMENT as ITEM
from stax.trace.proxy import Proxy

Span = tuple[int, int]

#: the span of the items of the lifted body being captured (its compiled body's capture)
_ENCLOSING: contextvars.ContextVar[Span | None] = contextvars.ContextVar(
    "stax_enclosing_items", default=None)


def span_of(items: range) -> Span | None:
    """The least and the greatest of ``items`` (None: no item)."""
    return (min(items[0], items[-1]), max(items[0], items[-1])) if items else None


def spanning(body: Any, items: range) -> Any:
    """``body`` (a lifted loop's body function) capturing with its items' span known to the
    loops lifted inside it."""
    span = span_of(items)

    @functools.wraps(body)
    def spanned(*args: Any) -> Any:
        token = _ENCLOSING.set(span)
        try:
            return body(*args)
        finally:
            _ENCLOSING.reset(token)
    return spanned


def enclosing_items(tracer: Any, state: dict[str, Any], inputs: list[str], taken: set[str]
                    ) -> dict[str, Span]:
    """The inputs of a loop lifted inside a lifted body that hold the body's item itself (its
    placeholder in this capture), with the span of its values; ``taken``: the names the inner
    loop binds or updates (such a name is no longer the item)."""
    span = _ENCLOSING.get()
    if span is None:
        return {}
    return {name: span for name in inputs if name not in taken and _is_item(state[name], tracer)}


def _is_item(value: Any, tracer: Any) -> bool:
    return isinstance(value, Proxy) and value.tracer is tracer and _item_node(value.node)


def _item_node(node: Any) -> bool:
    """Whether ``node`` is the lifted body's item (its placeholder)."""
    return isinstance(node, Node) and node.op == Opcode.PLACEHOLDER and node.target == ITEM


def accepted_operand(user: Node, node: Node, span: Span | None) -> bool:
    """Whether ``user``, a lifted loop's step, takes ``node`` (the item, or an int computed
    from it, with this span of values) only as inputs its runner takes as the enclosing item
    (``Runner.outer_items``) or as its start or stop (``Runner.starts``, ``Runner.ends``)."""
    if user.target != LIFTED_LOOP or span is None:
        return False
    runner = lifted_loop_runner(user.kwargs.get("loop"))
    outer = getattr(runner, "outer_items", None) or {}
    names = list(getattr(runner, "inputs", ()))
    starts, ends = getattr(runner, "starts", None), getattr(runner, "ends", None)
    start_at = len(names) if getattr(runner, "start_input", False) else None
    stop_at = len(names) + (start_at is not None)  # (where the runner takes a stop)
    positions = [k for k, a in enumerate(user.args) if a is node]

    def within(bounds: Span | None) -> bool:
        return bounds is not None and bounds[0] <= span[0] and span[1] <= bounds[1]
    return bool(positions) and all(
        within(outer.get(names[k])) if k < len(names) and node.op == Opcode.PLACEHOLDER
        else within(starts) if k == start_at else k == stop_at and within(ends)
        for k in positions)


#: integer arithmetic of the item and an int that a start may be (the span shifts by the int)
_SHIFTS = {"operator.add": 1, "stax.scalar.add": 1, "operator.sub": -1, "stax.scalar.sub": -1}


def begin_span(begin: Any, tracer: Any) -> Span | None:
    """The span of a loop's start (or stop) computed from the enclosing lifted body's item: the
    item itself, or the item plus or minus an int (``range(i + 1, n)``, ``range(i)``); None
    for anything else."""
    span = _ENCLOSING.get()
    if span is None or not isinstance(begin, Proxy) or begin.tracer is not tracer:
        return None
    node = begin.node
    if node.op == Opcode.PLACEHOLDER:
        return span if _item_node(node) else None
    sign = _SHIFTS.get(node.target)
    if sign is None or node.kwargs or len(node.args) != 2:
        return None
    item, shift = node.args
    if sign == 1 and isinstance(shift, Node):
        item, shift = shift, item  # ``1 + i``
    if not (_item_node(item) and type(shift) is int):
        return None
    return span[0] + sign * shift, span[1] + sign * shift
