"""The golden stax.loopir/1.2 document (tools/make_fixtures.py --schema-1.2): every form the minor
version added — a scan, guarded loads, an index value, an indirect load and its bounds check —
still reads, compiles and computes what NumPy computes.

The document as first written read its second piece's indirect load unguarded, at offsets before
``x`` (where the first piece lies): whatever memory held there set floating-point flags in a
discarded element now and then (CI's ``overflow`` in the kernels). The loop lowering guards such
loads now and the document was corrected alike; the interpreter, which refuses a read outside a
buffer, keeps it so."""

from pathlib import Path

import numpy as np
import pytest

from stax.codegen import Executable, ExternResultMismatch, generate
from stax.loop import load_loopir
from stax.loop.interpreter import run_loop_program

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
        np.testing.assert_array_equal(run_loop_program(program, [x, i])[0], features(x, i))
    with pytest.raises(ExternResultMismatch, match="out of bounds"):
        executable(x, np.array([0, 12, 1]))
