"""``initial=`` of sum, max, min and integer prod compiled as the reduction combined with the
value (``stax.ir.to_opgraph.standard._with_initial``): NumPy's results, dtypes and special values
(NaN in the data or as the value, -0.0, infinities), the value cast to the result dtype as NumPy
casts it, and empty reductions giving the value; calls NumPy decides otherwise (a float prod, an
overflowing cast) stay NumPy's steps."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def _kernels_only(compiled):
    version = compiled.versions()[-1]
    return version.native and not version.artifact.externs


def _check(fn, *args, rtol=0.0):
    """Compiled natively, NumPy's dtype and values: bit for bit unless ``rtol`` (a float sum,
    whose rounding is NumPy's accuracy class, not its order)."""
    compiled = stax.compile(fn, strict_native=True)
    got, want = compiled(*args), fn(*args)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    if rtol:
        np.testing.assert_allclose(got, want, rtol=rtol)
    else:
        np.testing.assert_array_equal(got, want)
    assert _kernels_only(compiled), fn
    return compiled


def _values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(shape).astype(dtype)
        flat = x.reshape(-1)
        flat[::7] = -0.0
        return x
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    return rng.integers(-50, 50, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_max_and_min_with_initial(dtype, layout):
    rng = np.random.default_rng(3)
    x = _values(rng, (9, 14), dtype)
    x = {"contiguous": x, "transposed": x.T, "sliced": x[::2, 1::3]}[layout]
    _check(lambda x: x.max(initial=5), x)
    _check(lambda x: np.max(x, axis=1, initial=0), x)
    _check(lambda x: np.min(x, axis=0, keepdims=True, initial=3), x)
    _check(lambda x: np.amin(x, axis=(0, 1), initial=100), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64, np.bool_])
def test_sum_with_initial(dtype):
    rng = np.random.default_rng(4)
    x = _values(rng, (6, 33), dtype)
    rtol = 2e-6 if np.dtype(dtype).kind == "f" else 0.0
    _check(lambda x: np.sum(x, initial=7), x, rtol=rtol)
    _check(lambda x: x.sum(axis=0, initial=1), x, rtol=rtol)
    _check(lambda x: np.sum(x, axis=1, initial=0.25), x, rtol=rtol)


def test_integer_prod_with_initial_wraps_as_numpy():
    x = np.arange(1, 41, dtype=np.int32).reshape(4, 10)
    _check(lambda x: np.prod(x, axis=1, initial=3), x)
    _check(lambda x: np.prod(x.astype(np.int8), initial=-2, dtype=np.int8), x)


def test_special_values():
    x = np.array([[1.0, np.nan, -np.inf], [-0.0, 0.0, 2.0]], np.float32)
    _check(lambda x: x.max(axis=1, initial=np.inf), x)
    _check(lambda x: x.min(axis=0, initial=np.nan), x)
    _check(lambda x: np.max(x, axis=0, initial=-0.0), x)
    _check(lambda x: np.sum(x, axis=0, initial=np.inf), x)
    _check(lambda x: np.sum(x, axis=1, initial=-np.inf), x)


def test_the_value_is_cast_to_the_result_dtype_as_numpy_casts_it():
    x = np.array([[1, 2], [0, 1]], np.int64)
    _check(lambda x: x.max(initial=2.5), x)  # 2.5 -> 2
    _check(lambda x: np.min(x, axis=0, initial=-1.75), x)  # -1.75 -> -1


def test_an_empty_reduction_is_the_value():
    x = np.zeros((0, 3), np.float32)
    _check(lambda x: np.max(x, axis=0, initial=-1), x)
    _check(lambda x: np.sum(x, axis=0, initial=2.5) * 2, x)
    _check(lambda x: np.min(x, initial=4.0), np.zeros((5, 0)))


def test_a_window_max_with_initial_in_a_loop_runs_natively():
    def trailing_peak(x, w):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            out[i] = x[max(0, i - w + 1):i + 1].max(initial=-np.inf)
        return out

    x = np.random.default_rng(5).standard_normal(300)
    compiled = stax.compile(trailing_peak, strict_native=True)
    np.testing.assert_array_equal(compiled(x, 8), trailing_peak(x, 8))


def test_what_numpy_decides_stays_numpys():
    x = np.linspace(0.5, 1.5, 12).reshape(3, 4)
    compiled = stax.compile(lambda x: np.prod(x, axis=1, initial=1.1))  # float prod: order
    np.testing.assert_array_equal(compiled(x), np.prod(x, axis=1, initial=1.1))
    assert not _kernels_only(compiled)
    f32 = x.astype(np.float32)
    compiled = stax.compile(lambda x: np.sum(x, initial=1e40))  # the cast overflows: it warns
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.sum(f32, initial=1e40)
    with pytest.warns(RuntimeWarning, match="overflow"):
        got = compiled(f32)
    assert got == want and not _kernels_only(compiled)
