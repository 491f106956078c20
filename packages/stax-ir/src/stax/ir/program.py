"""A graph together with how it meets the user's function: the flat inputs and the result tree.

Both the capture document (``stax.capture/1``) and the op graph document (``stax.opgraph/1``) are
a ``GraphProgram``; only the dialect of the graph and the schema name differ.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .graph import Graph, Node
from .pytree import TreeDef
from .serialize import (
    check_schema,
    decode_value,
    encode_value,
    graph_from_json,
    graph_to_json,
    make_document,
    read_json,
    write_json,
)
from .sizes import holds_size

#: 1.1: data gates and their replay graph; 1.2: what a size-generic compile reads and writes
#: (issue 15): size arguments ``{"size": "<expression>"}``, node meta ``size_args`` and
#: ``scalar_args``, ``info`` keys ``SIZED_INFO``. A document declares the oldest minor version
#: that has its fields (one without sizes or scalars declares 1.1, read by any 1.x reader)
#: 1.3: results converted to Python numbers (an ``output_tree`` with "python" nodes,
#: ``TreeDef``: ``return float(loss)``). 1.4: numbers computed in Python from scalar arguments
#: (``scalar_args`` entries holding an expression, ``stax.ir.scalar_inputs``)
CAPTURE_SCHEMA = "stax.capture/1.4"
CAPTURE_1_3_SCHEMA = "stax.capture/1.3"
CAPTURE_1_2_SCHEMA = "stax.capture/1.2"
CAPTURE_1_1_SCHEMA = "stax.capture/1.1"
#: 1.1: size expressions in tensor shapes and strides and as arguments (a symbolized capture
#: lowered); a document without them declares 1.0. 1.2: results converted to Python numbers
OPGRAPH_SCHEMA = "stax.opgraph/1.2"
OPGRAPH_1_1_SCHEMA = "stax.opgraph/1.1"
OPGRAPH_1_0_SCHEMA = "stax.opgraph/1.0"
#: the capture ``info`` keys of 1.2: values whose shape Python read (and in which dimensions),
#: scalar arguments it decided from, the symbols of the sizes it computed with
SIZED_INFO = ("shape_read", "dims_read", "scalar_read", "size_symbols")


#: How each kind of data gate turns a traced value into the Python value the program read.
GATE_CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "bool": bool, "int": int, "float": float, "index": operator.index,
    "item": lambda v: v.item(), "tolist": lambda v: v.tolist(),
    # the shape of a result that depends on the data (x[mask], np.unique): gated, not guessed
    "shape": lambda v: tuple(getattr(v, "shape", ())),
    "shapes": lambda v: [tuple(getattr(e, "shape", ())) for e in v],
}


@dataclass(frozen=True)
class Gate:
    """A data gate (spec definition 3.2): Python read ``node``'s value as ``kind`` and got ``value``.

    ``kind`` is "bool", "int", "float", "index", "item" or "tolist" (spec table 3.2; the last two
    read values or whole sequences, as iteration over ``x.tolist()`` does); ``value`` is the
    outcome on the example inputs, which a later call's replayed outcome must equal for the capture to apply.
    """

    node: str
    kind: str
    value: Any
    source: str | None = None


@dataclass(frozen=True)
class WritebackPlan:
    """How a caller applies in-place updates of arguments: ``copies`` are (argument, flat output
    index) pairs to copy back; ``same`` are user output positions that *are* an updated argument
    (eager returns the caller's array object itself there); ``views`` are user output positions
    that are NumPy views of an updated argument's final value (``x -= m; return x[1:]``), with
    the calls that made them (``ViewCall``): made again on the argument once it holds that
    value, they share its memory as eager's views do (the program's own are views of a buffer
    that is copied back)."""

    n_user: int
    copies: list[tuple[str, int]]
    same: list[tuple[int, str]]
    views: list[tuple[int, str, tuple[ViewCall, ...]]] = field(default_factory=list)

    def apply(self, flat: list[Any], arguments: dict[str, Any]) -> list[Any]:
        """Copy the final values into the arguments (but where the program returned the
        argument itself, having written over it); the user's outputs."""
        import numpy as np

        for name, index in self.copies:
            if flat[index] is not arguments[name]:
                np.copyto(arguments[name], flat[index])
        return self.user_outputs(flat, arguments)

    def user_outputs(self, flat: list[Any], arguments: dict[str, Any]) -> list[Any]:
        """The user's outputs once the arguments hold their final values."""
        user = list(flat[: self.n_user])
        for position, name in self.same:
            user[position] = arguments[name]
        for position, name, calls in self.views:
            user[position] = redo_views(arguments[name], calls)
        return user


#: a call that returned a view of its first operand: ("function" or "method", target, the other
#: operands, keywords), all constants
ViewCall = tuple[str, str, tuple[Any, ...], dict[str, Any]]


def redo_views(base: Any, calls: tuple[ViewCall, ...]) -> Any:
    """``calls`` made again, in order, starting from ``base``."""
    from .interpreter import call_method, resolve_function

    for kind, target, args, kwargs in calls:
        base = call_method(base, target, args, kwargs) if kind == "method" else \
            resolve_function(target)(base, *args, **kwargs)
    return base


def _view_chain(out: Any, finals: tuple[Any, ...]) -> tuple[Node, tuple[ViewCall, ...]] | None:
    """The final value ``out`` is a chain of views of (capture's ``view`` meta: NumPy returned a
    view of the first operand), with the calls, or None."""
    from .graph import Opcode, map_nodes

    calls: list[ViewCall] = []
    node = out
    while isinstance(node, Node) and node not in finals:
        rest: list[Node] = []
        map_nodes((node.args[1:], node.kwargs), rest.append)
        if node.meta.get("view") is None or node.op not in (Opcode.CALL_FUNCTION,
                                                            Opcode.CALL_METHOD) or \
                not node.args or not isinstance(node.args[0], Node) or rest:
            return None
        kind = "method" if node.op is Opcode.CALL_METHOD else "function"
        calls.append((kind, node.target, tuple(node.args[1:]), dict(node.kwargs)))
        node = node.args[0]
    return (node, tuple(reversed(calls))) if calls and isinstance(node, Node) else None


@dataclass
class GraphProgram:
    """``inputs[i]`` says what the i-th flattened argument leaf is: the name of its placeholder
    (an array, a graph input) or ``None`` (a constant the graph was specialized on).
    ``input_tree`` rebuilds ``(args, kwargs)``; ``output_tree`` rebuilds the result from the
    output node's flat values."""

    schema: str
    name: str
    graph: Graph
    inputs: list[str | None]
    input_tree: TreeDef
    output_tree: TreeDef
    info: dict[str, Any] = field(default_factory=dict)
    gates: list[Gate] = field(default_factory=list)
    replay: Graph | None = None  # the gates' backward slice (algorithm 3.1), outputs in gate order
    #: arguments the function updates in place: the last ``len(writeback)`` outputs are their final
    #: values, which the caller copies into those arguments (spec §3.7, §4.9)
    writeback: list[str] = field(default_factory=list)

    @property
    def outputs(self) -> tuple[Any, ...]:
        return self.graph.output_node.args[0]

    def writeback_plan(self) -> WritebackPlan:
        n_user = self.output_tree.num_leaves
        outputs = self.outputs
        finals = outputs[n_user:]
        copies = [(name, n_user + k) for k, name in enumerate(self.writeback)]
        same = [(j, self.writeback[finals.index(out)]) for j, out in enumerate(outputs[:n_user])
                if isinstance(out, Node) and out in finals]
        views = []
        for j, out in enumerate(outputs[:n_user]):
            chain = _view_chain(out, finals) if self.graph.dialect == "capture" else None
            if chain is not None:
                views.append((j, self.writeback[finals.index(chain[0])], chain[1]))
        return WritebackPlan(n_user, copies, same, views)

    def placeholder(self, name: str) -> Node:
        for n in self.graph.placeholders:
            if n.target == name:
                return n
        raise KeyError(name)

    # -- serialization -------------------------------------------------------------------------
    @property
    def declared_schema(self) -> str:
        """The schema the document declares: the oldest minor version that has its fields."""
        family = self.schema.split("/")[0]
        sized = any(key in self.info for key in SIZED_INFO) or _graph_holds_sizes(self.graph)
        converts = self.output_tree.converts
        if family == "stax.capture":
            if any(isinstance(used, list) for node in self.graph.nodes
                   for _, used in node.meta.get("scalar_args", ())):
                return CAPTURE_SCHEMA
            return CAPTURE_1_3_SCHEMA if converts else CAPTURE_1_2_SCHEMA if sized else \
                CAPTURE_1_1_SCHEMA
        if family == "stax.opgraph":
            return OPGRAPH_SCHEMA if converts else OPGRAPH_1_1_SCHEMA if sized else \
                OPGRAPH_1_0_SCHEMA
        return self.schema

    def to_json(self) -> dict[str, Any]:
        return make_document(self.declared_schema, {
            "name": self.name,
            "graph": graph_to_json(self.graph),
            "inputs": self.inputs,
            "input_tree": self.input_tree.to_json(),
            "output_tree": self.output_tree.to_json(),
            "info": encode_value(self.info),
            "gates": [{**asdict(g), "value": encode_value(g.value)} for g in self.gates],
            "replay": graph_to_json(self.replay) if self.replay is not None else None,
            "writeback": self.writeback,
        })

    @classmethod
    def from_json(cls, doc: dict[str, Any], schema: str) -> GraphProgram:
        check_schema(doc, schema)
        replay = doc.get("replay")
        return cls(doc["schema"], doc["name"], graph_from_json(doc["graph"]), list(doc["inputs"]),
                   TreeDef.from_json(doc["input_tree"]), TreeDef.from_json(doc["output_tree"]),
                   decode_value(doc.get("info", {})),
                   [Gate(g["node"], g["kind"], decode_value(g["value"]), g.get("source"))
                    for g in doc.get("gates", [])],
                   graph_from_json(replay) if replay is not None else None,
                   list(doc.get("writeback", [])))

    def dump(self, path: str | Path) -> None:
        write_json(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path, schema: str) -> GraphProgram:
        return cls.from_json(read_json(path), schema)

    def __str__(self) -> str:
        text = f"# {self.declared_schema} {self.name}\n{self.graph}"
        if self.writeback:
            finals = self.outputs[self.output_tree.num_leaves:]
            text += "".join(f"\ncopy_({name}, {_ref(v)})  # written back to the caller"
                            for name, v in zip(self.writeback, finals))
        return text


def _graph_holds_sizes(graph: Graph) -> bool:
    """Whether a node of ``graph`` has a size among its arguments or in its shape and strides,
    or records sizes or scalars computed in Python (what 1.2 captures and 1.1 op graphs add)."""
    for node in graph.nodes:
        if "size_args" in node.meta or "scalar_args" in node.meta:
            return True
        tensor = node.tensor
        if tensor is not None and holds_size((tensor.shape, tensor.strides)):
            return True
        if holds_size(node.args) or holds_size(node.kwargs):
            return True
    return False


def _ref(value: Any) -> str:
    return f"%{value.name}" if isinstance(value, Node) else repr(value)


def load_capture(path_or_doc: str | Path | dict[str, Any]) -> GraphProgram:
    doc = path_or_doc if isinstance(path_or_doc, dict) else read_json(path_or_doc)
    return GraphProgram.from_json(doc, CAPTURE_SCHEMA)


def load_opgraph(path_or_doc: str | Path | dict[str, Any]) -> GraphProgram:
    doc = path_or_doc if isinstance(path_or_doc, dict) else read_json(path_or_doc)
    return GraphProgram.from_json(doc, OPGRAPH_SCHEMA)
