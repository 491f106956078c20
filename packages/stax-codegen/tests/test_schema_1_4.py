"""The golden stax.loopir/1.4 document (tools/make_fixtures.py --schema-1.4): every form the minor
version added — region updates written in place, a rerolled loop run in order, a scatter at
computed offsets and complex values computed as their parts with fused multiply-adds — still
reads, compiles and computes what NumPy computes."""

import json
from pathlib import Path

import numpy as np

from stax.codegen import Executable, generate
from stax.loop import load_loopir

FIXTURE = Path(__file__).parent / "fixtures" / "updates.loopir.schema-1.4.json"


def updates(x, idx, z):
    out = np.zeros((12, 6), dtype=np.float32)
    for i in range(12):
        out[i, :] = x[i] * 2.0 + i
    hist = np.zeros(4)
    np.add.at(hist, idx, 1.0)
    return out, hist, z * z + z


def test_the_1_4_document_holds_each_new_form():
    doc = json.loads(FIXTURE.read_text())
    assert doc["schema"] == "stax.loopir/1.4"
    buffers = [b for b in doc["buffers"] if b.get("kind", "computed") == "computed"]
    assert any(b.get("ordered") for b in buffers)
    assert any(b.get("store_offset") for b in buffers)
    assert sum(1 for b in buffers if b.get("updates")) >= 2
    assert '"fma"' in FIXTURE.read_text()


def test_the_1_4_document_compiles_and_runs():
    executable = Executable(generate(load_loopir(FIXTURE)))
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.standard_normal((12, 6)).astype(np.float32)
        idx = rng.integers(0, 4, size=4)
        z = rng.standard_normal(5) + 1j * rng.standard_normal(5)
        for got, want in zip(executable(x, idx, z), updates(x, idx, z)):
            np.testing.assert_array_equal(got, want)
