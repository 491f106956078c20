"""``python -m stax.ir``: a user's mistake prints one line and exits 2; importing Stax stays cheap."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stax.ir.__main__ import main

FIXTURE = Path(__file__).parent / "fixtures" / "example_1_1.capture.v0.1.0.json"


def test_a_document_runs_through_the_passes(tmp_path, capsys):
    out = tmp_path / "out.json"
    assert main(["passes", str(FIXTURE), str(out)]) == 0
    assert json.loads(out.read_text())["schema"].startswith("stax.capture/")


@pytest.mark.parametrize("content, expected", [
    (None, "cannot read"),
    ("{bad", "is not JSON"),
    ("[1, 2]", "holds a JSON list"),
    ('{"schema": "stax.capture/9"}', "schema 'stax.capture/9'"),
    ('{"schema": "stax.capture/1"}', "missing field"),
    (b"\xff\xfe", "is not JSON"),
])
def test_a_bad_input_is_one_line_and_status_2(tmp_path, capsys, content, expected):
    path = tmp_path / "in.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert main(["passes", str(path), str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("python -m stax.ir: error: ")


def test_an_unknown_pass_and_an_unwritable_output(tmp_path, capsys):
    assert main(["passes", "--pipeline", "cse,nope", str(FIXTURE), str(tmp_path / "o.json")]) == 2
    assert "unknown pass 'nope'" in capsys.readouterr().err
    assert main(["passes", str(FIXTURE), str(tmp_path / "no" / "such" / "dir.json")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_the_module_exits_2_without_a_traceback(tmp_path):
    done = subprocess.run([sys.executable, "-m", "stax.ir", "passes", str(tmp_path / "missing.json"),
                           str(tmp_path / "out.json")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "cannot read" in done.stderr


def test_importing_stax_ir_does_not_load_numpys_optional_submodules():
    """``dir(numpy)`` plus ``getattr`` imports every lazily loaded submodule (f2py, testing, ma,
    polynomial...: 168 modules, ~50 ms); the set of ufuncs is read from the module's dict."""
    code = ("import sys, stax.ir.passes; print(sorted(m for m in ('numpy.f2py', 'numpy.testing', "
            "'numpy.ma', 'numpy.polynomial', 'numpy.fft', 'numpy.ctypeslib') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
