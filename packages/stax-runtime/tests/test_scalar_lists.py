"""Scalars inside list and tuple arguments (coefficients ``f(x, [a, b, c])``, parameter packs
``(w, b)``): where their values change they are run-time inputs of one generic version, as a
scalar argument is (each new list compiled a version, eager past eight: 18 us a call for
NumPy's 4.5), and the version's key entry passes the items to the machine code (0.9 us)."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax


def horner(x, coeffs):
    out = np.zeros_like(x)
    for c in coeffs:
        out = out * x + c
    return out


def rows_weighted(X, w):
    return X[0] * w[0] + X[1] * w[1] + X[2] * w[2]


def affine_pair(x, pair):
    w, b = pair
    return x * w + b


def decided(x, ws):
    if ws[0] > 0:  # Python decides on an item: a predicate of the version, both outcomes right
        return x * ws[0]
    return x - ws[1]


def _same(got, want):
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
    assert np.signbit(got).tolist() == np.signbit(want).tolist()


def _sweep(fn, calls):
    f = stax.compile(fn)
    for args in calls:
        _same(f(*args), fn(*args))
    return f


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("container", [list, tuple])
def test_coefficients_that_change_are_inputs(dtype, container):
    x = np.linspace(-2, 2, 101).astype(dtype)
    calls = [(x, container([1.0 + k, 2.0, -0.5 * k])) for k in range(12)]
    f = _sweep(horner, calls)
    assert f.cache_info().compiles == 2 and f.versions()[1].generic is not None
    before = f.cache_info().hits[1]
    for args in calls:
        _same(f(*args), horner(*args))
    assert f.cache_info().hits[1] == before + len(calls)  # the key entry, machine code after


def test_items_of_other_kinds_and_special_values():
    x = np.linspace(-2, 2, 33)
    calls = [(x, [0.5, 2.0, 1.0]), (x, [1.5, 2.0, 3.0]), (x, [-0.0, 2.0, 0.0]),
             (x, [np.nan, np.inf, -np.inf]), (x, [1, 2.0, 3.0]), (x, [True, 2.0, 3.0]),
             (x, [np.float32(0.5), 2.0, 1.0]), (x, [2.0, 1.0]), (x, [2.0, 1.0, 0.5, 0.25]),
             (x, (0.5, 2.0, 1.0)), (x, [0.75, 2.0, 1.0])]
    with np.errstate(all="ignore"):
        _sweep(horner, calls * 2)


def test_arrays_and_scalars_in_one_list():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 50))
    calls = [(X, [0.1 * k, 0.2, np.float64(0.3)]) for k in range(6)] + \
        [(X, [X[0], 0.2, 0.3]), (X, [0.1, 0.2, 0.3])]
    _sweep(rows_weighted, calls)
    x = rng.standard_normal(20)
    pairs = [(x, (w, b)) for w, b in ((0.5, 1.0), (1.5, -1.0), (2.5, 0.0), (x, 1.0),
                                      (0.5, x), (np.ones(20), 2.0))]
    f = _sweep(affine_pair, pairs * 2)
    assert f.cache_info().versions <= 5


def test_a_decision_on_an_item_keeps_both_outcomes_right():
    x = np.arange(5.0)
    _sweep(decided, [(x, [a, b]) for a, b in ((1.0, 2.0), (2.0, 3.0), (-1.0, 2.0),
                                                (3.0, 0.5), (-2.0, 0.25), (0.0, 1.0))] * 2)


def test_the_same_array_twice_in_a_list():
    def mixed(x, ws):
        return x * ws[0] + ws[1] * 2.0

    x, y, z = np.arange(4.0), np.ones(4) * 3, np.full(4, 7.0)
    _sweep(mixed, [(x, [x, y]), (x, [z, y]), (x, [x, x]), (x, [y, z]), (x, (z, y)),
                   (x, [x, y])])
