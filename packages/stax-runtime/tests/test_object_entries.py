"""Calls with argument objects (a config, a layer, a compiled method's ``self``) go through a key
entry that checks the objects with written conditions (``value_checks.py``), not through the
dispatcher's description of them on every call (20-45 us where the eager call costs 1). Every
change the key describes still reaches the dispatcher: each case below changes one and compares
with eager NumPy, after the entry has served calls."""

from __future__ import annotations

import pickle
import types

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


# -- cases a probe of the entries found (each a wrong result or an error before its fix) ------

class Tagged:
    def __init__(self, w=None):
        if w is not None:
            self.w = w


class HolderOf:
    def __init__(self, inner):
        self.inner = inner


def sum_through_holder(layer, holder, x):
    return x + layer.w + holder.inner.w


def test_a_lifted_object_met_again_inside_another_argument():
    f = stax.compile(sum_through_holder)
    x, layer = np.zeros(4), Tagged(np.arange(4.0))
    served(f, lambda: f(layer, HolderOf(layer), x), lambda: sum_through_holder(
        layer, HolderOf(layer), x))
    other = Tagged(layer.w.copy())  # the same bytes, another object
    layer.w[:] = 100.0
    holder = HolderOf(other)
    np.testing.assert_array_equal(f(layer, holder, x), sum_through_holder(layer, holder, x))


def scaled_by_held(c, x):
    return x * getattr(c.inner, "k", 1.0)


def test_a_held_modules_getattr_and_a_deleted_held_attribute():
    mod = types.ModuleType("held_module")
    c, x = HolderOf(mod), np.arange(4.0)
    f = stax.compile(scaled_by_held)
    served(f, lambda: f(c, x), lambda: scaled_by_held(c, x))
    mod.__getattr__ = lambda name: 5.0  # answers "k" from now on
    served(f, lambda: f(c, x), lambda: scaled_by_held(c, x))
    del mod.__getattr__
    mod.k = 2.0
    served(f, lambda: f(c, x), lambda: scaled_by_held(c, x))
    del mod.k  # the condition's read of it raised AttributeError
    served(f, lambda: f(c, x), lambda: scaled_by_held(c, x))


def helper_with_attributes():
    return 1.0


class ReadsHelperAttribute:
    def get(self):
        return getattr(helper_with_attributes, "factor", 1.0)


class BaseTwo:
    scale = 2.0


class BaseThree:
    scale = 3.0


class Rebased(BaseTwo):
    def get(self):
        return self.scale


def scaled_by_get(c, x):
    return x * c.get()


def test_a_helpers_new_attribute_and_a_class_given_new_bases():
    x = np.arange(4.0)
    f, c = stax.compile(scaled_by_get), ReadsHelperAttribute()
    served(f, lambda: f(c, x), lambda: scaled_by_get(c, x))
    helper_with_attributes.factor = 3.0
    try:
        served(f, lambda: f(c, x), lambda: scaled_by_get(c, x))
    finally:
        del helper_with_attributes.factor
    f, c = stax.compile(scaled_by_get), Rebased()
    served(f, lambda: f(c, x), lambda: scaled_by_get(c, x))
    Rebased.__bases__ = (BaseThree,)
    try:
        served(f, lambda: f(c, x), lambda: scaled_by_get(c, x))
    finally:
        Rebased.__bases__ = (BaseTwo,)


def test_a_methods_code_swapped_in_place_and_a_patched_comparison():
    class Swapped:
        def get(self):
            return 1.0

        def __lt__(self, other):
            return True

    def by_comparison(c, x):
        return x * (2.0 if c < 3 else 5.0)

    x, c = np.arange(4.0), Swapped()
    f = stax.compile(scaled_by_get)
    served(f, lambda: f(c, x), lambda: scaled_by_get(c, x))
    Swapped.get.__code__ = (lambda self: 3.0).__code__  # as IPython's autoreload does
    served(f, lambda: f(c, x), lambda: scaled_by_get(c, x))
    g = stax.compile(by_comparison)
    served(g, lambda: g(c, x), lambda: by_comparison(c, x))
    Swapped.__lt__ = lambda self, other: False
    served(g, lambda: g(c, x), lambda: by_comparison(c, x))


def same_object(a, b, x):
    return x * (2.0 if a is b else 3.0)


def test_one_object_twice_for_a_function_comparing_identities():
    f, x = stax.compile(same_object), np.arange(4.0)
    a, b = Tagged(), Tagged()
    for first, second in ((a, a), (a, b), (b, b), (a, b)):
        np.testing.assert_array_equal(f(first, second, x), same_object(first, second, x))


def test_a_recompile_names_the_class_attribute_that_changed(monkeypatch, caplog):
    """(the explanation of an object's class change was empty: ``recompiling 'f': ``)"""
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    f, c, x = stax.compile(scaled_by_get), Rebased(), np.arange(4.0)
    f(c, x)
    monkeypatch.setattr(BaseTwo, "scale", 4.0)
    with caplog.at_level("INFO"):
        np.testing.assert_array_equal(f(c, x), scaled_by_get(c, x))
    lines = [r.getMessage() for r in caplog.records if r.name == "stax.recompiles"]
    assert any("type(inputs[0][0]).scale == 2.0 (got 4.0)" in line for line in lines), lines


def test_a_global_class_bound_after_the_compile_is_guarded(test_module):
    module = test_module("late_config_function")
    Config, scaled = module.Config, module.scaled

    x = np.arange(4.0)
    served(scaled, lambda: scaled(x), lambda: scaled.fn(x))
    Config.scale = 3.0
    try:
        served(scaled, lambda: scaled(x), lambda: scaled.fn(x))
    finally:
        Config.scale = 2.0


def doubled_helper(x):
    return x * 2.0


def calls_doubled_helper(x):
    return doubled_helper(x) + 1.0


def test_a_helpers_code_swapped_in_place_is_seen():
    """IPython's autoreload swaps ``__code__`` of the functions it reloads: a helper guarded by
    identity ran its old code's program."""
    f, x = stax.compile(calls_doubled_helper), np.arange(3.0)
    old = doubled_helper.__code__
    served(f, lambda: f(x), lambda: calls_doubled_helper(x))
    doubled_helper.__code__ = (lambda x: x * 3.0).__code__
    try:
        served(f, lambda: f(x), lambda: calls_doubled_helper(x))
    finally:
        doubled_helper.__code__ = old
    served(f, lambda: f(x), lambda: calls_doubled_helper(x))


# -- cases a review of the conditions found -----------------------------------------------------

class LongKey(str):
    def __len__(self):
        return 5


def summed_key_lengths(cfg, x):
    n = 0
    for k in cfg.inner:
        n = n + len(k)
    return x * n


def summed_top_key_lengths(d, x):
    n = 0
    for k in d:
        n = n + len(k)
    return x * n


def test_a_dict_key_equal_to_a_string_is_not_one():
    x = np.ones(3)
    f, g = stax.compile(summed_key_lengths), stax.compile(summed_top_key_lengths)
    for d in ({"a": 1}, {"a": 1}, {"a": 1}, {LongKey("a"): 1}):
        np.testing.assert_array_equal(f(HolderOf(d), x), summed_key_lengths(HolderOf(d), x))
        np.testing.assert_array_equal(g(d, x), summed_top_key_lengths(d, x))
    assert summed_key_lengths(HolderOf({LongKey("a"): 1}), x)[0] == 5.0


class ReadsModuleFactor:
    def __init__(self, module):
        self.module = module

    def act(self, x):
        return x * getattr(self.module, "factor", 1.0)


def acted(layer, x):
    return layer.act(x)


def test_a_module_given_another_class_with_a_property():
    module = types.ModuleType("module_with_a_property_later")
    f, x = stax.compile(acted), np.ones(3)
    layer = ReadsModuleFactor(module)
    served(f, lambda: f(layer, x), lambda: acted(layer, x))

    class LazyModule(types.ModuleType):
        @property
        def factor(self):
            return 3.0
    module.__class__ = LazyModule  # PEP 549's module property
    served(f, lambda: f(layer, x), lambda: acted(layer, x))
    assert f(layer, x)[0] == 3.0


class Node:
    def __init__(self, val, nxt):
        self.val, self.nxt = val, nxt


def first_value(node, x):
    return x * node.val


@pytest.mark.parametrize("length", [60, 150])
def test_a_long_chain_of_objects_never_raises_from_its_condition(length):
    head = None
    for _ in range(length):
        head = Node(1.0, head)
    f, x = stax.compile(first_value), np.ones(3)
    served(f, lambda: f(head, x), lambda: first_value(head, x))
