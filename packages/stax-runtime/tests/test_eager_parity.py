"""A compiled call behaves as the eager call, also where capture cannot compile the function:
exceptions the function catches, its own warnings, values it stores, objects it returns, the
attributes it changes, and how the key tells values apart (found by session 19's probes; each
test failed before its fix)."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime import UnsupportedError


def _warned(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [f"{w.category.__name__}: {w.message}" for w in caught]


def test_an_exception_the_function_catches_is_not_compiled_in():
    """The first call's ``except`` path was the version: a later invertible matrix gave None."""
    def inverse(a):
        try:
            return np.linalg.inv(a)
        except np.linalg.LinAlgError:
            return None

    compiled = stax.compile(inverse)
    assert compiled(np.zeros((2, 2))) is None
    np.testing.assert_array_equal(compiled(np.eye(2) * 2), np.eye(2) / 2)
    with pytest.raises(UnsupportedError, match=r"numpy.linalg.inv\(\) raised LinAlgError .* "
                                                "caught it"):
        stax.compile(inverse, strict_native=True)(np.zeros((2, 2)))

    def reciprocal(x):
        try:
            with np.errstate(divide="raise"):
                return 1 / x
        except FloatingPointError:
            return x

    compiled = stax.compile(reciprocal)
    np.testing.assert_array_equal(compiled(np.zeros(2)), np.zeros(2))
    np.testing.assert_array_equal(compiled(np.full(2, 4.0)), np.full(2, 0.25))


def test_the_functions_own_warnings_are_given_on_every_call():
    def careful(x):
        warnings.warn("careful", stacklevel=1)
        return x + 1

    compiled = stax.compile(careful)
    for _ in range(3):
        result, said = _warned(compiled, np.ones(2))
        np.testing.assert_array_equal(result, np.full(2, 2.0))
        assert said == ["UserWarning: careful"]  # once a call: not twice on the first
    assert not compiled.versions()[0].native
    assert "the function warns (UserWarning 'careful'" in compiled.versions()[0].reason


def test_numpys_warnings_about_constants_are_given_on_every_call():
    """NumPy's Python-level warnings computing a value of the key alone (a scalar argument, a
    literal) were given by the capture run only."""
    cases = [(lambda x: np.nanmean(x), np.float64(np.nan)),
             (lambda x: np.nanmax(x), np.nan),
             (lambda x: np.nanmean(np.array([np.nan, np.nan])) + x, np.zeros(2)),
             (lambda x: np.sum(x, dtype=np.float32), np.complex64(1j))]
    for fn, arg in cases:
        compiled = stax.compile(fn)
        expected = _warned(fn, arg)[1]
        assert expected
        for _ in range(3):
            assert _warned(compiled, arg)[1] == expected
    # a complex array cast to real warns once a call, compiled or not
    cast = stax.compile(lambda z: z.astype(np.float64) * 2)
    z = np.array([1 + 1j, 2 - 1j])
    for _ in range(3):
        assert _warned(cast, z)[1] == ["ComplexWarning: Casting complex values to real discards "
                                       "the imaginary part"]
    assert cast.versions()[0].native


def test_a_traced_value_the_function_stores_is_the_eager_value_afterwards():
    cache: dict = {}

    def accumulate(x):
        if "acc" not in cache:
            cache["acc"] = np.zeros(3)
        cache["acc"] = cache["acc"] + x
        return cache["acc"].sum()

    compiled = stax.compile(accumulate)
    assert [float(compiled(np.ones(3))) for _ in range(3)] == [3.0, 6.0, 9.0]
    assert type(cache["acc"]) is np.ndarray

    class Model:
        last = None

    def step(x, model):
        model.last = x * 2
        return x + 1

    compiled, model = stax.compile(step), Model()
    for _ in range(2):
        np.testing.assert_array_equal(compiled(np.ones(3), model), np.full(3, 2.0))
        assert type(model.last) is np.ndarray
        np.testing.assert_array_equal(model.last, np.full(3, 2.0))


def test_a_returned_generator_or_function_works():
    doubled = stax.compile(lambda x: (v * 2 for v in x))
    assert [float(v) for v in doubled(np.ones(2))] == [2.0, 2.0]
    later = stax.compile(lambda x: lambda: x.sum())
    assert later(np.ones(3))() == 3.0
    with pytest.raises(UnsupportedError, match="returns a generator object"):
        stax.compile(lambda x: (v for v in x), strict_native=True)(np.ones(2))


def test_attributes_an_unfinished_capture_changed_are_not_changed_twice():
    """Capture stops at ``x * layer.w`` (an object's array); the eager run that follows
    incremented the counter a second time."""
    class Layer:
        def __init__(self):
            self.calls, self.w = 0, np.ones(3)

        def step(self, x):
            self.calls += 1
            self.total = getattr(self, "total", 0) + x * self.w
            return self.total / self.calls

    def forward(layer, x):
        layer.calls += 1
        return x * layer.w

    eager, traced = Layer(), Layer()
    compiled = stax.compile(forward)
    for k in range(3):
        x = np.full(3, float(k + 1))
        np.testing.assert_array_equal(compiled(traced, x), forward(eager, x))
    assert traced.calls == eager.calls == 3
    eager, traced = Layer(), Layer()
    method = stax.compile(traced.step)
    for k in range(3):
        x = np.full(3, float(k))
        np.testing.assert_array_equal(method(x), eager.step(x))
    assert traced.calls == eager.calls == 3


def test_dict_keys_and_set_order_are_keyed_as_the_trace_reads_them():
    def scaled(x, d):
        (k,) = d
        return x * k

    compiled, x = stax.compile(scaled), np.ones(3)
    compiled(x, {0.0: 0})
    assert np.signbit(compiled(x, {-0.0: 0})).all()  # equal keys, not the same value
    ints = np.arange(3, dtype=np.int8)
    compiled(ints, {1: 0})
    assert compiled(ints, {1.0: 0}).dtype == np.float64
    assert compiled(ints, {True: 0}).dtype == np.int8

    first = stax.compile(lambda x, s: x * next(iter(s)))
    first(x, {1, 9})
    assert list({9, 1}) == [9, 1]  # equal sets, iterated in different orders
    np.testing.assert_array_equal(first(x, {9, 1}), np.full(3, 9.0))


def test_numpy_names_the_function_reads_raise_no_warning_of_stax():
    """Reading every name of the code on NumPy warned for ``np.str``/``np.object``."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @stax.compile
        def f(x, mode="a"):
            return np.abs(x) if isinstance(mode, (str, bytes, object)) else x

        np.testing.assert_array_equal(f(-np.ones(2)), np.ones(2))


def test_np_array_of_numbers_beyond_a_signed_type_raises_as_numpy():
    """``np.array([s], dtype=int8)`` converts a NumPy scalar as a Python int: 300 raises
    OverflowError (a cast would wrap it to 44), NaN raises ValueError."""
    def pair(x):
        return np.array([x[0] * 300.0, 1.0], dtype=np.int8)

    compiled = stax.compile(pair)
    for values in ([1.0, 0.0], [0.25, 0.0], [-0.5, 0.0], [np.nan, 0.0], [0.2, 0.0]):
        x = np.array(values)
        try:
            expected = pair(x)
        except (OverflowError, ValueError) as exc:
            with pytest.raises(type(exc), match=str(exc)):
                compiled(x)
        else:
            got = compiled(x)
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)
    unsigned = stax.compile(lambda x: np.array([x[0] * 300.0], dtype=np.uint8))
    np.testing.assert_array_equal(unsigned(np.ones(1)), np.array([44], dtype=np.uint8))


def test_ragged_and_object_arrays_of_traced_values_are_numpys():
    x = np.arange(3.0)
    ragged = stax.compile(lambda x: np.array([x, x[:2]]))
    with pytest.raises(ValueError, match="inhomogeneous shape"):
        ragged(x)
    objects = stax.compile(lambda x: np.array([x, None], dtype=object))(x)
    assert objects.dtype == object and objects[1] is None
    np.testing.assert_array_equal(objects[0], x)


def test_nan_reductions_along_axis_0_of_a_0d_array():
    for fn in (np.nanmin, np.nanmax, np.nansum, np.nanmean, np.nanprod, np.nanvar):
        compiled = stax.compile(lambda x, fn=fn: fn(x, axis=0), strict_native=True)
        for _ in range(2):  # the compiling call, then the cached version's
            assert compiled(np.array(5.0)) == fn(np.array(5.0), axis=0)


def test_a_stack_of_many_pieces_compiles():
    """600 stacked columns: a select among all pieces per element recursed past Python's
    limit (and took 12 s to compile); NumPy's stack joins them instead."""
    def columns_scaled(x):
        return np.stack([x[:, i] * (i + 1) for i in range(x.shape[1])])

    x = np.random.default_rng(0).random((4, 600))
    compiled = stax.compile(columns_scaled, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(compiled(x), columns_scaled(x))


def test_explain_places_keywords_as_calls_do():
    """``explain(a, s=1.0)`` reported failures for a call that hits the version."""
    compiled = stax.compile(lambda x, s: x * s)
    a = np.ones(3)
    compiled(a, 1.0)
    assert compiled.explain(a, s=1.0)[0].failures == []
    assert [f.path for f in compiled.explain(a, s=2.0)[0].failures] == ["inputs[0][1]"]
    compiled(a, s=1.0)
    assert compiled.cache_info().misses == 1


def test_a_warning_the_function_catches_as_an_error_is_not_compiled_in():
    """Under an "error" filter ``warnings.warn`` raises; the function's except branch became the
    version and was returned under every later filter."""
    def f(x):
        try:
            warnings.warn("deprecated path", stacklevel=1)
            return x
        except UserWarning:
            return -x

    compiled, x = stax.compile(f), np.ones(2)
    for action in ("error", "ignore", "always"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter(action)
            np.testing.assert_array_equal(compiled(x), f(x))
        assert len(caught) == (2 if action == "always" else 0)


def test_errors_the_key_decides_compile_their_branch():
    """An IndexError of a constant index, a reshape's size mismatch, the truth value of a
    several-element array: every call of the key raises them alike, so the branch compiles."""
    def first_column(x):
        try:
            return x[:, 0] * 2
        except IndexError:
            return x * 2

    def square(a):
        try:
            return a.reshape(3, 3) + 1
        except ValueError:
            return a + 2

    for fn, arg in ((first_column, np.ones(3)), (square, np.ones((2, 2)))):
        compiled = stax.compile(fn, strict_native=True)
        for scale in (1.0, 2.0):
            np.testing.assert_array_equal(compiled(arg * scale), fn(arg * scale))


class _Stats:
    pass


_HISTORY: list = []


def test_values_stored_deeper_are_the_eager_arrays():
    """A class attribute, a tuple in a global list, a deque, a mutable default, an attribute two
    levels down an argument: they held dead proxies (and later calls raised)."""
    import collections

    queue: collections.deque = collections.deque()

    def f(x, acc=[]):  # noqa: B006 - the mutable default is the point
        y = x * 2
        _Stats.last = y
        _HISTORY.append((y, y.sum()))
        queue.append(y)
        acc.append(y)
        return y

    class Node:
        pass

    def g(node, x):
        node.sub.last = x * 2
        return x + 1

    compiled, store = stax.compile(f), stax.compile(g)
    node = Node()
    node.sub = Node()
    for v in (1.0, 3.0):
        x = np.full(2, v)
        compiled(x)
        store(node, x)
        np.testing.assert_array_equal(node.sub.last, x * 2)
    stored = [_Stats.last, _HISTORY[0][0], queue[0], f.__defaults__[0][0]]
    assert all(type(v) is np.ndarray for v in stored)
    np.testing.assert_array_equal(_Stats.last, np.full(2, 6.0))
