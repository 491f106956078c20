"""Prints, after the benchmark table, each case's speedup over eager NumPy measured in this run."""

from __future__ import annotations

from collections import defaultdict

import pytest

MEDIANS: dict[str, dict[str, float]] = defaultdict(dict)
NOTES: list[str] = []


@pytest.fixture
def record():
    def save(case: str, impl: str, benchmark) -> None:
        MEDIANS[case][impl] = benchmark.stats.stats.median
    return save


@pytest.fixture
def note():
    """``note(line)``: a line for the summary (measurements that are not timing rounds)."""
    return NOTES.append


def pytest_terminal_summary(terminalreporter) -> None:
    tr = terminalreporter
    if NOTES:
        tr.section("measurements")
        for line in NOTES:
            tr.write_line(line)
    if not MEDIANS:
        return
    tr.section("speedups (median eager NumPy / median implementation, same run)")
    for case, times in sorted(MEDIANS.items()):
        base = times.get("numpy")
        parts = [f"{impl} {t * 1e6:.1f} us" for impl, t in sorted(times.items())]
        ratios = [f"{impl} {base / t:.2f}x" for impl, t in sorted(times.items())
                  if base and impl != "numpy"]
        tr.write_line(f"{case:>28}: " + ", ".join(parts) + ("  ->  " + ", ".join(ratios)
                                                               if ratios else ""))
