"""A value written into part of a local array (``Q[:, 0] = v / norm(v)`` into zeros) is a select
whose region reads guarded loads, 0 outside it: the arithmetic there (``0 / 0``) is no event of
the call's (NumPy never computes it), while the region's own events are NumPy's
(``stax.codegen.cpu.fpevents.lane_guards``)."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


def _calls(fn, *args):
    """Compiled calls after the capture's: the result, the warnings, whether kernels ran it."""
    compiled = stax.compile(fn)
    compiled(*args)
    before = compiled.cache_info().fallbacks
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = compiled(*args)
    return got, [type(w.message) for w in seen], compiled.cache_info().fallbacks == before


def column_normalized(A):
    Q = np.zeros_like(A)
    Q[:, 0] = A[:, 0] / np.linalg.norm(A[:, 0])
    return Q


def gram_schmidt(A):
    Q = np.zeros_like(A)
    for j in range(A.shape[1]):
        v = A[:, j].copy()
        for i in range(j):
            v = v - np.dot(Q[:, i], A[:, j]) * Q[:, i]
        Q[:, j] = v / np.linalg.norm(v)
    return Q


@pytest.mark.parametrize("fn", [column_normalized, gram_schmidt])
def test_arithmetic_beside_the_region_is_no_event(fn):
    A = np.random.default_rng(1).standard_normal((50, 6))
    got, warned, native = _calls(fn, A)
    np.testing.assert_allclose(got, fn(A), rtol=1e-12, atol=1e-15)
    assert warned == [] and native  # ran by the kernels, no NumPy rerun


def test_the_regions_own_events_are_numpys():
    def log_column(A):
        Q = np.zeros_like(A)
        Q[:, 1] = np.log(A[:, 1]) / A[0, 0]
        return Q

    A = np.random.default_rng(2).random((20, 3)) + 0.5
    got, warned, native = _calls(log_column, A)
    np.testing.assert_allclose(got, log_column(A), rtol=1e-13)
    assert warned == [] and native
    A[3, 1] = -1.0  # invalid, in the region
    with pytest.warns(RuntimeWarning, match="invalid"):
        want = log_column(A)
    got, warned, _ = _calls(log_column, A)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert warned == [RuntimeWarning]
    A[3, 1], A[4, 0] = 1.5, -2.0  # outside the region: no event (NumPy reads only column 1)
    got, warned, native = _calls(log_column, A)
    assert warned == [] and native


def test_integer_division_beside_the_region_is_no_event():
    def halves(a, d):
        out = np.zeros_like(a)
        out[2:5] = a[2:5] // d[2:5]
        return out

    a, d = np.arange(10), np.array([0, 0, 1, 2, 3, 0, 0, 1, 1, 1])
    got, warned, native = _calls(halves, a, d)
    np.testing.assert_array_equal(got, halves(a, d))
    assert warned == [] and native
    d[3] = 0  # in the region: NumPy's divide by zero
    got, warned, _ = _calls(halves, a, d)
    assert warned == [RuntimeWarning]


def test_a_stacked_values_events_are_numpys_where_a_comparison_reads_them():
    """``np.stack([np.sqrt(a), b]) != 0``: the square root is computed whole in the fast kernel
    (LLVM would answer ``sqrt(a) != 0`` as ``a != 0`` and lose its invalid flag)."""
    def nonzero_roots(a, b):
        return np.stack([np.sqrt(a), b]) != 0

    a, b = np.array([4.0, 1.0, 9.0]), np.array([1.0, 0.0, 2.0])
    compiled = stax.compile(nonzero_roots)
    compiled(a, b)
    got, warned, native = _calls(nonzero_roots, a, b)
    assert warned == [] and native
    a[1] = -1.0
    got, warned, _ = _calls(nonzero_roots, a, b)
    np.testing.assert_array_equal(got, nonzero_roots(a, b))
    assert warned == [RuntimeWarning]
