"""The dtype a reduction computes in, as NumPy picks it (found by a probe, both wrong values):

- with ``out=`` and no ``dtype=``, NumPy's reductions and scans accumulate in ``out``'s dtype
  (``ufunc.reduce``'s rule): float32 data summed into a float64 ``out`` adds in float64 — a
  million 0.1s gave 100958.3 instead of 100000.0015; element-wise ufuncs keep their inputs' loop;
- the variance of complex data is real, computed from the complex mean: the op's ``dtype=``
  (the result's, float64) cast the data to it, dropping the imaginary parts."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def _cumsum_into(x, o):
    np.cumsum(x, out=o)
    return o


def _sum_into(x, o):
    np.sum(x, axis=0, out=o)
    return o


def _add_reduce_into(x, o):
    np.add.reduce(x, axis=0, out=o)
    return o


def _mean_into(x, o):
    np.mean(x, axis=0, out=o)
    return o


def _prod_into(x, o):
    np.prod(x * 0 + 1.0000001, axis=0, out=o)
    return o


def _add_into(x, o):
    np.add(x, x, out=o)  # an element-wise loop: the inputs' dtype, whatever out's
    return o


@pytest.mark.parametrize("fn, out_shape", [
    (_cumsum_into, (200_000,)), (_sum_into, ()), (_add_reduce_into, ()), (_mean_into, ()),
    (_prod_into, ()), (_add_into, (200_000,))],
    ids=["cumsum", "sum", "add_reduce", "mean", "prod", "add"])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
def test_reductions_into_out_accumulate_in_its_dtype(fn, out_shape, out_dtype):
    x = np.full(200_000, 0.1, np.float32)
    compiled = stax.compile(fn)
    for data in (x, x * 3):
        want = fn(data, np.zeros(out_shape, out_dtype))
        got = compiled(data, np.zeros(out_shape, out_dtype))
        assert got.dtype == want.dtype
        # summation order aside: float32 rounds each step (a float32 product of 200,000
        # factors drifts by 3e-4 between two orders); a float64 product's bound is n eps
        # (2.2e-11), and its order follows the vector width (3.4e-12 apart on an AVX2 host)
        if out_dtype == np.float64:
            rtol = 1e-10 if fn is _prod_into else 1e-12
        else:
            rtol = 1e-3 if fn is _prod_into else 1e-6
        np.testing.assert_allclose(got, want, rtol=rtol)


@pytest.mark.parametrize("fn", [lambda z: np.var(z, axis=0), lambda z: z.var(),
                                lambda z: np.std(z, axis=1, keepdims=True),
                                lambda z: np.var(z.T, ddof=1)],
                         ids=["var_axis", "var", "std_keepdims", "var_ddof"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_the_variance_of_complex_data(fn, dtype):
    rng = np.random.default_rng(1)
    compiled = stax.compile(fn)
    for _ in range(2):
        z = (rng.standard_normal((5, 4)) + 1j * rng.standard_normal((5, 4))).astype(dtype)
        want = fn(z)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no ComplexWarning: nothing is cast to real
            got = compiled(z)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.complex64 else 1e-14)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int32, np.uint32, np.int64,
                                   np.uint64])
@pytest.mark.parametrize("value", [-2.5, 3.7, 200.7, 4e4, 1e10, 1e20, np.nan, -np.inf])
@pytest.mark.parametrize("fn", [lambda a, t: np.sum(a, dtype=t), lambda a, t: np.cumsum(a, dtype=t),
                                lambda a, t: np.add.reduce(a, dtype=t)],
                         ids=["sum", "cumsum", "add_reduce"])
def test_floats_reduced_in_an_integer_dtype(fn, value, dtype):
    """A reduction with an integer ``dtype=`` of float data converts each element as ``astype``
    does: truncated where it fits, else NumPy's own call decides (its C compiler's value, its
    warning). The implicit conversion was LLVM's unchecked one (poison out of range: -2.5 to
    uint8 gave 254 in scalar code and 0 in vector code, 16 elements summing to 0 instead of
    224; found by a probe)."""
    compiled = stax.compile(lambda a: fn(a, dtype))
    for n in (3, 16, 40):
        a = np.full(n, value)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = fn(a, dtype)
            calls = [compiled(a) for _ in range(2)]  # a compiling call, then the cached one's
        for got in calls:
            np.testing.assert_array_equal(got, want)
            assert np.asarray(got).dtype == np.asarray(want).dtype
