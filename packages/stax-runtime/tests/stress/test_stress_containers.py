"""Containers of arrays as arguments (tuples, lists, dicts, a dict holding a tuple), each program in
a subprocess of its own: such calls crashed the interpreter (issue 10 item 1), and a crash must fail
one test, not end the run. The same programs also run in-process in test_stress_programs.py when
STAX_STRESS_KNOWN includes ``containers``."""

import subprocess
import sys
from pathlib import Path

import pytest
import stress_flags as flags
from hypothesis import given
from stress_gen import programs
from stress_run import STATS

pytestmark = pytest.mark.slow  # seconds to minutes; still run in CI

RUNNER = Path(__file__).with_name("stress_run.py")
TRIAL_S = 120


@flags.stress_settings(flags.scaled(0.02, 6))
@given(program=programs(known=flags.ENABLED | {"containers"}))
def test_container_arguments_in_a_subprocess(program, tmp_path_factory):
    path = tmp_path_factory.mktemp("container") / "program.json"
    path.write_text(program.to_json())
    command = [sys.executable, str(RUNNER), "replay", str(path)]
    if flags.enabled("errstate"):
        command.append("--warnings")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TRIAL_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"hung for {TRIAL_S} s:\n{program.program_text()}") from None
    STATS["programs in subprocesses"] += 1
    what = "crashed (signal)" if done.returncode < 0 else f"exit status {done.returncode}"
    assert done.returncode == 0, f"{what}:\n{done.stdout[-5000:]}\n{done.stderr[-3000:]}"
