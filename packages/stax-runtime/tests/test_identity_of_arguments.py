"""A function comparing its arguments' identities (``a is b``, ``id(a)``) called with one object
twice (``f(x, x)``): such calls run eagerly (their identity is no part of a key), so the branch
Python takes is eager's; calls with distinct objects compile as usual."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as st
from stax.runtime.code_reads import compares_identity


def _same_array(a, b):
    if a is b:
        return a * 2
    return a + b + 1


def _same_scalar(x, a, b):
    if a is b:
        return x * a
    return x + a + b


def _by_id(a, b):
    return a - b if id(a) == id(b) else a + b


def _none_only(a, b=None):
    if b is None:
        b = a
    return a + b


def test_which_functions_compare_identities():
    assert compares_identity(_same_array) and compares_identity(_by_id)
    assert not compares_identity(_none_only)


@pytest.mark.parametrize("fn", [_same_array, _by_id])
def test_one_array_passed_twice_takes_eagers_branch(fn):
    f = st.compile(fn)
    x = np.arange(4.0)
    for args in [(x, x), (x, x.copy()), (x, x), (x, x), (x.copy(), x)]:
        np.testing.assert_array_equal(f(*args), fn(*args))
    assert f.cache_info().fallbacks == 3  # the three calls with one object twice


def test_one_scalar_passed_twice_takes_eagers_branch():
    f = st.compile(_same_scalar)
    x = np.ones(3)
    for v in (1.5, 2.5, 3.5, 4.5):
        np.testing.assert_array_equal(f(x, v, v), _same_scalar(x, v, v))
        np.testing.assert_array_equal(f(x, v, 7.0), _same_scalar(x, v, 7.0))


def test_none_checks_keep_the_machine_code_path():
    f = st.compile(_none_only)
    x = np.arange(3.0)
    for _ in range(4):
        np.testing.assert_array_equal(f(x, x), _none_only(x, x))
    assert f.cache_info().fallbacks == 0
