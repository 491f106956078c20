"""Calls with argument objects (a config, a layer, a compiled method's ``self``) go through a key
entry that checks the objects with written conditions (``value_checks.py``), not through the
dispatcher's description of them on every call (20-45 us where the eager call costs 1). Every
change the key describes still reaches the dispatcher: each case below changes one and compares
with eager NumPy, after the entry has served calls."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import stax.runtime as stax

OFFSET = 1.0


class Cfg:
    gain = 2.0

    def __init__(self, alpha=0.5, beta=2.0):
        self.alpha = alpha
        self.beta = beta

    def shift(self):
        return self.beta + OFFSET


def with_cfg(x, cfg):
    return x * cfg.alpha * cfg.gain + cfg.shift()


class Layer:
    def __init__(self, n=4, scale=1.5):
        rng = np.random.default_rng(n)
        self.w = rng.standard_normal((n, n))
        self.b = rng.standard_normal(n)
        self.scale = scale

    def forward(self, x):
        return np.tanh(x @ self.w + self.b) * self.scale


def with_layer(layer, x):
    return np.tanh(x @ layer.w + layer.b) * layer.scale


def entry_hits(compiled):
    return sum(v.entry.hits for v in compiled._versions if v.entry is not None and
               hasattr(v.entry, "hits"))


def served(compiled, call, expected, times=3):
    """``call()`` equals ``expected()`` on each of ``times`` calls, the later ones through the
    key entry."""
    before = entry_hits(compiled)
    for _ in range(times):
        np.testing.assert_allclose(call(), expected(), rtol=1e-12)
    return entry_hits(compiled) - before


def test_a_config_objects_calls_run_through_its_key_entry():
    global OFFSET
    f = stax.compile(with_cfg)
    x, cfg = np.linspace(-1, 1, 16), Cfg()
    assert served(f, lambda: f(x, cfg), lambda: with_cfg(x, cfg)) >= 2
    changes = [lambda: setattr(cfg, "alpha", 0.25), lambda: setattr(cfg, "beta", 3),
               lambda: setattr(cfg, "alpha", -0.0), lambda: setattr(Cfg, "gain", 4.0),
               lambda: setattr(cfg, "gain", 1.0),  # an instance attribute shadows the class's
               lambda: delattr(cfg, "gain"),
               lambda: setattr(Cfg, "shift", lambda self: -self.beta)]
    old_shift = Cfg.shift
    try:
        for change in changes:
            change()
            assert served(f, lambda: f(x, cfg), lambda: with_cfg(x, cfg)) >= 1
        OFFSET = 5.0  # a global a method of the class reads
        Cfg.shift = old_shift
        served(f, lambda: f(x, cfg), lambda: with_cfg(x, cfg))
    finally:
        Cfg.gain, Cfg.shift, OFFSET = 2.0, old_shift, 1.0


def test_another_object_of_the_config_class_is_checked_too():
    f = stax.compile(with_cfg)
    x = np.arange(8.0)
    a, b, c = Cfg(), Cfg(), Cfg(alpha=3.0)
    served(f, lambda: f(x, a), lambda: with_cfg(x, a))
    assert served(f, lambda: f(x, b), lambda: with_cfg(x, b)) == 3  # the same key
    served(f, lambda: f(x, c), lambda: with_cfg(x, c))

    class Sub(Cfg):
        gain = 10.0
    d = Sub()
    served(f, lambda: f(x, d), lambda: with_cfg(x, d))


def test_a_pickled_instance_keeps_its_class_on_the_entry():
    f = stax.compile(with_cfg)
    x, cfg = np.arange(8.0), Cfg()
    served(f, lambda: f(x, cfg), lambda: with_cfg(x, cfg))
    pickle.loads(pickle.dumps(cfg))  # the class gains ``__slotnames__``: not state
    assert served(f, lambda: f(x, cfg), lambda: with_cfg(x, cfg)) == 3


def test_lifted_array_attributes_are_read_from_the_object_at_each_call():
    f = stax.compile(with_layer)
    layer, x = Layer(), np.linspace(-1, 1, 4)
    assert served(f, lambda: f(layer, x), lambda: with_layer(layer, x)) >= 2
    layer.w[0, 0] += 1.0  # in place: the kernels read it
    assert served(f, lambda: f(layer, x), lambda: with_layer(layer, x)) == 3
    layer.w = np.asfortranarray(layer.w)  # another layout: another key
    served(f, lambda: f(layer, x), lambda: with_layer(layer, x))
    layer.w, layer.b = layer.w[:, :3], layer.b[:3]  # another shape
    served(f, lambda: f(layer, x), lambda: with_layer(layer, x))
    layer.scale = 2  # an int now
    served(f, lambda: f(layer, x), lambda: with_layer(layer, x))
    layer.b = list(layer.b)  # no longer an array
    served(f, lambda: f(layer, x), lambda: with_layer(layer, x))


def two_layers(a, b, x):
    return np.tanh(np.tanh(x @ a.w + a.b) * a.scale @ b.w + b.b) * b.scale


def test_one_object_in_two_places_is_told_from_two_objects():
    f = stax.compile(two_layers)
    a, b, x = Layer(), Layer(), np.linspace(-1, 1, 4)
    b.w = b.w * 2.0
    served(f, lambda: f(a, b, x), lambda: two_layers(a, b, x))
    served(f, lambda: f(a, a, x), lambda: two_layers(a, a, x))
    served(f, lambda: f(b, b, x), lambda: two_layers(b, b, x))
    assert served(f, lambda: f(a, b, x), lambda: two_layers(a, b, x)) >= 2
    served(f, lambda: f(b, a, x), lambda: two_layers(b, a, x))
    assert all(v.native for v in f._versions)


class Model:
    def __init__(self):
        self.layer = Layer()
        self.temperature = 1.0

    @stax.compile
    def __call__(self, x):
        return with_layer(self.layer, x) / self.temperature


def test_a_compiled_method_and_a_compiled_bound_method():
    m, x = Model(), np.linspace(-1, 1, 4)
    # its class holds the compiled function: keyed by identity and the function it compiles
    assert served(Model.__call__, lambda: m(x),
                  lambda: with_layer(m.layer, x) / m.temperature) >= 2
    m.temperature = 0.5
    served(Model.__call__, lambda: m(x), lambda: with_layer(m.layer, x) / m.temperature)
    layer = Layer()
    forward = stax.compile(layer.forward)
    served(forward, lambda: forward(x), lambda: layer.forward(x))
    guard = forward._versions[0].free
    assert guard is not None and "matches" in vars(guard)  # a written condition
    layer.scale = 3.0
    served(forward, lambda: forward(x), lambda: layer.forward(x))
    layer.w = layer.w.T.copy()
    served(forward, lambda: forward(x), lambda: layer.forward(x))


@pytest.mark.parametrize("value", [0.0, -0.0, float("nan"), np.float32(2.0), True, 2, None])
def test_scalar_attributes_by_type_and_bits(value):
    def scaled(x, cfg):
        return x * 2.0 if cfg.alpha is None else x * cfg.alpha

    f = stax.compile(scaled)
    x = np.array([1.0, -1.0, np.inf])
    cfg = Cfg(alpha=value)
    with np.errstate(all="ignore"):
        served(f, lambda: f(x, cfg), lambda: scaled(x, cfg))
        for other in (0.0, -0.0, float("nan"), np.float32(2.0), np.float64(2.0), True, 1, 2,
                      None):
            cfg.alpha = other
            got, want = f(x, cfg), scaled(x, cfg)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
            np.testing.assert_array_equal(got, want)


def by_helper(a, b, x):
    return with_layer(b, with_layer(a, x))


def test_arrays_a_helper_function_reads_of_an_argument_object_are_lifted():
    """``with_layer(layer, x)`` called from the compiled function reads ``layer.w``: the
    names the helper loads are the function's too, so the arrays are arguments of the kernels
    (before: "an array that is not an argument", an eager fallback)."""
    f = stax.compile(by_helper)
    a, b, x = Layer(), Layer(), np.linspace(-1, 1, 4)
    served(f, lambda: f(a, b, x), lambda: by_helper(a, b, x))
    assert [v.native for v in f._versions] == [True]
    b.w += 1.0  # in place: read by the kernels at the next call
    assert served(f, lambda: f(a, b, x), lambda: by_helper(a, b, x)) == 3
