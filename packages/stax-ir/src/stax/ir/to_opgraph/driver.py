"""Lowering of the capture graph (Python calls) to the op graph (canonical ops), spec §4–5.

Each capture target (``operator.add``, ``numpy.add``, method ``sum``, ``stax.nn.relu``...) has at
most one rule (``registry``) that emits declared ops. Dtype and shape come from the mixed-mode
metadata recorded at capture time (the eager result on the example inputs), so NumPy's NEP 50
promotion is decided by NumPy itself and never re-derived. A call without a rule, or with
arguments its rule does not lower, runs as NumPy between kernels (an ``extern`` op) unless it has
a native form (``native_forms``); a result whose shape depends on the data and was not gated at
capture raises ``UnsupportedError`` naming the node and the user's source line.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..graph import Graph, Node, Opcode, map_nodes, mark_events_only
from ..program import OPGRAPH_SCHEMA, GraphProgram
from .context import LoweringContext, describe
from .native_forms import NATIVE_FORM_OPS, lower_native_form
from .registry import NotNative, rule_for

#: what lowering a call without a rule may emit: a native form, or the NumPy call itself
WITHOUT_RULE = NATIVE_FORM_OPS | {"extern"}


def lower_capture(capture: GraphProgram) -> GraphProgram:
    """Lower a ``stax.capture/1`` program to a ``stax.opgraph/1`` program."""
    ctx = LoweringContext()
    env: dict[Node, Any] = {}
    live = live_nodes(capture.graph)
    made: set[Node] = set()  # the values nodes lowered to so far
    for node in capture.graph.nodes:
        ctx.lowering(node, frozenset())
        if node not in live:
            continue  # computes only data gates: the replay subgraph (extracted at capture) has it
        if node.op is Opcode.PLACEHOLDER:
            env[node] = ctx.graph.placeholder(node.target, dict(node.meta))
            made.add(env[node])
            continue
        if node.op is Opcode.OUTPUT:
            ctx.graph.output(map_nodes(node.args[0], env.__getitem__))
            continue
        if node.tensor is None and "sequence" not in node.meta:
            raise ctx.unsupported(f"{describe(node)} produced no array value at capture")
        kind = "method" if node.op is Opcode.CALL_METHOD else "function"
        args = map_nodes(node.args, env.__getitem__)
        kwargs = map_nodes(node.kwargs, env.__getitem__)
        found = rule_for(kind, node.target)
        try:
            # a draw runs as NumPy's own call, and so does a value whose bits must be NumPy's
            if found is None or node.effectful or node.meta.get("numpy_call"):
                raise NotNative
            ctx.lowering(node, found.emits)
            env[node] = found.fn(ctx, node, args, kwargs)
        except NotNative:
            ctx.lowering(node, WITHOUT_RULE)
            env[node] = lower_without_rule(ctx, node, args, kwargs)
        if node.events_only:  # unused, kept for its floating-point events (passes/dce.py)
            mark_events_only(env[node])
        _keep_scalar(node, env[node], made)
        if isinstance(env[node], Node):
            made.add(env[node])
    return GraphProgram(OPGRAPH_SCHEMA, capture.name, ctx.graph, list(capture.inputs),
                        capture.input_tree, capture.output_tree, dict(capture.info),
                        writeback=list(capture.writeback))


def _keep_scalar(node: Node, value: Any, made: set[Node]) -> None:
    """A NumPy scalar at capture (``np.searchsorted(c, v)`` of a scalar ``v`` is an int64, not
    a 0-d array) stays one where a rule made a new 0-d value for it: the result is returned
    as NumPy's scalar (hashable, NumPy's scalar math), not as an array."""
    meta = node.tensor
    if meta is None or not meta.scalar or not isinstance(value, Node) or value in made:
        return
    lowered = value.tensor
    if lowered is not None and not lowered.scalar and tuple(lowered.shape) == () and \
            lowered.dtype == meta.dtype:
        value.meta["tensor"] = replace(lowered, scalar=True)


def lower_without_rule(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> Node:
    """A call without a native rule runs as NumPy inside the compiled program (an extern node),
    unless it has a native form. A result whose shape depends on the data must have that shape
    gated at capture."""
    if node.target == "operator.getitem" and len(args) == 2 and isinstance(args[0], tuple) and \
            isinstance(args[1], int):
        return args[0][args[1]]  # one result of a call a multi-result rule lowered natively
    native = lower_native_form(ctx, node, args, kwargs)
    if native is not None:
        return native
    if data_dependent_shape(node) and not node.meta.get("shape_gated"):
        raise ctx.unsupported(f"{describe(node)}: its result's shape depends on the data")
    method = node.op is Opcode.CALL_METHOD
    return ctx.emit("extern", args, {"fn": node.target, "method": method, "call_kwargs": kwargs},
                    name=node.target)


#: Functions whose result shape depends on the data, not only on the input shapes: their traced
#: shape would be wrong for other data, so they cannot be planned ahead.
DATA_DEPENDENT_SHAPES = frozenset({
    "numpy.unique", "numpy.unique_values", "numpy.unique_counts", "numpy.unique_inverse",
    "numpy.unique_all", "numpy.flatnonzero", "numpy.argwhere", "numpy.extract", "numpy.compress",
    "numpy.trim_zeros", "numpy.setdiff1d", "numpy.intersect1d", "numpy.union1d", "numpy.setxor1d",
    "numpy.bincount", "numpy.nonzero", "numpy.histogram_bin_edges", "method:nonzero",
    "method:compress",
})


def _within_minlength(node: Node) -> bool:
    """``np.bincount(x, minlength=m)`` whose traced result has length m: every value was below m,
    and any call where that holds gives length m. No gate: the step's result is checked against
    the planned shape when it runs (a longer one declines the call, which runs as NumPy)."""
    minlength = node.kwargs.get("minlength")
    return isinstance(minlength, int) and not isinstance(minlength, bool) and \
        node.tensor is not None and tuple(node.tensor.shape) == (minlength,)


def data_dependent_shape(node: Node) -> bool:
    """Whether the shape of this capture node's result depends on data, not only on shapes
    (``x[mask]``, ``np.unique``...). Capture makes such a shape a data gate ("shape_gated")."""
    name = f"method:{node.target}" if node.op is Opcode.CALL_METHOD else node.target
    if name == "numpy.bincount" and _within_minlength(node):
        return False
    if name in DATA_DEPENDENT_SHAPES:
        return True
    if name == "numpy.where" and len(node.args) == 1 and not node.kwargs:
        return True  # np.where(m): np.nonzero(m)
    if node.target == "numpy.repeat" and _nodes_in(node.args[1:]):
        return True
    return node.target == "operator.getitem" and \
        any(n.tensor is not None and n.tensor.dtype == "bool" for n in _nodes_in(node.args[1]))


def _nodes_in(value: Any) -> list[Node]:
    found: list[Node] = []
    map_nodes(value, found.append)
    return found


def live_nodes(graph: Graph) -> set[Node]:
    """Placeholders and every node the outputs, an effectful node (a draw) or a node kept for
    its floating-point events depend on."""
    live = set(graph.placeholders)
    pending = [graph.output_node, *(n for n in graph.nodes if n.effectful or n.events_only)]
    while pending:
        node = pending.pop()
        if node not in live or node.op is Opcode.PLACEHOLDER:
            live.add(node)
            pending.extend(n for n in node.inputs if n not in live)
    return live
