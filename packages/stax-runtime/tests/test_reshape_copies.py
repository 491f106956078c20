"""Reshapes NumPy computes as copies (the operand's layout allows no view) compiled natively:
each output element read at the offset its flat index gives (floor quotients and remainders),
from inputs, views and computed values alike; the views feeding them are read in place."""

import numpy as np
import pytest

import stax.runtime as stax

RNG = np.random.default_rng(2)

PROGRAMS = {
    "x.T.reshape(-1)": lambda x: x.T.reshape(-1) * 2,
    "x.T.ravel()": lambda x: x.T.ravel() + 1,
    "stepped slice": lambda x: x[:, ::2].reshape(3, 8) - 1,
    "of a computed value": lambda x: (x * 2).T.reshape(4, 12),
    "np.reshape of a reversed slice": lambda x: np.reshape(x[::-1, 1:], (7, 6)) + 0,
    "flatten": lambda x: x.T.flatten() * 3,
    "3-D transpose": lambda x: np.transpose(x.reshape(2, 3, 8), (2, 0, 1)).reshape(8, 6) + 1,
    "returned as is": lambda x: x.T.reshape(-1),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_reshape_copies_match_numpy(name, dtype):
    fn = PROGRAMS[name]
    x = (RNG.standard_normal((6, 8)) * 4).astype(dtype)
    if dtype is np.bool_ and name in ("x.T.reshape(-1)", "x.T.ravel()", "stepped slice",
                                      "of a computed value", "flatten", "3-D transpose"):
        fn = lambda x, f=fn: f(x.astype(np.int8))  # noqa: E731  (bool arithmetic is NumPy's own)
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        got, want = compiled(x), fn(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert not compiled.versions()[0].artifact.externs


def test_fortran_order_reshape_runs_as_numpy():
    x = RNG.standard_normal((4, 6))
    fn = lambda x: x.T.reshape(-1, order="F") + 1  # noqa: E731
    compiled = stax.compile(fn)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(compiled(x), fn(x))
