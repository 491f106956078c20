from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def capture_doc_path() -> Path:
    return FIXTURES / "example_1_1.capture.v0.1.0.json"


class CaptureBuilder:
    """Builds capture graphs by hand, running every call on example values (mixed mode, small)."""

    def __init__(self, **arrays):
        import numpy as np

        from stax.ir import Graph, TensorMeta

        self.np = np
        self.TensorMeta = TensorMeta
        self.graph = Graph("capture")
        self.values = {}
        self.arrays = arrays
        self.inputs = {}
        for name, value in arrays.items():
            node = self.graph.placeholder(name, {"tensor": TensorMeta.of(value)})
            self.values[node] = value
            self.inputs[name] = node

    def __call__(self, target, *args, method=False):
        from stax.ir import Node
        from stax.ir.interpreter import resolve_function

        concrete = [self.values[a] if isinstance(a, Node) else a for a in args]
        with self.np.errstate(all="ignore"):
            value = (getattr(concrete[0], target)(*concrete[1:]) if method
                     else resolve_function(target)(*concrete))
        make = self.graph.call_method if method else self.graph.call_function
        node = make(target, args, meta={"tensor": self.TensorMeta.of(value)})
        self.values[node] = value
        return node

    def output(self, *nodes):
        self.graph.output(nodes)
        return self.graph

    def program(self):
        from stax.ir import CAPTURE_SCHEMA, GraphProgram, tree_flatten

        _, tree = tree_flatten((tuple(self.arrays.values()), {}))
        outs = self.graph.output_node.args[0]
        return GraphProgram(CAPTURE_SCHEMA, "f", self.graph, list(self.arrays), tree,
                            tree_flatten(tuple(outs) if len(outs) > 1 else outs[0])[1])


@pytest.fixture
def capture():
    """``capture(x=array, ...)`` -> a ``CaptureBuilder``."""
    return CaptureBuilder
