"""A compiled function whose own code is replaced in place (IPython's ``%autoreload``, a
patch) compiles again (``stax.runtime.code_changes``): its versions were traced from the old
code, and a call that still ran them returned the old code's results."""

import logging

import numpy as np
import pytest

import stax.runtime as stax


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


def _double(x):
    return x * 2.0


def _triple(x):
    return x * 3.0


def _scaled(x, k=2.0):
    return (x * x) * k


def test_a_function_whose_code_is_replaced_compiles_again(monkeypatch, caplog):
    def f(x):
        return x * 2.0

    compiled = stax.compile(f)
    x = np.arange(4.0)
    for _ in range(3):  # the last calls run the version's machine-code entry
        np.testing.assert_array_equal(compiled(x), x * 2.0)
    f.__code__ = _triple.__code__
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    with caplog.at_level(logging.INFO, logger="stax"):
        np.testing.assert_array_equal(compiled(x), x * 3.0)
    assert "its code was replaced" in caplog.text
    np.testing.assert_array_equal(compiled(x), x * 3.0)
    assert compiled.cache_info().compiles == 1  # the fresh function's own count


def test_what_was_read_from_the_old_code_goes_too():
    """The call form (a keyword parameter with a default) is read from the code when the
    function is compiled: the new code's is used."""
    def f(x):
        return x + 1.0

    compiled = stax.compile(f)
    x = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_array_equal(compiled(x), x + 1.0)
    f.__code__, f.__defaults__ = _scaled.__code__, _scaled.__defaults__
    np.testing.assert_array_equal(compiled(x), (x * x) * 2.0)
    np.testing.assert_array_equal(compiled(x, k=4.0), (x * x) * 4.0)


def test_a_compiled_method_whose_code_is_replaced():
    """(Its key held the code already: the class is described with its methods.)"""
    class Layer:
        def __init__(self):
            self.w = np.full(3, 2.0)

        @stax.compile
        def forward(self, x):
            return x * self.w

    layer, x = Layer(), np.arange(3.0)
    for _ in range(3):
        np.testing.assert_array_equal(layer.forward(x), x * 2.0)

    def forward(self, x):
        return x - self.w

    Layer.__dict__["forward"].fn.__code__ = forward.__code__
    np.testing.assert_array_equal(layer.forward(x), x - 2.0)


def test_a_function_calling_a_helper_compiles_its_new_code():
    def g(x):
        return _double(x) + 1.0

    compiled = stax.compile(g)
    x = np.arange(3.0)
    np.testing.assert_array_equal(compiled(x), x * 2.0 + 1.0)

    def other(x):
        return _triple(x) - 1.0

    g.__code__ = other.__code__
    np.testing.assert_array_equal(compiled(x), x * 3.0 - 1.0)


def _ten_times(x):
    return x * 10.0


def test_a_function_with_a_loop_compiles_its_new_code():
    """The loop rewriter's cache was keyed by the function: its old rewritten code ran again
    (a fresh ``stax.compile`` of it too)."""
    def f(x):
        for _ in range(3):
            x = x + 1.0
        return x

    compiled = stax.compile(f)
    x = np.arange(4.0)
    np.testing.assert_array_equal(compiled(x), x + 3.0)
    f.__code__ = _ten_times.__code__
    np.testing.assert_array_equal(compiled(x), x * 10.0)
    np.testing.assert_array_equal(stax.compile(f)(x), x * 10.0)


def test_a_gradient_of_a_function_whose_code_is_replaced():
    """The gradient's backend is set after its compiled function is made: kept (the refresh
    raised "unknown backend 'gradient'")."""
    def loss(w):
        return np.sum(w * w)

    def cubed(w):
        return np.sum(w * w * w)

    gradient = stax.grad(loss)
    w = np.arange(1.0, 4.0)
    np.testing.assert_array_equal(gradient(w), 2 * w)
    loss.__code__ = cubed.__code__
    np.testing.assert_array_equal(gradient(w), 3 * w * w)


def test_a_call_in_flight_does_not_put_the_old_entry_back():
    """A call that found its version before another thread replaced the code finishes with
    it, but its entry is not installed for the calls after (they passed the code check and
    ran the old code's machine code)."""
    def f(x):
        return x * 2.0

    compiled = stax.compile(f)
    x = np.arange(4.0)
    compiled(x)
    old = compiled.versions()[0]
    f.__code__ = _triple.__code__
    np.testing.assert_array_equal(compiled(x), x * 3.0)  # refreshed
    compiled._run(old, (x,), {})  # as the call in flight ends
    for _ in range(3):
        np.testing.assert_array_equal(compiled(x), x * 3.0)
