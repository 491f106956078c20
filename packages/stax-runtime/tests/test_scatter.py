"""Scatters (issue 13): ``np.add.at`` and fancy-index assignment into arrays, captured as pure
functions of the array (spec §4.9) — never a fallback for the whole function, and NumPy's result:
repeated indices, negative indices, an index out of bounds raising NumPy's IndexError, an argument
updated in place for the caller."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax


def histogram(x, lo, hi, nbins):
    counts = np.zeros(nbins, dtype=np.int64)
    idx = np.clip(((x - lo) / (hi - lo) * nbins).astype(np.int64), 0, nbins - 1)
    np.add.at(counts, idx, 1)
    return counts


def accumulate_into(a, idx, v):
    np.add.at(a, idx, v)
    return a * 2.0


def test_add_at_on_a_local_array_is_captured():
    rng = np.random.default_rng(0)
    x = rng.random(1000)
    compiled = stax.compile(histogram, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(compiled(x, 0.0, 1.0, 16), histogram(x, 0.0, 1.0, 16))
    assert compiled.cache_info().fallbacks == 0


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_add_at_on_an_argument_updates_it_as_numpy_does(dtype):
    idx = np.array([0, 3, 3, -1, 0, 3])
    v = np.arange(6).astype(dtype)
    compiled = stax.compile(accumulate_into, strict_native=True)
    for _ in range(2):  # the compiled version on the second call
        a, b = np.ones(5, dtype), np.ones(5, dtype)
        got, want = compiled(a, idx, v), accumulate_into(b, idx, v)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(a, b)  # the repeated and negative indices added each time


def test_an_index_out_of_bounds_raises_numpy_s_error():
    compiled = stax.compile(accumulate_into)
    compiled(np.ones(5), np.array([0, 1]), np.array([1.0, 2.0]))
    with pytest.raises(IndexError):
        compiled(np.ones(5), np.array([0, 5]), np.array([1.0, 2.0]))


def one_hot(labels, k):
    n = labels.shape[0]
    out = np.zeros((n, k), dtype=np.float32)
    out[np.arange(n), labels] = 1.0
    return out


def _kernels_only(compiled):
    return all(s.startswith("kernel") for s in compiled.versions()[0].artifact.steps)


def _same_twice(fn, *args):
    """The compiled function on two calls (capture's, then the compiled version's) against eager,
    arguments compared after the call (they may be updated in place)."""
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(2):
        mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        np.testing.assert_array_equal(compiled(*mine), fn(*theirs))
        for m, t in zip(mine, theirs):
            if isinstance(m, np.ndarray):
                np.testing.assert_array_equal(m, t)
    return compiled


def test_fancy_assignment_is_a_native_scatter():
    labels = np.random.default_rng(1).integers(0, 10, 300)
    assert _kernels_only(_same_twice(one_hot, labels, 10))


def test_histogram_counts_natively():
    compiled = _same_twice(histogram, np.random.default_rng(2).random(5000), 0.0, 1.0, 32)
    assert "stax.functional.add_at" not in compiled.versions()[0].artifact.steps


def test_repeated_positions_take_the_last_value_and_add_each_time():
    def assign(a, idx, v):
        a[idx] = v
        return a + 0.0

    rng = np.random.default_rng(3)
    idx = rng.integers(-8, 8, 2000)  # many repeats, negative positions from the end
    for fn in (assign, accumulate_into):
        compiled = _same_twice(fn, np.zeros(8), idx, rng.standard_normal(2000))
        assert _kernels_only(compiled)


def test_rows_columns_and_index_grids():
    def rows(a, idx, v):
        a[idx] = v * 3           # whole rows at a list of positions
        return a

    def grid(a, i, j):
        b = a * 1.0
        b[i[:, None], j[None, :]] = -1.0   # a grid of positions (broadcast index arrays)
        return b

    def from_itself(a, idx):
        b = a * 2.0
        b[idx] = b[idx[::-1]] + b.sum()     # the value reads the array being updated
        return b

    rng = np.random.default_rng(4)
    _same_twice(rows, np.ones((6, 4)), np.array([1, -1, 1]), rng.random((3, 4)))
    _same_twice(grid, rng.random((7, 9)), np.array([0, 6, -2]), np.array([8, 1]))
    _same_twice(from_itself, rng.random(10), np.array([3, 1, 3, 9]))


def test_an_index_out_of_bounds_in_a_native_scatter_raises():
    compiled = stax.compile(one_hot)
    compiled(np.array([1, 2, 3]), 5)
    with pytest.raises(IndexError):
        compiled(np.array([1, 7, 3]), 5)
    with pytest.raises(IndexError):
        compiled(np.array([1, -6, 3]), 5)


# -- found by probing as a user (each failed before its fix) -------------------------------------

def add_at(x, i, v):
    np.add.at(x, i, v)
    return x


@pytest.mark.parametrize("x,i,v", [
    (np.array([-1, 5]), np.array([0]), np.array([0.5])),             # int x, float values
    (np.array([-1, 5]), np.array([0]), 0.5),                           # a Python float
    (np.array([1.0], np.float32), np.array([0]), np.array([2.0 ** -24 + 2.0 ** -50])),
    (np.array([[-3, 4]], np.int32), np.array([0]), np.array([[0.5, -0.5]], np.float32)),
])
def test_add_at_adds_in_numpy_s_dtype_then_casts(x, i, v):
    """NumPy adds x's element and the value in their common dtype, then casts the sum to x's."""
    _same_twice(add_at, x, i, v)


def test_a_numpy_step_that_raises_leaves_earlier_updates_as_eager_does():
    def f(x, j):
        x += 1
        x[:, j] = 0.0  # a NumPy step (a slice with an index array) that raises for j = 5
        return x

    compiled = stax.compile(f)
    compiled(np.zeros((2, 3)), np.array([1]))
    for fn in (f, compiled):
        x = np.zeros((2, 3))
        with pytest.raises(IndexError):
            fn(x, np.array([5]))
        np.testing.assert_array_equal(x, np.ones((2, 3)))  # the += happened, as in eager NumPy


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16])
def test_index_arrays_read_as_they_are_are_not_copied(dtype):
    """``out[np.arange(n), labels] = 1``: the positions of an ``arange`` (an index widened to
    int64) and the labels (a load, widened where narrower) are read by the scatter and its
    bounds check where they are; computed into buffers of their own, the labels were copied
    beside the arange (one-hot of 20,000 labels: 42 -> 14 us, NumPy 62). Negative labels and
    one out of bounds as NumPy."""
    from stax.ir import lower_capture
    from stax.loop import Pointwise, lower_opgraph
    from stax.trace import trace

    labels = np.random.default_rng(3).integers(-10, 10, 20000).astype(dtype)
    compiled = stax.compile(one_hot, strict_native=True)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(labels, 10), one_hot(labels, 10))
    program = lower_opgraph(lower_capture(trace(one_hot, (labels, 10))))
    copies = [b.name for b in program.buffers if isinstance(b.data, Pointwise) and
              b.updates is None and b.shape == (20000,)]
    assert not copies, program
    bad = labels.copy()
    bad[7] = 10
    with pytest.raises(IndexError):
        one_hot(bad, 10)
    with pytest.raises(IndexError):
        stax.compile(one_hot)(bad, 10)
