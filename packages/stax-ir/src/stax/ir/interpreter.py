"""The NumPy reference interpreter: the semantics of a capture or op graph (STYLE.md habit 6)."""

from __future__ import annotations

import importlib
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .graph import Graph, Node, Opcode, map_nodes
from .ops import NN_FUNCTIONS, get_op
from .program import GraphProgram
from .pytree import tree_flatten, tree_unflatten


def resolve_function(target: str) -> Callable[..., Any]:
    """The Python callable a capture-graph ``call_function`` target names."""
    if target in NN_FUNCTIONS:
        return NN_FUNCTIONS[target]
    module_name, _, attr_path = target.partition(".")
    root: Any = {"operator": operator, "numpy": np}.get(module_name)
    if root is None:
        root = importlib.import_module(module_name)
    for attr in attr_path.split("."):
        root = getattr(root, attr)
    return root


def run_graph(graph: Graph, env: dict[str, Any]) -> tuple[Any, ...]:
    """Evaluate ``graph`` with placeholders bound by target name in ``env``; the flat outputs."""
    values: dict[Node, Any] = {}

    def arg(value: Any) -> Any:
        return map_nodes(value, values.__getitem__)

    for node in graph.nodes:
        if node.op is Opcode.PLACEHOLDER:
            values[node] = env[node.target]
        elif node.op is Opcode.OUTPUT:
            return tuple(arg(node.args[0]))
        elif node.op is Opcode.CALL_METHOD:
            self_, *rest = arg(node.args)
            values[node] = getattr(self_, node.target)(*rest, **arg(node.kwargs))
        elif node.op is Opcode.CALL_FUNCTION:
            fn = get_op(node.target).reference if graph.dialect == "op" else resolve_function(node.target)
            values[node] = fn(*arg(node.args), **arg(node.kwargs))
        else:
            raise NotImplementedError(f"interpreter: opcode {node.op.value} (node %{node.name})")
    raise ValueError("graph has no output node")


def run_program(program: GraphProgram, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call a captured or lowered program like the user's function."""
    leaves, _ = tree_flatten((tuple(args), dict(kwargs)))
    env = {name: leaf for name, leaf in zip(program.inputs, leaves) if name is not None}
    flat = list(run_graph(program.graph, env))
    if program.writeback:
        flat = program.writeback_plan().apply(flat, env)
    return tree_unflatten(program.output_tree, flat)
