"""Floating-point events of NumPy steps (what Stax does not compile natively runs as NumPy's own
call between the kernels): reported as eager NumPy reports them — from the user's line, once per
call, the compiling call included, raising or silent as the error state says. A plan whose
kernels reported no events ran its NumPy steps outside the events buffer, so their warnings came
from Stax's executable.py (found by helper F)."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def half_quotient(x):
    return x / x  # float16 arithmetic is a NumPy step


def huge_product(a, b):
    return (a @ b) + 1.0  # matmul is a NumPy step


CASES = {
    "float16 quotient": (half_quotient, lambda: (np.zeros(4, dtype=np.float16),)),
    "matmul overflow": (huge_product, lambda: (np.full((3, 3), 1e200), np.full((3, 3), 1e200))),
}


def caught(fn, args):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [(w.filename, w.lineno, str(w.message)) for w in got]


@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_step_events_come_from_the_users_line_once(name):
    fn, make = CASES[name]
    want, want_warnings = caught(fn, make())
    assert want_warnings and want_warnings[0][0] == __file__
    compiled = stax.compile(fn)
    for _ in range(2):  # the compiling call, then a cached one
        got, got_warnings = caught(compiled, make())
        np.testing.assert_array_equal(got, want)
        assert got_warnings == want_warnings


@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_step_events_follow_the_error_state(name):
    fn, make = CASES[name]
    compiled = stax.compile(fn)
    caught(compiled, make())
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        compiled(*make())
    with np.errstate(all="ignore"):
        assert caught(compiled, make())[1] == []
