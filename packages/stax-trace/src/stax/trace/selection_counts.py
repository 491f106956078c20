"""The length of a masked selection as a value the program computes: ``len(x[m])``,
``x[m].size``, ``x[m].shape[0]`` (issue 14, item 2).

A selection's length is the number of true elements of its mask, which the data decides. Read
by Python it was a number answered at capture, and a data gate on the selection's shape made
every call with another count decline: ``y.sum() / len(y)`` ran eagerly after three compiles
on a stream of new data. Here the length read by the user's code is a ``TracedSize`` over a
*count symbol* (``c0``, ``c1``, ... beside the shapes' ``s0``...): integer arithmetic keeps it
(``len(y) - 1``), and where it reaches a traced call as an operand the node records its place
and expression (``meta["size_args"]``), as a shape's size does. Once the function returned,
``resolve`` replaces each such operand by the program's own count of the mask (``m.sum()``, an
int64) converted as NumPy converts a weak Python int for that call (``float32`` with float32
arrays; an integer array's dtype, declining where the count does not fit, NumPy's
``OverflowError``). The selection is then used by reductions alone, which
``masked_reductions`` computes over the whole arrays: no count in the key, no gate.

Every other use decides something in Python (``if len(y):``, ``range(len(y))``, ``float()``,
a shape argument ``np.zeros(len(y))``, a call that takes the int otherwise): it reads the
count, which keeps today's data gate on the selection's shape. So does a length whose mask is
not found (``np.unique``'s result) and an expression mixing counts with shapes' sizes.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from stax.ir import Node, Opcode, TensorMeta, UnsupportedError
from stax.ir.scalar_inputs import weak_int_cast, weak_int_target
from stax.ir.sizes import Size, parse_size
from stax.ir.symbolic_shapes import replaced_argument

if TYPE_CHECKING:
    from .tracer import Tracer

#: calls whose result is a tuple of position arrays of their one mask argument (``call_key``)
POSITIONS = ("numpy.where", "numpy.nonzero", "method:nonzero")
#: the prefix of count symbols (a shape's are ``s0``, ``s1``...)
PREFIX = "c"


def call_key(node: Node) -> str:
    """A call's target, ``method:<name>`` for a method (``masked_reductions`` reads it too)."""
    return f"method:{node.target}" if node.op is Opcode.CALL_METHOD else str(node.target)


def _bool_mask(node: Any) -> Node | None:
    ok = isinstance(node, Node) and node.tensor is not None and node.tensor.dtype == "bool" and \
        node.tensor.ndim > 0
    return node if ok else None


def mask_of(node: Node, data_shaped: Callable[[Node], bool]) -> Node | None:
    """The bool mask whose number of true elements is the length of the 1-D ``node``: a
    selection ``a[m]``, positions ``np.flatnonzero(m)``/``np.nonzero(m)[k]``, a gather by them,
    or element-wise work on such values (their lengths are equal, else NumPy raised); None
    when there is none. ``data_shaped``: whether a node's shape comes from the data."""
    while True:
        if node.tensor is None or node.tensor.ndim != 1:
            return None
        key = call_key(node)
        args = node.args
        if key == "numpy.flatnonzero" and len(args) == 1 and not node.kwargs:
            return _bool_mask(args[0])
        if key == "astype" and node.op is Opcode.CALL_METHOD and args and \
                isinstance(args[0], Node):
            node = args[0]
            continue
        if key == "operator.getitem" and len(args) == 2 and not node.kwargs:
            base, index = args
            if isinstance(base, Node) and call_key(base) in POSITIONS and \
                    len(base.args) == 1 and isinstance(index, int) and not isinstance(index, bool):
                return _bool_mask(base.args[0])  # np.nonzero(m)[k]
            if isinstance(index, tuple):  # a[np.nonzero(m)], a[idx, 0]: as long as positions
                return _one_mask(index, data_shaped)  # of one mask, which nothing broadcasts
            if not isinstance(index, Node) or index.tensor is None:
                return None
            if index.tensor.dtype == "bool" and isinstance(base, Node) and \
                    base.tensor is not None and base.tensor.shape == index.tensor.shape:
                return _bool_mask(index)  # a[m]
            if index.tensor.dtype == "bool" or index.tensor.ndim != 1:
                return None
            node = index  # a[positions]: as long as the positions
            continue
        from .masked import elementwise_function  # (masked.py imports traced_sizes, this too)

        if node.op is not Opcode.CALL_FUNCTION or elementwise_function(str(node.target)) is None:
            return None
        vectors = [a for a in args if isinstance(a, Node) and a.tensor is not None and
                   a.tensor.shape == node.tensor.shape and data_shaped(a)]
        if not vectors:
            return None
        node = vectors[0]


def stale_length() -> UnsupportedError:
    """A refusal: Python reads the length of a selection of a lifted loop's first iteration
    after the loop (``n = len(t)`` in the body, ``n`` used after it): that number is the
    first item's, eager Python's is the last item's."""
    from .isolation import refused
    from .source import user_source

    return refused(UnsupportedError(
        "the length of a selection made inside a lifted loop is used after the loop",
        source=user_source(), hint="the function runs eagerly"))


def _one_mask(index: tuple[Any, ...], data_shaped: Callable[[Node], bool]) -> Node | None:
    """The mask of a tuple index whose arrays are all 1-D positions of that one mask (ints
    beside them take one element each); None otherwise: another array broadcasts with them
    (``a[np.flatnonzero(m), np.arange(5)]`` has 5 elements, ``m`` one true)."""
    masks = [mask_of(i, data_shaped) if isinstance(i, Node) and i.tensor is not None and
             i.tensor.dtype != "bool" else None for i in index if not _plain_int(i)]
    if not masks or any(m is None or m is not masks[0] for m in masks):
        return None
    return masks[0]


def _plain_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def count_symbols(expression: Any) -> set[str]:
    """The count symbols ``expression`` (a ``Size`` or an int) is written in."""
    if not isinstance(expression, Size):
        return set()
    return {s for s in expression.symbols if s.startswith(PREFIX)}


def resolve(tracer: Tracer) -> list[Node]:
    """Put the program's count of each mask where a length was an operand (module doc); any
    other length read is read: its selection keeps its shape gate. Returns the nodes of data-
    dependent shape the lengths were read from and those they are computed from, for
    ``masked_reductions.erase_unused`` (a selection read only for its length is then unused: left
    in the graph, its shape kept a generic version from being made)."""
    counts = tracer.sizes.counts
    if not counts:
        return []
    graph = tracer.graph
    made: dict[Node, Node] = {}  # mask -> its count node (before the first use)
    for node in list(graph.nodes):
        records = node.meta.get("size_args")
        if not records:
            continue
        kept = []
        for path, text in records:
            expression = parse_size(text)
            symbols = count_symbols(expression)
            if symbols & tracer.sizes.stale:
                raise stale_length()
            if not symbols:
                kept.append([path, text])
                continue
            value = _operand(tracer, node, expression, made)
            if value is None:
                tracer.sizes.read(expression)  # Python's number stays: its gate too
                continue
            where, *rest = path
            if where == "args":
                node.set_args(replaced_argument(node.args, rest, value), node.kwargs)
            else:
                node.set_args(node.args, replaced_argument(node.kwargs, rest, value))
        if kept:
            node.meta["size_args"] = kept
        else:
            del node.meta["size_args"]
    found: dict[Node, None] = {}
    stack = [selection for selection, _ in counts.values()]
    while stack:
        top = stack.pop()
        if top not in found and tracer.sizes.data_shaped(top):
            found[top] = None
            stack.extend(top.inputs)
    return list(found)


def _operand(tracer: Tracer, node: Node, expression: Size, made: dict[Node, Node]
             ) -> Node | None:
    """``expression``, counts and shapes' sizes, as a node converted for ``node``'s operand
    (``x.size - len(t)``: the sizes' part an int the node records as a size, ``size_args``, for
    a size-generic version to put back); None where ``node`` does not take an int as a weak
    scalar or the counts' part is not ``_computable`` (a product, a quotient, a count times
    a size)."""
    graph, counts = tracer.graph, tracer.sizes.counts
    target = weak_int_target(node)
    counted = sum((c * math.prod(Size.symbol(a) for a in m) for m, c in expression.terms
                   if m and all(isinstance(a, str) and a in counts for a in m)), 0)
    sizes = expression - counted  # an int, or a Size over shapes' symbols alone
    if target is None or not isinstance(counted, Size) or count_symbols(sizes) or \
            not _computable(graph, counted, counts):
        return None
    with graph.inserting_before(node):
        total = _polynomial(graph, counted, counts, made, node.source)
        if isinstance(sizes, Size) or sizes:
            value = sizes.evaluate(tracer.sizes.values()) if isinstance(sizes, Size) else sizes
            meta = {"tensor": TensorMeta((), "int64", (), scalar=True), "source": node.source}
            if isinstance(sizes, Size):
                meta["size_args"] = [[["args", 0], str(sizes)]]
            total = graph.create_node(Opcode.CALL_FUNCTION, "operator.add", (value, total), {},
                                      name="count_and_size", meta=meta)
        return weak_int_cast(graph, total, target)


def _computable(graph: Any, expression: Size, counts: dict[str, tuple[Node, Node]]) -> bool:
    """A sum of counts of masks of ``graph`` (``counts`` keeps none erased: ``loop_state.
    forget``) with small coefficients: an int64 whatever the counts, in a size-generic version
    too, whose arrays may grow past the traced ones (a product of counts, ``len(t) ** 3``,
    wrapped there; Python's int does not): a count is below 2^43 (8 TB of mask)."""
    return all(len(monomial) == 1 and isinstance(monomial[0], str) and monomial[0] in counts
               and counts[monomial[0]][1].graph is graph for monomial, _ in expression.terms
               if monomial) and sum(abs(c) for m, c in expression.terms if m) < 2 ** 19 and \
        all(abs(c) < 2 ** 62 for m, c in expression.terms if not m)


def _polynomial(graph: Any, expression: Size, counts: dict[str, tuple[Node, Node]],
                made: dict[Node, Node], source: Any) -> Node:
    """The int64 node of ``expression`` (a ``_computable`` sum of counts), each count its
    mask's ``m.sum()`` (one per mask in ``made``), at the graph's insertion point."""
    int64 = {"tensor": TensorMeta((), "int64", (), scalar=True), "source": source}

    def call(op: Opcode, target: str, args: tuple[Any, ...], name: str) -> Node:
        return graph.create_node(op, target, args, {}, name=name, meta=dict(int64))

    total: Node | int = 0
    for monomial, coefficient in expression.terms:  # one count each, or none (``_computable``)
        term: Node | int = coefficient
        if monomial:
            mask = counts[monomial[0]][1]
            if mask not in made:
                made[mask] = call(Opcode.CALL_METHOD, "sum", (mask,), "selection_count")
            term = made[mask] if coefficient == 1 else \
                call(Opcode.CALL_FUNCTION, "operator.mul", (coefficient, made[mask]),
                     "count_product")
        total = term if isinstance(total, int) and total == 0 else \
            call(Opcode.CALL_FUNCTION, "operator.add", (total, term), "count_sum")
    assert isinstance(total, Node)  # the expression has a symbol
    return total


def compared(tracer: Tracer, expression: Any, relation: str, other: Any) -> bool | None:
    """``len(y) == 0`` (``relation`` an ``operator`` name, ``other`` a Python or NumPy int or
    float): Python's answer, recorded as a data gate on the program's own comparison of the
    count, so a call where it holds the same way runs this version whatever the count; None
    where the expression is not one of counts alone (the caller reads it)."""
    value = _counted_value(tracer, expression)
    if value is None or not issubclass(type(other), (int, float, np.integer, np.floating)) or \
            issubclass(type(other), (bool, np.bool_)):
        return None  # (``type``: a traced scalar argument answers isinstance as its value)
    from .proxy import Proxy  # (proxy.py imports traced_sizes, which imports this)
    from .source import user_source

    answer = bool(getattr(operator, relation)(value, other))
    source = user_source()
    node = tracer.graph.create_node(
        Opcode.CALL_FUNCTION, f"operator.{relation}",
        (_polynomial(tracer.graph, expression, tracer.sizes.counts, {}, source), other), {},
        name="count_test",
        meta={"tensor": TensorMeta((), "bool", (), scalar=True), "source": source})
    tracer.adopt(node, np.bool_(answer))
    return tracer.gate(Proxy(node, np.bool_(answer), tracer), "bool")


def returned(tracer: Tracer, expression: Any) -> Any:
    """A length the function returns (``return t.sum(), len(t)``): the traced int64 count the
    program outputs, for the result's tree to convert to a Python int; None where the
    expression is not one of counts alone (the number is then read)."""
    traced = _counted_value(tracer, expression)
    if traced is None:
        return None
    from .proxy import Proxy

    value = np.int64(traced)
    node = _polynomial(tracer.graph, expression, tracer.sizes.counts, {}, None)
    tracer.adopt(node, value)
    return Proxy(node, value, tracer)


def _counted_value(tracer: Tracer, expression: Any) -> int | None:
    """The traced value of ``expression`` where it is a computable sum of counts alone
    (``_computable``), else None."""
    counts = tracer.sizes.counts
    if not isinstance(expression, Size) or not expression.symbols <= counts.keys() or \
            not _computable(tracer.graph, expression, counts):
        return None
    return expression.evaluate({s: counts[s][0].tensor.shape[0] for s in expression.symbols})
