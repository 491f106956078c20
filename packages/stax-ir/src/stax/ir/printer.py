"""The text form of a graph, in the format of spec listing 3.1."""

from __future__ import annotations

from typing import Any

from .graph import Graph, Node, Opcode


def format_arg(value: Any) -> str:
    if isinstance(value, Node):
        return f"%{value.name}"
    if isinstance(value, tuple):
        inner = ", ".join(format_arg(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(format_arg(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {format_arg(v)}" for k, v in value.items()) + "}"
    return repr(value)


def format_node(node: Node) -> str:
    if node.op is Opcode.OUTPUT:
        (results,) = node.args
        values = results if isinstance(results, tuple) else (results,)
        return "return " + ", ".join(
            v.name if isinstance(v, Node) else repr(v) for v in values)
    shape = ""
    if node.op is not Opcode.PLACEHOLDER and node.tensor is not None:
        shape = f" shape={node.tensor.shape}"
        if node.graph.dialect != "capture":
            shape += f" dtype={node.tensor.dtype}"
    kept = ", events only" if node.events_only else ""
    head = (f"%{node.name}{shape} : [num_users={len(node.users)}{kept}] = "
            f"{node.op.value}[target={node.target}]")
    if node.op is Opcode.PLACEHOLDER:
        return head
    return f"{head}(args = {format_arg(node.args)}, kwargs = {format_arg(node.kwargs)})"


def format_graph(graph: Graph) -> str:
    lines = ["graph("]
    lines += ["    " + format_node(n) for n in graph.nodes]
    lines.append(")")
    return "\n".join(lines)
