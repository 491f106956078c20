"""JSON documents with a schema name and version, and the JSON form of graphs.

Every layer hands the next a ``{"schema": "stax.<layer>/<major>[.<minor>]", ...}`` document.
Readers accept every minor version of the major they know and reject anything else with an
error naming both versions (ARCHITECTURE.md §2).
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

from .errors import SchemaError, UnsupportedError
from .graph import Graph, Node, Opcode
from .meta import TensorMeta
from .sizes import Size, parse_size

# -- document envelope ---------------------------------------------------------------------------


def make_document(schema: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"schema": schema, **body}


def check_schema(doc: dict[str, Any], expected: str) -> None:
    """Raise unless ``doc["schema"]`` has the name and major version of ``expected``."""
    found = doc.get("schema") if isinstance(doc, dict) else None
    if not isinstance(found, str) or "/" not in found:
        raise SchemaError(f"not a Stax document: expected schema {expected!r}, found {found!r}")
    want_name, want_ver = expected.split("/")
    name, ver = found.split("/", 1)
    if name != want_name or ver.split(".")[0] != want_ver.split(".")[0]:
        raise SchemaError(f"document has schema {found!r}; this reader accepts {expected!r} "
                          f"(any minor version of major {want_ver.split('.')[0]})")


def write_json(path: str | Path, doc: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(doc, indent=1, allow_nan=False, default=_sizes_as_text) + "\n")


def _sizes_as_text(value: Any) -> Any:
    """A size-generic document's dimensions (``stax.ir.sizes.Size``) as their text form."""
    from .sizes import Size

    if isinstance(value, Size):
        return str(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def read_json(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


# -- constants -----------------------------------------------------------------------------------


_PYTHON_TYPES = {"bool": bool, "int": int, "float": float, "complex": complex}


def encode_value(value: Any, node_ref: Any = None) -> Any:
    """Tagged JSON for an argument: nodes, Python/NumPy scalars, containers, slices, dtypes."""
    if isinstance(value, Node):
        return {"node": value.name}
    if value in _PYTHON_TYPES.values() and isinstance(value, type):
        return {"pytype": value.__name__}  # x.astype(bool): a Python type as a dtype
    if isinstance(value, np.generic):  # first: np.float64 is a float, np.str_ a str
        return _encode_scalar(value)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, complex):  # each part as a float is written
        return {"complex": [encode_value(value.real), encode_value(value.imag)]}
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        if math.isnan(value):  # the sign and payload too: they reach results (copysign, fmax)
            return {"float": "nan", "bits": struct.pack(">d", value).hex()}
        return {"float": repr(value)}
    if isinstance(value, np.dtype):
        return {"dtype": value.name}
    if isinstance(value, type) and issubclass(value, np.generic):  # the type (``x.dtype.type``
        # returned); a reader that knows no "type" reads the dtype, which NumPy takes alike
        return {"dtype": np.dtype(value).name, "type": True}
    if isinstance(value, tuple):
        return {"tuple": [encode_value(v) for v in value]}
    if isinstance(value, list):
        return [encode_value(v) for v in value]
    if isinstance(value, dict):
        return {"dict": [[k, encode_value(v)] for k, v in value.items()]}
    if isinstance(value, slice):
        return {"slice": [encode_value(value.start), encode_value(value.stop),
                          encode_value(value.step)]}
    if value is Ellipsis:
        return {"ellipsis": True}
    if isinstance(value, Size):  # an argument of a size-generic graph (``x / x.shape[0]``)
        return {"size": str(value)}
    raise UnsupportedError(f"cannot serialize a constant of type {type(value).__name__}")


def _encode_scalar(value: np.generic) -> Any:
    """A NumPy scalar keeps its type (np.float64(2.0) is not 2.0 to the caller): its value as
    the Python scalar of its kind, and its dtype."""
    if value.dtype.kind not in "biufcU":
        raise UnsupportedError(f"cannot serialize a constant of type {type(value).__name__}")
    item = value.item()
    if isinstance(item, np.generic):  # np.longdouble: no Python scalar holds its value
        raise UnsupportedError(f"cannot serialize a constant of type {type(value).__name__}")
    return {"scalar": encode_value(item), "dtype": value.dtype.str if value.dtype.kind == "U"
            else value.dtype.name}


def decode_value(doc: Any, nodes: dict[str, Node] | None = None) -> Any:
    if isinstance(doc, list):
        return [decode_value(v, nodes) for v in doc]
    if not isinstance(doc, dict):
        return doc
    if "node" in doc:
        if nodes is None:
            raise SchemaError(f"node reference {doc['node']!r} outside a graph")
        return nodes[doc["node"]]
    if "complex" in doc:
        real, imag = (decode_value(v) for v in doc["complex"])
        return complex(real, imag)
    if "float" in doc:
        if "bits" in doc:
            return struct.unpack(">d", bytes.fromhex(doc["bits"]))[0]
        return float(doc["float"])
    if "pytype" in doc:
        return _PYTHON_TYPES[doc["pytype"]]
    if "scalar" in doc:
        return np.dtype(doc["dtype"]).type(decode_value(doc["scalar"]))
    if "dtype" in doc:
        return np.dtype(doc["dtype"]).type if doc.get("type") else np.dtype(doc["dtype"])
    if "tuple" in doc:
        return tuple(decode_value(v, nodes) for v in doc["tuple"])
    if "dict" in doc:
        return {k: decode_value(v, nodes) for k, v in doc["dict"]}
    if "slice" in doc:
        return slice(*(decode_value(v, nodes) for v in doc["slice"]))
    if "size" in doc:
        return parse_size(doc["size"])
    if "ellipsis" in doc:
        return Ellipsis
    raise SchemaError(f"unknown tagged value {doc!r}")


# -- graphs --------------------------------------------------------------------------------------


#: meta keys a document keeps besides ``tensor`` and ``source`` (``numpy_call``: the node runs as
#: NumPy's own call, for its exact bits: a float reduction a data gate reads, ``gate_checks``;
#: ``aliases``: NumPy's value shared an argument's memory with no ``view`` relation to its first
#: operand, ``np.split(x, 2)[0]``, ``x.view(np.int64)``; ``size_args``: arguments the function
#: computed from shapes it read, ``stax.trace.traced_sizes``)
SERIALIZED_META = ("sequence", "gated", "random", "object", "shape_gated", "region", "view",
                   "events_only", "numpy_call", "aliases", "size_args", "scalar_args")


def graph_to_json(graph: Graph) -> dict[str, Any]:
    nodes = []
    for n in graph.nodes:
        entry: dict[str, Any] = {"name": n.name, "op": n.op.value, "target": n.target,
                                 "args": encode_value(n.args), "kwargs": encode_value(n.kwargs)}
        meta: dict[str, Any] = {}
        if n.tensor is not None:
            meta["tensor"] = n.tensor.to_json()
        if n.source is not None:
            meta["source"] = n.source
        for key in SERIALIZED_META:
            if key in n.meta:
                meta[key] = n.meta[key]
        if meta:
            entry["meta"] = meta
        nodes.append(entry)
    return {"dialect": graph.dialect, "nodes": nodes}


def graph_from_json(doc: dict[str, Any]) -> Graph:
    graph = Graph(doc["dialect"])
    by_name: dict[str, Node] = {}
    for entry in doc["nodes"]:
        meta: dict[str, Any] = {}
        raw = entry.get("meta", {})
        if "tensor" in raw:
            meta["tensor"] = TensorMeta.from_json(raw["tensor"])
        for key in ("source", *SERIALIZED_META):
            if key in raw:
                meta[key] = raw[key]
        node = graph.create_node(Opcode(entry["op"]), entry["target"],
                                 decode_value(entry["args"], by_name),
                                 decode_value(entry["kwargs"], by_name),
                                 name=entry["name"], meta=meta)
        if node.name != entry["name"]:
            raise SchemaError(f"duplicate node name {entry['name']!r}")
        by_name[node.name] = node
    return graph
