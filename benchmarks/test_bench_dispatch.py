"""Dispatch and capture costs (issue bars: level-1 hit <= 8x a NumPy ufunc call on 8 elements on
top of the kernel, level 3 <= 25x; capture <= 30 us per recorded node)."""

import numpy as np
import pytest

import stax.runtime as stax
from stax.trace import trace

A, B = np.ones(8), np.ones(8)


def add(x, w):
    return x + w


@pytest.fixture(scope="module")
def compiled():
    cf = stax.compile(add, strict_native=True)
    cf(A, B)
    cf(A, w=B)
    return cf


def test_ufunc_8(benchmark, record):
    benchmark.group = "dispatch"
    benchmark(np.add, A, B)
    record("dispatch", "ufunc (8 elements)", benchmark)


def test_executable_only(benchmark, record, compiled):
    benchmark.group = "dispatch"
    run = compiled.versions()[0].fast
    benchmark(run, A, B)
    record("dispatch", "kernel call (no dispatch)", benchmark)


def test_level_1_hit(benchmark, record, compiled):
    """The whole call through the version's machine-code entry (guard, allocation, kernel)."""
    benchmark.group = "dispatch"
    benchmark(compiled, A, B)
    record("dispatch", "level-1 hit", benchmark)


def test_level_1_hit_in_python(benchmark, record, compiled):
    """The Python dispatcher's level 1, which every call the entry declines reaches."""
    benchmark.group = "dispatch"
    benchmark(compiled._dispatch, A, B)
    record("dispatch", "level-1 hit (Python dispatcher)", benchmark)


def test_level_3_hit(benchmark, record, compiled):
    benchmark.group = "dispatch"
    benchmark(lambda: compiled(A, w=B))
    record("dispatch", "level-3 hit (keyword call)", benchmark)


def chain(x):
    for _ in range(50):
        x = x * 1.01 + 0.5
    return x


def test_capture_100_nodes(benchmark, record, note):
    benchmark.group = "capture"
    x = np.ones(8)
    benchmark(trace, chain, (x,))
    record("capture", "capture of 100 nodes", benchmark)
    note(f"capture: {benchmark.stats.stats.median / 100 * 1e6:.1f} us per recorded node "
         "(bar: 30 us)")
