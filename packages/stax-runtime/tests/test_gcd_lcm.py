"""np.gcd and np.lcm compile natively (one loop operator each, Stein's binary gcd in the kernel)
and give NumPy's integers bit for bit: of the magnitudes, gcd(0, 0) = 0, MIN's magnitude wrapping
to MIN, lcm wrapping, in every integer dtype, over broadcast, transposed and mixed-dtype
operands."""

import numpy as np
import pytest

import stax.runtime as stax

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FUNCTIONS = {"gcd": np.gcd, "lcm": np.lcm}


def native(fn, *args):
    compiled = stax.compile(fn, strict_native=True)
    want = fn(*args)
    for _ in range(2):  # the compiling call, then the cached version's
        got = compiled(*args)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert not compiled.versions()[0].artifact.externs  # computed in the kernel
    return got


def edges(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    values = [0, 1, 2, 3, 6, 12, 64, info.max, info.max - 1, info.min, info.min + 1]
    if info.min:
        values += [-1, -2, -6, -12, -64, info.min // 2, info.min // 3]
    return np.array(values, dtype=dtype)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_random_and_edge_values_match_numpy(name, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(11)
    a = rng.integers(info.min, info.max, 2000, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, 2000, dtype=dtype, endpoint=True)
    b[::3] = a[::3] * rng.integers(0, 5, len(a[::3])).astype(dtype)  # shared factors
    e = edges(dtype)
    pairs = (np.concatenate([a, np.repeat(e, len(e))]), np.concatenate([b, np.tile(e, len(e))]))
    native(FUNCTIONS[name], *pairs)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_negative_zero_and_min_as_numpy(dtype):
    """gcd(MIN, 0) and gcd(MIN, MIN) are MIN (2^(bits-1) wrapped), gcd(MIN, -1) is 1, lcm(MIN,
    -1) is MIN, and every result of other values is non-negative."""
    low = np.iinfo(dtype).min
    a = np.array([low, low, low, 0, -6, 6, -6, -12, 0, low + 1], dtype=dtype)
    b = np.array([0, low, -1, 0, 4, -4, -4, 0, -7, low], dtype=dtype)
    got = native(np.gcd, a, b)
    assert got[:3].tolist() == [low, low, 1] and got[3] == 0 and (got[3:] >= 0).all()
    assert native(np.lcm, a, b)[2] == low


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_broadcast_transposed_scalar_and_mixed_operands(name):
    fn = FUNCTIONS[name]
    rng = np.random.default_rng(5)
    rows = rng.integers(-500, 500, (37, 1), dtype=np.int32)
    columns = rng.integers(-500, 500, (1, 23), dtype=np.int16)
    table = rng.integers(0, 10**6, (23, 37), dtype=np.int64)
    native(lambda r, c: fn(r, c), rows, columns)  # int32 of an int16: broadcast to (37, 23)
    native(lambda t, r: fn(t.T, r) + 1, table, rows)  # a transposed operand, fused with an add
    native(lambda t: fn(t, 360), table)  # a Python int
    native(lambda r: fn(r.astype(np.uint8), np.uint8(200)), rows)  # wrapped bytes, uint8


def test_a_step_no_value_uses_is_dropped_as_numpy_reports_nothing():
    """NumPy's gcd reports no floating-point event, so an unused gcd costs nothing."""
    def fn(a, b):
        np.gcd(a, b)
        return a + b
    a, b = np.arange(-8, 8), np.arange(16)
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(compiled(a, b), fn(a, b))
    assert "gcd" not in str(compiled.versions()[0].artifact.to_json())
