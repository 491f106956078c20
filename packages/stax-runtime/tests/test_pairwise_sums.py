"""Float sums as accurate as NumPy's pairwise ones (``stax.codegen.cpu.pairwise``).

A vectorized loop keeps a few dozen accumulators, each adding n / lanes elements in turn: a
float32 sum of 4M 0.1s was 2.4e-5 off (NumPy 7.8e-8), and a CI run failed a 1e-6 test on
200,000 0.3s. Sums now run in blocks added as a tree; these check the error against NumPy's on
data where a sequential sum drifts (equal positive values), in the layouts and nests a sum
takes, with the other reductions of a nest carried through the blocks."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def _truth(fn, x):
    return np.asarray(fn(x.astype(np.float64)), np.float64)


def _error(got, want):
    return np.max(np.abs(np.asarray(got, np.float64) - want) / np.maximum(np.abs(want), 1e-30))


@pytest.mark.parametrize("n", [513, 200_000, 4_000_000])
@pytest.mark.parametrize("value", [0.1, 0.3])
def test_a_long_float32_sum_errs_as_little_as_numpys(n, value):
    x = np.full(n, value, np.float32)
    f = stax.compile(lambda x: x.sum())
    want = _truth(lambda x: x.sum(), x)
    numpy_error = _error(x.sum(), want)
    # NumPy's error is about one rounding of the total here; a drift of n / lanes steps in
    # each accumulator was 300 times it at 4M
    for _ in range(2):  # the compiling call, then the cached version's
        assert _error(f(x), want) <= max(4 * numpy_error, 2 * np.finfo(np.float32).eps)


@pytest.mark.parametrize("fn", [lambda x: x.sum(axis=1), lambda x: x.mean(axis=1),
                                lambda x: x.var(axis=1), lambda x: x.T.sum(axis=0),
                                lambda x: x.sum(), lambda x: np.std(x[:, 3:]),
                                lambda x: x.max(axis=1) + x.sum(axis=1),
                                lambda x: np.argmax(x, axis=1) + x.sum(axis=1)],
                         ids=["rows", "mean", "var", "transposed", "all", "sliced_std",
                              "max_and_sum", "argmax_and_sum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_over_runs_longer_than_a_block(fn, dtype):
    rng = np.random.default_rng(3)
    x = (rng.random((6, 5000)) + 10.0).astype(dtype)  # positive: a sequential sum drifts
    f = stax.compile(fn, strict_native=True)
    want = _truth(fn, x)
    bound = max(4 * _error(fn(x), want), 8 * np.finfo(dtype).eps)
    for _ in range(2):  # the compiling call, then the cached version's
        got = f(x)
        assert _error(got, want) <= bound
        assert got.dtype == fn(x).dtype


def test_a_size_generic_sum_is_blocked_too():
    f = stax.compile(lambda x: x.sum(axis=-1), dynamic=True, strict_native=True)
    for n in (700, 4096, 100_003):
        x = np.full((2, n), 0.1, np.float32)
        want = _truth(lambda x: x.sum(axis=-1), x)
        for _ in range(2):  # a (possibly) compiling call, then the cached version's
            assert _error(f(x), want) <= max(4 * _error(x.sum(axis=-1), want), 1e-7)


def test_specials_keep_numpys_results():
    x = np.full(5000, 1.0, np.float32)
    f = stax.compile(lambda x: x.sum())
    for at, value in ((17, np.nan), (4999, np.inf), (600, -np.inf)):
        y = x.copy()
        y[at] = value
        np.testing.assert_array_equal(f(y), y.sum())
    y = x.copy()
    y[3], y[4000] = np.inf, -np.inf  # in different blocks: inf - inf in the tree
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert np.isnan(f(y))
    assert f(np.zeros(0, np.float32)) == 0.0


def test_a_block_gives_each_accumulator_sixteen_elements():
    """NumPy's accuracy class at the least cost: lanes x 4 accumulators (LLVM's interleaving)
    adding 16 elements each a block, so a float32 row of 1024 on 512-bit vectors is one block
    (two there cost a layer norm 20-30%)."""
    from stax.codegen.cpu.pairwise import block_elements

    assert block_elements("float32", 512) == 1024
    assert block_elements("float32", 256) == block_elements("float64", 512) == 512
    assert block_elements("float64", 256) == 256
