"""The golden ``stax.capture/1.2`` document (``tools/make_fixtures.py --sizes``): what a
size-generic compile reads from a capture — a Python scalar operand (node meta
``scalar_args``), sizes the function read in Python as call arguments (``size_args``) and their
symbols (``info["size_symbols"]``). It reads back to the same document, and symbolizes as the
runtime does; a capture without any of it keeps declaring 1.1."""

import json
from pathlib import Path

from stax.ir import load_capture
from stax.ir.program import CAPTURE_1_2_SCHEMA
from stax.ir.scalar_inputs import scalar_inputs
from stax.ir.shape_env import ShapeEnv
from stax.ir.sizes import Size, shape_env
from stax.ir.symbolic_shapes import symbolize

FIXTURES = Path(__file__).parent / "fixtures"
SIZED = FIXTURES / "scaled_rows.capture.schema-1.2.json"


def test_the_1_2_capture_reads_back_with_its_sizes_and_scalars():
    doc = json.loads(SIZED.read_text())
    assert doc["schema"] == CAPTURE_1_2_SCHEMA == "stax.capture/1.2"
    program = load_capture(doc)
    assert program.to_json() == doc
    meta = {n.name: n.meta for n in program.graph.nodes}
    assert meta["mul"]["scalar_args"] == [[["args", 1], 1]]
    assert meta["truediv"]["size_args"] == [[["args", 1], "s0"]]
    assert program.info["size_symbols"] == {"s0": ["x", 0], "s1": ["x", 1]}
    assert str(program).startswith("# stax.capture/1.2 scaled_rows")


def test_the_1_2_capture_symbolizes_as_the_runtime_does():
    program = load_capture(SIZED)
    with shape_env(ShapeEnv()) as env:
        assert symbolize(program, {0: [0, 1]}, env, frozenset(),
                         program.info["size_symbols"]) is None
        assert scalar_inputs(program, {1: "float"}) is None
    divide = next(n for n in program.graph.nodes if n.name == "truediv")
    assert isinstance(divide.args[1], Size) and str(divide.args[1]) == "s0"
    assert [str(d) for d in divide.tensor.shape] == ["s0", "s1"]
    assert program.inputs == ["x", "scalar1"]
    # what it declares once symbolized: sizes in shapes, still 1.2
    assert program.to_json()["schema"] == "stax.capture/1.2"


def test_captures_without_sizes_or_scalars_declare_1_1():
    for name in ("example_1_1.capture.v0.1.0.json", "example_1_1.capture.schema-1.0.json"):
        program = load_capture(FIXTURES / name)
        assert program.to_json()["schema"] == "stax.capture/1.1"
