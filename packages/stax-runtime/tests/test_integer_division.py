"""Floor division and remainder compiled natively, exactly as NumPy: for integers floor rounding,
the remainder's sign from the divisor, 0 for division by zero, MIN // -1 wrapping; for floats
NumPy's npy_divmod from an exact fmod."""

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
        for _ in range(2):  # the compiling call, then the cached version's
            got, want = compiled(a, b), fn(a, b)
            assert not compiled.versions()[0].artifact.externs  # in the kernel, not NumPy
            np.testing.assert_array_equal(got, want)
            assert got.dtype == want.dtype


def test_layouts_and_broadcasting():
    a = np.arange(-60, 60, dtype=np.int32).reshape(10, 12)
    b = np.array([-7, -2, -1, 0, 1, 3], dtype=np.int32)
    fn = lambda a, b: (a.T[::2, None, :] // b[:, None]) % b[:, None]  # noqa: E731
    with np.errstate(all="ignore"):
        compiled = stax.compile(fn, strict_native=True)
        for _ in range(2):  # the compiling call, then the cached version's
            np.testing.assert_array_equal(compiled(a, b), fn(a, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_floor_division_and_remainder_follow_numpys_divmod(dtype):
    """npy_divmod from an exact fmod: the remainder takes the divisor's sign, the quotient is
    snapped, zeros keep their signs, infinities and NaN as NumPy; a quotient too large for an
    exact fmod fails the check and the call runs eagerly."""
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.standard_normal(3000) * 100, [5.5, -5.5, 0.0, -0.0, np.inf, np.nan,
                                                          7.0, -7.0, 1e-30, 6.0]]).astype(dtype)
    y = np.concatenate([rng.standard_normal(3000) * 3, [2.0, -2.0, 3.0, -3.0, 2.0, 1.0, -np.inf,
                                                        0.0, 3.0, 3.0]]).astype(dtype)
    fn = lambda x, y: (x // y, x % y, np.floor_divide(x, 1.5), np.remainder(y, -0.25))  # noqa: E731
    compiled = stax.compile(fn, strict_native=True)
    with np.errstate(all="ignore"):
        for _ in range(2):  # the compiling call, then the cached version's
            got, want = compiled(x, y), fn(x, y)
            assert not compiled.versions()[0].artifact.externs
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
                numbers = ~np.isnan(w)
                np.testing.assert_array_equal(np.signbit(g)[numbers], np.signbit(w)[numbers])
        huge = np.array([1e30, 5.0], dtype=dtype)
        remainder = stax.compile(lambda x, y: x % y)
        for _ in range(2):
            np.testing.assert_array_equal(remainder(huge, y[:2]), huge % y[:2])


def test_float_remainder_by_a_divisor_whose_quotient_overflows():
    # 1 % 5e-324: the quotient overflows to inf; NumPy's exact fmod gives 0.0 (stress suite)
    f = stax.compile(lambda o, z: (o % np.nextafter(z, o), o // np.nextafter(z, o)))
    o, z = np.array([1.0, -1.0, 3.0]), np.zeros(3)
    with np.errstate(all="ignore"):
        for _ in range(2):
            got, want = f(o, z), (o % np.nextafter(z, o), o // np.nextafter(z, o))
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
                assert np.array_equal(np.signbit(g), np.signbit(w))
