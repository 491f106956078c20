"""In-place updates compiled natively: after capture functionalizes ``x[key] = v`` (spec §4.9),
basic keys (slices with step 1 or -1, integers, Ellipsis) become a select over the key's region
and a mask with a scalar becomes a ``where`` — NumPy's values, arguments written back as eager."""

import numpy as np
import pytest

import stax.runtime as stax


def local_slices(x, y):
    z = x.copy()
    z[1:3] = 0
    z[:, 0] += 1
    return z


def rows_and_reversed(x, y):
    z = x * 2
    z[0] = y[0]
    z[-1, ::-1] = y[1]
    z[..., 2] = 7
    return z


def mask(x, y):
    z = x + 0
    z[z > 0] = 0
    return z


def block_update(x, y):
    z = x.copy()
    z[1:, 1:3] += y[:3, :2]
    return z


def argument_update(x, y):
    x[1:] += 1
    return x


def shift_right(x, y):
    z = np.zeros_like(x)
    z[:, 1:] = x[:, :-1]
    return z


@pytest.mark.parametrize("fn", [local_slices, rows_and_reversed, mask, block_update,
                                argument_update, shift_right])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_updates_compile_natively(fn, dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((4, 5)) * 5).astype(dtype)
    y = (rng.standard_normal((4, 5)) * 5).astype(dtype)
    if dtype != np.int32:
        x[2, 3] = np.nan
    original = x.copy()
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's (on fresh arguments)
        x, eager_x = original.copy(), original.copy()
        got = compiled(x, y)
        want = fn(eager_x, y)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(x, eager_x)  # the argument written back as eager NumPy does
    assert not compiled.versions()[0].artifact.externs


def test_stepped_and_fancy_keys_run_as_numpy():
    def stepped(x):
        z = x.copy()
        z[::2] = 1
        z[[0, 2], 1] = 5
        return z
    x = np.arange(20.0).reshape(4, 5)
    compiled = stax.compile(stepped)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(compiled(x), stepped(x))
