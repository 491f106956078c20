"""A graph together with how it meets the user's function: the flat inputs and the result tree.

Both the capture document (``stax.capture/1``) and the op graph document (``stax.opgraph/1``) are
a ``GraphProgram``; only the dialect of the graph and the schema name differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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

CAPTURE_SCHEMA = "stax.capture/1.0"
OPGRAPH_SCHEMA = "stax.opgraph/1.0"


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

    @property
    def outputs(self) -> tuple[Any, ...]:
        return self.graph.output_node.args[0]

    def placeholder(self, name: str) -> Node:
        for n in self.graph.placeholders:
            if n.target == name:
                return n
        raise KeyError(name)

    # -- serialization -------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return make_document(self.schema, {
            "name": self.name,
            "graph": graph_to_json(self.graph),
            "inputs": self.inputs,
            "input_tree": self.input_tree.to_json(),
            "output_tree": self.output_tree.to_json(),
            "info": encode_value(self.info),
        })

    @classmethod
    def from_json(cls, doc: dict[str, Any], schema: str) -> GraphProgram:
        check_schema(doc, schema)
        return cls(doc["schema"], doc["name"], graph_from_json(doc["graph"]), list(doc["inputs"]),
                   TreeDef.from_json(doc["input_tree"]), TreeDef.from_json(doc["output_tree"]),
                   decode_value(doc.get("info", {})))

    def dump(self, path: str | Path) -> None:
        write_json(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path, schema: str) -> GraphProgram:
        return cls.from_json(read_json(path), schema)

    def __str__(self) -> str:
        return f"# {self.schema} {self.name}\n{self.graph}"


def load_capture(path_or_doc: str | Path | dict[str, Any]) -> GraphProgram:
    doc = path_or_doc if isinstance(path_or_doc, dict) else read_json(path_or_doc)
    return GraphProgram.from_json(doc, CAPTURE_SCHEMA)


def load_opgraph(path_or_doc: str | Path | dict[str, Any]) -> GraphProgram:
    doc = path_or_doc if isinstance(path_or_doc, dict) else read_json(path_or_doc)
    return GraphProgram.from_json(doc, OPGRAPH_SCHEMA)
