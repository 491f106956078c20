"""Op graphs built directly from the op set (this package may not depend on stax-trace)."""

from __future__ import annotations

import os

# Triton reads this when it is first imported: the CUDA kernels of these tests run in Triton's
# interpreter on torch CPU tensors (test_triton_aot.py compiles real kernels in a subprocess
# without it). Set here, before any test module imports Triton.
os.environ.setdefault("TRITON_INTERPRET", "1")
# Which kernels run on the thread pool is measured once per machine (parallel_work.py); tests
# that check a split take the fixed default, not a measurement made while tests load the machine.
os.environ.setdefault("STAX_PARALLEL_WORK", str(1 << 20))

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stax.codegen import Executable, generate
from stax.ir import OPGRAPH_SCHEMA, Graph, GraphProgram, Node, TensorMeta, get_op, tree_flatten
from stax.loop import lower_opgraph

FIXTURES = Path(__file__).parent / "fixtures"


class OpBuilder:
    """Builds an op graph while evaluating every op on example arrays (mixed mode, in small)."""

    def __init__(self, **arrays: np.ndarray) -> None:
        self.graph = Graph("op")
        self.values: dict[Node, Any] = {}
        self.arrays = arrays
        self.inputs = {name: self._add(self.graph.placeholder(name, {"tensor": TensorMeta.of(a)}), a)
                       for name, a in arrays.items()}

    def _add(self, node: Node, value: Any) -> Node:
        self.values[node] = value
        return node

    def __call__(self, op: str, *args: Any, **attrs: Any) -> Node:
        concrete = [self.values.get(a, a) if isinstance(a, Node) else a for a in args]
        value = get_op(op).reference(*concrete, **attrs)
        node = self.graph.call_function(op, args, attrs, meta={"tensor": TensorMeta.of(value)})
        return self._add(node, value)

    def program(self, *outputs: Node) -> GraphProgram:
        self.graph.output(outputs)
        _, tree = tree_flatten((tuple(self.arrays.values()), {}))
        out_tree = tree_flatten(tuple(outputs))[1]
        return GraphProgram(OPGRAPH_SCHEMA, "test", self.graph, list(self.arrays), tree, out_tree)

    def expected(self, *outputs: Node) -> list[Any]:
        return [self.values[o] for o in outputs]


def compile_and_run(builder: OpBuilder, *outputs: Node) -> tuple[list[Any], Any]:
    """Values only: NaN and infinities are data here, so NumPy's error state ignores every
    floating-point event (else the executable declines such calls, ``errstate.py``)."""
    artifact = generate(lower_opgraph(builder.program(*outputs)))
    with np.errstate(all="ignore"):
        return Executable(artifact)(*builder.arrays.values()), artifact


@pytest.fixture
def loopir_doc_path() -> Path:
    return FIXTURES / "example_1_1.loopir.v0.1.0.json"


@pytest.fixture
def build():
    """``build(x=..., w=...)`` -> an ``OpBuilder`` over those example arrays."""
    return OpBuilder


@pytest.fixture
def run():
    """``run(builder, *outputs)`` -> (compiled results, artifact)."""
    return compile_and_run
