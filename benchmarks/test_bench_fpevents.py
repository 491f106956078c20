"""Calls that floating-point event reporting (``stax.codegen.cpu.fpevents``) once made slow, next
to eager NumPy: fmax of large arrays (a tie check took a pass of its own), a tiny call over NaN
data with comparisons (the compare raised the CPU's invalid flag, so every call ran again with the
precise kernels), exp over data with a NaN (the fast kernels cannot vouch for it: calls after
the first start with the precise kernels), and masked arithmetic whose events NumPy warns about
(every call ran eagerly; now NumPy reports them on the call's behalf: ``event_reports``)."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax

LARGE = 10_000_000


def _large_pair():
    rng = np.random.default_rng(10)
    return rng.standard_normal(LARGE), rng.standard_normal(LARGE)


def _tiny_with_nan():
    return (np.array([1.0, np.nan, 3.0, 4.0, 5.0, np.nan, 7.0, 8.0]),
            np.array([2.0, 2.0, np.nan, 1.0, 9.0, 0.0, 1.0, np.nan]))


def _with_a_nan(n):
    x = np.random.default_rng(11).standard_normal(n)
    x[n // 3] = np.nan
    return (x,)


def _with_zeros(n):
    rng = np.random.default_rng(12)
    return rng.standard_normal(n), rng.integers(0, 3, n).astype(np.float64)


def safe_ratio(a, d):  # NumPy warns "divide by zero": reported on its behalf (event_reports)
    return np.where(d != 0, a / d, 0.0)


def safe_log1p(x):  # "invalid value" over the negatives: the precise kernels say which
    return np.where(x > 0, np.log1p(x), 0.0)


# case -> (program, inputs)
CASES = {
    "fmax(10M float64)": (lambda x, y: np.fmax(x, y), _large_pair),
    "fmin(10M float64)": (lambda x, y: np.fmin(x, y), _large_pair),
    "where(x < y, x * 2, y) (8, NaN)": (lambda x, y: np.where(x < y, x * 2, y), _tiny_with_nan),
    "maximum(x, y) + 1 (8, NaN)": (lambda x, y: np.maximum(x, y) + 1, _tiny_with_nan),
    "exp(100K float64, a NaN)": (lambda x: np.exp(x), lambda: _with_a_nan(100_000)),
    "where(d != 0, a / d, 0) (100K, zero divisors)": (safe_ratio, lambda: _with_zeros(100_000)),
    "where(x > 0, log1p(x), 0) (100K, negatives)": (
        safe_log1p, lambda: (np.random.default_rng(13).standard_normal(100_000),)),
}
_inputs: dict = {}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("impl", ["numpy", "stax"])
def test_fpevents(benchmark, record, case, impl):
    fn, make = CASES[case]
    if case not in _inputs:
        _inputs[case] = make()
    args = _inputs[case]
    run = fn if impl == "numpy" else stax.compile(fn)
    # compile and check, outside the timing (exp is within an ulp of NumPy's, not its bits)
    np.testing.assert_allclose(run(*args), fn(*args), rtol=1e-15, atol=0)
    benchmark.group = case
    benchmark(run, *args)
    record(case, impl, benchmark)
