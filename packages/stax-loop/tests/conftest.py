from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stax.ir import OPGRAPH_SCHEMA, Graph, GraphProgram, Node, TensorMeta, get_op, tree_flatten
from stax.loop import ExternCall, LoopProgram, lower_opgraph
from stax.loop.interpreter import LoopRun, interpret

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def opgraph_doc_path() -> Path:
    return FIXTURES / "example_1_1.opgraph.v0.1.0.json"


class OpBuilder:
    """An op graph built directly from the op set (this package may not depend on stax-trace),
    every op evaluated by its NumPy reference on example arrays as it is added: the expected
    values, and the metadata capture would have recorded."""

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
        with np.errstate(all="ignore"):
            value = get_op(op).reference(*concrete, **attrs)
        return self.node(value, op, *args, **attrs)

    def node(self, result: Any, op: str, /, *args: Any, **attrs: Any) -> Node:
        """An ``op`` node whose value (and so metadata) is ``result``, not its reference's."""
        node = self.graph.call_function(op, args, attrs, meta={"tensor": TensorMeta.of(result)})
        return self._add(node, result)

    def program(self, *outputs: Node) -> GraphProgram:
        self.graph.output(outputs)
        _, tree = tree_flatten((tuple(self.arrays.values()), {}))
        out_tree = tree_flatten(tuple(outputs))[1]
        return GraphProgram(OPGRAPH_SCHEMA, "test", self.graph, list(self.arrays), tree, out_tree)

    def expected(self, *outputs: Node) -> list[Any]:
        return [self.values[o] for o in outputs]


class Lowered:
    """A builder's program lowered to loops and run by the loop interpreter."""

    def __init__(self, builder: OpBuilder, outputs: tuple[Node, ...], **options: Any) -> None:
        self.loop: LoopProgram = lower_opgraph(builder.program(*outputs), **options)
        with np.errstate(all="ignore"):
            self.run: LoopRun = interpret(self.loop, list(builder.arrays.values()))
        self.expected = builder.expected(*outputs)

    @property
    def native(self) -> bool:
        """Whether every value is computed in loops (no NumPy call between kernels)."""
        return not any(isinstance(b, ExternCall) for b in self.loop.buffers)

    def assert_numpys(self) -> None:
        """Every output is NumPy's, bit for bit (dtype, value, sign of zero, NaN), and no check
        sends the call to NumPy."""
        assert not self.run.failed_checks, self.run.failed_checks
        for got, want in zip(self.run.outputs, self.expected):
            assert_same_bits(got, want)

    def assert_close_to_numpys(self, ulps: int) -> None:
        """Every output within ``ulps`` of NumPy's (``assert_within_ulps``): a complex function
        composed of real ones (``exp``: glibc's cexp from exp, sin and cos)."""
        assert not self.run.failed_checks, self.run.failed_checks
        for got, want in zip(self.run.outputs, self.expected):
            assert_within_ulps(got, want, ulps)


def assert_within_ulps(got: Any, want: Any, ulps: int) -> None:
    """Each (real or complex) part within ``ulps`` of NumPy's where NumPy's is finite and not
    zero, and exactly NumPy's class elsewhere (NaN, signed infinity, signed zero)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    for g, w in ((got.real, want.real), (got.imag, want.imag)) if want.dtype.kind == "c" else \
            ((got, want),):
        nan = np.isnan(w)
        np.testing.assert_array_equal(np.isnan(g), nan)
        normal = np.isfinite(w) & (w != 0)
        exact = ~normal & ~nan
        np.testing.assert_array_equal(g[exact].view(f"u{w.itemsize}"),
                                      w[exact].view(f"u{w.itemsize}"))
        error = np.abs(g[normal] - w[normal]) / np.spacing(np.abs(w[normal]))
        assert error.max(initial=0) <= ulps, error.max()


def assert_same_bits(got: Any, want: Any) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype,
                                                                 want.shape)
    if want.dtype.kind == "f":  # NaN payloads may differ between NumPy's loops: compare NaN-ness
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(got[~nan].view(f"u{want.itemsize}"),
                                      want[~nan].view(f"u{want.itemsize}"))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.fixture
def build():
    """``build(x=..., w=...)`` -> an ``OpBuilder`` over those example arrays."""
    return OpBuilder


@pytest.fixture
def lowered():
    """``lowered(builder, *outputs, **lower_opgraph_options)`` -> a ``Lowered``."""
    return lambda builder, *outputs, **options: Lowered(builder, outputs, **options)
