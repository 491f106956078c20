"""The golden stax.kernels/1.2 artifact (tools/make_fixtures.py --schema-1.2): its storage plan,
index widths and checks still read and run."""

from pathlib import Path

import numpy as np
import pytest

from stax.codegen import Executable, ExternResultMismatch, load_artifact

FIXTURE = Path(__file__).parent / "fixtures" / "features.kernels.schema-1.2.json"


def features(x, i):
    joined = np.concatenate([x, x.T.reshape(6, 4) * 2], axis=0)
    return np.cumsum(joined, axis=1)[i] + np.arange(4)


def test_the_1_2_artifact_runs():
    artifact = load_artifact(FIXTURE)
    assert artifact.checks and artifact.storage is not None
    assert all(k.index_bits == 32 for k in artifact.kernels)
    executable = Executable(artifact)
    x = np.arange(24, dtype=np.float32).reshape(6, 4) / 8
    i = np.array([0, -1, 3])
    np.testing.assert_array_equal(executable(x, i)[0], features(x, i))
    with pytest.raises(ExternResultMismatch, match="out of bounds"):
        executable(x, np.array([0, -13, 1]))  # the planned shape, an index out of bounds
