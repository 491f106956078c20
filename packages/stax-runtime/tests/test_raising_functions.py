"""A function that raises its own error while it is captured (a validator's ``ValueError``,
NumPy's ``TypeError``): the call raises as eagerly, and the key's next calls run eagerly until
one returns (``branches._capture_raised``), where each was captured again to raise again
(0.8-2.8 ms a call for NumPy's 1-2 us: a probe's finding, costly in ``try``/``except``
loops)."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax


def checked(x):
    x *= 2.0  # updated before the error: the caller keeps the update, as eagerly
    if (x <= 0).any():
        raise ValueError("non-positive input")
    return np.log(x)


def bool_difference(m, n):
    return m - n  # NumPy's TypeError for booleans


def test_a_raising_key_runs_eagerly_until_a_call_returns():
    f = stax.compile(checked)
    for _ in range(20):
        a, b = -np.ones(9), -np.ones(9)
        with pytest.raises(ValueError, match="non-positive"):
            f(a)
        with pytest.raises(ValueError, match="non-positive"):
            checked(b)
        np.testing.assert_array_equal(a, b)
    info = f.cache_info()
    assert info.misses == 1 and info.compiles == 0  # captured once, not at every call
    good = np.linspace(0.5, 2.0, 9)
    for _ in range(10):  # the first returns (eagerly); the next is captured and compiled
        a, b = good.copy(), good.copy()
        np.testing.assert_array_equal(f(a), checked(b))
        np.testing.assert_array_equal(a, b)
    assert f.cache_info().compiles == 1 and f.versions()[0].native
    with pytest.raises(ValueError, match="non-positive"):
        f(-np.ones(9))  # the compiled version's gate: the other branch, raising again


def test_numpys_own_error_repeats_without_a_capture_each_call():
    f = stax.compile(bool_difference)
    m = np.ones(9, dtype=bool)
    for _ in range(10):
        with pytest.raises(TypeError):
            f(m, m)
    assert f.cache_info().misses == 1


def test_strict_native_captures_every_call():
    """Under ``strict_native`` nothing runs eagerly: each call is captured, and raises."""
    f = stax.compile(checked, strict_native=True)
    for _ in range(3):
        with pytest.raises(ValueError):
            f(-np.ones(9))
    assert f.cache_info().misses == 3


def drawing_then_checking(rng, x):
    y = x + rng.normal(size=x.shape)
    if (y > 3).any():
        raise ValueError("too large")
    return y


def test_a_generator_argument_advances_by_the_draws_before_the_error():
    """A review's finding: capture draws from a copy of a generator argument; where the
    function then raised its own error the caller's generator was left where it was, so its
    next draw repeated one eager had made."""
    f = stax.compile(drawing_then_checking)
    x = np.full(8, 10.0)
    for _ in range(3):
        ours, theirs = np.random.default_rng(1), np.random.default_rng(1)
        with pytest.raises(ValueError):
            f(ours, x)
        with pytest.raises(ValueError):
            drawing_then_checking(theirs, x)
        assert ours.normal() == theirs.normal()


def two_draws(x, r1, r2):
    y = x + r1.normal(size=x.shape) - r2.normal(size=x.shape)
    if (y > 100).any():  # a gate on the draws: capture's own result is returned
        raise ValueError("too large")
    return y


def test_one_generator_passed_as_two_arguments_runs_eagerly():
    """A review's finding: each argument got a private copy of its own for capture, so one
    generator passed twice drew the same numbers twice (``x + r1.normal() - r2.normal()`` came
    back as ``x``) and was left where one copy ended."""
    f = stax.compile(two_draws)
    x = np.zeros(4)
    for _ in range(3):
        ours, theirs = np.random.default_rng(5), np.random.default_rng(5)
        np.testing.assert_array_equal(f(x, ours, ours), two_draws(x, theirs, theirs))
        assert ours.normal() == theirs.normal()


def divided_then_cast(x, d):
    y = x / d  # warns (a division by zero), then the in-place add raises (UFuncTypeError)
    x += y
    return x


def test_warnings_before_a_type_error_are_given_once():
    """NumPy's ``UFuncTypeError`` is a ``TypeError``: with a scalar argument, capture runs again
    with the scalars as their values (``retried_with_values``), and the first run gave its
    held warnings too (four on the first call, eager two; a probe's find)."""
    import warnings

    def seen(fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(TypeError):
                fn(np.arange(5), 0)
        return [str(w.message) for w in caught]

    f = stax.compile(divided_then_cast)
    want = seen(divided_then_cast)
    assert want == ["divide by zero encountered in divide", "invalid value encountered in divide"]
    for _ in range(3):
        assert seen(f) == want
