"""Capture follows a scalar argument through a stand-in (``stax.trace.traced_scalars``); what
the function keeps or hands out of it after the capture is eager's number, never the stand-in:
an exception's arguments, a returned dict's keys, an object array's elements, a stored value
several containers down, a dict key or set element in a global (found by a probe: each was a
``TracedScalar`` the caller then held, or a crash at the next call)."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import stax.runtime as st

TABLE = {1.0: 10.0}


def looks_up(x, a):
    return x * TABLE[a]


def complains(x, a):
    if a > 2:
        raise ValueError("bad value", (a, [a * 2.0]), {"a": {a}})
    return x * a


@pytest.mark.parametrize("fn, error", [(looks_up, KeyError), (complains, ValueError)])
def test_an_error_holds_eager_numbers(fn, error):
    compiled = st.compile(fn)
    with pytest.raises(error) as raised:
        compiled(np.ones(3), 5.0)
    with pytest.raises(error) as eager:
        fn(np.ones(3), 5.0)
    assert repr(raised.value.args) == repr(eager.value.args)
    assert all(type(a) in (str, float, tuple, dict) for a in raised.value.args)


def test_returned_keys_and_object_arrays_hold_numbers():
    keyed = st.compile(lambda x, a: {a: x * a})
    for a in (1.0, 2.0, 3.0):
        got = keyed(np.ones(3), a)
        assert [type(k) for k in got] == [float] and list(got) == [a]
        np.testing.assert_array_equal(got[a], np.ones(3) * a)
    boxed = st.compile(lambda x, a, b: (x * a, np.array((a, b), dtype=object)))
    for a in (1.0, 2.0):
        got = boxed(np.ones(3), a, 2.5)[1]
        assert [type(v) for v in got] == [float, float] and list(got) == [a, 2.5]


MEMO: dict = {}
SEEN: set = set()
DEEP: list = []
COUNTS: collections.Counter = collections.Counter()
BOXES: list = []


def stores(x, a):
    MEMO[a] = 1
    MEMO[(a, "n")] = 2
    SEEN.add(a)
    DEEP.append({"p": [(a, [1.0])]})
    COUNTS[a] += 1
    BOXES.append(np.array([a, None], dtype=object))
    return x * a


def test_stored_numbers_are_eager_numbers():
    compiled = st.compile(stores)
    for a in (1.0, 2.0, 3.0):
        compiled(np.ones(3), a)
    assert [type(k) for k in MEMO] == [float, tuple] * 3 and list(MEMO)[:2] == [1.0, (1.0, "n")]
    assert all(type(k[0]) is float for k in MEMO if type(k) is tuple)
    assert all(type(k) is float for k in SEEN) and all(type(k) is float for k in COUNTS)
    assert all(type(d["p"][0][0]) is float for d in DEEP)
    assert all(type(b[0]) is float for b in BOXES)


class Holder:
    pass


@pytest.mark.parametrize("record", [lambda lr: {"lr": lr}, lambda lr: [lr]])
def test_an_argument_object_keeps_eager_numbers(record):
    def step(o, x, lr):
        o.hist.append(record(lr))
        return x * lr
    holder, compiled = Holder(), st.compile(step)
    holder.hist = []
    for lr in (0.1, 0.2, 0.3):
        np.testing.assert_array_equal(compiled(holder, np.ones(3), lr), np.ones(3) * lr)
    values = [h["lr"] if isinstance(h, dict) else h[0] for h in holder.hist]
    assert values == [0.1, 0.2, 0.3] and all(type(v) is float for v in values)


def test_a_ufunc_of_a_scalar_it_does_not_follow_warns_once():
    """``np.reciprocal`` of an int argument (its result an int, not followed) ran twice during
    capture: NumPy's two warnings came twice on the first call."""
    import warnings

    def f(x, a):
        return np.reciprocal(a) * x
    compiled = st.compile(f)
    for fn in (f, compiled):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(np.ones(3), 0)
        messages = [str(w.message) for w in caught if not str(w.message).startswith("stax")]
        assert messages == ["divide by zero encountered in reciprocal",
                            "invalid value encountered in reciprocal"], messages


REGISTRY: dict = {}


def registers(x, a):
    REGISTRY[a] = 1
    REGISTRY["later"] = 2
    return x * a


def test_a_rekeyed_global_dict_keeps_its_order():
    st.compile(registers)(np.ones(3), 0.5)
    assert list(REGISTRY) == [0.5, "later"] and type(next(iter(REGISTRY))) is float


class Box:
    pass


BOX = Box()


def stores_when_large(x, a):
    if a > 10:
        BOX.big = a  # refused for such values only: Python decided it from the value
    return x * a + 1.0


def test_refusals_that_read_the_value_leave_other_values_native():
    """Refused at 11 and 12 (a store decided by the value), the function still compiles for
    1, 2, 3: every value ran eagerly after two refusals, whatever had decided them."""
    compiled = st.compile(stores_when_large)
    x = np.ones(3)
    for a in (11.0, 12.0, 1.0, 2.0, 3.0):
        np.testing.assert_array_equal(compiled(x, a), stores_when_large(x, a))
    assert sum(v.native for v in compiled.versions()) >= 1, compiled.versions()
