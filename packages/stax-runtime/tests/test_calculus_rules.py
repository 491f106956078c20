"""``np.average`` with weights, ``np.trapezoid`` and ``np.gradient`` of a vector compile to
kernels (NumPy's own formula, operation for operation): they ran as NumPy steps between
kernels, from Python (two weighted averages: 33 us, NumPy 24)."""

import numpy as np
import pytest

import stax.runtime as stax


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


def weighted(x, w):
    avg = np.average(x, weights=w)
    spread = np.sqrt(np.average((x - avg) ** 2, weights=w))
    return avg, spread, np.average(x), np.average(x.reshape(4, -1), axis=1,
                                                  weights=w.reshape(4, -1))


def calculus(y, dx, t):
    return np.gradient(y, dx), np.gradient(y), np.trapezoid(y, dx=dx), np.trapezoid(y, t), \
        np.trapezoid(y)


def _no_steps(f):
    version = f.versions()[-1]
    assert version.native and not version.artifact.externs


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_they_are_numpys_with_sums_in_their_accuracy_class(dtype, layout):
    rng = np.random.default_rng(11)
    f, g = stax.compile(weighted, strict_native=True), stax.compile(calculus, strict_native=True)
    for n in (400, 400, 88):
        x, w = (rng.standard_normal(2 * n).astype(dtype), rng.random(2 * n).astype(dtype))
        y, t = np.cumsum(rng.standard_normal(2 * n)).astype(dtype), np.sort(rng.random(2 * n))
        if layout == "strided":
            x, w, y, t = x[::2], w[::2], y[::2], t[::2].astype(dtype)
        else:
            x, w, y, t = x[:n], w[:n], y[:n], t[:n].astype(dtype)
        rtol = 1e-13 if dtype == "float64" else 2e-5  # sums: their order is the reduction's
        for got, want in zip(f(x, w), weighted(x, w)):
            assert type(got) is type(want) and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=rtol)
        got, want = g(y, 0.1, t), calculus(y, 0.1, t)
        for k, (a, b) in enumerate(zip(got, want)):
            assert type(a) is type(b) and a.dtype == b.dtype
            if k < 2:  # no sum: bit for bit
                np.testing.assert_array_equal(a, b)
            else:
                np.testing.assert_allclose(a, b, rtol=rtol)
    _no_steps(f)
    _no_steps(g)


def test_weights_summing_to_zero_raise_numpys_error():
    f = stax.compile(weighted)
    x = np.random.default_rng(2).standard_normal(40)
    f(x, np.ones(40))
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
        f(x, np.zeros(40))


def padded_differences(y, m):
    return (np.diff(y, prepend=y[0], append=y[-1]), np.diff(y, prepend=0),
            np.diff(y.astype(np.int32), prepend=0), np.diff(y, n=2, prepend=y[:1]),
            np.diff(m, axis=0, prepend=m[:1]), np.diff(m, axis=1, append=0.0))


def test_diff_with_prepend_and_append_is_numpys():
    """``np.diff(y, prepend=..., append=...)`` joins the ends first, in NumPy's concatenation
    dtype (a Python int prepended to an int32 vector makes int64 differences)."""
    f = stax.compile(padded_differences, strict_native=True)
    rng = np.random.default_rng(5)
    for _ in range(3):
        y, m = rng.standard_normal(40) * 10, rng.standard_normal((6, 7))
        for got, want in zip(f(y, m), padded_differences(y, m)):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    _no_steps(f)
