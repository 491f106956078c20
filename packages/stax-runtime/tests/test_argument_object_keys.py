"""What an argument object gives the trace besides its own attributes is in the key: its class's
attributes, the globals its methods and properties read; C containers by their contents; an
iterator is not keyed (each call advances it): such a call runs eagerly. Each was a stale
version before (found by a probe of the key)."""

from __future__ import annotations

import array
import collections

import numpy as np
import pytest

import stax.runtime as stax

SCALE = 2.0


class Model:
    gain = 2.0

    def apply(self, x):
        return x * SCALE

    def amplified(self, x):
        return x * self.gain

    @property
    def factor(self):
        return SCALE


def by_method(x, m):
    return m.apply(x)


def by_class_attribute(x, m):
    return m.amplified(x)


def by_property(x, m):
    return x * m.factor


@pytest.mark.parametrize("fn", [by_method, by_class_attribute, by_property])
def test_what_a_method_reads_is_keyed(fn):
    global SCALE
    compiled = stax.compile(fn)
    x, m = np.arange(4.0), Model()
    try:
        np.testing.assert_array_equal(compiled(x, m), fn(x, m))
        SCALE, Model.gain = 3.0, 3.0
        np.testing.assert_array_equal(compiled(x, m), fn(x, m))
        assert compiled(x, m)[1] == 3.0
    finally:
        SCALE, Model.gain = 2.0, 2.0


@pytest.mark.parametrize("make, change", [
    (lambda: collections.deque([2.0]), lambda c: c.append(3.0)),
    (lambda: array.array("d", [2.0]), lambda c: c.__setitem__(0, 3.0)),
    (lambda: memoryview(bytearray(b"\x02")), lambda c: c.__setitem__(0, 3)),
])
def test_c_containers_are_keyed_by_their_contents(make, change):
    def last(x, c):
        return x * c[-1]
    compiled = stax.compile(last)
    x, c = np.arange(4.0), make()
    compiled(x, c)
    change(c)
    np.testing.assert_array_equal(compiled(x, c), last(x, c))


def test_an_iterator_argument_runs_eagerly():
    def step(x, it):
        return x + next(it)
    compiled = stax.compile(step)
    ours, eager = iter([1, 2, 3]), iter([1, 2, 3])
    for _ in range(3):
        np.testing.assert_array_equal(compiled(np.zeros(2), ours), step(np.zeros(2), eager))
    assert list(ours) == list(eager) == []


def test_an_object_of_a_rich_class_still_compiles():
    """A class whose description would pass ``CLASS_VALUES`` is keyed by its identity: its
    instances' calls compile as they did before classes were described."""
    body = "".join(f"    def m{i}(self, x):\n        return x * {i} + G{i}\n" for i in range(80))
    scope = {f"G{i}": float(i) for i in range(80)}
    exec(f"class Big:\n{body}", scope)
    big = scope["Big"]()

    def call(x, b):
        return b.m3(x)
    compiled = stax.compile(call)
    x = np.arange(3.0)
    np.testing.assert_array_equal(compiled(x, big), call(x, big))
    assert compiled.versions()[0].native


def test_ndarray_subclasses_are_keyed_by_class_and_layout(tmp_path):
    """A np.memmap argument runs eagerly (capture refuses subclasses) under one key for its
    class and layout: each memmap of a file opened anew was a key of its own (its ``_mmap``),
    an eager version each, until the version limit stopped plain arrays compiling too."""
    path = tmp_path / "m.dat"
    np.memmap(path, dtype=np.float64, mode="w+", shape=(4,))[:] = 1.5
    f = stax.compile(lambda x: x * 2)
    for _ in range(10):
        got = f(np.memmap(path, dtype=np.float64, mode="r", shape=(4,)))
        np.testing.assert_array_equal(got, np.full(4, 3.0))
    f(np.ones(4))
    np.testing.assert_array_equal(f(np.ones(4)), np.full(4, 2.0))
    assert [v.native for v in f.versions()] == [False, True]
