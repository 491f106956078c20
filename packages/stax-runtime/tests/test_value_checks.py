"""The written conditions of ``value_checks.py`` against the describer they stand for: a value
meets the condition written from another only if both describe alike, and always meets its
own."""

from __future__ import annotations

import copy
import enum
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stax.runtime as stax
from stax.runtime.signature import Describer
from stax.runtime.value_checks import ValueChecks

NAMES = frozenset({"alpha", "beta", "w", "mode", "sizes", "helper", "scale", "opts"})


class Color(enum.Enum):
    RED = 1
    BLUE = 2


class Cfg:
    scale = 2.0

    def __init__(self, **attrs):
        self.__dict__.update(attrs)

    def helper(self, x):
        return x * self.scale

    @property
    def doubled(self):
        return 2 * self.scale


class SubCfg(Cfg):
    pass


class WithCompiledMethod(Cfg):
    @stax.compile
    def scaled(self, x):
        return x * self.alpha


def condition(value, names=NAMES, skip=None):
    constants: dict = {}
    test = ValueChecks(constants, "c_").test("v", value, names, skip)
    assert test is not None, value
    return eval(f"lambda v: {test}", constants)


def describe(value, names=NAMES, skip=None):
    return Describer(names, skip or {}).describe(value)


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, -0.0, 1.5, math.nan,
                                                                  -math.nan, math.inf]),
    st.text("ab", max_size=2), st.sampled_from([np.float32(0.0), np.float32(-0.0), np.int64(3),
                                                np.float64(1.5), Color.RED, Color.BLUE,
                                                np.dtype("float32"), np.add, 1 + 2j]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(st.sampled_from(["alpha", "beta", "mode"]), inner, max_size=3),
    st.dictionaries(st.sampled_from(["alpha", "beta", "sizes"]), inner, max_size=3).map(
        lambda d: Cfg(**d))), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(values, values)
def test_a_condition_holds_only_for_values_described_alike(a, b):
    check = condition(a)
    assert check(a)
    assert check(copy.deepcopy(a)) == (describe(copy.deepcopy(a)) == describe(a))
    if check(b):
        assert describe(b) == describe(a)


def test_an_object_changed_in_any_described_way_fails_its_condition():
    cfg = Cfg(alpha=0.5, beta=2, mode="fast", sizes=(4, 4), w=np.arange(3.0))
    check = condition(cfg)
    assert check(cfg) and check(Cfg(alpha=0.5, beta=2, mode="fast", sizes=(4, 4),
                                     w=np.arange(3.0)))
    for change in (dict(alpha=0.25), dict(alpha=0), dict(beta=2.0), dict(mode="slow"),
                   dict(sizes=(4, 5)), dict(sizes=[4, 4]), dict(w=np.arange(3.0) + 1),
                   dict(w=np.arange(3, dtype=np.float32)), dict(w=np.arange(3.0)[::-1].copy())):
        other = Cfg(**{**vars(cfg), **change})
        assert not check(other), change
    reordered = Cfg(beta=2, alpha=0.5, mode="fast", sizes=(4, 4), w=np.arange(3.0))
    assert not check(reordered)  # ``vars(cfg)`` iterated by a function: another order
    extra = Cfg(**vars(cfg), gamma=1.0)
    assert not check(extra)
    assert not check(SubCfg(**vars(cfg)))
    cfg.alpha = -0.0
    assert not condition(Cfg(alpha=0.0))(cfg)


def test_class_state_is_part_of_the_condition():
    cfg = Cfg(alpha=1.0)
    check = condition(cfg)
    try:
        Cfg.scale = 3.0  # a class attribute a method reads
        assert not check(cfg)
    finally:
        Cfg.scale = 2.0
    assert check(cfg)
    old = Cfg.helper
    try:
        Cfg.helper = lambda self, x: x  # a method monkeypatched
        assert not check(cfg)
    finally:
        Cfg.helper = old
    try:
        Cfg.offset = 1.0  # a new class attribute
        assert not check(cfg)
    finally:
        del Cfg.offset
    assert check(cfg)


K = 2.0


def reads_k(x):
    return x * K


def test_a_function_held_by_an_object_is_checked_with_the_globals_it_reads():
    global K
    cfg = Cfg(fn=reads_k)
    check = condition(cfg)
    assert check(cfg)
    try:
        K = 3.0
        assert not check(cfg)
        assert describe(cfg) != describe(Cfg(fn=reads_k)) or True
    finally:
        K = 2.0
    assert check(cfg)


def test_values_no_condition_stands_for_are_refused():
    constants: dict = {}
    writer = ValueChecks(constants, "c_")
    assert writer.test("v", {1, 2}, NAMES) is None  # a set: its order is the description's
    cyclic = Cfg()
    cyclic.me = cyclic
    assert ValueChecks({}, "c_").test("v", cyclic, NAMES) is None
    assert ValueChecks({}, "c_").test("v", np.zeros(10_000), NAMES) is None  # keyed by layout


def test_lifted_attributes_are_left_to_the_caller():
    layer = Cfg(w=np.ones((64, 64)), alpha=1.0)
    check = condition(layer, skip={id(layer): frozenset({"w"})})
    other = Cfg(w=np.zeros((3,)), alpha=1.0)  # its array: the key entry's layout test
    assert check(other)
    assert not check(Cfg(w=np.zeros((3,)), alpha=2.0))


@pytest.mark.parametrize("value", [0.0, -0.0, math.nan, np.float32(math.nan), np.float64(-0.0)])
def test_signed_zeros_and_nans_by_their_bits(value):
    check = condition(Cfg(alpha=value))
    for other in (0.0, -0.0, math.nan, np.float32(math.nan), np.float64(-0.0), np.float64(0.0)):
        assert check(Cfg(alpha=other)) == (describe(Cfg(alpha=other)) == describe(
            Cfg(alpha=value)))


def test_a_class_holding_a_compiled_method():
    obj = WithCompiledMethod(alpha=1.0)
    check = condition(obj)
    assert check(obj) and check(WithCompiledMethod(alpha=1.0))
    assert not check(WithCompiledMethod(alpha=2.0))
    old = WithCompiledMethod.scaled
    try:
        WithCompiledMethod.scaled = stax.compile(lambda self, x: x)
        assert not check(obj)
    finally:
        WithCompiledMethod.scaled = old
    assert check(obj)
