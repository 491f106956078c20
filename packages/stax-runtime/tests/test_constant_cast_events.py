"""A scalar that overflows in its cast to the array's dtype (``x *= 1e308`` of float32) reports
"overflow encountered in cast" on every call, as NumPy does, not once when the compile folded
the cast (``stax.loop.context.scalar_constant``): later calls warned nothing, and under
``np.errstate(over="raise")`` wrote infinities into the argument instead of raising; a first
call that fell back warned twice."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def scale_inplace(x):
    x *= 1e308
    return x


def scale(x):
    return x * 1e308


def fill_masked(x):
    x[x > 1] = 1e308
    return x


def _run(fn, values, state):
    x = np.array(values, np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with np.errstate(**state):
                outcome = repr(np.asarray(fn(x)).tolist())
        except FloatingPointError as exc:
            outcome = f"FloatingPointError({exc})"
    return outcome, repr(x.tolist()), [str(w.message) for w in caught]


def scale_by_int(x):
    return x * 10 ** 40  # a Python int beyond float32: the same cast (found by a dtype probe)


@pytest.mark.parametrize("fn", [scale_inplace, scale, fill_masked, scale_by_int])
def test_every_call_reports_the_cast_as_numpy_does(fn):
    compiled = stax.compile(fn)
    for _ in range(3):
        for state in ({}, {"all": "raise"}, {"over": "raise"}, {"all": "warn"}, {"all": "ignore"}):
            for values in ((1.0, 0.0, 2.0), (1.0, 3.0, 2.0)):
                assert _run(compiled, values, state) == _run(fn, values, state), (state, values)


def test_a_cast_that_does_not_overflow_stays_a_constant():
    compiled = stax.compile(lambda x: x * 1e30, strict_native=True)
    x = np.ones(5, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):  # the compiling call, then the cached version's
            np.testing.assert_array_equal(compiled(x), x * 1e30)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("value", [300, -1, -200])
def test_a_where_branch_out_of_the_integer_range_wraps_as_numpys(dtype, value):
    """``np.where(c, int8_array, 300)``: NumPy wraps the scalar (44); the constant's conversion
    raised OverflowError, an internal compiler error (found by a probe)."""
    def pick(x):
        return np.where(x < 3, x, value)
    compiled = stax.compile(pick, strict_native=True)
    x = np.array([1, 2, 3, 4]).astype(dtype)
    for _ in range(2):  # the compiling call, then the cached version's
        got = compiled(x)
        np.testing.assert_array_equal(got, pick(x))
        assert got.dtype == pick(x).dtype
