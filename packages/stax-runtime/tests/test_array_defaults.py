"""A parameter whose default is an array (``def f(x, w=W0)``): every positional parameter is
placed, its default as an argument (``keyword_calls.CallForm.fills``), so the function compiles
natively whether the call passes ``w`` or not (it read W0, an array no key can hold, and ran
eagerly: "pass it as an argument", even where the call did). Results and updates in place are
eager's."""

import numpy as np

import stax.runtime as stax

W0 = np.linspace(0.0, 1.0, 10_000)


def scaled(x, w=W0, shift=1.0):
    return x * w + shift


HALVED = W0.copy()


def scaling_in_place(x, w=HALVED):
    w *= 0.5  # updates the default itself, as Python does
    return x + w


def test_a_large_array_default_compiles_with_or_without_the_argument():
    compiled = stax.compile(scaled)
    x = np.arange(10_000.0)
    for args in ((x,), (x, W0 * 2), (x, W0, 3.0), (x,)):
        np.testing.assert_array_equal(compiled(*args), scaled(*args))
    info = compiled.cache_info()
    assert info.fallbacks == 0 and info.versions <= 2


def test_the_default_is_read_at_each_call():
    compiled = stax.compile(scaled)
    x = np.ones(10_000)
    np.testing.assert_array_equal(compiled(x), scaled(x))
    W0[:10] = 7.0  # updated in place by the caller
    try:
        np.testing.assert_array_equal(compiled(x), scaled(x))
        scaled.__defaults__ = (np.ones(5), 2.0)  # another array, another layout
        np.testing.assert_array_equal(compiled(np.ones(5)), scaled(np.ones(5)))
    finally:
        W0[:10] = np.linspace(0.0, 1.0, 10_000)[:10]
        scaled.__defaults__ = (W0, 1.0)


def test_a_default_updated_in_place_by_the_function_is_updated():
    compiled = stax.compile(scaling_in_place)
    x = np.zeros(10_000)
    default = scaling_in_place.__defaults__[0]
    want = default * 0.5
    np.testing.assert_array_equal(compiled(x), want)
    np.testing.assert_array_equal(default, want)  # the default object itself, as eagerly
