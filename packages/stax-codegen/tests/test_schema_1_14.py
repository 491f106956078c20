"""The golden documents of events reported on NumPy's behalf (tools/make_fixtures.py
--event-reports): ``stax.loopir/1.10`` and ``stax.kernels/1.14`` declare ``event_reports``,
read back to the same documents, and a call whose only events are the division's stands, with
NumPy's own warning or error for the divide from the document's line (``ratio.py``)."""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from stax.codegen import Executable, generate, load_artifact
from stax.loop import load_loopir

FIXTURES = Path(__file__).parent / "fixtures"
LOOP = FIXTURES / "safe_ratio.loopir.schema-1.10.json"
KERNELS = FIXTURES / "safe_ratio.kernels.schema-1.14.json"


def test_the_documents_declare_and_read_back_their_event_reports():
    loop_doc, kernels_doc = json.loads(LOOP.read_text()), json.loads(KERNELS.read_text())
    assert loop_doc["schema"] == "stax.loopir/1.10"
    assert kernels_doc["schema"] == "stax.kernels/1.14"
    program = load_loopir(LOOP)
    assert program.to_json() == loop_doc
    assert load_artifact(KERNELS).to_json() == kernels_doc
    assert set(program.event_reports) == {"divide", "over", "invalid"}
    ufunc, dtype, source, _ = program.event_reports["divide"]
    assert (ufunc, dtype) == ("divide", "float64") and source.startswith("ratio.py:")
    assert generate(program).event_reports == program.event_reports


def _run(executable, a, d, **state):
    with warnings.catch_warnings(record=True) as caught, np.errstate(**state):
        warnings.simplefilter("always")
        (out,) = executable(a, d)
    return out, [(str(w.message), w.filename) for w in caught]


def test_the_kernels_document_reports_as_numpy_and_stands():
    executable = Executable(load_artifact(KERNELS))
    a = np.linspace(-2, 2, 96).reshape(8, 12)
    d = np.linspace(0.5, 3, 96).reshape(8, 12)
    d[2, 3] = d[4, 5] = 0.0
    a[4, 5] = 0.0  # 0 / 0 too
    want = np.where(d != 0, a / np.where(d != 0, d, 1.0), 0.0)
    out, seen = _run(executable, a, d)
    np.testing.assert_array_equal(out, want)
    assert seen == [("divide by zero encountered in divide", "ratio.py"),
                    ("invalid value encountered in divide", "ratio.py")]
    out, seen = _run(executable, a, d, all="ignore")
    assert seen == []
    with pytest.raises(FloatingPointError, match="divide by zero encountered in divide"):
        _run(executable, a, d, divide="raise")
