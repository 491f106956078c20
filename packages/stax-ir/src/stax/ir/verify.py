"""The graph verifier (``Graph.lint`` in torch.fx terms): structural invariants every pass keeps."""

from __future__ import annotations

from .errors import VerificationError
from .graph import Graph, Node, Opcode
from .ops import OPS


def verify_graph(graph: Graph) -> None:
    """Raise ``VerificationError`` naming the first broken invariant.

    Checks: unique names; every input defined earlier (topological order, SSA); use-lists match
    the arguments exactly; placeholders first; exactly one output, last; op-graph targets are
    declared ops with their declared arity.
    """
    seen: set[Node] = set()
    names: set[str] = set()
    if not graph.nodes or graph.nodes[-1].op is not Opcode.OUTPUT:
        raise VerificationError("graph must end with exactly one output node")
    past_placeholders = False
    for node in graph.nodes:
        where = f"node %{node.name}"
        if node.graph is not graph:
            raise VerificationError(f"{where} belongs to another graph")
        if node.name in names:
            raise VerificationError(f"{where}: duplicate name")
        names.add(node.name)
        if node.op is Opcode.PLACEHOLDER:
            if past_placeholders:
                raise VerificationError(f"{where}: placeholder after a non-placeholder node")
        else:
            past_placeholders = True
        if node.op is Opcode.OUTPUT and node is not graph.nodes[-1]:
            raise VerificationError(f"{where}: output node is not last")
        for inp in node.inputs:
            if inp not in seen:
                raise VerificationError(f"{where} reads %{inp.name}, which is not defined before it")
            if node not in inp.users:
                raise VerificationError(f"{where} is missing from the use-list of %{inp.name}")
        for user in node.users:
            if node not in user.inputs:
                raise VerificationError(f"{where} lists %{user.name} as a user, but it is not")
        if graph.dialect == "op" and node.op is Opcode.CALL_FUNCTION:
            _verify_op_node(node)
        seen.add(node)


def _verify_op_node(node: Node) -> None:
    op = OPS.get(node.target)
    if op is None:
        raise VerificationError(f"node %{node.name}: unknown op {node.target!r}")
    if op.arity >= 0 and len(node.args) != op.arity:
        raise VerificationError(f"node %{node.name}: op {op.name} takes {op.arity} operands, "
                                f"got {len(node.args)}")
    unknown = set(node.kwargs) - set(op.attrs)
    if unknown:
        raise VerificationError(f"node %{node.name}: op {op.name} has no attributes {sorted(unknown)}")
    if node.tensor is None and not (op.kind.value == "extern" and "sequence" in node.meta):
        raise VerificationError(f"node %{node.name}: op-graph nodes must carry tensor metadata")
