"""ufunc methods and keyword forms, copies and rolls compiled natively: np.add.reduce & co. as
their reductions (axis 0 by default), add/multiply.accumulate as scans, dtype= as casts of the
operands, x.copy() / np.copy with NumPy's layout, np.roll as two pieces, float64 rad2deg."""

import numpy as np
import pytest

import stax.runtime as stax

RNG = np.random.default_rng(6)
X = RNG.standard_normal((5, 7)).astype(np.float32)
Y = RNG.standard_normal((5, 7)).astype(np.float32)
X[1, 2] = np.nan

PROGRAMS = {
    "np.add.reduce": lambda x, y: np.add.reduce(x),
    "np.add.reduce(axis=None)": lambda x, y: np.add.reduce(y, axis=None),
    "np.multiply.reduce(keepdims)": lambda x, y: np.multiply.reduce(y, axis=1, keepdims=True),
    "np.maximum.reduce (NaN)": lambda x, y: np.maximum.reduce(x, axis=1),
    "np.minimum.reduce": lambda x, y: np.minimum.reduce(y),
    "np.add.accumulate": lambda x, y: np.add.accumulate(y, axis=1),
    "np.multiply.accumulate": lambda x, y: np.multiply.accumulate(y),
    "np.add(dtype=float64)": lambda x, y: np.add(x, y, dtype=np.float64),
    "np.multiply(dtype=float64) by a scalar": lambda x, y: np.multiply(x, 3, dtype=np.float64),
    "x.copy()": lambda x, y: x.copy(),
    "x.T.copy() (C order)": lambda x, y: x.T.copy(),
    "np.copy(x.T) (keeps F order)": lambda x, y: np.copy(y.T),
    "np.roll along an axis": lambda x, y: np.roll(x, 3, axis=1) + np.roll(y, -6, axis=0),
    "np.roll of a vector": lambda x, y: np.roll(x[0], 1),
    "np.rad2deg, np.degrees (float64)": lambda x, y: np.rad2deg(x.astype(np.float64))
    + np.degrees(y.astype(np.float64)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_forms_compile_natively_and_match_numpy(name):
    fn = PROGRAMS[name]
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        got, want = compiled(X, Y), fn(X, Y)
        assert not compiled.versions()[0].artifact.externs
        assert np.asarray(got).dtype == np.asarray(want).dtype and np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)  # reductions reorder; the rest is exact
        if isinstance(want, np.ndarray) and "reduce" not in name:
            np.testing.assert_array_equal(got, want)
            assert got.strides == want.strides


def test_a_copy_is_a_new_array():
    compiled = stax.compile(lambda x: x.copy())
    for _ in range(2):  # the compiling call, then the cached version's
        got = compiled(X)
        assert not np.shares_memory(got, X)


def _into_wider(x):
    out = np.zeros((x.shape[0], 3))
    np.multiply(x[0], 2.0, out=out[0])  # a scalar result broadcast into a row
    np.add(x[1:2], 1.0, out=out[1:])
    return out


def test_a_ufunc_result_broadcasts_into_a_wider_out():
    """``np.multiply(s, 2.0, out=row)``: NumPy broadcasts the result into ``out`` (it raised a
    shape error at capture)."""
    compiled = stax.compile(_into_wider, strict_native=True)
    for x in (np.arange(4.0), np.arange(4.0) - 7):
        np.testing.assert_array_equal(compiled(x), _into_wider(x))
