"""Capture is linear in the program's size (issue 13): a loop of twice the iterations captures
in about twice the time. Two quadratic costs were found this way: naming each node by trying
name_1, name_2, ... (graph.py), and walking every value ever traced, alive or not, at each
in-place update (tracer._viewed)."""

import gc
import time

import numpy as np

import stax.trace.tracer as tracer
from stax.trace import loops, trace


def loop(n):
    def f(x):
        out = np.zeros(x.shape)
        for i in range(n):
            x = x * 1.0001 + 0.5
            out[i % 4] = x[i % 4]
            out += 1.0
        return out + x
    return f


def capture_time(n: int) -> float:
    x = np.ones(8)
    best = float("inf")
    for _ in range(5):
        gc.collect()
        gc.disable()  # the collector's passes over the heap other tests left are not capture's cost
        try:
            clock = time.perf_counter()
            trace(loop(n), (x,))
            best = min(best, time.perf_counter() - clock)
        finally:
            gc.enable()
    return best


def test_eight_times_the_loop_takes_about_eight_times_as_long_to_capture(monkeypatch):
    """8x the iterations: 8x the time when linear (measured 8.6x), 16x with the walk over dead
    values (measured before the fix: 2.2x, 2.4x, 2.9x per doubling from 500 iterations); the bound
    leaves room for a busy host."""
    monkeypatch.setattr(tracer, "MAX_NODES", 1_000_000)  # past the budget on purpose
    monkeypatch.setattr(loops, "UNROLL_LIMIT", 10**9)  # unrolled, never lifted: its cost
    capture_time(200)  # warm
    small, large = capture_time(500), capture_time(4000)
    assert large < 11.0 * small, (small, large)
