"""np.round / np.around / x.round with decimals, compiled natively: bit for bit NumPy's on float32
and float64 (halfway cases, huge and tiny values, NaN, infinities, -0.0), overflow warnings
included; integer arrays and other forms run as NumPy steps."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def values(dtype):
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-8, 9, 200),
                        np.array([0.5, 1.5, 2.5, -2.5, 0.125, 0.375, 1.005, 2.675, -0.0, 0.0,
                                  np.nan, np.inf, -np.inf, 1e300, -1e300, 5e-324, 3.4e38])])
    with np.errstate(all="ignore"):
        return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("decimals", [0, 1, 2, 3, 8, 10, 25, -1, -2, -10])
@pytest.mark.parametrize("form", ["round", "around", "method", "keyword"])
def test_round_is_native_and_numpys(dtype, decimals, form):
    fn = {"round": lambda x: np.round(x, decimals),
          "around": lambda x: np.around(x, decimals),
          "method": lambda x: x.round(decimals),
          "keyword": lambda x: np.round(x, decimals=decimals)}[form]
    x = values(dtype)
    compiled = stax.compile(fn, strict_native=True)
    with warnings.catch_warnings(record=True) as want_warnings:
        warnings.simplefilter("always")
        want = fn(x)
    with warnings.catch_warnings(record=True) as got_warnings:
        warnings.simplefilter("always")
        got = compiled(x)
        got = compiled(x)  # the kernel's own call, after the compiling one
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))  # NaN bits too
    assert {str(w.message) for w in got_warnings} == {str(w.message) for w in want_warnings}
    version = compiled.versions()[0]
    assert version.native and not version.artifact.externs


@pytest.mark.parametrize("fn, arg", [
    (lambda x: np.round(x, 2), np.arange(10)),  # integers: NumPy's own path
    (lambda x: np.round(x, -1), np.arange(-50, 50)),
])
def test_other_forms_run_as_numpy(fn, arg):
    compiled = stax.compile(fn)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(compiled(arg), fn(arg))
