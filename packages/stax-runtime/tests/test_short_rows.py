"""Element-wise kernels over matrices of short rows (9 to 32 columns): a select on a column
(``Y[:, 3] = 0``, ``np.triu``) runs as one loop over every element, the column taken from the
one counter (``KernelEmitter.coordinates``); rows LLVM would not vectorize along are unrolled
(``loop_hints.TINY_TRIP_COUNT``); each loop's event accumulators start from zero
(``FloatEvents.loop_accumulators``). Results and NumPy's warnings, bit for bit, on every
shape, dtype and layout, NaN, infinities and -0.0 among the values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def column_fix(X):
    Y = X * 2.0
    Y[:, 3] = 0.0
    return Y


def two_columns(X, c):
    Y = X - 1.0
    Y[:, 0] = c
    Y[:, -1] = Y[:, -1] * 3
    return Y


def upper(X):
    return np.triu(X * 0.5, 1) + np.tril(X, -2)


def scaled(X, w):
    return X * w + 1.0


def grid(X):
    Y = np.sqrt(np.abs(X))
    Y[:, 1, :] = -0.0
    Y[..., 2] = np.inf
    return Y


def _values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    X = (rng.standard_normal(shape) * 3).astype(dtype)
    flat = X.reshape(-1)
    flat[: min(5, flat.size)] = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0],
                                         dtype=dtype)[: min(5, flat.size)]
    return X


def _check(fn, *args):
    compiled = stax.compile(fn)
    for _ in range(2):  # the compiling call, then the cached version's
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            want = fn(*args)
        with warnings.catch_warnings(record=True) as ours:
            warnings.simplefilter("always")
            got = compiled(*args)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
        assert np.signbit(got).tolist() == np.signbit(want).tolist()
        assert sorted(str(w.message) for w in ours) == sorted(str(w.message) for w in theirs)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("columns", [4, 9, 12, 15, 16, 24, 33])
def test_a_column_set_over_short_rows(dtype, columns):
    X = _values((300, columns), dtype, columns)
    _check(column_fix, X)
    _check(two_columns, X, 7.5)
    _check(upper, X)
    _check(scaled, X, _values((columns,), dtype, 1))


@pytest.mark.parametrize("layout", ["transposed", "sliced", "broadcast"])
def test_other_layouts(layout):
    X = _values((40, 13), np.float64, 2)
    X = {"transposed": _values((13, 40), np.float64, 3).T, "sliced": X[::2, 1:],
         "broadcast": np.broadcast_to(X[0], (40, 13))}[layout]
    _check(column_fix, X)
    _check(upper, X)


def test_integers_and_three_dimensions():
    _check(column_fix, np.arange(9 * 50, dtype=np.int32).reshape(50, 9))
    _check(two_columns, np.arange(11 * 20, dtype=np.int64).reshape(20, 11), 3)
    _check(grid, _values((6, 5, 11), np.float64, 4))
    _check(grid, _values((2, 3, 3), np.float32, 5))


def test_events_of_the_overwritten_values_are_numpys():
    """NumPy computes ``X * 2.0`` in every column before column 3 is set: an overflow there
    warns, though the value is never seen."""
    X = np.ones((100, 9))
    for row, col in ((0, 3), (57, 3), (99, 3), (99, 8), (50, 0)):
        Y = X.copy()
        Y[row, col] = 1e308
        _check(column_fix, Y)
    Z = np.ones((64, 16), dtype=np.float32)
    Z[63, 3] = 3e38
    _check(column_fix, Z)


def reciprocal_sum(x):
    return np.sum(1.0 / x)


@pytest.mark.parametrize("shape", [(9,), (15,), (3, 3), (3, 5), (10, 10)])
def test_short_loops_raise_no_flag_past_their_end(shape, monkeypatch):
    """A loop of fewer than 16 iterations, no whole number of vectors, in a kernel reading the
    CPU's flags stays scalar (``loop_hints.masked_tail``): LLVM folded its tail into masked
    vectors whose lanes past the end divided by zero, a "maybe" event at every call, which the
    precise kernels then ran again (4.8 us for NumPy's 2)."""
    from stax.codegen import executable

    precise = []
    real = executable.Executable._precise_first

    def counted(self, arrays):
        result = real(self, arrays)
        if result is not None:
            precise.append(1)
        return result
    monkeypatch.setattr(executable.Executable, "_precise_first", counted)
    x = np.random.default_rng(0).uniform(1, 6, shape)
    f = stax.compile(reciprocal_sum)
    for _ in range(5):
        np.testing.assert_allclose(f(x), reciprocal_sum(x), rtol=1e-12)
    assert not precise
    with pytest.warns(RuntimeWarning, match="divide by zero"):  # a real one still reported
        assert f(np.where(np.arange(x.size).reshape(shape) == 4, 0.0, x)) == np.inf


@pytest.mark.parametrize("fn", [
    lambda x: np.arange(10**10, 10**10 + x.shape[1])[None, :] + x,
    lambda x: np.arange(0, x.shape[1] * 10**9, 10**9)[None, :] + x,
    lambda x: np.arange(2**31 - 3, 2**31 - 3 + x.shape[1])[None, :] + x,
    lambda x: np.arange(-5 * 10**9, -5 * 10**9 + x.shape[0])[:, None] + x,
    lambda x: np.arange(0, x.shape[1] * 3, 3)[None, :] + x,
], ids=["large_start", "large_step", "just_over", "rows_below", "small"])
@pytest.mark.parametrize("shape", [(3, 5), (40, 33)])
def test_an_index_past_int32_in_a_merged_nest(fn, shape):
    """A review's find: a merged nest computed an ``Index`` in 32 bits (its variables from the
    counter) and wrapped values past int32 without a word; such an index keeps the nest's
    loops (``nests._int32_index``)."""
    x = np.zeros(shape, np.int64)
    f = stax.compile(fn)
    for _ in range(2):
        np.testing.assert_array_equal(f(x), fn(x))


def lagged(x, lags):
    n = x.shape[0] - lags + 1
    out = np.empty((n, lags), dtype=x.dtype)
    for j in range(lags):
        out[:, j] = x[j:j + n]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
@pytest.mark.parametrize("lags", [2, 5, 12, 15])
def test_short_rows_of_time_delay_embeddings_and_column_slices(dtype, lags):
    """Rows of ``lags`` elements, each read from the series at the row plus the column; column
    slices of a wider matrix. Results and warnings bit for bit NumPy's."""
    x = _values((3000,), dtype, lags) if dtype != np.int16 else \
        np.arange(3000, dtype=np.int16)
    _check(lagged, x, lags)
    X = _values((500, lags + 3), np.float64, 7)
    _check(lambda X, w: X[:, :lags] * w, X, _values((lags,), np.float64, 8))
    _check(lambda X: X[:, 1:] - X[:, :1], X)


@pytest.mark.parametrize("k", [3, 6, 7, 10, 11, 14])
def test_a_division_over_sliced_short_rows_warns_as_numpy(k):
    """float32 division over a slice of short rows of a wider matrix: vectorized along the
    unrolled row with padding lanes, LLVM's divisions of those lanes (0 / 0, 1 / 0) raised
    flags NumPy never raises (a probe of a row-by-row loop hint, reverted): no warning."""
    X = np.full((3000, 16), 2.0, np.float32)
    _check(lambda X, Y: X[:, :k] / Y[:, :k], X, X + 1)
    _check(lambda X: 1.0 / X[:, :k], X * 3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 2, 3])
@pytest.mark.parametrize("n", [500, 1000])
def test_divisions_over_a_short_last_axis_warn_as_numpy(dtype, width, n):
    """``X[:, :, :3] / Y[:, :, 1:4]``: LLVM computed the short rows in vectors with padding
    lanes (0 / 0), and a kernel whose flags were reported as their categories warned "invalid
    value encountered in divide" where NumPy does not (pre-existing; a probe). A kernel with a
    loop of fewer than 16 known iterations now hands its flags to the precise kernels. A real
    zero divisor still warns, as NumPy's."""
    X = np.full((n, 12, 4), 2.0, dtype)

    def divided(X, Y):
        return X[:, :, :width] / Y[:, :, 1:width + 1]

    _check(divided, X, X)
    Y = X.copy()
    Y[3, 5, 1] = 0.0
    _check(divided, X, Y)
