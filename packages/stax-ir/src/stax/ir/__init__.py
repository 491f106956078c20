"""stax.ir — the graph every layer shares, the op set, and capture-to-op lowering (spec §3–5)."""

from .errors import SchemaError, StaxError, UnsupportedError, VerificationError
from .graph import Graph, Node, Opcode, map_nodes
from .interpreter import run_graph, run_program
from .lower import data_dependent_shape, lower_capture
from .meta import TensorMeta, contiguous_strides
from .ops import NN_FUNCTIONS, OPS, OpDef, OpKind, get_op
from .printer import format_graph
from .program import (
    CAPTURE_SCHEMA,
    GATE_CONVERSIONS,
    OPGRAPH_SCHEMA,
    Gate,
    GraphProgram,
    load_capture,
    load_opgraph,
)
from .pytree import TreeDef, tree_flatten, tree_leaves, tree_unflatten
from .serialize import check_schema, read_json, write_json
from .slicing import backward_slice
from .verify import verify_graph

__version__ = "0.1.0"

__all__ = [
    "CAPTURE_SCHEMA",
    "GATE_CONVERSIONS",
    "NN_FUNCTIONS",
    "OPGRAPH_SCHEMA",
    "OPS",
    "Gate",
    "Graph",
    "GraphProgram",
    "Node",
    "OpDef",
    "OpKind",
    "Opcode",
    "SchemaError",
    "StaxError",
    "TensorMeta",
    "TreeDef",
    "UnsupportedError",
    "VerificationError",
    "backward_slice",
    "check_schema",
    "contiguous_strides",
    "data_dependent_shape",
    "format_graph",
    "get_op",
    "load_capture",
    "load_opgraph",
    "lower_capture",
    "map_nodes",
    "read_json",
    "run_graph",
    "run_program",
    "tree_flatten",
    "tree_leaves",
    "tree_unflatten",
    "verify_graph",
    "write_json",
]
