"""Named tuples (``collections.namedtuple``, ``typing.NamedTuple``) are tree nodes, as JAX
users expect: a named tuple of parameters passed to a compiled function has its arrays as
inputs (keyed by layout, read at every call), its other fields keyed by value, and a named
tuple returned is rebuilt with its class. One holding arrays over 4 KB fell back before ("an
array that is not an argument"; found by a probe)."""

import collections
import typing

import numpy as np

import stax.runtime as stax

Params = collections.namedtuple("Params", "w b")


class Step(typing.NamedTuple):
    params: Params
    lr: float


def predict(x, p):
    return np.tanh(x @ p.w + p.b)


def sgd(x, y, step):
    p = step.params
    err = predict(x, p) - y
    grad_b = err.mean(axis=0)
    return Params(p.w, p.b - step.lr * grad_b), (err ** 2).mean()


def test_a_named_tuple_of_parameters_is_an_argument_tree():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 32))
    compiled = stax.compile(predict, strict_native=True)
    for _ in range(3):  # new data each call, same layouts: one version
        p = Params(rng.standard_normal((32, 16)), rng.standard_normal(16))
        np.testing.assert_allclose(compiled(x, p), predict(x, p), rtol=1e-12, atol=1e-12)
    assert compiled.cache_info().versions == 1
    p = Params(rng.standard_normal((32, 8)), rng.standard_normal(8))  # another layout
    np.testing.assert_allclose(compiled(x, p), predict(x, p), rtol=1e-12, atol=1e-12)
    assert compiled.cache_info().versions == 2


def test_nested_named_tuples_in_and_out():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((64, 32)), rng.standard_normal((64, 16))
    compiled = stax.compile(sgd)
    for lr in (0.1, 0.1, 0.5):  # a scalar field is keyed by value
        step = Step(Params(rng.standard_normal((32, 16)), np.zeros(16)), lr)
        (got_p, got_loss), (want_p, want_loss) = compiled(x, y, step), sgd(x, y, step)
        assert type(got_p) is Params and type(got_loss) is type(want_loss)
        np.testing.assert_allclose(got_p.b, want_p.b, rtol=1e-12, atol=1e-12)
        assert got_p.w is step.params.w or np.array_equal(got_p.w, want_p.w)
        np.testing.assert_allclose(got_loss, want_loss, rtol=1e-12)
    assert compiled.cache_info().fallbacks == 0
    assert compiled.cache_info().versions == 2
