"""Integer floor division and remainder compiled natively, exactly as NumPy: floor rounding, the
remainder's sign from the divisor, 0 for division by zero, MIN // -1 wrapping; float operands keep
NumPy's own (fmod-based) rules as an extern step."""

import numpy as np
import pytest

import stax.runtime as stax

PROGRAMS = {
    "a // b": lambda a, b: a // b,
    "a % b": lambda a, b: a % b,
    "np.floor_divide, np.mod": lambda a, b: np.floor_divide(a, b) + np.mod(b, a),
    "constants": lambda a, b: a // 3 - a % 7 + (a + b) // 2,
}


def operands(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(4)
    a = rng.integers(info.min, info.max, 4097, dtype=dtype, endpoint=True)
    b = rng.integers(max(info.min, -6), 7, 4097).astype(dtype)
    edges_a = [info.min, info.min, info.max, 0, 7, -7 if info.min else 7, info.max, 1]
    edges_b = [-1 if info.min else 1, 0, -1 if info.min else 3, 0, -3 if info.min else 3, 2,
               info.max, info.max]
    a[:8], b[:8] = edges_a, edges_b
    return a, b


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                   np.uint32, np.uint64])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_integer_floor_division_and_remainder_match_numpy(dtype, name):
    fn = PROGRAMS[name]
    a, b = operands(dtype)
    compiled = stax.compile(fn, strict_native=True)
    with np.errstate(all="ignore"):
        got, want = compiled(a, b), fn(a, b)
        assert not compiled.versions()[0].artifact.externs  # in the kernel, not NumPy
        np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


def test_layouts_and_broadcasting():
    a = np.arange(-60, 60, dtype=np.int32).reshape(10, 12)
    b = np.array([-7, -2, -1, 0, 1, 3], dtype=np.int32)
    fn = lambda a, b: (a.T[::2, None, :] // b[:, None]) % b[:, None]  # noqa: E731
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(stax.compile(fn, strict_native=True)(a, b), fn(a, b))


def test_floats_run_as_numpy():
    x = np.array([5.5, -5.5, 0.0, -0.0, np.inf, np.nan])
    fn = lambda x: (x // 2, x % -2)  # noqa: E731
    compiled = stax.compile(fn, strict_native=True)
    for got, want in zip(compiled(x), fn(x)):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
