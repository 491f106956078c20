"""Golden documents of a size-generic program (issue 15): ``stax.loopir/1.7`` (size symbols in
shapes, strides, ranges and indices, and the ``sizes`` table) and ``stax.kernels/1.9`` (the
plan in size expressions, with its symbols and shape guards). Both read back to the same
document; the loop document compiles again under its own sizes, and the kernels run at sizes
other than the ones they were traced at. The function: a row softmax, rows and columns
dynamic (``tools/make_fixtures.py --sizes``)."""

import json
from pathlib import Path

import numpy as np

from stax.codegen import generate, load_artifact
from stax.codegen.instantiate import GenericExecutable
from stax.ir.shape_env import ShapeEnv
from stax.ir.sizes import Size, shape_env
from stax.loop import load_loopir

FIXTURES = Path(__file__).parent / "fixtures"
LOOPIR = FIXTURES / "row_softmax.loopir.schema-1.7.json"
KERNELS = FIXTURES / "row_softmax.kernels.schema-1.9.json"


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _runs_at_other_sizes(executable):
    for rows, columns in ((3, 40), (17, 5), (1, 129), (64, 64)):
        x = np.random.default_rng(rows).standard_normal((rows, columns)).astype(np.float32)
        got, = executable(x)
        assert got.shape == (rows, columns)
        np.testing.assert_allclose(got, _softmax(x), rtol=2e-6, atol=1e-7)


def test_the_1_7_loop_document_reads_back_and_compiles_under_its_sizes():
    doc = json.loads(LOOPIR.read_text())
    assert doc["schema"] == "stax.loopir/1.7" and set(doc["sizes"]) == {"s0", "s1"}
    program = load_loopir(doc)
    assert program.to_json() == doc
    assert isinstance(program.inputs[0].shape[0], Size)
    assert "input x: float32[s0, s1] strides=(s1, 1)" in str(program)
    with shape_env(ShapeEnv.from_table(program.sizes)):
        artifact = generate(program)
    assert artifact.schema == "stax.kernels/1.9"
    _runs_at_other_sizes(GenericExecutable(artifact))


def test_the_1_9_kernels_document_reads_back_and_runs_at_any_size():
    doc = json.loads(KERNELS.read_text())
    assert doc["schema"] == "stax.kernels/1.9"
    artifact = load_artifact(KERNELS)
    assert artifact.to_json() == doc
    assert set(artifact.sizes["symbols"]) == {"s0", "s1"}
    generic = GenericExecutable(artifact)
    _runs_at_other_sizes(generic)
    # sizes past its guards (32-bit indices): refused with the guard, no memory touched
    huge = np.broadcast_to(np.float32(0), (2 ** 16, 2 ** 16))
    assert any("2147483648" in failure for failure in generic.failures([huge]))
