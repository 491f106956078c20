"""How a lifted loop's body may use its item (``lifted_loops``): where an int64 stands for the
Python int without changing what the body computes.

The body is compiled once with the item as a 0-d int64 array, traced as the NumPy scalar it
stands for; eagerly it is a Python int, which NumPy treats as a *weak* scalar (NEP 50:
``float32_array * i`` stays float32, ``i / 0`` raises ``ZeroDivisionError``) and which never
overflows. The two agree

- as an index (``x[i]``, ``x[i + 1, :]``, ``x[n - 1 - i]``);
- in integer arithmetic on the item and Python ints alone, while every value stays within
  ``2**53`` — checked on the interval the loop's items span (``i + 1``, ``2 * i``, ``i // 3``,
  ``i % 7``); such operations are then plain int64 arithmetic in the kernels (they cannot
  overflow, so NumPy's scalar-overflow reports need no NumPy step), and ``/`` of two of them
  (a double either way, the divisor never zero);
- as an operand of arithmetic with a traced int64, float64 or complex128 value (an array or a
  NumPy scalar): the result's dtype and value are the same for a weak and a strong int64
  (``acc / (i + 1)`` with a float64 ``acc``);
- as a value stored into an int64, float64 or complex128 array (``out[mask] = i``), or into a
  float32 (int32) one while it stays below ``2**24`` (``2**31``): the same number is stored.

Anything else (``x.astype(np.float32) * i``, ``i ** 2``, ``np.sqrt(i)``, an item compared) is
refused, and the loop runs in NumPy as written.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from stax.ir import GraphProgram, Node, Opcode, UnsupportedError, map_nodes
from stax.trace.loops import ITEM_ARGUMENT

from .enclosing_items import accepted_operand, span_of

#: the body function's parameter for the item (``stax.trace.loops``)
ITEM = ITEM_ARGUMENT
EXACT = 2 ** 53  # every int below it is a float64 exactly
STRONG = frozenset({"int64", "float64", "complex128"})  # a weak int promotes to these alone
#: narrower array dtypes a stored value keeps in, below this bound
STORED_BELOW = {"float32": 2 ** 24, "int32": 2 ** 31, "float16": 2 ** 11, "int16": 2 ** 15}
_INDEXING = ("operator.getitem", "stax.functional.setitem")
# integer arithmetic: its interval of results, from its operands' intervals
_SUM = {"operator.add", "stax.scalar.add"}
_DIFFERENCE = {"operator.sub", "stax.scalar.sub"}
_PRODUCT = {"operator.mul", "stax.scalar.mul"}
_NEGATION = {"operator.neg", "stax.scalar.neg"}
_ABSOLUTE = {"operator.abs", "stax.scalar.abs"}
_INTEGER = _SUM | _DIFFERENCE | _PRODUCT | _NEGATION | _ABSOLUTE | {
    "operator.floordiv", "operator.mod", "operator.index", "operator.pos"}
#: NumPy-scalar operators (``stax.ir.SCALAR_OPERATORS``: a NumPy step, for its overflow
#: reports) whose operands are proven in range: plain arithmetic
_PLAIN = {"stax.scalar.add": "operator.add", "stax.scalar.sub": "operator.sub",
          "stax.scalar.mul": "operator.mul", "stax.scalar.neg": "operator.neg",
          "stax.scalar.abs": "operator.abs"}
_PINNABLE = _INTEGER | {"operator.truediv"}

Interval = tuple[int, int]
FLOAT = None  # a derived value that is a Python float eagerly (``i / 2``)
COMPLEX = "complex"  # one that is a Python complex eagerly (``-2j * np.pi * k``)


def check_item_uses(capture: GraphProgram, items: range,
                    others: dict[str, Interval] | None = None) -> None:
    """Refuse a body that reads data into Python or uses its item where a Python int and an
    int64 would differ; make the item's integer arithmetic plain (see the module's docstring).
    ``others``: inputs standing for an enclosing loop's item, checked as the item, with the
    span of their values (``enclosing_items``)."""
    if capture.gates:
        gate = capture.gates[0]
        raise UnsupportedError(f"the loop body reads an array into Python ({gate.kind})",
                               source=gate.source)
    spans = {ITEM: span_of(items), **(others or {})}
    derived: dict[Any, Interval | None] = {
        n: spans[n.target] for n in capture.graph.nodes
        if n.op == Opcode.PLACEHOLDER and spans.get(n.target) is not None}
    if not derived:
        return
    # in the graph's order, each use of each derived operand: a node reading two (``i + n``,
    # a counter computed from the item, ``stax.runtime.stepped_locals``) is judged with both
    # known (from the first alone, the second looked like a traced int64: ``x32 * (i + n)``
    # passed as float64, ``out8[i] = n`` as a store of an index)
    for user in capture.graph.nodes:
        for node in dict.fromkeys(n for n in user.inputs if n in derived):
            why = _use(user, node, derived)
            if why is not None:
                raise UnsupportedError(f"the loop body uses its index where a Python int and an "
                                       f"int64 differ: {why}", node=user.name, source=user.source)
    for node, span in derived.items():  # proven in range: no overflow to report
        if node.target in _PLAIN and span not in (FLOAT, COMPLEX):
            node.target = _PLAIN[node.target]


def _use(user: Node, node: Node, derived: dict[Any, Interval | None]) -> str | None:
    """Why this use of ``node`` (derived from the item) is refused, or None (``user`` is then
    in ``derived`` when it is derived in turn)."""
    if user.op == Opcode.OUTPUT:
        return None  # returned: the runner does not read the item back
    if user.op != Opcode.CALL_FUNCTION:
        return "a method call"
    chosen = _chosen(user, node, derived)  # builtin max/min (``stax.trace.minmax``)
    if chosen != "":
        return chosen
    if user.target in _INDEXING:
        if _mentions(user.args[0], node):
            return "indexed"
        if user.target == "stax.functional.setitem" and _mentions(user.args[2:], node):
            return _stored(user, node, derived)
        return None if derived[node] not in (FLOAT, COMPLEX) else "a float as an index"
    operands = list(user.args)
    if user.target in FLOAT_UFUNCS and len(operands) == 1 and not user.kwargs and \
            derived[node] in (FLOAT, COMPLEX):
        return None  # ``np.sin(i * dt)``: NumPy's float64 of the same double, strong either way
        # (``np.exp(-2j * np.pi * k / n)``: its complex128)
    if accepted_operand(user, node, derived[node]):
        return None  # an inner lifted loop's input it takes as the Python int (not derived)
    if user.kwargs or user.target not in _PINNABLE:
        return f"an operand of {user.target}"
    traced = [a for a in operands if isinstance(a, Node) and a not in derived]
    if traced:  # with a traced value: its dtype decides, the same for a weak or strong int
        dtypes = [a.tensor.dtype if a.tensor is not None else "?" for a in traced]
        if not all(d in STRONG for d in dtypes):
            return f"with a {'/'.join(sorted(set(dtypes) - STRONG))} operand (NEP 50 keeps it)"
        return None if _exact(node, derived) else "past 2**53"
    floats = _complex_arithmetic(user, operands, derived)
    if floats is None:
        floats = _float_arithmetic(user, operands, derived)
    if floats is not None:
        return floats or None
    if any(type(a) not in (int, bool) for a in operands if not isinstance(a, Node)):
        return "with a non-int constant"
    spans = [derived[a] if isinstance(a, Node) else (int(a), int(a)) for a in operands]
    span = _interval(user.target, spans)
    if isinstance(span, str):
        return span
    derived[user] = span
    return None


def _float_arithmetic(user: Node, operands: list[Any], derived: dict[Any, Interval | None]
                      ) -> str | None:
    """``i * dt``, ``t0 + i * dt``, ``-t``: arithmetic giving a Python float eagerly (a float
    constant or a float computed from the item takes part), which int64 and float64 NumPy
    scalars compute as the same doubles (every int below 2**53). The result is ``FLOAT``
    (derived) and "" is returned; a reason where refused (a division by what may be zero:
    Python raises); None where no float takes part."""
    constants = [a for a in operands if not isinstance(a, Node)]
    nodes = [a for a in operands if isinstance(a, Node)]
    if not any(type(a) is float for a in constants) and \
            not any(derived[a] is FLOAT for a in nodes):
        return None
    if any(type(a) not in (int, bool, float) for a in constants):
        return "with a constant of another type"
    if not all(_exact(a, derived) for a in nodes):
        return "past 2**53"
    if user.target == "operator.truediv":
        divisor = operands[1]
        if isinstance(divisor, Node) or divisor == 0:
            return "a division by a value that may be zero"
    elif user.target not in _SUM | _DIFFERENCE | _PRODUCT | _NEGATION | {"operator.pos"}:
        return f"{user.target} of a float"
    derived[user] = FLOAT
    return ""


def _complex_arithmetic(user: Node, operands: list[Any], derived: dict[Any, Interval | None]
                        ) -> str | None:
    """``-2j * np.pi * k``: a Python complex times, plus or minus the item, a number computed
    from it or a float (a complex computed so: ``COMPLEX``), which an int64 and a complex128
    NumPy scalar compute as the same parts: the real operand's imaginary part is zero, so a
    product's ``a*c - b*0`` is ``a*c`` rounded once, fused or not (a product of two complex
    values is not: Python rounds ``a*c`` and ``b*d`` apart, the kernels fuse one). Not a
    division (NumPy divides by a complex as ``x * (1 / c)``). "" where taken (the result
    ``COMPLEX``), a reason where refused, None where no complex takes part."""
    constants = [a for a in operands if not isinstance(a, Node)]
    nodes = [a for a in operands if isinstance(a, Node)]
    complexes = sum(type(a) is complex for a in constants) + \
        sum(derived[a] is COMPLEX for a in nodes)
    if not complexes:
        return None
    if any(type(a) not in (int, bool, float, complex) for a in constants):
        return "with a constant of another type"
    if user.target not in _SUM | _DIFFERENCE | _PRODUCT | _NEGATION | {"operator.pos"}:
        return f"{user.target} of a complex"
    if user.target in _PRODUCT and complexes > 1:
        return "a product of two complex numbers (rounded otherwise when fused)"
    if not all(_exact(a, derived) for a in nodes):
        return "past 2**53"
    derived[user] = COMPLEX  # type: ignore[assignment]
    return ""


#: NumPy ufuncs of a float computed from the item: float64 either way (``np.sin(i * dt)``)
FLOAT_UFUNCS = frozenset(f"numpy.{name}" for name in (
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "exp", "exp2",
    "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "square", "absolute", "negative"))


_COMPARISONS = {f"{m}.{op}" for m in ("operator", "numpy") for op in (
    "lt", "le", "gt", "ge", "eq", "ne")} | {"numpy.less", "numpy.less_equal", "numpy.greater",
                                           "numpy.greater_equal", "numpy.equal", "numpy.not_equal"}
_STEPS = {"operator.add", "operator.sub", "stax.scalar.add", "stax.scalar.sub"}


def check_counter_uses(capture: GraphProgram, names: frozenset[str]) -> None:
    """A lifted ``while`` loop's counters (``stax.trace.loop_counters``) are int64 in the body,
    Python ints eagerly: refuse a comparison with anything but an integer (a float limit: a
    Python int compares exactly, NEP 50 rounds a weak int to a float16 limit's precision) and any
    use but a step by an int and a comparison."""
    if not names:
        return
    users: dict[Any, list[Any]] = defaultdict(list)
    for node in capture.graph.nodes:
        for used in node.inputs:
            users[used].append(node)
    todo = [n for n in capture.graph.nodes if n.op == Opcode.PLACEHOLDER and n.target in names]
    seen: set[Any] = set()
    while todo:
        node = todo.pop()
        for user in users[node]:
            if user in seen or user.op == Opcode.OUTPUT:
                continue
            seen.add(user)
            others = [a for a in (*user.args, *user.kwargs.values()) if a is not node]
            integer = all(type(a) in (int, bool) or (isinstance(a, Node) and a.tensor is not None
                                                     and np.dtype(a.tensor.dtype).kind in "biu")
                          for a in others)
            if user.target in _STEPS and integer and all(abs(a) < 2 ** 31 for a in others
                                                         if type(a) is int):
                todo.append(user)  # the counter again, a step on
            elif user.target not in _COMPARISONS or not integer:
                raise UnsupportedError(f"the loop's counter is used where an int64 and a Python "
                                       f"int differ ({user.target} with {others!r})",
                                       node=user.name, source=user.source)


def _chosen(user: Node, node: Node, derived: dict[Any, Interval | None]) -> str | None:
    """The uses builtin ``max``/``min`` make of item-derived ints (``stax.trace.minmax``:
    ``max(0, i - w + 1)`` as ``where(greater(...), ...)[()]``): a comparison with another such
    int or an int constant (the same answer for Python ints); a select between them (derived,
    spanning both); the select's scalar, ``[()]``. None when allowed, a reason when refused,
    "" for any other use."""
    def integer(a: Any) -> bool:
        return a in derived and derived[a] not in (FLOAT, COMPLEX) if isinstance(a, Node) else \
            isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))
    if user.target in ("numpy.greater", "numpy.less") and not user.kwargs:
        return None if all(integer(a) for a in user.args) else "compared"
    if user.target == "numpy.where" and not user.kwargs and len(user.args) == 3:
        cond, *values = user.args
        if _mentions(cond, node) or not all(integer(a) for a in values):
            return "an operand of numpy.where"
        spans = [derived[a] if isinstance(a, Node) else (int(a), int(a)) for a in values]
        derived[user] = (min(s[0] for s in spans), max(s[1] for s in spans))
        return None
    if user.target == "operator.getitem" and len(user.args) == 2 and user.args[0] is node \
            and user.args[1] == () and derived[node] is not FLOAT:
        derived[user] = derived[node]
        return None
    return ""


def _stored(user: Node, node: Node, derived: dict[Any, Interval | None]) -> str | None:
    target = user.args[0]
    dtype = target.tensor.dtype if isinstance(target, Node) and target.tensor is not None \
        else "?"
    span = derived[node]
    if span is COMPLEX:  # (NumPy refuses a complex stored into a real array)
        return None if dtype == "complex128" else f"a complex stored into a {dtype} array"
    if dtype in STRONG:
        return None if _exact(node, derived) else "past 2**53"
    bound = STORED_BELOW.get(dtype)
    if bound is not None and span is not FLOAT and -bound < span[0] and span[1] < bound:
        return None
    return f"stored into a {dtype} array"


def _exact(node: Node, derived: dict[Any, Interval | None]) -> bool:
    span = derived[node]
    return span in (FLOAT, COMPLEX) or (-EXACT < span[0] and span[1] < EXACT)


def _interval(target: str, spans: list[Interval | None]) -> Interval | str | None:
    """The values ``target`` gives on ints in ``spans`` (FLOAT: a float), or why it is refused."""
    if any(s in (FLOAT, COMPLEX) for s in spans):
        return "arithmetic on a float computed from it"
    if target == "operator.truediv":
        low, high = spans[1]
        return "a division by a value that may be zero" if low <= 0 <= high else FLOAT
    corners: Callable[[Callable[[int, int], int]], list[int]] = \
        lambda f: [f(a, b) for a in spans[0] for b in spans[1]]  # noqa: E731
    if target in _SUM:
        values = corners(operator.add)
    elif target in _DIFFERENCE:
        values = corners(operator.sub)
    elif target in _PRODUCT:
        values = corners(operator.mul)
    elif target in _NEGATION:
        values = [-spans[0][0], -spans[0][1]]
    elif target in _ABSOLUTE:
        low, high = spans[0]
        values = [abs(low), abs(high), 0 if low <= 0 <= high else abs(low)]
    elif target in ("operator.index", "operator.pos"):
        values = list(spans[0])
    elif spans[1][0] != spans[1][1] or spans[1][0] == 0:
        return f"{target} by a value that varies or is zero"
    elif target == "operator.floordiv":
        values = [v // spans[1][0] for v in spans[0]]
    else:  # mod by a constant: NumPy's sign follows the divisor, as Python's
        c = spans[1][0]
        values = [0, c - 1] if c > 0 else [c + 1, 0]
    span = (min(values), max(values))
    return span if -EXACT < span[0] and span[1] < EXACT else "past 2**53"


def _mentions(value: Any, node: Any) -> bool:
    found = []
    map_nodes(value, lambda n: found.append(n is node))
    return any(found)
