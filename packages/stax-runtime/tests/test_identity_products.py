"""A product with ``np.eye(n)``/``np.identity(n)`` compiles to kernels, not a matrix product
(``stax.ir.passes.identity_product``): the bits NumPy's BLAS gives (NaN where another element of
the column or row is not finite, ``-0.0`` as ``+0.0``) and its "invalid value encountered in
matmul" where an infinity meets a zero, on every layout; the power loop that starts from it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def left(x):
    return np.eye(x.shape[0], dtype=x.dtype) @ x


def right(x):
    return np.matmul(x, np.identity(x.shape[1], dtype=x.dtype))


def dotted(x):
    return np.dot(np.eye(x.shape[0], dtype=x.dtype), x) * 2.0


def power(a, k):
    result = np.eye(a.shape[0])
    for _ in range(k):
        result = result @ a
    return result


def _layouts(x):
    return {"contiguous": x, "transposed": x.T, "sliced": x[::2, 1:],
            "fortran": np.asfortranarray(x)}


def _run(fn, x):
    with warnings.catch_warnings(record=True) as eager:
        warnings.simplefilter("always")
        want = fn(x)
    compiled = stax.compile(fn, strict_native=True)
    calls = []
    for _ in range(2):  # the compiling call, then the cached version's
        with warnings.catch_warnings(record=True) as ours:
            warnings.simplefilter("always")
            calls.append((compiled(x), [str(w.message) for w in ours]))
    (first, first_warned), (got, warned) = calls
    # the compiling call's answer is the cached version's (the callers compare that with NumPy's)
    assert first.dtype == got.dtype and first_warned == warned
    np.testing.assert_array_equal(first, got)
    np.testing.assert_array_equal(np.signbit(first), np.signbit(got))
    return got, want, warned, [str(w.message) for w in eager]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [left, right, dotted])
@pytest.mark.parametrize("values", ["finite", "inf", "nan", "both"])
def test_identity_products_match_numpy(fn, dtype, values):
    rng = np.random.default_rng(7)
    base = rng.standard_normal((9, 8)).astype(dtype)
    base.flat[::5] = -0.0
    if values in ("inf", "both"):
        base[1, 2], base[6, 5] = np.inf, -np.inf
    if values in ("nan", "both"):
        base[3, 3] = np.nan
    for name, x in _layouts(base).items():
        got, want, ours, eager = _run(fn, x)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)
        numbers = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]), name)
        assert ours == eager, name


def test_one_row_or_column_has_no_other_element():
    x = np.array([[np.inf, -0.0, 2.0]])
    for fn in (left, right):
        got, want, ours, eager = _run(fn, x if fn is left else x.T.copy())
        np.testing.assert_array_equal(got, want)
        assert ours == eager


def test_the_power_loop_multiplies_once_less():
    a = np.random.default_rng(1).standard_normal((16, 16)) / 4
    compiled = stax.compile(power, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(compiled(a, 5), power(a, 5))
    (version,) = compiled.versions()
    plan = version.flat[0].artifact
    assert len(plan.externs) == 4  # five products, the first of them by the identity


def dot_left(x):
    return np.dot(np.identity(x.shape[0], dtype=x.dtype), x)


def dot_right(x):
    return np.dot(x, np.eye(x.shape[1], dtype=x.dtype))


@pytest.mark.parametrize("fn", [dot_left, dot_right, left, right])
@pytest.mark.parametrize("shape", [(1, 1), (1, 4), (4, 1), (3, 3)])
def test_products_with_a_row_or_column_keep_numpys_zeros(fn, shape):
    """``np.dot`` multiplies by a (1, 1) operand as a scalar (``-0.0`` stays) and takes gemv
    for a row or column: such products stay NumPy's; ``@`` of any shape is the rule's."""
    x = np.full(shape, -0.0)
    if x.size > 1:
        x.flat[-1] = 2.0
    got, want, ours, eager = _run(fn, x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert ours == eager
