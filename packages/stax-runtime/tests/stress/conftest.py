"""The stress suite's helper modules are imported by name (the tests run in importlib mode), and a
summary of what ran is printed at the end: how many programs, how many compiled natively."""

import logging
import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)


def pytest_terminal_summary(terminalreporter):
    if "stress_run" not in sys.modules:
        return
    import stress_flags
    import stress_run

    stats = stress_run.STATS
    if not stats:
        return
    write = terminalreporter.write_line
    write("stress: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.items())))
    off = sorted(set(stress_flags.KNOWN_DEFECTS) - stress_flags.ENABLED)
    if off:
        write(f"stress: known-defect strategies off (STAX_STRESS_KNOWN): {', '.join(off)}")
    for reason, n in stress_run.REASONS.most_common(8):
        write(f"stress: {n} eager versions: {reason}")


@pytest.fixture(autouse=True)
def quiet_stax():
    """Fallback lines are expected by the thousand here (the summary counts them instead)."""
    logger = logging.getLogger("stax")
    level, logger.level = logger.level, logging.CRITICAL
    yield
    logger.level = level
