"""Forks in the middle of a run, with each thread pool (the native one, and ``STAX_THREADS=python``):
random programs compiled, threads calling them and a thread-pool kernel, then fork; the children
call and compile, and must agree with eager NumPy and finish (stress_fork_child.py). Each trial is
a subprocess with a timeout: a hang fails the test, it never blocks the run."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import stress_flags as flags
from hypothesis import given
from hypothesis import strategies as st
from stress_gen import programs
from stress_run import STATS

CHILD = Path(__file__).with_name("stress_fork_child.py")
TRIAL_S = 300

pytestmark = pytest.mark.slow  # seconds to minutes; still run in CI


@pytest.mark.parametrize("pool", ["native", "python"])
@flags.stress_settings(flags.scaled(0.005, 1))
@given(progs=st.lists(programs(known=flags.ENABLED - {"errstate"}, still=True, big=False,
                               calls=(1, 2), modes=("ignore",)), min_size=1,
                      max_size=3))
def test_fork_in_the_middle_of_a_run(progs, pool):
    env = dict(os.environ)  # the session's private cache directory (conftest.py) included
    if pool == "python":
        env["STAX_THREADS"] = "python"
    try:
        done = subprocess.run([sys.executable, str(CHILD)], input="\n".join(p.to_json() for p in progs),
                              capture_output=True, text=True, timeout=TRIAL_S, env=env)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the fork trial hung ({TRIAL_S} s); its output:\n{exc.stdout}\n"
                             f"{exc.stderr}") from None
    STATS["programs in forks"] += len(progs)
    assert done.returncode == 0, f"status {done.returncode}:\n{done.stdout[-6000:]}\n{done.stderr[-4000:]}"
