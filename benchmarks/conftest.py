"""Prints, after the benchmark table, each case's speedup over eager NumPy measured in this run."""

from __future__ import annotations

from collections import defaultdict

import pytest

MEDIANS: dict[str, dict[str, float]] = defaultdict(dict)


@pytest.fixture
def record():
    def save(case: str, impl: str, benchmark) -> None:
        MEDIANS[case][impl] = benchmark.stats.stats.median
    return save


def pytest_terminal_summary(terminalreporter) -> None:
    if not MEDIANS:
        return
    tr = terminalreporter
    tr.section("speedups (median eager NumPy / median implementation, same run)")
    for case, times in sorted(MEDIANS.items()):
        base = times.get("numpy")
        parts = [f"{impl} {t * 1e6:.1f} us" for impl, t in sorted(times.items())]
        ratios = [f"{impl} {base / t:.2f}x" for impl, t in sorted(times.items())
                  if base and impl != "numpy"]
        tr.write_line(f"{case:>28}: " + ", ".join(parts) + ("  ->  " + ", ".join(ratios)
                                                               if ratios else ""))
