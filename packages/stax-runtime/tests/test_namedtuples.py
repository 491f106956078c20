"""A namedtuple of traced values returned (or built) by the function is a pytree node
(``stax.ir.pytree``): compiled, and rebuilt with its class; an argument returned in it is the
caller's array. It once ended in a TypeError from the tracer (``R.__new__() missing 1 required
positional argument``), then, refused, in a result holding the capture's proxies (found by
helper E's probe), then ran eagerly until named tuples became tree nodes."""

from collections import namedtuple

import numpy as np

import stax.runtime as stax

R = namedtuple("R", "a b")


def returns_namedtuple(x):
    return R(x + 1, x.sum())


def returns_its_argument_inside(x):
    return R(x, x * 2)


def test_a_returned_namedtuple_compiles_and_keeps_its_class():
    x = np.arange(4.0)
    f = stax.compile(returns_namedtuple, strict_native=True)
    for k in range(2):
        got, want = f(x + k), returns_namedtuple(x + k)
        assert type(got) is R and type(got.b) is type(want.b)
        np.testing.assert_array_equal(got.a, want.a)
        assert got.b == want.b
    assert f.cache_info().fallbacks == 0


def test_an_argument_returned_in_a_namedtuple_is_the_callers_array():
    x = np.arange(4.0)
    compiled = stax.compile(returns_its_argument_inside)
    for _ in range(2):  # the compiling call, then the cached version's
        got = compiled(x)
        assert got.a is x
        np.testing.assert_array_equal(got.b, x * 2)


def test_a_namedtuple_argument_of_numbers_is_a_constant():
    p = R(2.0, 3.0)
    f = stax.compile(lambda x, p: p.a * x + p.b)
    x = np.arange(4.0)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(f(x, p), 2.0 * x + 3.0)
    for _ in range(2):  # another key: compiling, then cached
        np.testing.assert_array_equal(f(x, R(5.0, 1.0)), 5.0 * x + 1.0)
