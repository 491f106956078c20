"""The golden stax.loopir/1.5 document (tools/make_fixtures.py --schema-1.5): the limits its checks
hold sin/cos/tan arguments below (``LoopProgram.trig_limits``) read back, let float32's routines
reduce short, and a document without them (any before 1.5) keeps the reduction good everywhere."""

import json
from pathlib import Path

import numpy as np
import pytest

from stax.codegen import Executable, ExternResultMismatch, generate
from stax.loop import load_loopir

FIXTURE = Path(__file__).parent / "fixtures" / "trig.loopir.schema-1.5.json"


def trig(x, t):
    return np.sin(x) * np.cos(x * 2) + np.tan(x / 4), np.sin(t)


def _inputs(huge: bool = False):
    x = np.linspace(-40, 40, 37, dtype=np.float32)
    if huge:
        x[3], x[20] = 3e9, -1e30
    return x, np.linspace(-3, 3, 5)


def _close(got, want, ulps):
    np.testing.assert_array_less(np.abs(got.astype(np.float64) - want),
                                 ulps * np.spacing(np.abs(want).astype(got.dtype)) + 1e-300)


def test_the_1_5_document_reads_back_with_its_limits():
    doc = json.loads(FIXTURE.read_text())
    assert doc["schema"] == "stax.loopir/1.5"
    assert set(doc["trig_limits"]) == {"float32", "float64"}
    program = load_loopir(doc)
    assert program.trig_limits == doc["trig_limits"]
    assert program.to_json() == doc
    assert "trig arguments of float32 checked below" in str(program)


def test_the_1_5_document_reduces_float32_arguments_short():
    artifact = generate(load_loopir(FIXTURE))
    assert "llvm.floor.f64" not in artifact.llvm_ir  # no Payne–Hanek
    x, t = _inputs()
    y, s = Executable(artifact)(x, t)
    want_y, want_s = trig(x.astype(np.float64), t)
    _close(y, want_y, 8)  # three float32 functions and their products, each within 1 ulp
    np.testing.assert_allclose(s, want_s, rtol=3e-16)
    with pytest.raises(ExternResultMismatch, match="sin/cos/tan argument"):
        Executable(artifact)(*_inputs(huge=True))


def test_a_document_without_limits_reduces_every_float32_argument():
    doc = json.loads(FIXTURE.read_text())
    doc["schema"] = "stax.loopir/1.4"
    del doc["trig_limits"]
    artifact = generate(load_loopir(doc))  # its checks stay: float64's are as old as the IR
    assert "llvm.floor.f64" in artifact.llvm_ir
    x, t = _inputs()
    y, _ = Executable(artifact)(x, t)
    _close(y, trig(x.astype(np.float64), t)[0], 8)
