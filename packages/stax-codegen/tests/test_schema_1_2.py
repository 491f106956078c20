"""The golden stax.loopir/1.2 document (tools/make_fixtures.py --schema-1.2): every form the minor
version added — a scan, guarded loads, an index value, an indirect load and its bounds check —
still reads, compiles and computes what NumPy computes."""

from pathlib import Path

import numpy as np
import pytest

from stax.codegen import Executable, ExternResultMismatch, generate
from stax.loop import load_loopir

FIXTURE = Path(__file__).parent / "fixtures" / "features.loopir.schema-1.2.json"


def features(x, i):
    joined = np.concatenate([x, x.T.reshape(6, 4) * 2], axis=0)
    return np.cumsum(joined, axis=1)[i] + np.arange(4)


def test_the_1_2_document_compiles_and_runs():
    program = load_loopir(FIXTURE)
    assert program.checks
    executable = Executable(generate(program))
    x = np.arange(24, dtype=np.float32).reshape(6, 4) / 8
    for i in (np.array([0, -1, 3]), np.array([11, 2, -12])):
        np.testing.assert_array_equal(executable(x, i)[0], features(x, i))
    with pytest.raises(ExternResultMismatch, match="out of bounds"):
        executable(x, np.array([0, 12, 1]))
