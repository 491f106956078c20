"""Keyword-only parameters are keyed as positional ones are (``keyword_calls.py``): a call is
placed, its keyword-only values after its positional arguments, so a Python float passed by
keyword whose value changes is a run-time input of one generic version, and the call takes the
same dispatch levels as ``f(x, k)``. Results, versions and errors are the plain function's."""

import re

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime.keyword_calls import call_form

X = np.arange(5.0) - 1.5
W = np.linspace(0.5, 2.5, 5)


def scaled(x, *, k):
    return x * k + 1.0


def scaled_positional(x, k):
    return x * k + 1.0


def assert_same(got, want):
    np.testing.assert_array_equal(got, want)
    assert type(got) is type(want)


def test_a_changing_keyword_only_float_is_one_generic_version():
    f, g = stax.compile(scaled), stax.compile(scaled_positional)
    for i in range(40):
        assert_same(f(X, k=float(i)), scaled(X, k=float(i)))
        assert_same(g(X, float(i)), scaled_positional(X, float(i)))
    info = f.cache_info()
    assert info.versions == 2 and info.fallbacks == 0  # exact at the first value, then generic
    assert info == g.cache_info()  # the same levels: level 1, the machine-code entry
    assert info.hits[1] == 38


def test_defaults_and_keywords_in_any_order_are_the_positional_function():
    """Keyword-only parameters are positions after the positional ones: the calls, keys and
    dispatch levels of the function with them positional, called with the same keywords."""
    def shifted(x, *, k=1.0, b=0.5):
        return x * k + b

    def shifted_positional(x, k=1.0, b=0.5):
        return x * k + b

    f, g = stax.compile(shifted), stax.compile(shifted_positional)
    calls = [{}, {"k": 2.0}, {"b": 3.0}, {"k": 3.0, "b": 4.0}, {"b": 1.0, "k": 9.0}, {"k": -0.0}]
    for kwargs in calls * 3:
        assert_same(f(X, **kwargs), shifted(X, **kwargs))
        assert_same(g(X, **kwargs), shifted_positional(X, **kwargs))
    assert f.cache_info() == g.cache_info()
    assert f.cache_info().fallbacks == 0


def test_defaults_are_read_as_python_binds_them():
    def shifted(x, *, k=1.0, b=0.5):
        return x * k + b

    f = stax.compile(shifted)
    assert_same(f(X), shifted(X))
    assert_same(f(X, b=2.0), shifted(X, b=2.0))
    shifted.__kwdefaults__ = {"k": 4.0, "b": -1.0}
    for kwargs in ({}, {"b": 2.0}, {"k": 3.0}):
        assert_same(f(X, **kwargs), shifted(X, **kwargs))
    # a default the call gives a value for is not read: no guard of it at every call
    f = stax.compile(shifted)
    f(X, k=5.0, b=6.0)
    f(X, k=5.0)
    assert [v.free is None for v in f.versions()] == [True, False]


def test_values_the_function_decides_from_still_key():
    def branches(x, *, k):
        return x * k if k > 0 else x - k

    def repeated(x, *, n):
        for i in range(n):
            x = x * 0.5 + i
        return x

    def sized(x, *, n, fill=2.0):
        return np.full(n, fill) + x[:n].sum()

    def as_int(x, *, k):
        return x[int(k) % 5] * k

    cases = [(branches, [{"k": float(k)} for k in (-2, -1, 1, 2, 3, 0, -0.0, 7)]),
             (repeated, [{"n": n} for n in (1, 2, 3, 2, 0)]),
             (sized, [{"n": n} for n in (1, 2, 3)] + [{"n": 3, "fill": v} for v in (1.0, 5.0)]),
             (as_int, [{"k": float(k)} for k in (1, 2, 3, 1.5, 4.25, 9)])]
    for fn, calls in cases:
        f = stax.compile(fn)
        for kwargs in calls * 2:
            assert_same(f(X, **kwargs), fn(X, **kwargs))
        assert f.cache_info().versions <= len(calls)


def test_arrays_by_keyword_only_parameters():
    def weighted(x, *, w, k=2.0):
        return x * w + k

    def accumulate(x, *, out, scale=1.0):
        out += x * scale
        return out

    def weighted_positional(x, w, k=2.0):
        return x * w + k

    f, g = stax.compile(weighted), stax.compile(weighted_positional)
    weights = [W, W[::-1], W.astype(np.float32), W.reshape(5, 1), W + 1]
    for w in weights * 2:
        assert_same(f(X, w=w), weighted(X, w=w))
        assert_same(g(X, w), weighted(X, w=w))
        assert_same(f(X, w=w, k=3.0), weighted(X, w=w, k=3.0))
        assert_same(g(X, w=w, k=3.0), weighted(X, w=w, k=3.0))
    assert f.cache_info() == g.cache_info()  # level 2 for arrays alone, as f(x, w)

    f = stax.compile(accumulate)
    mine, theirs = np.zeros(5), np.zeros(5)
    for scale in (None, 2.0, 3.0, None):
        kwargs = {} if scale is None else {"scale": scale}
        got, want = f(X, out=mine, **kwargs), accumulate(X, out=theirs, **kwargs)
        assert got is mine and want is theirs
        np.testing.assert_array_equal(mine, theirs)


def test_keyword_only_after_star_args():
    def total(x, *args, k, b=0.0):
        return x * k + sum(args) + b

    f = stax.compile(total)
    for extra in [(), (1.0,), (1.0, 2.0), (3.0,)]:
        for kwargs in ({"k": 1.0}, {"k": 2.0}, {"k": 3.0, "b": 1.0}, {"b": 2.0, "k": 4.0}):
            assert_same(f(X, *extra, **kwargs), total(X, *extra, **kwargs))
    assert f.cache_info().fallbacks == 0
    assert f.cache_info().versions <= 8


def test_keywords_that_star_star_kwargs_takes():
    def scaled_extra(x, *, k, **extra):
        return x * k + extra.get("b", 0.0) + len(extra)

    f = stax.compile(scaled_extra)
    for kwargs in ({"k": 1.0}, {"k": 2.0}, {"k": 2.0, "b": 1.0}, {"b": 2.0, "k": 3.0},
                   {"k": 4.0, "c": 1}, {"k": 5.0}):
        assert_same(f(X, **kwargs), scaled_extra(X, **kwargs))


@pytest.mark.parametrize("args, kwargs", [
    ((X, 1.0), {}),                     # a keyword-only parameter given by position
    ((X,), {}),                         # a required keyword-only argument missing
    ((X,), {"k": 1.0, "z": 2.0}),       # an unknown keyword
    ((), {"k": 1.0}),                   # the positional argument missing
    ((X,), {"x": X, "k": 1.0}),         # one argument given twice
    ((X, 1.0), {"k": 1.0}),
])
def test_calls_python_refuses_raise_its_own_error(args, kwargs):
    f = stax.compile(scaled)
    for _ in range(2):  # before and after a version (its machine-code entry) exists
        with pytest.raises(TypeError) as want:
            scaled(*args, **kwargs)
        with pytest.raises(TypeError) as got:
            f(*args, **kwargs)
        assert str(got.value) == str(want.value)
        assert_same(f(X, k=2.0), scaled(X, k=2.0))


def test_a_required_keyword_only_parameter_after_a_default():
    def late(x, *, k=1.0, m):
        return x * k - m

    f = stax.compile(late)
    for kwargs in ({"m": 1.0}, {"m": 2.0, "k": 3.0}, {"k": 3.0, "m": 3.0}):
        assert_same(f(X, **kwargs), late(X, **kwargs))
    with pytest.raises(TypeError) as want:
        late(X, k=2.0)
    with pytest.raises(TypeError) as got:
        f(X, k=2.0)
    assert str(got.value) == str(want.value)


def test_free_values_methods_and_explain():
    def with_global(x, *, k):
        return x * W * k

    class Layer:
        def __init__(self, w):
            self.w = w

        @stax.compile
        def forward(self, x, *, k=1.0):
            return x * self.w * k

    f = stax.compile(with_global)
    for k in (1.0, 2.0, 3.0):
        assert_same(f(X, k=k), with_global(X, k=k))
    assert f.cache_info().versions == 2
    assert f.explain(X, k=5.0)[-1].failures == []  # the generic version takes any float
    assert f.explain(X, k=np.float32(5.0))[-1].failures != []
    with pytest.raises(TypeError):
        f.explain(X, 5.0)
    layer = Layer(W + 1)
    for k in (1.0, 2.0, 3.0, None):
        got = layer.forward(X) if k is None else layer.forward(X, k=k)
        assert_same(got, X * layer.w * (1.0 if k is None else k))


def test_gradients_of_functions_with_keyword_only_parameters():
    def loss(x, *, k=2.0):
        return (x * x * k).sum()

    def loss_star(x, *args, k=2.0):
        return (x * x * k).sum() + sum(args)

    np.testing.assert_allclose(stax.grad(loss)(X), 4 * X)
    np.testing.assert_allclose(stax.grad(loss_star)(X, 1.0), 4 * X)


def test_placement():
    def fn(a, b=1, /, c=2, *, d=3, e):
        return a, b, c, d, e

    form = call_form(fn)
    assert form.place((0, 9, 8), {}) == ((0, 9, 8), {})  # a positional call as it is
    assert form.place((0,), {"e": 5}) == ((0, 1, 2, 3, 5), {})
    assert form.place((0,), {"c": 4, "e": 5}) == ((0, 1, 4, 3, 5), {})
    assert form.place((0, 9, 8), {"d": 4}) == ((0, 9, 8, 4), {})  # e missing: fn raises
    assert form.place((0,), {"b": 5, "e": 1}) is None  # positional-only by name
    assert form.place((0, 1, 2, 3), {"e": 1}) is None  # too many positional arguments
    assert form.place((0, 1, 2), {"c": 2, "e": 1}) is None  # c twice
    call = form.calling(fn)
    for args, kwargs in [((0,), {"e": 5}), ((0, 9), {"d": 4, "e": 6}), ((0, 9, 8), {"e": 7}),
                         ((0,), {"c": 4, "e": 5}), ((0, 9, 8), {"d": 4})]:
        placed, rest = form.place(args, kwargs)
        try:
            want = fn(*args, **kwargs)
        except TypeError as exc:
            with pytest.raises(TypeError, match=re.escape(str(exc))):
                call(*placed, **rest)
        else:
            assert call(*placed, **rest) == want

    def varargs(a, *rest, k=1, **extra):
        return a, rest, k, extra

    form = call_form(varargs)
    call = form.calling(varargs)
    for args, kwargs in [((0,), {}), ((0, 1, 2), {"k": 3}), ((0,), {"z": 1}), ((), {"a": 1})]:
        placed, rest = form.place(args, kwargs)
        assert placed[-1] == kwargs.get("k", 1)  # every keyword-only value placed
        assert call(*placed, **rest) == varargs(*args, **kwargs)


def test_a_keyword_default_given_after_the_compile_is_guarded():
    """Every keyword-only parameter's default is a guard path, those without one at the compile
    too: ``j``'s default given later, then changed in place, is seen (it kept the first
    capture's value)."""
    def f(x, *, k=1.0, j):
        return x * k + j

    compiled = stax.compile(f)
    x = np.arange(4.0)
    np.testing.assert_array_equal(compiled(x, j=2.0), f(x, j=2.0))
    f.__kwdefaults__ = {"k": 1.0, "j": 2.0}
    np.testing.assert_array_equal(compiled(x), f(x))
    f.__kwdefaults__["j"] = 7.0
    np.testing.assert_array_equal(compiled(x), f(x))
