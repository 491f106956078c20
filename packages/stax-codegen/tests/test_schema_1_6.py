"""The golden stax.kernels/1.6 document (tools/make_fixtures.py --copies): a kernel that copies an
input unchanged before a region update records it (``copies``), declares 1.6, reads back, and
runs to NumPy's result; documents without such a kernel keep declaring 1.4."""

import json
from pathlib import Path

import numpy as np

from stax.codegen import Executable, load_artifact

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE = FIXTURES / "copies.kernels.schema-1.6.json"


def copy_then_update(traj, k):
    out = traj.copy()
    out[k + 1] = out[k] + 0.5 * out[k] * (1.0 - out[k])
    return out


def test_the_1_6_document_records_the_copy_and_runs():
    assert json.loads(FIXTURE.read_text())["schema"] == "stax.kernels/1.6"
    artifact = load_artifact(FIXTURE)
    assert [k.copies for k in artifact.kernels if k.copies] == ["traj"]
    assert artifact.to_json()["schema"] == "stax.kernels/1.6"
    executable = Executable(artifact)
    rng = np.random.default_rng(4)
    for _ in range(2):
        traj = rng.random((4, 3))
        (got,) = executable(traj)
        np.testing.assert_array_equal(got, copy_then_update(traj, 1))


def test_a_document_without_a_copy_declares_1_4():
    artifact = load_artifact(FIXTURES / "nests.kernels.schema-1.4.json")
    assert not any(k.copies for k in artifact.kernels)
    assert artifact.to_json()["schema"] == "stax.kernels/1.4"
