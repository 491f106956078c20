"""Golden documents of a program that updates its argument in place: ``stax.loopir/1.6`` (its
``overwrites``) and ``stax.kernels/1.8`` (buffers of role ``overwrite``, written into the
argument's memory by the call's last kernel). Both read back to the same document and run on
other data than they were made from. The function: ``x[x < 0] = 0; return x.mean()``."""

import json
from pathlib import Path

import numpy as np

from stax.codegen import Executable, generate, load_artifact
from stax.loop import load_loopir

FIXTURES = Path(__file__).parent / "fixtures"
LOOPIR = FIXTURES / "relu_mean.loopir.schema-1.6.json"
KERNELS = FIXTURES / "relu_mean.kernels.schema-1.8.json"


def _data():
    return np.linspace(3, -2, 96, dtype=np.float32)  # not the documents' own data


def _runs_in_place(executable):
    x = _data()
    want_x = np.maximum(x, 0)
    mean, final = executable(x)
    assert final is x  # the argument's own memory, written over
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_allclose(mean, want_x.mean(), rtol=1e-6)


def test_the_1_6_loop_document_reads_back_and_compiles():
    doc = json.loads(LOOPIR.read_text())
    assert doc["schema"] == "stax.loopir/1.6"
    program = load_loopir(doc)
    assert list(program.overwrites.values()) == ["x"]
    assert program.to_json() == doc
    assert "written over x once the call stands" in str(program)
    artifact = generate(program)
    assert artifact.overwrites == program.overwrites and artifact.late_steps == 1
    _runs_in_place(Executable(artifact))


def test_the_1_8_kernels_document_reads_back_and_runs():
    doc = json.loads(KERNELS.read_text())
    assert doc["schema"] == "stax.kernels/1.8"
    artifact = load_artifact(KERNELS)
    assert artifact.to_json() == doc
    assert [b.role for b in artifact.buffers if b.name in artifact.overwrites] == ["overwrite"]
    _runs_in_place(Executable(artifact))
