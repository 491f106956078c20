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
