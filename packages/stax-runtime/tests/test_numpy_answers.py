"""``np.array_equal`` and ``np.array_equiv`` on traced values (``stax.trace.numpy_answers``):
NumPy's code converts its operands with ``np.asarray``, a C call that asks a traced value for
its data, so any function using them ran eagerly; capture runs forms of their own, whose answer
is a data gate (a branch on it compiles one version per outcome)."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax

NAN = np.nan
CASES = [(np.arange(5.0), np.arange(5.0)), (np.arange(5.0), np.arange(5.0) + 1),
         (np.array([1.0, NAN]), np.array([1.0, NAN])), (np.array([1.0, NAN]), np.array([NAN, 1.0])),
         (np.arange(6).reshape(2, 3), np.arange(6).reshape(2, 3)),
         (np.arange(6.0).reshape(2, 3), np.arange(3.0)), (np.ones((2, 3)), np.ones(3)),
         (np.array([0.0, -0.0]), np.array([-0.0, 0.0]))]


def answers(a, b):
    return np.array_equal(a, b), np.array_equal(a, b, equal_nan=True), np.array_equiv(a, b)


def branch(a, b):
    if np.array_equal(a, b):
        return a * 2
    return a - b


@pytest.mark.parametrize("fn", [answers, branch])
def test_the_answers_are_numpys(fn):
    f = stax.compile(fn, strict_native=fn is branch)
    for _ in range(3):
        for a, b in CASES:
            try:
                want = fn(a, b)
            except ValueError as exc:  # ``a - b`` of shapes that do not broadcast
                with pytest.raises(ValueError, match=str(exc)[:20]):
                    f(a, b)
                continue
            got = f(a, b)
            if isinstance(want, tuple):
                assert got == want and all(type(g) is bool for g in got)
            else:
                np.testing.assert_array_equal(got, want)


def relax_until_unchanged(x):
    """Iterate x <- round(x / 2 + 1) until a step changes nothing (a data-dependent exit)."""
    for _ in range(64):
        nxt = np.round(x / 2 + 1)
        if np.array_equal(nxt, x):
            break
        x = nxt
    return x


def test_a_convergence_test_compiles():
    f = stax.compile(relax_until_unchanged, strict_native=True)
    x = np.linspace(0.0, 100.0, 9)
    for _ in range(3):
        np.testing.assert_array_equal(f(x), relax_until_unchanged(x))


def test_scalars_and_lists_as_numpy_takes_them():
    """A review's finding: a scalar argument (``np.array_equal(x.sum(), k)``) raised an
    ``AttributeError`` and a ragged list a ``ValueError``, where NumPy answers."""
    def total(x, k):
        return np.array_equal(x.sum(), k), np.array_equiv(x, k)

    def ragged(x):
        return np.array_equal(x, [[1, 2], [3]])

    f, g = stax.compile(total), stax.compile(ragged)
    x = np.arange(4.0)
    for k in (6.0, 7.0, 6.0, 2.0):
        assert f(x, k) == total(x, k)
    assert g(np.arange(3)) is False
