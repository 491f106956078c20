"""Row reductions sharing an operand run several rows at a time (``stax.codegen.cpu.row_jam``):
``A @ x``, ``(X * w).sum(axis=1)``, distances of rows to one point. Every row count (the rest
after the groups of rows), every thread's share of rows, short and long rows, float32, float64
and integers, special values and events, against NumPy; and the nests that are not jammed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen.cpu import row_jam


def matvec(A, x):
    return A @ x


def distances(X, c):
    return np.sqrt(((X - c) ** 2).sum(axis=1))


def weighted_max(X, w):
    return (X * w).max(axis=1)


def row_sums(X):
    return X.sum(axis=1)


def _jammed(compiled) -> bool:
    """Whether every version's kernels reduce rows together."""
    return all("jammed_end" in v.artifact.llvm_ir for v in compiled.versions())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows", [1, 3, 4, 5, 7, 501])
@pytest.mark.parametrize("cols", [13, 40, 200])
def test_matrix_vector_products_of_every_row_count(dtype, rows, cols):
    rng = np.random.default_rng(rows * cols)
    A = rng.standard_normal((rows, cols)).astype(dtype)
    x = rng.standard_normal(cols).astype(dtype)
    f = stax.compile(matvec, strict_native=True)
    f(A, x)
    got, want = f(A, x), A @ x
    exact = A.astype(np.float64) @ x.astype(np.float64)
    bound = np.abs(A).astype(np.float64) @ np.abs(x).astype(np.float64) * \
        cols * np.finfo(dtype).eps
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.all(np.abs(got - exact) <= bound)
    assert _jammed(f) == (cols > row_jam.MIN_VECTORS * 64 // np.dtype(dtype).itemsize)


def test_each_threads_share_of_rows_is_jammed_apart(monkeypatch):
    """Split over the pool at any threshold: each thread's rows start anywhere, and their groups
    of four and the rest are taken within its share."""
    monkeypatch.setenv("STAX_PARALLEL_WORK", "1")
    rng = np.random.default_rng(3)
    for rows in (2, 9, 1003):
        A, c = rng.standard_normal((rows, 57)), rng.standard_normal(57)
        f = stax.compile(distances, strict_native=True)
        f(A, c)
        np.testing.assert_allclose(f(A, c), distances(A, c), rtol=1e-13)
        assert _jammed(f)


def test_integers_maxima_and_views_are_exact():
    rng = np.random.default_rng(4)
    A, x = rng.integers(-9, 9, (37, 70)), rng.integers(-9, 9, 70)
    f = stax.compile(lambda A, x: (A * x).sum(axis=1), strict_native=True)
    f(A, x)
    np.testing.assert_array_equal(f(A, x), (A * x).sum(axis=1))
    X = rng.standard_normal((300, 90)).astype(np.float32)
    g = stax.compile(weighted_max, strict_native=True)
    for operands in ((X, X[0]), (X[::2, 1:], X[3, :89]), (X[::-1], np.ones(90, np.float32))):
        g(*operands)
        np.testing.assert_array_equal(g(*operands), weighted_max(*operands))
    assert _jammed(g)


def test_special_values_and_events_are_numpys():
    rng = np.random.default_rng(5)
    X, c = rng.standard_normal((41, 33)), rng.standard_normal(33)
    X[7, 3], X[8, 0], X[40, 32] = np.nan, np.inf, -np.inf
    f = stax.compile(distances)
    f(X, c)
    got, want = f(X, c), distances(X, c)
    np.testing.assert_allclose(got, want, rtol=1e-13)  # NaN and infinity where NumPy's are
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.isinf(got).sum() == 2
    big = np.full((9, 33), 1e300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = f(big, -big[0])
    assert [str(w.message) for w in caught] == ["overflow encountered in square"]
    np.testing.assert_array_equal(got, np.full(9, np.inf))


def test_nests_without_a_shared_operand_or_with_long_matrices_run_a_row_at_a_time():
    rng = np.random.default_rng(6)
    f = stax.compile(row_sums, strict_native=True)  # nothing shared: nothing saved
    X = rng.standard_normal((64, 100))
    f(X)
    np.testing.assert_allclose(f(X), X.sum(axis=1), rtol=1e-13)
    assert not _jammed(f)
    g = stax.compile(matvec, strict_native=True)  # beyond MAX_BYTES: one stream of rows
    A = np.ones((row_jam.MAX_BYTES // (8 * 512) + 1, 512))
    x = np.ones(512)
    g(A, x)
    np.testing.assert_array_equal(g(A, x), A @ x)
    assert not _jammed(g)
