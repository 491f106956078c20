"""np.nansum, nanprod, nanmax, nanmin and nanmean compiled natively from where/isnan and the
reductions: NaNs skipped, a slice of only NaNs giving NaN for max/min/mean as NumPy does, NumPy's
dtypes and scalar results."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax

PROGRAMS = {
    "nansum axis 1": lambda x: np.nansum(x, axis=1),
    "nansum": lambda x: np.nansum(x),
    "nanprod axis 1": lambda x: np.nanprod(x, axis=1),
    "nanmax axis 1": lambda x: np.nanmax(x, axis=1),
    "nanmin keepdims": lambda x: np.nanmin(x, axis=0, keepdims=True),
    "nanmax of all": lambda x: np.nanmax(x),
    "nanmean axis 1": lambda x: np.nanmean(x, axis=1),
    "nanmean keepdims": lambda x: np.nanmean(x, axis=0, keepdims=True),
    "nanmean of all": lambda x: np.nanmean(x),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_reductions_match_numpy(name, dtype):
    fn = PROGRAMS[name]
    x = np.random.default_rng(3).standard_normal((6, 9)).astype(dtype)
    x[0, 1], x[3, 3] = np.nan, -np.inf
    x[2, :] = np.nan  # a row of only NaNs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns about all-NaN slices
        compiled = stax.compile(fn, strict_native=True)
        want = fn(x)
        calls = [compiled(x) for _ in range(2)]  # the compiling call, then the cached one's
    for got in calls:
        assert type(got) is type(want) and np.shape(got) == np.shape(want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    assert not compiled.versions()[0].artifact.externs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["nanmax", "nanmin"])
def test_nan_extremes_of_both_zeros_have_numpys_sign(name, dtype):
    """``np.nanmax`` is ``np.fmax.reduce``, which keeps the first of equal values: over -0.0 and
    0.0 the compiled max kept the other zero (a probe's find). Where the extreme is a zero and
    both zeros are in the slice, the call declines and NumPy decides; other data runs natively."""
    fn = getattr(np, name)
    compiled = stax.compile(lambda x: fn(x, axis=1))
    rows = np.array([[-0.0, 0.0, np.nan], [0.0, -0.0, -1.0], [0.0, 1.0, -0.0],
                     [-0.0, -0.0, np.nan]], dtype)
    for data in (rows, rows[:, ::-1].copy(), -rows):
        got, want = compiled(data), fn(data, axis=1)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    plain = stax.compile(lambda x: fn(x))
    x = np.random.default_rng(3).standard_normal(100).astype(dtype)
    x[7] = np.nan
    assert plain(x) == fn(x) and plain(x) == fn(x)
    assert plain.cache_info().fallbacks == 0
