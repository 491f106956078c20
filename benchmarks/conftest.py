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


def _dispatch_lines() -> list[str]:
    t = MEDIANS.get("dispatch", {})
    need = ("ufunc (8 elements)", "kernel call (no dispatch)", "level-1 hit",
            "level-3 hit (keyword call)")
    if not all(k in t for k in need):
        return []
    ufunc, kernel = t[need[0]], t[need[1]]
    return [f"dispatch overhead on top of the kernel, in NumPy 8-element ufunc calls: "
            f"level 1 {(t[need[2]] - kernel) / ufunc:.1f}x (bar 8x), "
            f"level 3 {(t[need[3]] - kernel) / ufunc:.1f}x (bar 25x)"]


def pytest_terminal_summary(terminalreporter) -> None:
    tr = terminalreporter
    NOTES.extend(_dispatch_lines())
    if NOTES:
        tr.section("measurements")
        for line in NOTES:
            tr.write_line(line)
    if not MEDIANS:
        return
    tr.section("speedups (median eager NumPy / median implementation, same run)")
    for case, times in sorted(MEDIANS.items()):
        if case in ("dispatch", "capture"):
            continue
        base = times.get("numpy")
        parts = [f"{impl} {t * 1e6:.1f} us" for impl, t in sorted(times.items())]
        ratios = [f"{impl} {base / t:.2f}x" for impl, t in sorted(times.items())
                  if base and impl != "numpy"]
        tr.write_line(f"{case:>28}: " + ", ".join(parts) + ("  ->  " + ", ".join(ratios)
                                                               if ratios else ""))
