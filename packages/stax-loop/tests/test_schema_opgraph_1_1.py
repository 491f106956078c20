"""The golden ``stax.opgraph/1.1`` document (``tools/make_fixtures.py --sizes``): a
size-generic op graph — shapes and strides in size symbols, sizes as call arguments
(``{"size": "s0"}``), a Python scalar made a 0-d input. It reads back to the same document and
lowers to loop IR 1.7 under its sizes; an op graph without sizes keeps declaring 1.0."""

import json
from pathlib import Path

from stax.ir import load_opgraph
from stax.ir.program import OPGRAPH_1_1_SCHEMA
from stax.ir.shape_env import ShapeEnv
from stax.ir.sizes import Size, shape_env
from stax.loop import lower_opgraph

FIXTURES = Path(__file__).parent / "fixtures"
SIZED = FIXTURES / "scaled_rows.opgraph.schema-1.1.json"


def test_the_1_1_op_graph_reads_back_with_sizes_as_arguments():
    doc = json.loads(SIZED.read_text())
    assert doc["schema"] == OPGRAPH_1_1_SCHEMA == "stax.opgraph/1.1"
    program = load_opgraph(doc)
    assert program.to_json() == doc
    divide = next(n for n in program.graph.nodes if n.name == "truediv")
    assert isinstance(divide.args[1], Size) and str(divide.args[1]) == "s0"


def test_the_1_1_op_graph_lowers_under_its_sizes():
    program = load_opgraph(SIZED)
    env = ShapeEnv()
    with shape_env(env):
        env.new_symbol(6, "x.shape[0]")
        env.new_symbol(40, "x.shape[1]")
        loop = lower_opgraph(program)
    assert loop.schema == "stax.loopir/1.7" and loop.sizes["s0"][2] == 6 and loop.sizes["s1"][2] == 40
    text = str(loop)
    assert "input x: float32[s0, s1]" in text and "input scalar1: float64[]" in text


def test_op_graphs_without_sizes_declare_1_0():
    for name in ("example_1_1.opgraph.v0.1.0.json", "example_1_1.opgraph.schema-1.0.json"):
        assert load_opgraph(FIXTURES / name).to_json()["schema"] == "stax.opgraph/1.0"
