"""Reverse-mode differentiation of an op graph (issue 16): the joint forward/backward program.

``differentiate`` takes an op-graph program (``stax.opgraph/1``, after capture lowering and the
target's decomposition) and appends, before its output, one cotangent per value that lies on a
path from the differentiated inputs to the differentiated outputs, in reverse program order:
each node's rule (``OpDef.vjp``, ``derivatives.py``; a softmax's as a whole,
``derivatives_composite.py``) turns the cotangent of its result into cotangents of its
operands, summed (``add``) where a value has several uses. The program then returns its own
outputs followed by the inputs' cotangents, an ordinary op graph: every later
layer (loop lowering, fusion, the CPU and GPU targets) compiles forward and backward together,
as one program, and the forward values the backward reads are the forward's own buffers (every
value the backward reads kept, or recomputed by it where a minimum cut says so: ``remat.py``).

The outputs' cotangents are the constant 1 for one 0-d output (``grad``), or inputs of the
program appended after the others (``vjp``: one per output, of its shape and dtype).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .derivatives_composite import softmaxes
from .errors import UnsupportedError
from .graph import Node, Opcode
from .ops import OPS
from .program import GraphProgram, load_opgraph
from .pytree import TreeDef
from .remat import rematerialize
from .slicing import ancestors

#: the names of the placeholders that hold the outputs' cotangents (``seeds="inputs"``)
COTANGENT = "__cotangent_{}"


def differentiate(program: GraphProgram, wrt: Sequence[str], *, output: int | None = 0,
                  remat: bool = True) -> GraphProgram:
    """A copy of ``program`` that also returns the cotangents of the placeholders named ``wrt``
    (a zero array for one no output depends on): of output leaf ``output`` (a 0-d float: the
    gradient), or, with ``output=None``, of the sum of every float output times a cotangent the
    program takes as an input (``COTANGENT``, after its other inputs: a vector-Jacobian product).
    ``UnsupportedError`` names the op and the user's line where a rule is missing."""
    program = load_opgraph(program.to_json())  # the caller's program stays as it was
    forward = set(program.graph.nodes)
    if program.writeback:
        raise UnsupportedError("differentiating a function that updates its arguments in place",
                               hint="return the new values instead")
    graph = program.graph
    outputs = list(program.outputs)
    places = {p.target: p for p in graph.placeholders}
    missing = [name for name in wrt if name not in places]
    if missing:
        raise UnsupportedError(f"no array input named {missing[0]!r} to differentiate by")
    sources = [places[name] for name in wrt]
    seeds = _seeds(program, outputs, output)
    active = _between(sources, [n for n in seeds if isinstance(n, Node)])
    end = graph.output_node

    def emit(op: str, operands: tuple[Any, ...], attrs: dict[str, Any], meta: Any,
             anchor: Node | None = None) -> Node:
        info: dict[str, Any] = {"tensor": meta}
        if anchor is not None and anchor.source:
            info["source"] = anchor.source
        with graph.inserting_before(end):
            return graph.call_function(op, operands, attrs, name=op, meta=info)

    cotangents: dict[Node, Node] = {}
    for node, seed in seeds.items():
        _accumulate(emit, cotangents, node, seed(emit) if callable(seed) else seed)
    # patterns differentiated as a whole (``derivatives_composite.py``): softmax
    composites = softmaxes([n for n in graph.nodes if n in active])
    for node in reversed([n for n in graph.nodes if n in active]):
        g = cotangents.get(node)
        if g is None or node.op is Opcode.PLACEHOLDER:
            continue
        composite = composites.get(node)
        if composite is not None:
            for operand, cotangent in composite.rule(_anchored(emit, node), g,
                                                     active.__contains__):
                if cotangent is not None and operand in active:
                    _accumulate(emit, cotangents, operand, cotangent)
            continue
        rule = _rule(node)
        for operand, cotangent in zip(node.args, rule(_anchored(emit, node), node, g,
                                                       active.__contains__)):
            if cotangent is not None and isinstance(operand, Node) and operand in active:
                _accumulate(emit, cotangents, operand, cotangent)
    grads = [cotangents.get(p) or emit("full", (), {
        "shape": tuple(p.tensor.shape), "value": 0.0, "dtype": p.tensor.dtype}, _dense(p))
        for p in sources]
    # a cotangent that is a view of another value: a value of its own (the program's result)
    grads = [emit("mul", (g, 1.0), {}, _dense(g)) if g.target == "view" else g for g in grads]
    end.set_args(((*outputs, *grads),))
    if remat:  # what the forward keeps, what the backward recomputes (remat.py)
        backward = {n for n in graph.nodes if n not in forward and
                    n.op not in (Opcode.OUTPUT, Opcode.PLACEHOLDER)}
        partition = rematerialize(graph, backward, {o for o in outputs if isinstance(o, Node)})
        program.info["autodiff"] = partition.describe()
        program.info["autodiff_bytes"] = {"kept": partition.kept_bytes,
                                          "save_everything": partition.save_everything,
                                          "recompute_everything": partition.recompute_everything}
    program.output_tree = TreeDef("tuple", tuple(TreeDef("leaf") for _ in
                                                 range(len(outputs) + len(grads))))
    return program


def _seeds(program: GraphProgram, outputs: list[Any], output: int | None) -> dict[Node, Any]:
    """The cotangent of each differentiated output: the constant 1, or a new input."""
    from .derivatives import differentiable, meta

    if output is not None:
        target = outputs[output] if 0 <= output < len(outputs) else None
        if not isinstance(target, Node) or not differentiable(target) or target.tensor.shape:
            raise UnsupportedError("a gradient is defined for a function whose (first) result "
                                   "is a float scalar", hint="reduce the result (a sum, a mean)"
                                   " or use vjp")
        return {target: lambda emit: emit("full", (), {"shape": (), "value": 1.0,
                                                        "dtype": target.tensor.dtype},
                                          meta((), target.tensor.dtype))}
    graph, seeds = program.graph, {}
    first = next(n for n in graph.nodes if n.op is not Opcode.PLACEHOLDER)
    for k, out in enumerate(outputs):
        if not (isinstance(out, Node) and differentiable(out)):
            continue
        name = COTANGENT.format(k)
        with graph.inserting_before(first):
            seed = graph.placeholder(name, {"tensor": meta(tuple(out.tensor.shape),
                                                           out.tensor.dtype)})
        program.inputs.append(name)
        seeds[out] = seed if out not in seeds else (seeds[out], seed)
    return seeds


def _accumulate(emit: Any, cotangents: dict[Node, Node], node: Node, g: Any) -> None:
    for part in g if isinstance(g, tuple) else (g,):
        cotangents[node] = part if node not in cotangents else emit(
            "add", (cotangents[node], part), {}, _dense(part))


def _between(sources: list[Node], targets: list[Node]) -> set[Node]:
    """The nodes on a path from a source to a target (both included)."""
    after: set[Node] = set()
    todo = list(sources)
    while todo:
        node = todo.pop()
        if node not in after:
            after.add(node)
            todo.extend(node.users)
    return after & ancestors(targets)


def _rule(node: Node) -> Any:
    op = OPS.get(node.target) if node.op is Opcode.CALL_FUNCTION else None
    if op is None or op.vjp is None:
        what = node.kwargs.get("fn", node.target) if node.target == "extern" else node.target
        raise UnsupportedError(f"no derivative rule for {what}", node=node.name,
                               source=node.source)

    def rule(emit: Any, node: Node, g: Node, need: Any) -> tuple[Any, ...]:
        try:
            return op.vjp(emit, node, g, need)
        except NotImplementedError as exc:
            raise UnsupportedError(f"no derivative rule for {exc}", node=node.name,
                                   source=node.source) from None
    return rule


def _anchored(emit: Any, node: Node) -> Any:
    """``emit`` whose nodes carry ``node``'s source line (errors and logs name the user's)."""
    return lambda op, operands, attrs, meta: emit(op, operands, attrs, meta, node)


def _dense(node: Node) -> Any:
    from .derivatives import meta

    return meta(tuple(node.tensor.shape), node.tensor.dtype)
