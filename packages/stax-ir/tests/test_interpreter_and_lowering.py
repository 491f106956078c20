import numpy as np
import pytest

from stax.ir import (
    Graph,
    GraphProgram,
    TensorMeta,
    TreeDef,
    UnsupportedError,
    load_capture,
    lower_capture,
    run_program,
    verify_graph,
)
from stax.ir.program import CAPTURE_SCHEMA


def reference(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


@pytest.mark.parametrize("shape", [(64, 128), (3, 5), (1, 1)])
def test_capture_and_op_graph_interpret_like_numpy(capture_doc_path, shape):
    capture = load_capture(capture_doc_path)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal(shape, dtype=np.float32)
    opgraph = lower_capture(capture)
    verify_graph(opgraph.graph)
    np.testing.assert_array_equal(run_program(capture, (x, w), {}), reference(x, w))
    np.testing.assert_array_equal(run_program(opgraph, (x, w), {}), reference(x, w))


def test_example_1_1_op_graph(capture_doc_path):
    opgraph = lower_capture(load_capture(capture_doc_path))
    targets = [n.target for n in opgraph.graph.nodes]
    assert targets == ["x", "w", "add", "maximum", "mul", "sum", "output"]
    s = opgraph.graph.nodes[5]
    assert s.kwargs == {"axis": (1,), "keepdims": False, "dtype": "float32"}
    assert s.source == "example_1_1.py:" + s.source.rsplit(":", 1)[1]


def _single_call(target, args_shape=(4,), source="user.py:7 in f"):
    g = Graph("capture")
    m = {"tensor": TensorMeta(args_shape, "float32", (1,))}
    x = g.placeholder("x", m)
    y = g.call_function(target, (x,), meta={**m, "source": source})
    g.output((y,))
    return GraphProgram(CAPTURE_SCHEMA, "f", g, ["x"], TreeDef("tuple", (
        TreeDef("tuple", (TreeDef("leaf"),)), TreeDef("dict"))), TreeDef("leaf"))


def test_unsupported_names_node_and_source_line():
    with pytest.raises(UnsupportedError) as info:
        lower_capture(_single_call("numpy.unique"))
    err = info.value
    assert err.node == "unique" and err.source == "user.py:7 in f"
    assert "numpy.unique(): its result's shape depends on the data" in str(err)
    assert "user.py:7" in str(err)


def test_calls_without_a_native_rule_become_extern_nodes():
    opgraph = lower_capture(_single_call("numpy.sort"))
    node = opgraph.graph.nodes[1]
    assert node.target == "extern" and node.name == "sort"
    assert node.kwargs == {"fn": "numpy.sort", "method": False, "call_kwargs": {}}
    verify_graph(opgraph.graph)
    x = np.array([3.0, -1.0, 2.5, 0.0], np.float32)
    np.testing.assert_array_equal(run_program(opgraph, (x,), {}), np.sort(x))


def test_ufunc_keywords_make_an_extern_call():
    program = _single_call("numpy.negative")
    program.graph.nodes[1].kwargs = {"dtype": np.dtype("float64")}
    node = lower_capture(program).graph.nodes[1]
    assert node.target == "extern"
    assert node.kwargs["call_kwargs"] == {"dtype": np.dtype("float64")}
