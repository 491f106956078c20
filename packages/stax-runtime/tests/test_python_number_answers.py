"""NumPy functions written in Python that answer with a Python number (``np.allclose``,
``np.iscomplexobj``, ``np.isrealobj``, ``np.ndim``, ``np.size``): capture runs
their own code on the traced values (``Tracer.record``), so what they read of the data is a data
gate, their dtype or shape a constant; a convergence test ``if np.allclose(x_new, x)`` compiled
instead of running the whole function eagerly ("returned a bool, not an array")."""

import numpy as np
import pytest

import stax.runtime as stax


def jacobi(A, b, tol):
    x = np.zeros_like(b)
    for k in range(60):
        d = np.diag(A)
        x_new = (b - (A * x).sum(axis=1) + d * x) / d
        if np.allclose(x_new, x, rtol=0.0, atol=tol):
            return x_new, k
        x = x_new
    return x, -1


def test_a_convergence_test_with_allclose_compiles_and_follows_the_data():
    rng = np.random.default_rng(0)
    A = rng.random((12, 12)) + 12 * np.eye(12)
    compiled = stax.compile(jacobi, strict_native=True)
    for b in (rng.random(12), rng.random(12) * 100, np.zeros(12)):
        for _ in range(2):  # a (possibly) compiling call, then the cached version's
            got, want = compiled(A, b, 1e-9), jacobi(A, b, 1e-9)
            assert got[1] == want[1] and type(got[1]) is int
            np.testing.assert_allclose(got[0], want[0], rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("fn", [
    lambda x, y: np.allclose(x, y),
    lambda x, y: np.allclose(x, y, equal_nan=True),
    lambda x, y: x * 2 if np.iscomplexobj(x) else x + 1,
    lambda x, y: x[: np.ndim(y)] + np.size(y),
], ids=["allclose", "allclose_nan", "iscomplexobj", "ndim_size"])
def test_answers_are_python_numbers_as_eagerly(fn):
    compiled = stax.compile(fn, strict_native=True)
    x = np.array([1.0, np.nan, 3.0, 4.0])
    for y in (x.copy(), x + 1e-12, x + 1.0, np.array([1.0, np.nan, 3.0, 5.0])):
        got, want = compiled(x, y), fn(x, y)
        assert type(got) is type(want)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fn", [lambda b, x: b[0] | b[1], lambda b, x: b[0] & b[1],
                                lambda b, x: (x > 0).all() & (x < 5).all(),
                                lambda b, x: b[0] == b[1], lambda b, x: x * (b.any() & b.all())],
                         ids=["or", "and", "all_and_all", "equal", "times_flags"])
def test_numpy_bool_scalars_are_values_not_their_operands(fn):
    """``np.True_ | np.True_`` is the very object ``np.True_``: a result that is its operand
    object is that operand only for arrays (``Tracer.record``); taken for a NumPy scalar, the
    first call's bool was the compiled answer (found by a dtype probe)."""
    compiled = stax.compile(fn)
    for b in ([True, True], [False, True], [True, False], [False, False]):
        for x in ([1.0, 2.0], [1.0, 7.0]):
            args = (np.array(b), np.array(x))
            np.testing.assert_array_equal(compiled(*args), fn(*args))
