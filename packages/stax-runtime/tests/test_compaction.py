"""``a[m]`` of a vector computed by kernels (``stax.loop.compaction``): a prefix sum of the mask
and an in-order scatter, its length gated; the results are NumPy's, element for element."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def scaled_positives(x):
    y = x[x > 0]
    return y * 2 + 1


def selected_by_other(a, w):
    return a[w > 0.5]


def gather_by_selection(ind, w, z):
    return z[ind[w > 0]] * 2.0


def _steps(compiled):
    return [e.target for e in compiled.versions()[-1].artifact.externs]


def _vector(rng, dtype, n):
    x = rng.standard_normal(n) * 3
    if n > 8:
        x[1], x[3], x[5], x[7] = np.nan, -0.0, np.inf, -np.inf
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("n", [1, 37, 100_000])
def test_a_selection_is_numpys(dtype, n):
    rng = np.random.default_rng(n)
    x = _vector(rng, dtype, n)
    f = stax.compile(scaled_positives)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = scaled_positives(x)
        calls = [f(x) for _ in range(2)]  # the compiling call, then the cached version's
    for got in calls:
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))
    assert "operator.getitem" not in _steps(f)


@pytest.mark.parametrize("fraction", [0.0, 0.3, 1.0])
def test_selections_of_every_length_and_another_count_later(fraction):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(5000)
    w = (rng.random(5000) < fraction) * 1.0
    f = stax.compile(selected_by_other)
    for _ in range(2):
        got = f(a, w)
        np.testing.assert_array_equal(got, selected_by_other(a, w))
        assert got.shape == (int(w.sum()),)
    other = w.copy()
    other[:100] = 1.0 - other[:100]  # another count: another version
    np.testing.assert_array_equal(f(a, other), selected_by_other(a, other))
    assert f.cache_info().versions == 2


def test_a_gather_by_a_selection_of_another_count_never_reads_outside():
    """The program checks the count after its steps: the call with a longer selection runs the
    kernels with the old length first (what does not fit goes to a spare element, what is
    missing stays 0, a valid index), then declines; every result is NumPy's."""
    rng = np.random.default_rng(4)
    ind = rng.integers(0, 50, 3000)
    z = rng.standard_normal(50)
    w = rng.standard_normal(3000)
    f = stax.compile(gather_by_selection)
    np.testing.assert_array_equal(f(ind, w, z), gather_by_selection(ind, w, z))
    for shift in (-1.0, 1.0, -5.0, 5.0):  # every element selected, or none
        np.testing.assert_array_equal(f(ind, w + shift, z), gather_by_selection(ind, w + shift, z))


def test_a_selection_over_more_dimensions_stays_numpys_call():
    f = stax.compile(selected_by_other)
    a = np.arange(12.0).reshape(3, 4)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(f(a, a / 11), selected_by_other(a, a / 11))
    assert "operator.getitem" in _steps(f)


def doubled_positions(x):
    return np.flatnonzero(x > 0.5) * 2


def test_positions_are_numpys():
    f = stax.compile(doubled_positions)
    rng = np.random.default_rng(8)
    for n in (1, 999, 70_000):
        x = rng.standard_normal(n)
        for _ in range(2):  # a compiling call (another size), then the cached version's
            np.testing.assert_array_equal(f(x), doubled_positions(x))
    assert "numpy.flatnonzero" not in _steps(f)


def positions_of_tuples(x):
    i = np.nonzero(x > 0.5)[0]
    j = np.where(x < 0)[0]
    return i * 2, j, (x > 1).nonzero()[0]


def test_the_first_positions_of_nonzero_and_where_are_numpys():
    f = stax.compile(positions_of_tuples)
    rng = np.random.default_rng(9)
    for n in (1, 999, 70_000):
        x = rng.standard_normal(n)
        for _ in range(2):  # a compiling call (another size), then the cached version's
            for g, w in zip(f(x), positions_of_tuples(x)):
                np.testing.assert_array_equal(g, w)
                assert g.dtype == w.dtype
    assert not {"numpy.nonzero", "numpy.where"} & set(_steps(f))


def where_positions(x):
    return np.where(x > 0)[0]


def where_tuple(x):
    return np.where(x > 0)


def where_count(x):
    return len(np.where(x > 0)[0])


def where_gather(x):
    return x[np.where(x > 0)[0]]


def nonzero_positions(x):
    return np.nonzero(x > 0)[0] * 2


@pytest.mark.parametrize("fn", [where_positions, where_tuple, where_count, where_gather,
                                nonzero_positions])
def test_positions_of_another_count_on_a_later_call(fn):
    """One-argument ``np.where`` is ``np.nonzero``: its length is gated like the others' (it was
    not, and a later call with another count came back padded or cut to the first count)."""
    f = stax.compile(fn)
    for values in ([1., -1, 2, 3, -1, 1], [1., -1, -2, -3, -1, 1], [1., 1, 2, 3, 1, 1], [-1.] * 6):
        x = np.array(values)
        got, want = f(x), fn(x)
        for g, w in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want))):
            np.testing.assert_array_equal(g, w)
            assert np.shape(g) == np.shape(w)
