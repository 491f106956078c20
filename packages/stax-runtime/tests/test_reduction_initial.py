"""``initial=`` of max, min and integer sum and prod compiled as the reduction combined with the
value (``stax.ir.to_opgraph.standard._with_initial``): NumPy's results, dtypes and special values
(NaN in the data or as the value, -0.0 and ties, infinities), the value cast to the result dtype
as NumPy casts it, and empty reductions giving the value; float sums and products from a value
other than 0 or 1 (whose rounding depends on where it enters) and overflowing casts stay NumPy's
steps."""

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
    compiled(*args)  # the capture's run: NumPy computes it
    got, want = compiled(*args), fn(*args)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    if rtol:
        np.testing.assert_allclose(got, want, rtol=rtol)
    else:
        np.testing.assert_array_equal(got, want)
        if np.asarray(want).dtype.kind == "f":  # -0.0 where NumPy's is (equal to 0.0 above)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
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


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint8, np.bool_])
def test_integer_sum_with_initial(dtype):
    rng = np.random.default_rng(4)
    x = _values(rng, (6, 33), dtype)
    _check(lambda x: np.sum(x, initial=7), x)
    _check(lambda x: x.sum(axis=0, initial=1), x)
    _check(lambda x: np.sum(x, axis=1, keepdims=True, initial=3), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_float_sum_starting_at_zero_is_the_sum(dtype):
    """0 (or -0.0) first or last changes nothing but a zero's sign, alike in both orders."""
    x = _values(np.random.default_rng(5), (6, 33), dtype)
    x[2] = -0.0
    _check(lambda x: np.sum(x, axis=1, initial=0), x, rtol=2e-6)
    _check(lambda x: np.sum(x, axis=0, initial=-0.0), x, rtol=2e-6)
    _check(lambda x: np.prod(x[:, :4], axis=1, initial=1.0), x, rtol=2e-6)


def test_float_sums_from_another_value_stay_numpys():
    """NumPy adds ``initial`` first: ``1.0 + 1e16 - 1e16`` is 0.0, ``1.0 + (1e16 - 1e16)`` 1.0."""
    x = np.array([[1e16, 1e16], [-1e16, -1e16]])
    compiled = stax.compile(lambda x: np.sum(x, axis=0, initial=1.0))
    for _ in range(2):
        np.testing.assert_array_equal(compiled(x), [0.0, 0.0])
    assert not _kernels_only(compiled)


def test_a_tie_gives_the_element_as_numpy_does():
    """``maximum(c, x)``: NumPy's reduce starts from ``c``, and a tie gives the second operand."""
    _check(lambda x: np.max(x, initial=0.0), np.array([-0.0, -0.0]))
    _check(lambda x: np.min(x, initial=-0.0), np.array([0.0]))
    _check(lambda x: np.max(x, axis=1, initial=-0.0), np.array([[0.0, -1.0], [-0.0, -2.0]]))


def test_no_initial_value_is_the_plain_reduction():
    _check(lambda x: np.max(x, axis=0, initial=None), np.arange(12.0).reshape(3, 4))


def test_integer_prod_with_initial_wraps_as_numpy():
    x = np.arange(1, 41, dtype=np.int32).reshape(4, 10)
    _check(lambda x: np.prod(x, axis=1, initial=3), x)
    _check(lambda x: np.prod(x.astype(np.int8), initial=-2, dtype=np.int8), x)


def test_special_values():
    x = np.array([[1.0, np.nan, -np.inf], [-0.0, 0.0, 2.0]], np.float32)
    _check(lambda x: x.max(axis=1, initial=np.inf), x)
    _check(lambda x: x.min(axis=0, initial=np.nan), x)
    _check(lambda x: np.max(x, axis=0, initial=-0.0), x)
    _check(lambda x: np.sum(x, axis=0, initial=0.0), x)


def test_the_value_is_cast_to_the_result_dtype_as_numpy_casts_it():
    x = np.array([[1, 2], [0, 1]], np.int64)
    _check(lambda x: x.max(initial=2.5), x)  # 2.5 -> 2
    _check(lambda x: np.min(x, axis=0, initial=-1.75), x)  # -1.75 -> -1


def test_an_empty_reduction_is_the_value():
    x = np.zeros((0, 3), np.float32)
    _check(lambda x: np.max(x, axis=0, initial=-1), x)
    _check(lambda x: np.sum(x, axis=0, initial=2) * 2, x.astype(np.int32))
    _check(lambda x: np.min(x, initial=4.0), np.zeros((5, 0)))


def test_a_window_max_with_initial_in_a_loop_runs_natively():
    def trailing_peak(x, w):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            out[i] = x[max(0, i - w + 1):i + 1].max(initial=-np.inf)
        return out

    x = np.random.default_rng(5).standard_normal(300)
    compiled = stax.compile(trailing_peak, strict_native=True)
    for _ in range(2):  # the capture's run, then the compiled version's
        np.testing.assert_array_equal(compiled(x, 8), trailing_peak(x, 8))


def test_what_numpy_decides_stays_numpys():
    x = np.linspace(0.5, 1.5, 12).reshape(3, 4)
    compiled = stax.compile(lambda x: np.prod(x, axis=1, initial=1.1))  # float prod: order
    for _ in range(2):
        np.testing.assert_array_equal(compiled(x), np.prod(x, axis=1, initial=1.1))
    assert not _kernels_only(compiled)
    f32 = x.astype(np.float32)
    compiled = stax.compile(lambda x: np.max(x, initial=1e40))  # the cast overflows: it warns
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.max(f32, initial=1e40)
    for _ in range(2):
        with pytest.warns(RuntimeWarning, match="overflow"):
            got = compiled(f32)
        assert got == want and not _kernels_only(compiled)
