"""The golden documents of an in-place ufunc that reports after it wrote (tools/make_fixtures.py
--late-reports): ``stax.loopir/1.8`` and ``stax.kernels/1.12`` declare ``late_reports``, read
back to the same documents, and run as NumPy's ``x *= s``: the argument written, then NumPy's
own warning or error for the multiply, from the document's line (``late.py``)."""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from stax.codegen import Executable, generate, load_artifact
from stax.loop import load_loopir

FIXTURES = Path(__file__).parent / "fixtures"
LOOP = FIXTURES / "scale_in_place.loopir.schema-1.8.json"
KERNELS = FIXTURES / "scale_in_place.kernels.schema-1.12.json"


def test_the_documents_declare_and_read_back_their_late_reports():
    loop_doc, kernels_doc = json.loads(LOOP.read_text()), json.loads(KERNELS.read_text())
    assert loop_doc["schema"] == "stax.loopir/1.8"
    assert kernels_doc["schema"] == "stax.kernels/1.12"
    program = load_loopir(LOOP)
    assert program.to_json() == loop_doc
    assert load_artifact(KERNELS).to_json() == kernels_doc
    [(late, (ufunc, source))] = program.late_reports.items()
    assert ufunc == "multiply" and source.startswith("late.py:") and program.overwrites[late] == "x"
    assert not program.events_only  # no twin
    assert generate(program).late_reports == program.late_reports


def _run(executable, x, s, **state):
    with warnings.catch_warnings(record=True) as caught, np.errstate(**state):
        warnings.simplefilter("always")
        executable(x, np.array(s, np.float32))
    return [(str(w.message), w.filename) for w in caught]


def test_the_kernels_document_writes_then_reports_as_numpy():
    executable = Executable(load_artifact(KERNELS))
    x0 = np.linspace(-2, 2, 96, dtype=np.float32).reshape(8, 12)
    x = x0.copy()
    assert _run(executable, x, 3.0) == []
    np.testing.assert_array_equal(x, x0 * np.float32(3.0))
    x = x0.copy()
    x[3, 4] = 3e38
    assert _run(executable, x, 4.0) == [("overflow encountered in multiply", "late.py")]
    assert np.isinf(x[3, 4]) and x[0, 0] == x0[0, 0] * 4  # written, then reported
    x = x0.copy()
    x[0, 1] = np.inf
    with pytest.raises(FloatingPointError, match="invalid value encountered in multiply"):
        _run(executable, x, 0.0, invalid="raise")
    assert np.isnan(x[0, 1]) and (x[0, 2:] == 0).all()
