"""Differential stress: random programs over the coverage table's functions, compiled and called
several times with new arguments and changing free variables, against eager NumPy (results,
argument side effects, random streams, exceptions; and warnings)."""

import faulthandler

import pytest
import stress_flags as flags
from hypothesis import given
from stress_gen import programs
from stress_run import check

pytestmark = pytest.mark.slow  # seconds to minutes; still run in CI

HANG_S = 300  # one program: far more than any takes; a hang fails the run instead of blocking it


@flags.stress_settings(flags.EXAMPLES)
@given(programs(known=flags.ENABLED))
def test_random_programs_agree_with_eager(program):
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        check(program, warnings_too=flags.enabled("errstate"))
    finally:
        faulthandler.cancel_dump_traceback_later()
