"""A compiled bound method reads its object's array attributes as lifted free variables
(``freevars.py``): ``stax.compile(layer.forward)`` with ``x @ self.w + self.b`` compiles
natively, whatever the arrays' size (they were keyed by value, and larger ones ran the method
eagerly), and each call reads their current binding and data."""

import numpy as np

import stax.runtime as stax


class Layer:
    def __init__(self, n=64, seed=0):
        rng = np.random.default_rng(seed)
        self.w = rng.standard_normal((n, n)).astype(np.float32)
        self.b = rng.standard_normal(n).astype(np.float32)
        self.scale = 2.0
        self.calls = 0

    def forward(self, x):
        return np.tanh(x @ self.w + self.b) * self.scale

    def through_helper(self, x):
        return self.activate(x) + self.b

    def activate(self, x):
        return np.maximum(x * self.w[0], 0)

    def decay(self, x):
        self.w *= 0.5
        return x.sum() + self.w.sum()


def _same(compiled, method, *args):
    np.testing.assert_allclose(compiled(*args), method(*args), rtol=2e-6, atol=1e-6)


def test_array_attributes_are_arguments_of_the_compiled_method():
    layer, eager = Layer(), Layer()
    compiled = stax.compile(layer.forward, strict_native=True)
    x = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)
    _same(compiled, eager.forward, x)
    for change in (lambda m: m.w.__setitem__((0, 0), 5.0),  # in place: seen, no compile
                   lambda m: setattr(m, "b", np.zeros(64, np.float32))):  # rebound, same layout
        change(layer)
        change(eager)
        _same(compiled, eager.forward, x)
    assert compiled.cache_info().compiles == 1
    layer.scale = eager.scale = 3.0  # a number: part of the key
    _same(compiled, eager.forward, x)
    assert compiled.cache_info().compiles == 2
    assert all(v.native for v in compiled.versions())
    assert type(layer.w) is np.ndarray and type(layer.b) is np.ndarray  # put back after capture


def test_attributes_read_by_the_methods_it_calls():
    layer = Layer()
    compiled = stax.compile(layer.through_helper, strict_native=True)
    x = np.ones((4, 64), np.float32)
    _same(compiled, Layer().through_helper, x)


def test_an_attribute_updated_in_place_is_written_back():
    layer, eager = Layer(), Layer()
    compiled = stax.compile(layer.decay)
    x = np.ones(4, np.float32)
    for _ in range(3):
        np.testing.assert_allclose(compiled(x), eager.decay(x), rtol=1e-6)
        np.testing.assert_array_equal(layer.w, eager.w)
    assert compiled.versions()[0].native


class Compiled(Layer):
    @stax.compile
    def forward(self, x):
        return np.tanh(x @ self.w + self.b) * self.scale


def test_a_compiled_function_in_a_class_body_is_a_compiled_method():
    """``@stax.compile`` above a method: ``obj.forward(x)`` raised TypeError (no ``self``)."""
    first, second = Compiled(seed=1), Compiled(seed=2)
    second.scale = 5.0
    x = np.ones((4, 64), np.float32)
    for obj in (first, second, first):
        _same(obj.forward, Layer.forward.__get__(obj), x)
    assert first.forward is first.forward and first.forward is not second.forward
    assert first.forward.versions()[0].native
    assert Compiled.forward.__name__ == "forward"
