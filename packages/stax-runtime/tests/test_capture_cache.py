"""Captures on disk: reused only when the code, the globals it reads and the signature are all
unchanged; a change anywhere means a new trace, never a stale capture."""

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime.capture_cache import Uncacheable, capture_key

SCALE = 2.0
SETTINGS = {"scale": 2.0}


def helper(x):
    return x * SCALE


def program(x):
    return helper(x) + 1


def uses_a_dict(x):
    return x * SETTINGS["scale"]


def gated(x):
    return x + 1 if x.sum() > 0 else x - 1


def stages(cf):
    return cf.versions()[0].stats


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_second_compile_reuses_the_capture(cache):
    x = np.arange(6.0)
    first = stax.compile(program)
    np.testing.assert_array_equal(first(x), x * 2 + 1)
    assert "capture" in stages(first)
    second = stax.compile(program)
    np.testing.assert_array_equal(second(x), x * 2 + 1)
    assert "capture (disk cache)" in stages(second)


def test_a_changed_global_or_helper_is_traced_again(cache, monkeypatch):
    x = np.arange(6.0)
    stax.compile(program)(x)
    monkeypatch.setitem(globals(), "SCALE", 3.0)
    cf = stax.compile(program)
    np.testing.assert_array_equal(cf(x), x * 3 + 1)
    assert "capture" in stages(cf)
    monkeypatch.setitem(globals(), "helper", lambda x: x - 5)
    cf = stax.compile(program)
    np.testing.assert_array_equal(cf(x), x - 4)
    assert "capture" in stages(cf)


def test_a_changed_signature_is_traced_again(cache):
    stax.compile(program)(np.arange(6.0))
    cf = stax.compile(program)
    np.testing.assert_array_equal(cf(np.arange(6.0, dtype=np.float32)),
                                  np.arange(6.0, dtype=np.float32) * 2 + 1)
    assert "capture" in stages(cf)


def test_what_cannot_be_keyed_is_traced_every_time(cache):
    with pytest.raises(Uncacheable, match="dict"):
        capture_key(uses_a_dict, (), ["x"])
    for _ in range(2):
        cf = stax.compile(uses_a_dict)
        np.testing.assert_array_equal(cf(np.ones(3)), np.full(3, 2.0))
        assert "capture" in stages(cf)


def test_captures_with_data_gates_are_not_stored(cache):
    for _ in range(2):
        cf = stax.compile(gated)
        np.testing.assert_array_equal(cf(np.ones(3)), np.full(3, 2.0))
        assert "capture" in stages(cf)
    np.testing.assert_array_equal(cf(-np.ones(3)), np.full(3, -2.0))


def test_closures_and_defaults_are_part_of_the_key():
    def make(k):
        def f(x, bias=1.0):
            return x * k + bias
        return f
    keys = {capture_key(make(k), (), ["x"]) for k in (1.0, 2.0, 2.0)}
    assert len(keys) == 2


def test_constants_are_keyed_by_their_exact_value():
    """``repr`` said 'nan' for either sign and '2.0' for a float subclass whose methods are code:
    a second process reused a stale capture (found by a probe of the disk cache)."""
    def make(k):
        return lambda x: x * k

    nan, negative = float("nan"), -float("nan")
    assert capture_key(make(nan), (), ["x"]) != capture_key(make(negative), (), ["x"])
    assert capture_key(make(0.0), (), ["x"]) != capture_key(make(-0.0), (), ["x"])
    assert capture_key(make(np.float32(1)), (), ["x"]) != capture_key(make(np.float64(1)), (), ["x"])

    class Scale(float):
        def __rmul__(self, other):
            return float(other) * float(self) + 1.0

    with pytest.raises(Uncacheable, match="subclass of a builtin"):
        capture_key(make(Scale(2.0)), (), ["x"])
