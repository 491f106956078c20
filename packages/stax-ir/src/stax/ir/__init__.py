"""stax.ir — the graph every layer shares, the op set, and capture-to-op lowering (spec §3–5)."""

from .errors import SchemaError, StaxError, UnsupportedError, VerificationError
from .graph import Graph, Node, Opcode, map_nodes
from .interpreter import run_graph, run_program
from .lifted_loops import (
    LIFTED_LOOP,
    holds_lifted_loop,
    lifted_loop_runner,
    register_lifted_loop,
)
from .meta import TensorMeta, contiguous_strides, dense_strides
from .ops import (
    NN_FUNCTIONS,
    OPS,
    SCALAR_OPERATORS,
    Accuracy,
    CostClass,
    OpDef,
    OpKind,
    approximate_ops,
    commutative_ops,
    comparison_ops,
    elementwise_ops,
    get_op,
    op_info,
    ops_of_cost,
    scatter_key,
)
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
from .slicing import ancestors, backward_slice
from .to_opgraph import data_dependent_shape, lower_capture
from .verify import verify_graph
from .views import rebase_view

__version__ = "0.1.0"

__all__ = [
    "CAPTURE_SCHEMA",
    "GATE_CONVERSIONS",
    "LIFTED_LOOP",
    "NN_FUNCTIONS",
    "OPGRAPH_SCHEMA",
    "OPS",
    "SCALAR_OPERATORS",
    "Accuracy",
    "CostClass",
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
    "ancestors",
    "approximate_ops",
    "backward_slice",
    "check_schema",
    "commutative_ops",
    "comparison_ops",
    "contiguous_strides",
    "data_dependent_shape",
    "dense_strides",
    "elementwise_ops",
    "format_graph",
    "get_op",
    "holds_lifted_loop",
    "lifted_loop_runner",
    "load_capture",
    "load_opgraph",
    "lower_capture",
    "map_nodes",
    "op_info",
    "ops_of_cost",
    "read_json",
    "rebase_view",
    "register_lifted_loop",
    "run_graph",
    "run_program",
    "scatter_key",
    "tree_flatten",
    "tree_leaves",
    "tree_unflatten",
    "verify_graph",
    "write_json",
]
