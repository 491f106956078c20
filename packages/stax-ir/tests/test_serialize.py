import math

import numpy as np
import pytest

from stax.ir import (
    CAPTURE_SCHEMA,
    Graph,
    GraphProgram,
    SchemaError,
    TensorMeta,
    TreeDef,
    check_schema,
    load_capture,
    tree_flatten,
    tree_unflatten,
    verify_graph,
)
from stax.ir.serialize import decode_value, encode_value, graph_from_json, graph_to_json


@pytest.mark.parametrize("value", [
    None, True, 3, -0.0, 1.5, "s", (1, 2), [1, (2, 3)], {"a": 1}, slice(1, None, 2), Ellipsis,
    np.float32(2.5), np.dtype("int16"), (float("inf"), -float("inf")),
])
def test_constants_round_trip(value):
    back = decode_value(encode_value(value))
    assert type(back) is type(value) and repr(back) == repr(value)
    if isinstance(value, float):
        assert math.copysign(1, back) == math.copysign(1, value)


def test_nan_round_trips():
    assert math.isnan(decode_value(encode_value(float("nan"))))


def test_graph_round_trip_exact(capture_doc_path):
    program = load_capture(capture_doc_path)
    verify_graph(program.graph)
    doc = program.to_json()
    again = GraphProgram.from_json(doc, CAPTURE_SCHEMA)
    assert again.to_json() == doc
    assert str(again.graph) == str(program.graph)


def test_graph_meta_round_trip():
    g = Graph("op")
    x = g.placeholder("x", {"tensor": TensorMeta((2, 3), "float64", (1, 2)), "source": "f.py:3"})
    g.output((x, 1.0))
    back = graph_from_json(graph_to_json(g))
    assert back.nodes[0].tensor == TensorMeta((2, 3), "float64", (1, 2))
    assert back.nodes[0].source == "f.py:3"


def test_schema_versions():
    check_schema({"schema": "stax.capture/1.7"}, "stax.capture/1.0")
    with pytest.raises(SchemaError, match=r"stax.capture/2.0.*accepts 'stax.capture/1.0'"):
        check_schema({"schema": "stax.capture/2.0"}, "stax.capture/1.0")
    with pytest.raises(SchemaError, match=r"stax\.opgraph"):
        check_schema({"schema": "stax.opgraph/1.0"}, "stax.capture/1.0")
    with pytest.raises(SchemaError, match="not a Stax document"):
        check_schema({"nodes": []}, "stax.capture/1.0")


def test_pytree_round_trip():
    tree = ((1, [2, 3]), {"b": 4, "a": (5,)})
    leaves, td = tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5]
    assert tree_unflatten(TreeDef.from_json(td.to_json()), leaves) == tree
    assert td.num_leaves == 5


def test_documents_of_schema_1_0_still_load(capture_doc_path):
    old = load_capture(capture_doc_path.with_name("example_1_1.capture.schema-1.0.json"))
    assert old.schema == "stax.capture/1.0" and old.gates == [] and old.replay is None
    assert str(old.graph) == str(load_capture(capture_doc_path).graph)


def test_a_scalar_type_is_read_back_as_the_type_and_a_dtype_as_the_dtype():
    """``x.dtype.type`` returned by a function is NumPy's type object (it was read back as the
    dtype); a document without the mark reads as a dtype, as before."""
    from stax.ir.serialize import decode_value, encode_value
    for value in (np.float64, np.float32, np.int8, np.bool_, np.complex128):
        assert decode_value(encode_value(value)) is value
        assert decode_value(encode_value(np.dtype(value))) == np.dtype(value)
        assert type(decode_value(encode_value(np.dtype(value)))) is type(np.dtype(value))
    assert decode_value({"dtype": "float32"}) == np.dtype(np.float32)
