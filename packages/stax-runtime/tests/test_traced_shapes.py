"""A shape Python reads from array data (``x.reshape(s)``, ``x.reshape(header[0], -1)``,
``np.zeros_like(x, shape=s)``): each size is an index gate, so a call with other sizes gets
another version (or NumPy's own error), never the first call's shape (a probe's finding: the
traced shape was recorded as the value it had at capture)."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax


def by_array(x, s):
    return x.reshape(s) * 2.0


def by_element(header, payload):
    return payload.reshape(header[0], -1).sum(axis=1)


def by_elements(x, s):
    return x.reshape(s[0], s[1], -1) + 1.0


def by_function(x, s):
    return np.reshape(x, s) - 1.0


def like(x, s):
    return np.zeros_like(x, shape=s) + np.full_like(x, 2.0, shape=s)


CASES = [
    (by_array, np.arange(12.0), [np.array([3, 4]), np.array([2, 6]), np.array([12, 1])]),
    (by_element, np.arange(12.0), [np.array([3]), np.array([4]), np.array([6])]),
    (by_elements, np.arange(24.0), [np.array([1, 2]), np.array([2, 3]), np.array([4, 1])]),
    (by_function, np.arange(12.0), [np.array([3, 4]), np.array([4, 3])]),
    (like, np.arange(4.0), [np.array([1, 2]), np.array([2, 3])]),
]


@pytest.mark.parametrize("fn, x, shapes", CASES, ids=[c[0].__name__ for c in CASES])
def test_each_call_has_its_own_shape(fn, x, shapes):
    compiled = stax.compile(fn)
    for s in shapes + shapes[::-1]:
        args = (s, x) if fn is by_element else (x, s)
        want, got = fn(*args), compiled(*args)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_a_shape_numpy_refuses_raises_numpy_s_error():
    compiled = stax.compile(by_elements)
    x = np.arange(24.0)
    compiled(x, np.array([1, 2]))
    with pytest.raises(ValueError, match="cannot reshape"):
        by_elements(x, np.array([2, 0]))
    with pytest.raises(ValueError, match="cannot reshape"):
        compiled(x, np.array([2, 0]))


def test_a_boolean_shape_raises_numpy_s_own_error():
    """A review's finding: a bool shape value was read as an index first, whose error is not
    NumPy's ("an integer is required")."""
    compiled = stax.compile(by_element)
    compiled(np.array([3]), np.arange(12.0))
    h = np.array([True])
    with pytest.raises(TypeError) as eager:
        by_element(h, np.arange(12.0))
    with pytest.raises(TypeError) as got:
        compiled(h, np.arange(12.0))
    assert str(got.value) == str(eager.value)
