"""A compiled bound method reads its object's array attributes as lifted free variables
(``freevars.py``): ``stax.compile(layer.forward)`` with ``x @ self.w + self.b`` compiles
natively, whatever the arrays' size (they were keyed by value, and larger ones ran the method
eagerly), and each call reads their current binding and data."""

import gc
import weakref

import numpy as np
import pytest

import stax.runtime as stax


class Layer:
    def __init__(self, n=64, seed=0):
        rng = np.random.default_rng(seed)
        self.w = rng.standard_normal((n, n)).astype(np.float32)
        self.b = rng.standard_normal(n).astype(np.float32)
        self.scale = 2.0
        self.calls = 0

    def forward(self, x):
        return np.tanh(x @ self.w + self.b) * self.scale

    def through_helper(self, x):
        return self.activate(x) + self.b

    def activate(self, x):
        return np.maximum(x * self.w[0], 0)

    def decay(self, x):
        self.w *= 0.5
        return x.sum() + self.w.sum()


def _same(compiled, method, *args):
    """float32 products of 64-128 terms: the summation order is BLAS's (which differs by host)
    or the kernel's, so an entry that cancels is within the terms' rounding, not its own."""
    want = method(*args)
    np.testing.assert_allclose(compiled(*args), want, rtol=2e-6,
                               atol=2e-6 * max(1.0, float(np.abs(want).max())))


def test_array_attributes_are_arguments_of_the_compiled_method():
    layer, eager = Layer(), Layer()
    compiled = stax.compile(layer.forward, strict_native=True)
    x = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)
    _same(compiled, eager.forward, x)
    for change in (lambda m: m.w.__setitem__((0, 0), 5.0),  # in place: seen, no compile
                   lambda m: setattr(m, "b", np.zeros(64, np.float32))):  # rebound, same layout
        change(layer)
        change(eager)
        _same(compiled, eager.forward, x)
    assert compiled.cache_info().compiles == 1
    layer.scale = eager.scale = 3.0  # a number: part of the key
    _same(compiled, eager.forward, x)
    assert compiled.cache_info().compiles == 2
    assert all(v.native for v in compiled.versions())
    assert type(layer.w) is np.ndarray and type(layer.b) is np.ndarray  # put back after capture


def test_attributes_read_by_the_methods_it_calls():
    layer = Layer()
    compiled = stax.compile(layer.through_helper, strict_native=True)
    x = np.ones((4, 64), np.float32)
    _same(compiled, Layer().through_helper, x)


def test_an_attribute_updated_in_place_is_written_back():
    layer, eager = Layer(), Layer()
    compiled = stax.compile(layer.decay)
    x = np.ones(4, np.float32)
    for _ in range(3):
        np.testing.assert_allclose(compiled(x), eager.decay(x), rtol=1e-6)
        np.testing.assert_array_equal(layer.w, eager.w)
    assert compiled.versions()[0].native


class Compiled(Layer):
    @stax.compile
    def forward(self, x):
        return np.tanh(x @ self.w + self.b) * self.scale

    @stax.compile
    @classmethod
    def twice(cls, x):
        return x * cls.factor

    factor = 2.0


def test_a_compiled_function_in_a_class_body_is_a_compiled_method():
    """``@stax.compile`` above a method: ``obj.forward(x)`` raised TypeError (no ``self``). It
    is one compiled function for every object: their array attributes are lifted, so objects
    with other weights share a version, and nothing keeps an object alive."""
    first, second, third = Compiled(seed=1), Compiled(seed=2), Compiled(seed=3)
    third.scale = 5.0
    x = np.ones((4, 64), np.float32)
    for obj in (first, second, third, first):
        _same(obj.forward, Layer.forward.__get__(obj), x)
    assert Compiled.forward.cache_info().compiles == 2  # the scales 2.0 and 5.0
    assert all(v.native for v in Compiled.forward.versions())
    assert Compiled.forward.__name__ == "forward"
    gone = weakref.ref(first)
    del obj  # the loop variable holds it too
    del first
    gc.collect()
    assert gone() is None
    np.testing.assert_array_equal(Compiled.twice(x), x * 2.0)
    np.testing.assert_array_equal(second.twice(x), x * 2.0)


def test_objects_that_compare_equal_keep_their_own_arrays():
    class Named:
        def __init__(self, name, w):
            self.name, self.w = name, w

        def __eq__(self, other):
            return isinstance(other, Named) and self.name == other.name

        def __hash__(self):
            return hash(self.name)

        @stax.compile
        def forward(self, x):
            return x * self.w

    x = np.arange(3.0)
    Named("fc", np.ones(3)).forward(x)
    np.testing.assert_array_equal(Named("fc", np.full(3, 10.0)).forward(x), x * 10.0)


def test_array_attributes_of_argument_objects_are_arguments():
    """``f(layer, x)``: the layer's arrays were keyed by value (above 4 KiB: always eager)."""
    def dense(layer, x):
        return np.maximum(x @ layer.w + layer.b, 0)

    compiled = stax.compile(dense, strict_native=True)
    x = np.ones((4, 64), np.float32)
    for seed in range(4):
        layer = Layer(seed=seed)
        _same(compiled, lambda lay, v: dense(lay, v), layer, x)
    assert compiled.cache_info().compiles == 1


def test_a_class_attribute_read_by_a_helper_method_is_guarded():
    class Scaled:
        scale = 2.0

        def __init__(self):
            self.w = np.ones(3)

        def helper(self, y):
            return y * self.scale

        def f(self, x):
            return self.helper(x) * self.w

    obj, x = Scaled(), np.arange(3.0)
    compiled = stax.compile(obj.f)
    compiled(x)
    Scaled.scale = 5.0
    np.testing.assert_array_equal(compiled(x), obj.f(x))


def test_values_stored_in_an_objects_containers_are_eager_arrays():
    class Box:
        pass

    class Model:
        def __init__(self):
            self.w, self.log, self.sub = np.ones(3), [], Box()

        def f(self, x):
            self.log.append(x * self.w)
            self.sub.keep = x * self.w
            self.pair = (x * self.w, 1)
            return x + 1

    model, x = Model(), np.arange(3.0)
    compiled = stax.compile(model.f)
    for _ in range(2):
        compiled(x)
    assert [type(v) for v in model.log] == [np.ndarray, np.ndarray]
    assert type(model.sub.keep) is np.ndarray and type(model.pair[0]) is np.ndarray
    np.testing.assert_array_equal(model.log[0] + 1, x + 1)


def test_an_error_during_the_first_capture_leaves_the_objects_eager_state():
    class Failing:
        def __init__(self):
            self.w = np.ones(3)

        def f(self, x):
            self.w = self.w * 2
            self.tmp = x * 2
            raise ValueError("boom")

    obj = Failing()
    with pytest.raises(ValueError, match="boom"):
        stax.compile(obj.f)(np.arange(3.0))
    assert type(obj.w) is np.ndarray and type(obj.tmp) is np.ndarray
    np.testing.assert_array_equal(obj.w, np.full(3, 2.0))


class Weights:
    def __init__(self, w):
        self.w = w

    def apply(self, x):
        return x @ self.w


def test_one_object_in_two_places_keeps_eager_semantics():
    """Capture bound the object's attributes to traced values: an object passed twice took the
    second position's value in both, and an object also reachable as a global leaked the
    argument's traced values into the global's reads (found by a probe: wrong results)."""
    both = stax.compile(lambda a, b: a.w + b.w * 10)
    one, two = Weights(np.ones(3)), Weights(np.full(3, 2.0))
    np.testing.assert_array_equal(both(one, one), np.full(3, 11.0))
    np.testing.assert_array_equal(both(one, two), np.full(3, 21.0))
    np.testing.assert_array_equal(both(two, one), np.full(3, 12.0))

    rng = np.random.default_rng(0)
    teacher = Weights(rng.standard_normal((64, 8)))

    def distill(student, x):
        d = student.apply(x) - teacher.apply(x)
        return (d * d).mean()

    compiled, x = stax.compile(distill), rng.standard_normal((32, 64))
    assert compiled(teacher, x) == 0.0
    student = Weights(teacher.w + 0.1)
    assert compiled(student, x) == distill(student, x) > 0.5


def test_a_function_that_sets_an_objects_attributes_runs_eagerly_once():
    def keep(layer, x):
        layer.calls = getattr(layer, "calls", 0) + 1
        layer.cache = x
        layer.b = layer.w
        return x + 1

    compiled = stax.compile(keep)
    for _ in range(2):
        obj, x = Weights(np.ones(2)), np.zeros(2)
        compiled(obj, x)
        assert obj.calls == 1 and obj.cache is x and obj.b is obj.w and obj.w.flags.writeable


def test_explain_keys_object_arrays_as_calls_do():
    compiled = stax.compile(lambda layer, x: x * layer.w)
    compiled(Weights(np.ones(4)), np.ones(4))
    assert compiled.explain(Weights(np.full(4, 3.0)), np.ones(4))[0].failures == []
    assert compiled.explain(Weights(np.ones(5)), np.ones(4))[0].failures


class Model:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.w1 = rng.standard_normal((64, 128)).astype(np.float32)
        self.w2 = rng.standard_normal((128, 8)).astype(np.float32)

    def __call__(self, x):
        return np.tanh(x @ self.w1) @ self.w2


def test_a_compiled_callable_object_lifts_its_arrays():
    """``stax.compile(model)`` with ``__call__`` reading ``self.w1``: keyed by value, the
    model's arrays made every call eager."""
    model = Model()
    compiled = stax.compile(model, strict_native=True)
    x = np.ones((4, 64), np.float32)
    _same(compiled, model, x)
    model.w1[0, 0] = 3.0  # in place: seen without a compile
    _same(compiled, model, x)
    assert compiled.cache_info().compiles == 1


def test_the_object_keeps_its_identity_during_capture():
    """A shallow-copy stand-in for the object changed ``self is ...``, ``id(self)`` and
    registries keyed by the object (found by a probe: wrong results on every call)."""
    registry = {}

    class Registered:
        def __init__(self):
            self.w = np.ones(3)
            self.me = self
            registry[id(self)] = 5.0

        def __call__(self, x):
            return self.w * (1.0 if self.me is self else 9.0) * registry[id(self)] + x

    obj, x = Registered(), np.ones(3)
    compiled = stax.compile(obj)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(x), obj(x))
    same = stax.compile(lambda a, b, v: a.w * v if a is b else a.w - v)
    one = Weights(np.ones(3))
    np.testing.assert_array_equal(same(one, one, x), np.ones(3))
    np.testing.assert_array_equal(same(one, Weights(np.ones(3)), x), np.zeros(3))


def test_compile_of_a_bound_compiled_method_and_an_instance_call_attribute():
    class Lin:
        def __init__(self):
            self.w = np.ones((4, 3))

        @stax.compile
        def forward(self, x):
            return x @ self.w

    lin = Lin()
    bound = stax.compile(lin.forward)
    np.testing.assert_array_equal(bound(np.ones((2, 4))), np.full((2, 3), 4.0))
    assert bound._versions is not Lin.forward._versions
    model = Model()
    model.__call__ = lambda x: x * 100  # model(x) calls the class's __call__ all the same
    x = np.ones((2, 64), np.float32)
    _same(stax.compile(model), model, x)
