"""Python scalar arguments as run-time inputs (issue 15, item 3; spec example 2.1): a scalar
argument whose value changes between calls becomes an input of one generic version, taken as
NumPy takes a weak scalar (NEP 50: ``x_f32 * k`` computes in float32); a scalar Python decides
something from (a branch, ``range``, a power's exponent) keeps its value in the key."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

import stax.runtime as st

RNG = np.random.default_rng(2101)


def _x(dtype=np.float32, shape=(5, 7)):
    x = RNG.standard_normal(shape).astype(dtype)
    x.flat[:3] = [np.nan, np.inf, -0.0]
    return x


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_example_2_1_one_version_for_every_k(caplog, monkeypatch):
    """g(x, k) = x * k with k = 3, 4, 5...: the first call exact, the second the generic
    version, every later k a hit of it."""
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    caplog.set_level(logging.INFO, logger="stax")

    def g(x, k):
        return x * k

    f = st.compile(g)
    x = _x(np.float64)
    for k in (3, 4, 5, 6, 7, -2, 0, 3):
        with np.errstate(all="ignore"):
            want = g(x, k)
        _same(f(x, k), want)
    assert f.cache_info().compiles == 2
    assert f.versions()[1].generic is not None
    assert "size-generic version for dynamic inputs[1]: scalar arguments as run-time inputs" \
        in caplog.text


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_weak_float_scalars_round_to_the_array_dtype_as_numpy_does(dtype):
    def affine(x, a, b):
        return np.maximum(x * a + b, 0.0) / a

    def clipped(x, t):
        return np.where(x > t, x, t) - np.minimum(x, t)

    values = [(0.1, 1 / 3), (1e-8, -2.5), (3.0000001, 1e30), (-0.0, 0.0), (np.inf, 1.0),
              (float("nan"), 2.0), (7.0, -0.0)]
    for fn, arity in ((affine, 2), (clipped, 1)):
        f = st.compile(fn)
        x = _x(dtype)
        for extra in values:
            extra = extra[:arity]
            with np.errstate(all="ignore"):
                want = fn(x, *extra)
                got = f(x, *extra)
            _same(got, want)
        assert f.cache_info().compiles == 2, fn.__name__


def test_integer_scalars_into_float32_arrays_and_their_exact_range():
    def scale(x, k):
        return x * k + k

    f = st.compile(scale)
    x = _x(np.float32)
    for k in (3, 16777217, -5, 2 ** 40 + 1, 9):  # 2**24 + 1 rounds to float32 as NumPy rounds it
        with np.errstate(all="ignore"):
            _same(f(x, k), scale(x, k))
    assert f.cache_info().compiles == 2
    with np.errstate(all="ignore"):
        _same(f(x, 2 ** 60 + 1), scale(x, 2 ** 60 + 1))  # past 2**53: not the generic version
    assert f.cache_info().compiles == 3


def test_sizes_and_scalars_dynamic_together():
    def softmax_t(x, temperature):
        z = x / temperature
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    f = st.compile(softmax_t)
    for rows, t in ((4, 1.0), (9, 0.5), (17, 2.0), (3, 0.7), (64, 1.3)):
        x = RNG.standard_normal((rows, 16)).astype(np.float32)
        np.testing.assert_allclose(f(x, t), softmax_t(x, t), rtol=2e-6, atol=1e-7)
    assert f.cache_info().compiles == 2


@pytest.mark.parametrize("fn", [
    lambda x, k: x * 2 if bool(k % 2) else x,
    lambda x, k: sum(x * i for i in range(k)),
    lambda x, k: x * (k // 2),
], ids=["branch_on_remainder", "range", "python_floordiv"])
def test_a_scalar_used_otherwise_keeps_its_value_in_the_key(fn, caplog, monkeypatch):
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    caplog.set_level(logging.INFO, logger="stax")
    f = st.compile(fn)
    x = np.abs(RNG.standard_normal((4, 6))) + 0.5
    for k in (2, 3, 4):  # (a float power: within an ulp of NumPy's libm pow, as documented)
        for _ in range(2):  # a compiling call (a new key), then the cached version's
            np.testing.assert_allclose(f(x, k), fn(x, k), rtol=1e-15, atol=0)
    assert f.cache_info().compiles == 3
    assert "no size-generic version for dynamic inputs[1]" in caplog.text


def test_booleans_stay_in_the_key():
    def g(x, k):
        return x * k

    f = st.compile(g)
    x = _x(np.float64)
    for k in (True, False, True):
        for _ in range(2):  # a compiling call (a new key), then the cached version's
            _same(f(x, k), g(x, k))
    assert all(v.generic is None for v in f.versions())


NUMPY_SCALAR_FNS = [
    lambda x, k: x * k, lambda x, k: k - x, lambda x, k: x / k,
    lambda x, k: np.maximum(x, k), lambda x, k: np.where(x > k, x, k),
    lambda x, k: (x < k) | (x == k), lambda x, k: x * k - k,
]


@pytest.mark.parametrize("fn", NUMPY_SCALAR_FNS,
                         ids=["mul", "rsub", "div", "maximum", "where", "compare", "twice"])
@pytest.mark.parametrize("x_dtype", [np.float32, np.float64, np.int32, np.uint8])
@pytest.mark.parametrize("k_type", [np.float32, np.float64, np.int64, np.int8])
def test_numpy_scalars_are_strong_run_time_inputs(fn, x_dtype, k_type):
    """``for t in np.linspace(...)``: each ``t`` a new NumPy scalar. Keyed by value, every one
    compiled until the version limit, then every call ran eagerly through a miss (125 us for
    a 1 us function). A NumPy scalar is strong (NEP 50): the generic version takes it as a 0-d
    array of its own dtype, which NumPy computes with exactly as with the scalar."""
    f = st.compile(fn)
    x = RNG.standard_normal((4, 5)).astype(np.float64) * 4
    if np.dtype(x_dtype).kind == "f":
        x.flat[:3] = [np.nan, np.inf, -0.0]
    x = x.astype(x_dtype) if np.dtype(x_dtype).kind == "f" else np.abs(x).astype(x_dtype)
    values = [1.5, -0.0, 2.25, np.nan, -np.inf, 3.0, 0.5] if np.dtype(k_type).kind == "f" \
        else [3, -7, 5, 127, 1, -128]
    for v in values:
        k = k_type(v)
        with np.errstate(all="ignore"):
            want = fn(x, k)
            got = f(x, k)
        _same(np.asarray(got), np.asarray(want))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert f.cache_info().compiles == 2
    assert f.versions()[1].generic is not None


def test_numpy_scalars_used_otherwise_keep_their_value_in_the_key():
    def branch(x, k):
        return x * 2 if int(k) > 1 else x  # int() reads it (a comparison alone is a guard)

    for fn in (branch,):
        f = st.compile(fn)
        x = np.abs(RNG.standard_normal((3, 4))) + 0.5
        for k in (2.0, 3.0, 0.5):  # (a float power: within an ulp of NumPy's libm pow)
            np.testing.assert_allclose(f(x, np.float64(k)), fn(x, np.float64(k)), rtol=1e-15)
        assert f.cache_info().compiles == 3
        assert all(v.generic is None for v in f.versions())


def test_the_other_scalars_join_the_one_that_changed():
    """``f(y, a, b, c)`` with ``a`` changing: the generic version takes ``b`` and ``c`` as
    inputs too (a later call with new ``b`` and ``c`` compiles nothing), so every argument
    is an input and the machine-code entry takes the calls (5.4 us a call, 0.7 now)."""
    from stax.codegen.cpu.entry import Entry

    def rhs(y, a, b, c):
        return np.array([a * (y[1] - y[0]), y[0] * (b - y[2]) - y[1], y[0] * y[1] - c * y[2]])

    f = st.compile(rhs)
    y = np.array([1.0, 2.0, 3.0])
    for a in (10.0, 11.0, 12.0):
        _same(f(y, a, 28.0, 8 / 3), rhs(y, a, 28.0, 8 / 3))
    assert isinstance(f.versions()[-1].entry, Entry)
    for b, c in ((27.0, 2.5), (1.0, -0.0)):
        _same(f(y, 13.0, b, c), rhs(y, 13.0, b, c))
    assert f.cache_info().compiles == 2


def test_int_and_numpy_scalar_inputs_are_read_by_the_machine_code_entry():
    """Python ints (through ``PyLong_AsLongLongAndOverflow``, within +-2**53) and NumPy
    scalars (their value after the object header) as the machine-code entry's inputs; another
    type, or an int past 2**53, takes the dispatcher."""
    from stax.codegen.cpu.entry import Entry

    def g(y, k):
        return y * k + 1.0

    y = np.array([1.0, -2.0, 0.5], np.float32)
    for values in ([3, 4, -5, 0, 2 ** 40, -(2 ** 53) + 1, 7],
                   [np.float32(0.5), np.float32(-0.0), np.float32(np.nan), np.float32(3e38)],
                   [np.float64(0.1), np.float64(-np.inf), np.float64(1e300)],
                   [np.int64(3), np.int64(-9), np.int64(2 ** 62)],
                   [np.uint8(3), np.uint8(255), np.uint8(0)]):
        f = st.compile(g)
        f(y, values[0])
        f(y, values[1])
        entry = f.versions()[-1].entry
        assert isinstance(entry, Entry), values
        before = entry.hits
        for k in values:
            with np.errstate(all="ignore"):
                got, want = f(y, k), g(y, k)
            _same(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        assert entry.hits >= before + len(values) - 2
    f = st.compile(g)
    f(y, 3)
    f(y, 4)
    with np.errstate(all="ignore"):
        for k in (2 ** 53, 2 ** 70, -(2 ** 53), np.int64(5), 2.5, True):
            _same(f(y, k), g(y, k))


def test_new_keys_past_the_version_limit_cost_a_lookup(monkeypatch):
    """Past the version limit a new key ran eagerly after a miss that analysed the function's
    free variables again (disassembling its code: 125 us a call for a 1 us function)."""
    def g(x, k):
        return x * 2 if k % 3 else x - 1

    f = st.compile(g)
    x = np.ones(3)
    for k in range(2, 40):  # the remainder reads k: one version per value, then the limit
        _same(f(x, k), g(x, k))
    scans = []
    monkeypatch.setattr(type(f), "_rescan_free_variables",
                        lambda self: scans.append(1) or False)
    for k in range(40, 60):
        _same(f(x, k), g(x, k))
    assert not scans and f.cache_info().versions == f.limits.max_versions


def test_a_scalar_returned_or_unused_is_handled():
    def passthrough(x, k, unused):
        return x + k, k

    f = st.compile(passthrough)
    x = _x(np.float64)
    for k, u in ((1.5, 2.0), (2.5, 3.0), (3.5, 4.0)):
        got, back = f(x, k, u)
        _same(got, x + k)
        assert back == k and type(back) is float


@pytest.mark.parametrize("dynamic", [None, True])
def test_type_checks_of_a_scalar_argument_answer_as_for_its_value(dynamic):
    """A probe's wrong results: during capture a scalar argument is a stand-in, and
    ``isinstance(k, float)`` answered False, compiling the other branch."""
    import numbers

    def branchy(x, k):
        if isinstance(k, float) and isinstance(k, numbers.Number) and np.isscalar(k):
            return x * k
        return x + 1

    def sized(x):
        return x * 2 if isinstance(x.shape[0], int) else x

    f, g = st.compile(branchy, dynamic=dynamic), st.compile(sized, dynamic=dynamic)
    x = np.array([1.0, 2.0], np.float32)
    for k in (0.5, 0.25, 3.0):
        _same(f(x, k), branchy(x, k))
    for n in (3, 4, 9):
        _same(g(np.ones((n, 2))), sized(np.ones((n, 2))))


@pytest.mark.parametrize("fn", [
    lambda x, k: x * (np.float32(2.0) * k),
    lambda x, k: x / (np.finfo(np.float32).eps + k),
    lambda x, k: x - x.dtype.type(1) * k,
    lambda x, k: x * (np.array(1.0, np.float32) + k),
    lambda x, k: x * np.add(np.float32(1), k),
    lambda x, k: x * (np.float16(1.0) * k),
], ids=["float32_scalar", "finfo", "dtype_type", "zero_d", "ufunc", "float16"])
def test_numpy_scalars_times_a_scalar_argument_keep_it_weak(fn):
    """A probe's wrong dtypes: NumPy converted the stand-in through ``__array__`` to a strong
    float64, where eagerly the Python float is weak (NEP 50) and the result float32."""
    f = st.compile(fn)
    for dtype in (np.float32, np.float64):
        x = _x(dtype)
        for k in (0.5, 0.1, 3.0):
            with np.errstate(all="ignore"):
                for _ in range(2):  # a compiling call (a new key), then the cached version's
                    _same(f(x, k), fn(x, k))


def test_new_values_take_the_key_entry_and_grow_no_table():
    """A stream of values is checked by the key entry (the scalar's type only) and runs the
    generic version without the dispatcher; nothing is kept per value."""
    def g(x, k):
        return x * k

    f = st.compile(g)
    x = _x(np.float64, (3,))
    f(x, 1.0)
    f(x, 2.0)
    for k in np.linspace(0.1, 9.0, 50).tolist():
        _same(f(x, k), g(x, k))
    info = f.cache_info()
    assert info.compiles == 2 and info.hits[1] >= 49
    assert len(f._by_sigma) == 2
    with np.errstate(all="ignore"):
        _same(f(x, 3), g(x, 3))  # an int: another key
    assert f.cache_info().compiles == 3


def test_a_scalar_input_before_a_generator_argument_keeps_the_inputs_in_order():
    """A stress program's finding: the scalar's input was placed after the generator's, so
    the generator was passed where the scalar was expected."""
    def prog(x, y1, s2, rng):
        return np.abs(y1) * s2 + rng.random(y1.shape)

    def unused(x, y1, s2, rng):
        return np.abs(y1)

    for fn in (prog, unused):
        f = st.compile(fn)
        for k in (1.5, 2.5, 3.5):
            x = np.ones((4, 3))
            got = f(x, x, k, np.random.default_rng(0))
            np.testing.assert_array_equal(got, fn(x, x, k, np.random.default_rng(0)))
        assert f.cache_info().compiles == 2 and f.versions()[1].generic is not None


def test_float_inputs_are_read_by_the_machine_code_entry():
    """An ODE right-hand side ``f(t, y)`` called with a new ``t`` each time: the generic
    version's calls went through Python (5 us, NumPy 1.5); its machine-code entry checks that
    ``t`` is a ``float`` and passes its value to the kernels (signed zeros, NaN, infinities and
    subnormals as they are; events as NumPy's), and any other type takes the dispatcher."""
    import warnings

    from stax.codegen.cpu.entry import Entry

    def rhs(t, y):
        return y * t + 1.0, np.sin(y * t) / t

    f = st.compile(rhs)
    y = np.array([1.0, 0.5, -2.0])
    f(0.25, y)
    f(0.5, y)
    entry = f.versions()[-1].entry
    assert isinstance(entry, Entry)
    before = entry.hits
    for t in (0.1, -0.0, 0.0, float("nan"), float("inf"), -3.5, 5e-324, 2.0 ** 60, 0.3):
        with warnings.catch_warnings(record=True) as got_warnings:
            warnings.simplefilter("always")
            got = f(t, y)
        with warnings.catch_warnings(record=True) as want_warnings:
            warnings.simplefilter("always")
            want = rhs(t, y)
        for g, w in zip(got, want):
            _same(g, w)
            np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
        assert [str(w.message) for w in got_warnings] == [str(w.message) for w in want_warnings]
    assert entry.hits > before
    for t in (np.float64(0.3), 3, np.float32(0.5)):  # another type: the dispatcher decides
        for g, w in zip(f(t, y), rhs(t, y)):
            _same(g, w)


COMPUTED = [
    lambda x, t, w: x * (w * t),
    lambda x, t, w: x + np.sin(w * t) * 0.5,
    lambda x, t, w: x * (t + w / 2) - (-t),
    lambda x, t, w: np.where(x > abs(t - w), x / (t * t + 1.0), np.exp(-t / w)),
    lambda x, t, w: x * np.sqrt(np.float64(2.5) * t * t) + 2 * t,
    lambda x, t, w: np.maximum(x, np.log1p(t * t)) * np.float64(w),
]


@pytest.mark.parametrize("fn", COMPUTED, ids=["product", "sin", "mixed", "where", "strong",
                                               "log1p"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numbers_computed_in_python_from_scalars_follow_them(fn, dtype):
    """``np.cos(w * t)`` in an ODE right-hand side: Python arithmetic on a scalar argument
    read its value, so every ``t`` was a version (and past the limit each call ran eagerly
    after a miss). Arithmetic (``+ - * /``, unary ``-``, ``abs``) on floats and ints within
    2**53, and NumPy's one-operand float ufuncs, are computed numbers: the generic version
    computes them from its scalar inputs in float64, weak where Python's float was (``x_f32 *
    (w * t)`` rounds the product to float32 once, as NumPy does) and strong where a NumPy
    float64 took part. Arithmetic is bit for bit; a ufunc within an ulp (as for arrays)."""
    f = st.compile(fn)
    x = _x(dtype)
    for t in [0.5, 0.25, 3.0, -1.5, 1e-300, 7.0, 2.0 ** 0.5]:
        for w in (2.0, 3):
            with np.errstate(all="ignore"):
                got, want = f(x, t, w), fn(x, t, w)
            assert got.dtype == want.dtype and got.shape == want.shape
            eps = np.finfo(dtype).eps  # (a ufunc's ulp, carried to a small result)
            np.testing.assert_allclose(got, want, rtol=4 * eps, atol=4 * eps)
            if fn is COMPUTED[0] or fn is COMPUTED[2]:
                _same(got, want)
    assert f.cache_info().compiles <= 4  # (float w, int w) x (exact, generic)


def test_a_python_float_divided_by_zero_raises_as_eagerly():
    def g(x, a, b):
        return x * (a / b)

    f = st.compile(g)
    x = _x(np.float64)
    for a, b in ((1.0, 2.0), (3.0, 4.0), (-0.0, 5.0)):
        _same(f(x, a, b), g(x, a, b))
    with np.errstate(all="ignore"), pytest.raises(ZeroDivisionError):
        f(x, 1.0, 0.0)
    assert f.cache_info().compiles == 2


def test_computed_numbers_decided_from_keep_their_values_in_the_key():
    def g(x, t):
        c = t * 2.0
        return x * c if round(c) else x - c  # round() reads it (a comparison is a guard)

    f = st.compile(g)
    x = _x(np.float64)
    for t in (0.25, 0.75, 1.5):
        _same(f(x, t), g(x, t))
    assert f.cache_info().compiles == 3 and all(v.generic is None for v in f.versions())


def damped(y, v, c, use_damping, mode):
    a = -y
    if use_damping:
        a = a - c * v
    return a * 2 if mode == "double" else a


def test_a_scalar_input_beside_flags_takes_the_machine_code_entry():
    """A probe's ``damped(y, v, c, use_damping)`` with ``c`` changing: the flag kept the
    scalar-generic version from the machine-code entry (4.2 us a call, NumPy 1.2). A key entry
    compares the flag and the string and checks the scalar's type, then hands the arrays and
    the scalar to the machine-code entry (0.7 us)."""
    f = st.compile(damped)
    y, v = np.array([1.0, 2.0, 3.0]), np.array([0.5, -0.0, np.nan])
    for c in (0.1, 0.2, 0.3):
        _same(f(y, v, c, True, "double"), damped(y, v, c, True, "double"))
    entry = f.versions()[-1].entry
    assert entry is not None and not entry.dispatches  # the machine code behind the key entry
    before = entry.hits
    for c in (0.5, -1.5, 1e300):
        _same(f(y, v, c, True, "double"), damped(y, v, c, True, "double"))
    assert entry.hits == before + 3
    for args in ((y, v, 0.5, False, "double"), (y, v, 0.5, True, "other"), (y, v, 2, True, "double")):
        _same(f(*args), damped(*args))


@pytest.mark.parametrize("fn", [
    lambda x, a, b: np.clip(x, a, b),
    lambda x, a, b: x * a + b,
    lambda x, a, b: (x < a) | (x > b),
    lambda x, a, b: np.where(x > a, x, b),
    lambda x, a, b: np.clip(x, min=a, max=b),
    lambda x, a, b: np.clip(x, None, b) + np.clip(x, a_min=a, a_max=None),
    lambda x, a, b: x.clip(a, b),
    lambda x, a, b: x.clip(max=b) - x.clip(a),
], ids=["clip", "affine", "compare", "where", "clip_keywords", "clip_half", "clip_method",
        "clip_method_keywords"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
def test_float_scalars_with_integer_arrays_and_clip_bounds_are_inputs(fn, dtype):
    """A probe's ``np.arange(n) * dx`` and ``np.clip(x, lo, hi)`` kept the scalar's value in the
    key (a version per value). A Python float with integer arrays converts to float64 as NumPy
    does (NEP 50), and ``np.clip``'s bounds are weak operands like ``np.maximum``'s, by position
    or keyword, in the method form too (each took a version per value)."""
    f = st.compile(fn)
    x = np.arange(20).astype(dtype) if np.dtype(dtype).kind == "u" else \
        (np.arange(20) - 5).astype(dtype)
    for a, b in ((0.5, 3.5), (1.25, 7.5), (-2.5, 2.0), (0.1, 0.2)):
        with np.errstate(all="ignore"):
            _same(np.asarray(f(x, a, b)), np.asarray(fn(x, a, b)))
    assert f.cache_info().compiles == 2 and f.versions()[1].generic is not None


def test_a_number_read_from_the_data_keeps_its_scalars_in_the_key():
    """A review's finding: ``float((x * t).sum())`` is a data gate whose value depends on the
    scalar ``t``; a scalar-generic version replayed it with the capture's ``t`` baked in and
    returned the old number for a new ``t``."""
    def shifted(x, t):
        return x + float((x * t).sum())

    def prefix(x, t):
        return x[:int((x > t).sum())]

    x = np.linspace(0, 1, 5)
    for fn in (shifted, prefix):
        f = st.compile(fn)
        for t in (0.25, 0.5, 0.3, 0.7, 0.3):
            _same(f(x, t), fn(x, t))


def test_a_number_a_loop_grows_is_read_not_followed():
    """A review's finding: ``t += dt`` in a Python loop grew one expression per iteration, and
    reading it recursed through all of them (``RecursionError`` past about 500 steps)."""
    def euler(y, dt, T):
        t = 0.0
        while t < T:
            y = y - dt * y
            t += dt
        return y, t

    f = st.compile(euler)
    got, want = f(np.ones(3), 0.001, 0.6), euler(np.ones(3), 0.001, 0.6)
    _same(got[0], want[0])
    assert got[1] == want[1] and type(got[1]) is float


def test_code_wanting_the_number_itself_gets_it():
    """A review's finding: a NumPy scalar argument's stand-in was refused by code that wants the
    number (``SeedSequence``, ``json.dumps``): a ``TypeError`` eagerly absent. The capture runs
    again with the scalars as their values."""
    import json

    def seeded(x, seed):
        return x + np.random.default_rng(seed).random(x.shape)

    def dumped(x, t):
        return x * len(json.dumps(t))

    x = np.zeros(3)
    for seed in (np.int64(1), 2, np.int64(3)):
        _same(st.compile(seeded)(x, seed), seeded(x, seed))
    _same(st.compile(dumped)(x + 1, 1.5), dumped(x + 1, 1.5))
    _same(st.compile(dumped)(x + 1, np.float64(1.5)), dumped(x + 1, np.float64(1.5)))


def test_a_refused_capture_returns_and_stores_eager_numbers(recwarn):
    """A capture refused after the function finished (NumPy warned about a value of the
    scalars alone; a global changed) returns eager's result: the numbers the function computed
    from a followed scalar are NumPy's, not the capture's stand-ins, returned or stored."""
    acos = st.compile(lambda t: np.arccos(t))
    got = acos(np.float64(3.0))
    assert type(got) is np.float64 and np.isnan(got)
    assert any("invalid value" in str(w.message) for w in recwarn)

    class Holder:
        pass
    holder, stored = Holder(), []

    def keeps(x, t):
        holder.last = t * 2
        stored.append(np.cos(t))
        return x * t
    f = st.compile(keeps)
    _same(f(np.ones(3), np.float64(0.5)), np.full(3, 0.5))
    assert type(holder.last) is np.float64 and holder.last == 1.0
    assert type(stored[-1]) is np.float64 and stored[-1] == np.cos(0.5)


def test_a_function_refused_for_scalar_values_runs_every_value_at_a_lookup():
    """Refused twice for two values of its scalars, a function runs eagerly for every value
    of them through one key entry comparing their types (it captured again for each value,
    2.5 ms a call, until the version limit)."""
    holder = {}

    def keeps(x, t):
        holder["last"] = t
        return x * t
    f = st.compile(keeps)
    x = np.ones(3)
    for t in np.linspace(0.1, 0.9, 9):
        _same(f(x, np.float64(t)), x * np.float64(t))
        assert holder["last"] == t and type(holder["last"]) is np.float64
    info = f.cache_info()
    assert info.compiles == 2 and info.hits[1] >= 6, info
    _same(f(x, 0.5), x * 0.5)  # another scalar type: its own key
    assert f.cache_info().compiles == 3


def test_a_float_computed_from_scalars_and_returned_is_an_output():
    """``return x, t + dt``: the returned Python float is the program's output (converted),
    not a constant read from the scalars: one generic version for every t (it was exact, a
    version per value), the float bit for bit (-0.0, NaN, infinities)."""
    def step(x, t, dt):
        return x + dt * (np.cos(t) - x), t + dt, t
    f = st.compile(step, strict_native=True)
    x = _x(np.float64)
    for t, dt in [(0.0, 0.01), (0.1, 0.01), (0.25, 0.5), (-0.0, -0.0), (np.nan, 1.0),
                  (1e308, 1e308), (3.0, -np.inf)]:
        got, want = f(x, t, dt), step(x, t, dt)
        _same(got[0], want[0])
        for a, b in zip(got[1:], want[1:]):
            assert type(a) is float and np.float64(a).tobytes() == np.float64(b).tobytes()
    assert f.cache_info().compiles == 2, f.cache_info()


@pytest.mark.parametrize("use", [lambda a: np.result_type(a),
                                 lambda a: np.result_type(a, np.float32)])
def test_a_capture_run_again_with_values_keys_them(use):
    """Code that refuses the stand-in (``np.result_type`` of a scalar argument raised
    TypeError) is captured again with the values: they are constants of that capture, so no
    version generic in them may be made from it (one was: 2.0 returned for every later value)."""
    def f(x, a):
        use(a)
        return x * a
    compiled = st.compile(f)
    x = _x()
    for a in (1.5, 2.0, 3.25, 7.0, -0.0):
        _same(compiled(x, a), f(x, a))


def _store_tuple(out, s, i, r):
    out = out.copy()
    out[1] = s, i, r
    return out


def _store_elements(out, s, i, r):
    out = out.copy()
    out[0, 0] = s
    out[2, 1:] = r
    out[-1] = s * 0.5 + i * 0.25
    return out


def _store_numpy_scalar(out, s, i, r):
    out = out.copy()
    out[0, 2] = np.hypot(s, 3.0) * i  # a computed NumPy float64 (strong)
    return out


def _array_of_scalars(out, s, i, r):
    out = out.copy()
    out[1] = np.array([s, i, r])
    out[2] = np.asarray((r, 1.5, s), dtype=out.dtype) * 2
    return out


def _store_into_ints(out, s, i, r):
    out = out.astype(np.int64)
    out[0, 0] = s
    return out


# (a float32 NumPy scalar's arithmetic in Python is not followed: read, another matter)
@pytest.mark.parametrize("fn, kind", [(_store_tuple, k) for k in (float, int, np.float64, np.float32)]
                         + [(fn, k) for fn in (_store_elements, _store_numpy_scalar)
                            for k in (float, int, np.float64)]
                         + [(_array_of_scalars, k) for k in (float, np.float64, np.float32)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scalars_stored_into_a_float_array_are_inputs(fn, dtype, kind):
    """``out[k] = s, i, r``, ``out[0, 0] = s``, ``np.array([s, i, r])``: NumPy's assignment
    (and a float array made of numbers) casts the scalar to the array's dtype, as ``astype``
    does, so the scalars are run-time inputs (an SIR model's row per step made a version per
    value); every value bit-equal to eager, specials included."""
    f = st.compile(fn)
    out = np.arange(12, dtype=dtype).reshape(4, 3)
    values = [(1, 2, 3), (-5, 7, 2 ** 40), (0, -1, 2 ** 52 + 1), (3, 16777217, -9)] \
        if kind is int else [(0.1, 1 / 3, 2.5), (1e-8, -2.5, 3.0000001), (1e30, -0.0, 0.0),
                             (np.inf, 1.0, -1e300), (float("nan"), 2.0, 7.0)]
    for s, i, r in values:
        args = [kind(v) for v in (s, i, r)]
        with np.errstate(all="ignore"):
            want = fn(out, *args)
            got = f(out, *args)
        _same(got, want)
    assert f.cache_info().compiles <= 3  # exact, generic (and another type of argument)


def test_a_scalar_stored_into_an_integer_array_or_used_as_its_index_keeps_its_value():
    """NumPy's conversion of a float stored into an integer array (NaN, out of range) and a
    scalar in the key are not an element-wise cast: their values stay in the key."""
    def at_index(out, k):
        out = out.copy()
        out[k] = 1.0
        return out

    out = np.zeros((4, 3))
    f = st.compile(_store_into_ints)
    for s in (1.5, 2.5, 3.5):
        _same(f(out, s, 0.0, 0.0), _store_into_ints(out, s, 0.0, 0.0))
    assert all(v.generic is None for v in f.versions())
    g = st.compile(at_index)
    for k in (0, 1, 2, -1):
        _same(g(out, k), at_index(out, k))


def _threshold(x, k):
    if k > 100.0:
        return x * 2.0
    return x * k


def _window(x, t, dt, t_end):
    if t + dt > t_end:
        return x - t
    elif t == 0.0:
        return x + 1.0
    return x * -t


def _sine_sign(x, a, b):
    if -a < b * 2.0:
        return x + a
    return x - b if abs(a) == b else x


@pytest.mark.parametrize("fn, values", [
    (_threshold, [1.0, 50.0, 150.0, np.nan, np.inf, -np.inf, -0.0, 100.0, 100.00000000000001]),
    (_window, [0.0, -0.0, 0.5, 1.0, 2.0, np.nan]),
    (_sine_sign, [0.5, -0.5, 3.0, 4.0, np.nan]),
], ids=["threshold", "window", "sine_sign"])
def test_comparisons_of_scalars_are_guards_not_values(fn, values):
    """``if k > 100.0``: the comparison's outcome is recorded (``stax.ir.scalar_predicates``)
    and the scalar stays a run-time input: one generic version per outcome, each applying
    wherever the comparisons come out as they did (NaN, infinities, -0.0, the boundary), the
    results bit-equal to eager at every call."""
    f = st.compile(fn)
    x = _x(np.float64)
    rng = np.random.default_rng(5)
    arity = fn.__code__.co_argcount - 1
    for _ in range(80):
        args = [float(rng.choice(values)) for _ in range(arity)]
        with np.errstate(all="ignore"):
            _same(f(x, *args), fn(x, *args))
    outcomes = {"threshold": 2, "window": 3, "sine_sign": 3}[fn.__name__.strip("_")]
    assert f.cache_info().compiles <= 1 + outcomes  # the first call's exact version
    assert sum(v.generic is not None for v in f.versions()) <= outcomes


def test_alternating_outcomes_take_the_key_entries():
    """Calls alternating between the two sides of ``k > 100`` run each version's key entry
    (the second's falls to the first's before the dispatcher): no signature per call."""
    f = st.compile(_threshold)
    x = _x(np.float64, (3,))
    for k in (1.0, 2.0, 200.0, 300.0):
        f(x, k)
    before = f.cache_info().hits[3]
    for i in range(200):
        k = 50.0 + i if i % 2 else 150.0 + i
        _same(f(x, k), _threshold(x, k))
    assert f.cache_info().hits[3] == before and f.cache_info().compiles == 3


def test_a_lifted_loop_branching_on_a_carried_float_is_exact_at_every_item():
    """``if t > t_switch`` in a loop carrying ``t``: the body's versions per outcome; no item
    runs a version whose comparison came out otherwise (no machine-code item loop)."""
    def switch(x, t_switch, n):
        t = 0.0
        for _ in range(n):
            if t > t_switch:
                x = x * 0.5
            else:
                x = x + 1.0
            t += 0.1
        return x

    f = st.compile(switch)
    x = _x(np.float64, (4,))
    for t_switch in (0.35, 1.0, 5.0, 100.0, 7.25):
        _same(f(x, t_switch, 300), switch(x, t_switch, 300))


_G = np.linspace(0.0, 1.0, 8)


def _with_pair(p, k, m):
    a, b = p
    if k > 0.0:
        return a * m + b
    return a - b * m


def _with_global(k):
    if k > 0.0:
        return _G * k
    return _G - k


def test_predicates_after_a_container_argument_and_with_free_arrays():
    """(probe) A predicate names a flat leaf: after a tuple argument the key entry tested
    another argument (wrong results from the third call); with a module-level array, the
    entry of the other outcome's version got the free arrays twice (TypeError)."""
    a, b = np.arange(4.0), np.ones(4)
    f, g = st.compile(_with_pair), st.compile(_with_global)
    for k, m in [(1.0, 1.0), (2.0, 2.0), (-1.0, 1.0), (-2.0, 3.0), (1.5, -1.0), (-1.5, 2.0),
                 (3.0, 0.5), (-3.0, 0.25)]:
        _same(f((a, b), k, m), _with_pair((a, b), k, m))
        _same(g(k), _with_global(k))


@pytest.mark.parametrize("test", [lambda k: np.exp(k) > 1.0, lambda k: k * k > 1.0,
                                  lambda k: 1.0 / k > 2.0],
                         ids=["numpy_function", "float64_product", "division"])
def test_comparisons_that_may_warn_read_their_scalars(test):
    """(probe) A comparison of a NumPy function of a scalar, of NumPy float64 arithmetic or of
    a division is not a predicate: checking it would warn (again) or raise where the call
    does not; it reads the scalar, so each call warns exactly as eagerly."""
    x = np.arange(8.0)

    def fn(x, k):
        return x * 2.0 if test(k) else x + 1.0

    f = st.compile(fn)
    for k in (0.5, 0.25, 2.0, 800.0, 1e200, 0.1, 1e200, 900.0, 0.0):
        k = np.float64(k)
        counts = []
        for g in (fn, f):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                got = g(x, k)
            counts.append(len(w))
        _same(got, fn(x, k) if counts[0] == 0 else got)
        assert counts[0] == counts[1], (k, counts)


def test_scalars_stored_into_an_argument_in_place_and_into_complex_arrays_are_inputs():
    """(probe) ``out[1] = s, i, r`` and ``out *= s`` on an argument made a version per value
    (the in-place probe of ``*=`` read the scalar; in-place programs were refused generic
    scalars): 2 compiles, the caller's array updated as eagerly; a complex target likewise."""
    def into_argument(out, s, i, r):
        out *= s
        out[1] = s, i, r

    def into_complex(out, s, i):
        out = out.copy()
        out[0] = s
        out[1, 1:] = i, s
        return out

    f, g = st.compile(into_argument), st.compile(into_complex)
    mine, theirs = np.ones((4, 3)), np.ones((4, 3))
    for j in range(12):
        s, i, r = 0.5 + 0.1 * j, -0.2 * j, j / 3
        assert f(mine, s, i, r) is None and into_argument(theirs, s, i, r) is None
        _same(mine, theirs)
    assert f.cache_info().compiles == 2
    for dtype in (np.complex64, np.complex128):
        out = np.zeros((3, 3), dtype)
        for s, i in [(0.5, 1.5), (1e300, -0.0), (np.nan, np.inf), (0.1, 1 / 3), (2.5, -7.0)]:
            with np.errstate(all="ignore"):
                _same(g(out, s, i), into_complex(out, s, i))
    assert g.cache_info().compiles <= 4  # exact and generic, per dtype


def test_new_scalar_values_past_the_limit_get_an_eager_entry():
    """A scalar Python reads (``k % 3``), a new value each call: past the version limit, after
    ``generic.LIMIT_MISSES`` such calls an eager entry comparing the scalars' types answers
    them (a dispatch each: 12.6 us a call of a 2 us function), and other types still miss."""
    from stax.runtime.generic import LIMIT_MISSES

    def g(x, k):
        return x * 2 if k % 3 else x - 1

    f = st.compile(g)
    x = np.ones(3)
    for k in range(2, 12 + LIMIT_MISSES):
        _same(f(x, float(k)), g(x, float(k)))
    misses = f.cache_info().misses
    for k in range(100, 140):
        _same(f(x, float(k)), g(x, float(k)))
    assert f.cache_info().misses == misses
    _same(f(x, 7), g(x, 7))  # an int: another key, a miss
    assert f.cache_info().misses == misses + 1


def _rms_norm(x, eps):
    if eps <= 0.0:
        raise ValueError("eps must be positive")
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)


def test_a_comparison_of_a_keyed_scalar_leaves_sizes_generic():
    """(review) ``if eps <= 0: raise`` with ``eps`` fixed: the comparison reads only a value in
    the key, so the batch size still gets one size-generic version (it made a version per size
    to the limit)."""
    f = st.compile(_rms_norm)
    for n in range(2, 14):  # (a mean: NumPy's sum within rounding)
        x = RNG.standard_normal((n, 16))
        np.testing.assert_allclose(f(x, 1e-5), _rms_norm(x, 1e-5), rtol=1e-14, atol=0)
    assert f.cache_info().compiles == 2


def test_the_past_limit_eager_entry_leaves_compiled_values_to_their_versions():
    """(review) The eager entry installed past the limit hands values that compiled versions
    serve to the dispatcher, which runs them: they stay compiled."""
    from stax.runtime.generic import LIMIT_MISSES

    def g(x, k):
        return x * 2 if k % 3 else x - 1

    f = st.compile(g)
    x = np.ones(3)
    for k in range(8):
        _same(f(x, float(k)), g(x, float(k)))
    for k in range(100, 101 + LIMIT_MISSES):
        _same(f(x, float(k)), g(x, float(k)))
    before = f.cache_info()
    for _ in range(5):
        _same(f(x, 1.0), g(x, 1.0))
    after = f.cache_info()
    assert sum(after.hits.values()) == sum(before.hits.values()) + 5
    assert after.fallbacks == before.fallbacks


def _row_of_numbers(out, s, i):
    out = out.copy()
    out[1] = s, i, 0.1
    out[2] = [1.5, -0.0, 1e300]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.complex64])
def test_rows_of_numbers_and_scalars_are_stored_natively(dtype, caplog, monkeypatch):
    """(probe) ``out[1] = s, i, 0.1`` into float32 and a row of literal numbers: NumPy's float64
    array of the tuple, cast by the assignment (a float32 value widens exactly); they ran as a
    NumPy step. Bit-equal to eager, specials and overflowing constants included."""
    monkeypatch.setenv("STAX_LOGS", "kernels")
    caplog.set_level(logging.INFO, logger="stax")
    f = st.compile(_row_of_numbers)
    out = np.zeros((3, 3), dtype)
    for s, i in [(0.5, 1.5), (1e300, -0.0), (np.nan, np.inf), (0.1, 1 / 3), (2.5, 1e-46),
                 (16777217.0, 3.0000001)]:
        with np.errstate(all="ignore"):
            _same(f(out, s, i), _row_of_numbers(out, s, i))
    if dtype in (np.float32, np.float64):  # (float16 and complex stores: NumPy steps still)
        assert "stax.functional.setitem" not in caplog.text
    assert f.cache_info().compiles == 2


def _where_alpha(x, alpha):
    return np.where(x > 0, alpha, 0.0) + x


def test_a_python_float_chosen_by_where_among_numbers_is_a_run_time_input():
    """A probe's finding: ``np.where(x > 0, alpha, 0.0)`` (no float array among the choices,
    the result float64) compiled a version per ``alpha``, eager past eight."""
    f = st.compile(_where_alpha)
    x = np.random.default_rng(0).standard_normal(100).astype(np.float32)
    for alpha in (0.5, 0.51, -0.0, np.inf, np.nan, 1e300, 0.52, 3.0, 4.0, 5.0, 6.0):
        got, want = f(x, alpha), _where_alpha(x, alpha)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert f.cache_info().versions <= 2 and f.cache_info().fallbacks == 0


def _int_affine(x, k):
    return x * k + 1, x > k, np.maximum(x, k)


def test_a_python_int_with_int64_arrays_is_a_run_time_input():
    """A probe's finding: ``x * k`` of an int64 array and a Python int compiled a version per
    ``k`` (eager past eight); every int the input takes (within +-2**53) is one of int64's, as
    NumPy converts it, and the product wraps as NumPy's does."""
    f = st.compile(_int_affine)
    x = np.arange(-50, 50, dtype=np.int64) * 1000003
    for k in (3, 1000003, -7, 0, 2 ** 53 - 1, -(2 ** 53) + 1, 12, 13, 14, 15, 16):
        for got, want in zip(f(x, k), _int_affine(x, k)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    assert f.cache_info().versions <= 2 and f.cache_info().fallbacks == 0
    for got, want in zip(f(x, 2 ** 60), _int_affine(x, 2 ** 60)):  # past the input's range
        np.testing.assert_array_equal(got, want)
    y = np.arange(10, dtype=np.int32)  # another dtype: a version of its own
    for got, want in zip(f(y, 5), _int_affine(y, 5)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def _squares_apart(count):
    """Doubles whose Python ``s ** 2`` (C's pow) differs from ``s * s``: about 0.09% of them."""
    found = [s for s in RNG.uniform(0.1, 10.0, 40_000).tolist() if s ** 2 != s * s]
    assert len(found) >= count
    return found[:count]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_python_float_powers_follow_their_scalars_bit_for_bit(dtype):
    """``sigma ** 2`` of a scalar argument is C's pow, as CPython computes it (``stax.ir.libm``;
    the kernels call the same function under a name LLVM does not rewrite as ``s * s``): one
    generic version for every value, bit for bit; it was keyed per value (a Gaussian's
    ``sigma`` recompiled at each new one, and ran eagerly past eight)."""
    def g(x, s, e):
        return x / (2 * s ** 2) + (-s) ** 3 - s ** e

    f = st.compile(g)
    x = _x(dtype)
    values = [*_squares_apart(6), 0.5, 3.0, 1e-160, 7.25]
    for k, s in enumerate(values):
        e = (0.5, -1.5, 2, 3.25)[k % 4]
        with np.errstate(all="ignore"):
            got, want = f(x, s, e), g(x, s, e)
        _same(got, want)
    assert f.cache_info().compiles <= 4  # (float e, int e) x (exact, generic)


@pytest.mark.parametrize("s, e, error", [
    (1e200, 2.0, OverflowError), (0.0, -1.0, ZeroDivisionError), (-0.0, -3.0, ZeroDivisionError),
    (-2.0, 0.5, None), (float("nan"), 2.0, None), (float("inf"), -2.0, None),
    (float("-inf"), 3.0, None), (1.0, float("nan"), None), (float("nan"), 0.0, None),
    (-1.0, float("inf"), None), (-8.0, 1.0 / 3.0, None)])
def test_python_float_powers_raise_and_turn_complex_as_eagerly(s, e, error):
    """Where Python raises (overflow, zero to a negative power) or gives a complex number (a
    negative base to a fractional power), the result is not finite but both operands are:
    the call declines and runs eagerly, at every call (the entry's, the third and eighth
    included). Non-finite operands give C's values, which are Python's."""
    def g(x, s, e):
        return x * s ** e

    f = st.compile(g)
    x = _x(np.float64)
    for k in range(10):
        _same(f(x, 1.5 + k, 2.0), g(x, 1.5 + k, 2.0))
        with np.errstate(all="ignore"):
            if error is not None:
                with pytest.raises(error):
                    f(x, s, e)
            else:
                _same(f(x, s, e), g(x, s, e))


def test_a_numpy_float64_power_keeps_its_value_in_the_key():
    """NumPy's scalar power is NumPy's, not C's pow: not followed (its value is read)."""
    def g(x, s):
        return x * s ** 2

    f = st.compile(g)
    x = _x(np.float64)
    for s in _squares_apart(3):
        _same(f(x, np.float64(s)), g(x, np.float64(s)))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.uint64])
def test_a_python_int_with_narrower_integer_arrays_is_a_run_time_input(dtype):
    """A Python int meeting integer arrays of one narrower dtype is converted to it where it
    fits (NEP 50; the arithmetic then wraps as NumPy's) and the call declines where it does not
    (NumPy raises ``OverflowError``; a comparison NumPy answers is its own): one generic version,
    not one per value (eager past eight)."""
    f = st.compile(_int_affine)
    x = (np.arange(-20, 20) % 120).astype(dtype)
    info = np.iinfo(dtype)
    values = [3, 0, 7, 11, int(info.max), int(info.min), 12, 13, 14, 15, 16,
              int(info.max) + 1, int(info.min) - 1, 2 ** 40]
    for k in values:
        try:
            want = _int_affine(x, k)
        except OverflowError:
            with pytest.raises(OverflowError):
                f(x, k)
            continue
        for got, expected in zip(f(x, k), want):
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)
    assert f.cache_info().compiles <= 3  # (an int past 2**53, uint64's maximum: its own)


FLOAT32_SCALAR_MATH = [
    lambda y, t, w: y + t * t,
    lambda y, t, w: y + np.sqrt(t) * 2.5 - t / 3,
    lambda y, t, w: y * (t * w) + w,
    lambda y, t, w: y + np.sin(t) + np.cos(w * t),
]


@pytest.mark.parametrize("fn", FLOAT32_SCALAR_MATH, ids=["square", "sqrt", "weak", "ufunc"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_float32_scalars_in_python_arithmetic_follow_their_arguments(fn, dtype):
    """A probe's finding: ``rhs(y, np.float32(t))`` computing ``t * t`` or ``np.sin(t)`` in
    Python compiled a version per ``t`` (eager past eight), saying the function decided
    something from the value. NumPy float32 scalars are followed as float64 ones are: their
    arithmetic in float32 (Python numbers converted to float32 first, as NEP 50 has it), bit for
    bit; a ufunc within an ulp, as for arrays."""
    f = st.compile(fn, strict_native=True)
    y = np.linspace(-1.0, 1.0, 7).astype(dtype)
    for k in range(12):
        t, w = np.float32(0.1 + 0.37 * k), 1.7 + k
        got, want = f(y, t, w), fn(y, t, w)
        assert got.dtype == want.dtype
        if fn is FLOAT32_SCALAR_MATH[3]:
            np.testing.assert_allclose(got, want, rtol=4e-7, atol=4e-7)
        else:
            _same(got, want)
    assert f.cache_info().compiles <= 2



def _magnitude_power(x, p):
    return np.abs(x) ** p + 1.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_scalar_exponent_is_a_run_time_input_with_numpys_fast_paths(dtype):
    """``np.abs(x) ** p`` with a scalar ``p``: NumPy's loop over a scalar exponent squares at 2,
    takes sqrt at 0.5 and the reciprocal at -1 (bit-exact), and calls pow otherwise. The version
    records which of those ``p`` is (predicates): one version serves every other value with pow
    (within an ulp, as for arrays), each fast value has one of its own with its exact op; the
    exponent was keyed by value (eager past eight). Warnings (``0 ** -1``) are NumPy's."""
    f = st.compile(_magnitude_power)
    x = RNG.standard_normal(300).astype(dtype)
    x[:4] = [0.0, -0.0, np.inf, np.nan]
    values = [2.0, 1.5, 0.5, -1.0, 3.0, 0.25, 2.0, -2.5, 1.0, 0.0, 0.5, 7.0, 9.5, -1.0, 11.0]
    for p in values:
        with np.errstate(all="ignore"):
            want = _magnitude_power(x, p)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = f(x, p)
        with warnings.catch_warnings(record=True) as eager:
            warnings.simplefilter("always")
            _magnitude_power(x, p)
        assert [str(w.message) for w in caught] == [str(w.message) for w in eager]
        assert got.dtype == want.dtype
        if float(p) in (2.0, 0.5, -1.0, 1.0, 0.0):
            _same(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps)
    info = f.cache_info()  # the first value's exact version; 0.5, -1.0 and the rest generic
    assert info.compiles <= 4  # (eleven values; a version per value before)


def test_an_exponent_computed_from_the_data_takes_numpys_fast_paths():
    """``x ** y.sum()``: a 0-d exponent NumPy loops over as a scalar, so a sum of exactly 2.0
    squares (pow differs from the square in the last bit for ~0.1% of doubles)."""
    def g(x, y):
        return x ** y.sum()

    f = st.compile(g)
    x = RNG.uniform(0.1, 10.0, 4000)
    for y in (np.array([1.5, 0.5]), np.array([0.25, 0.25]), np.array([-0.5, -0.5]),
              np.array([1.25, 0.5])):
        got, want = f(x, y), g(x, y)
        if y.sum() in (2.0, 0.5, -1.0):
            _same(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=4e-16)


@pytest.mark.parametrize("value", [2 ** 63, 2 ** 64 - 1, 300, -129])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64])
def test_np_where_wraps_a_python_int_beyond_the_dtype_as_numpy(value, dtype):
    """A review's finding: ``np.where(c, 2**63, x)`` made an internal compiler error (a Python
    int past int64 converted through int64). NumPy wraps such a constant into the result's
    dtype (``np.where(c, 300, x_i8)`` is 44 there): so does the kernel, from ``2**63`` up to
    ``2**64 - 1``."""
    def g(x):
        return np.where(x > 3, value, x)

    x = np.arange(6).astype(dtype)
    _same(st.compile(g, strict_native=True)(x), g(x))


def test_a_version_generic_in_sizes_and_scalars_has_key_entries_per_layout():
    """A probe's finding: ``x * k`` over new sizes and new ``k`` compiled a version generic in
    both, whose calls all went through the dispatcher's signature and lookup (17-38 us a call
    for NumPy's 0.6-0.9). A key entry per layout its calls come with (arrays compared as they
    are, the scalar by type) runs it now; a value an exact version serves at that layout goes
    to the dispatcher, which runs that version."""
    def scale(x, k):
        return x * k, x + k

    f = st.compile(scale)
    f(np.ones(4), 2.5)
    f(np.ones(3), 2.5)  # an exact version at 3 elements for 2.5
    for n in (3, 5, 3, 6):
        x = RNG.standard_normal(n)
        for k in (0.5, 2.5, -1.25, 7.0, 2.5):
            for got, want in zip(f(x, k), scale(x, k)):
                _same(got, want)
    info = f.cache_info()
    assert info.compiles == 3
    assert info.hits[1] >= 7  # each layout's entry from its second call there
    x = RNG.standard_normal(5)
    for k in (0.5, -1.25, 7.0, 3.0, 0.5):  # (2.5 at 5 elements: the version for 2.5)
        for got, want in zip(f(x, k), scale(x, k)):
            _same(got, want)
    assert f.cache_info().hits[3] == info.hits[3] + 1  # the first: another version's entry


def test_a_size_generic_version_with_constant_scalars_has_entries_per_size():
    """A size-generic version whose calls pass a scalar it took as a constant of its code
    (``x * k`` over new sizes, always ``k = 2.5``) had no entry at all: every call went through
    the dispatcher's signature and lookup (13.5 us for NumPy's 0.6). A key entry per layout
    (the scalar compared by value) runs the machine-code entry of the size's instance; another
    value goes to the dispatcher, which compiles for it."""
    def scale(x, k):
        return x * k

    f = st.compile(scale)
    for n in (4, 3, 5):
        f(RNG.standard_normal(n), 2.5)
    assert type(f.versions()[-1].generic).__name__ == "GenericExecutable"
    x = RNG.standard_normal(7)
    for _ in range(3):  # the size's instance made, seen again, then its entry made
        f(x, 2.5)
    before = f.cache_info().hits[3]
    for _ in range(5):
        _same(f(x, 2.5), scale(x, 2.5))
    assert f.cache_info().hits[3] == before
    misses = f.cache_info().misses
    _same(f(x, -1.0), scale(x, -1.0))  # another value: not this version's
    assert f.cache_info().misses == misses + 1


def _porous(u, p, steps):
    for _ in range(steps):
        u = u + 0.01 * u ** p
    return u


@pytest.mark.parametrize("steps", [3, 20], ids=["unrolled", "lifted"])
def test_an_exponent_swept_in_a_loop_is_a_run_time_input(steps):
    """A probe's finding: ``u ** p`` in a loop run at capture recorded the exponent's
    predicates once an iteration, past their limit: the exponent was read, a version per
    ``p`` ("the function reads argument 1's value in Python"). Recorded once now."""
    f = st.compile(_porous)
    u = np.linspace(0.0, 1.0, 20)
    for k in range(20):
        p = 1.0 + 0.1 * k
        np.testing.assert_allclose(f(u, p, steps), _porous(u, p, steps), rtol=1e-14)
    assert f.cache_info().compiles <= 3  # (1.0, then 2.0 and the rest: their own)


def test_an_exponent_argument_used_otherwise_keeps_numpys_conversions():
    """A review's finding: where the exponent is none of the fast ones, every use of it lost
    its weak conversion: ``x_f32 == p`` compared with the float64 ``p`` (NumPy rounds it to
    float32 first) and ``x_i8 + k`` wrapped where NumPy raises ``OverflowError``."""
    def compare(x, p):
        return x ** p, x == p, x > p

    def add(z, x, k):
        return z ** k, x + k

    f, g = st.compile(compare), st.compile(add)
    x32 = np.array([0.1, 0.3, 0.7], dtype=np.float32)
    for p in (0.3, 0.7, 0.3, 1.5, 0.7):
        for got, want in zip(f(x32, p), compare(x32, p)):
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=2e-7)
            if want.dtype == bool:
                _same(got, want)
    z, x8 = np.linspace(0.5, 2.0, 5), np.arange(5, dtype=np.int8)
    for k in (3, 5, 7):
        _same(g(z, x8, k)[1], add(z, x8, k)[1])
    with pytest.raises(OverflowError):
        g(z, x8, 300)


def test_a_scalar_exponent_over_new_sizes_is_generic_in_both():
    """``np.abs(x) ** p`` with new sizes and new ``p`` compiled a version per call (eight,
    then eagerly): the exponent's comparisons (``p == 2`` and the others NumPy's fast paths
    read) refused a version generic in sizes and scalars. Such a version checks them now, as
    one generic in the scalar alone does: ``p = 2`` takes the square (NumPy's, bit for bit),
    other values ``pow``."""
    def power(x, p):
        return np.abs(x) ** p

    f = st.compile(power)
    compiles = []
    for i, n in enumerate((5, 7, 9, 11, 13, 17)):
        x = RNG.standard_normal(n)
        for p in (2.5 + i, 2.0, 1.5 + i, -1.0):
            got, want = f(x, p), power(x, p)
            if p in (2.0, -1.0):
                _same(got, want)
            else:
                np.testing.assert_allclose(got, want, rtol=4e-16, atol=0)
        compiles.append(f.cache_info().compiles)
    # a version per outcome of the comparisons at the first sizes, generic in sizes at the
    # second; none after (before: one a call, eight, then eagerly)
    assert compiles[1] == compiles[-1] <= 7
    assert any(v.generic is not None and v.generic.predicates and v.generic.sized is not None
               for v in f.versions())


def test_an_integer_index_argument_is_an_input():
    """A probe's find: ``x[i] * 2 + x.sum()`` called with ``i = 0..99`` compiled eight
    versions (a getitem operand was no scalar input), then ran eagerly: 443 ms for NumPy's
    0.1. An int index is a traced integer of the key now (``take``: NumPy's bounds and
    negative positions; out of bounds, NumPy's IndexError), a row or column read that way a
    copy at the call's index where nothing else sees the view."""
    def element(x, i):
        return x[i] * 2 + x.sum()

    def row(A, i):
        return A[i] - A.mean(axis=0)

    def column(A, j):
        return A[:, j] * 3

    def pair(A, i, j):
        return A[i, j] + A[j, i]

    rng = np.random.default_rng(5)
    x, A = rng.standard_normal(50), rng.standard_normal((8, 8))
    for fn, base, indices in ((element, x, [0, 3, -1, -50, 49, 7, 12, 25]),
                              (row, A, [0, 5, -2, 7, 3, -8, 1, 4]),
                              (column, A, [0, 3, 7, -1, 2, 4, 5, 6]),
                              (pair, A, [(0, 1), (2, 3), (-1, 4), (5, 5), (1, 0), (3, 2)])):
        f = st.compile(fn)
        for index in indices:
            args = index if isinstance(index, tuple) else (index,)
            got, want = f(base, *args), fn(base, *args)
            # (a float sum is NumPy's accuracy, not its order: its last bit may differ)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)
        assert f.cache_info().compiles <= 2, fn.__name__  # the first value's, then generic
        with pytest.raises(IndexError):
            f(base, *((len(base), 0) if fn is pair else (len(base),)))


def test_an_index_argument_of_a_view_seen_elsewhere_stays_in_the_key():
    """``A[i]`` returned (NumPy's view of ``A``) or updated in place writes through to ``A``:
    such an index keeps its value in the key (a version per value), results NumPy's."""
    def returned(A, i):
        return A[i]

    def updated(A, i):
        r = A[i]
        r *= 2.0
        return A.max()

    rng = np.random.default_rng(6)
    for fn in (returned, updated):
        f = st.compile(fn)
        for i in (0, 2, 1, 3):
            A = rng.standard_normal((4, 3))
            B = A.copy()
            _same(f(A, i), fn(B, i))
            _same(A, B)


def test_a_python_float_beyond_float32_declines_with_numpys_cast_warning():
    """A probe's find: ``x_f32 / k`` with ``k = 1e300`` (an input of the generic version) warned
    "overflow encountered in divide" where NumPy warns "overflow encountered in cast" (and
    raises that under ``over="raise"``): the rounded input's overflow declines the call."""
    def q(x, k):
        return x / k

    f = st.compile(q)
    x = np.arange(1, 6, dtype=np.float32)
    for k in (2.5, 3.5, 4.5):
        _same(f(x, k), q(x, k))
    for fn in (q, f):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(x, 1e300)
        assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == \
            ["overflow encountered in cast"]
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="in cast"):
        f(x, 1e300)


G_OFFSET = 2.0


def test_a_size_instances_entry_checks_the_globals_its_version_read():
    """A review's find: a size-generic version's machine-code entry per size was installed
    without the check of the free values it was traced under: after ``G_OFFSET`` was rebound,
    calls at a size seen before returned the old sum."""
    global G_OFFSET

    def shifted(x, k):
        return x * k + G_OFFSET

    def shifted_sizes(x):
        return x * 2.0 + G_OFFSET

    f, g = st.compile(shifted), st.compile(shifted_sizes)
    try:
        for n, k in ((5, 2.0), (7, 3.0), (7, 3.0), (9, 2), (7, 2.0), (5, 2.0), (7, 2.0)):
            x = np.arange(n, dtype=float)
            _same(f(x, k), shifted(x, k))
            _same(g(x), shifted_sizes(x))
        G_OFFSET = 3.0
        for n in (7, 7, 5, 9):
            x = np.arange(n, dtype=float)
            _same(f(x, 0.5), shifted(x, 0.5))
            _same(g(x), shifted_sizes(x))
    finally:
        G_OFFSET = 2.0


def test_a_uint64_index_past_int64_keeps_numpys_error():
    """A review's find: an ``np.uint64`` index of 2**64 - 1 was taken as int64 -1 (the last
    row) where NumPy raises OverflowError: a uint64 index stays in the key."""
    def row(A, i):
        return A[i] * 2

    f = st.compile(row)
    A = np.arange(64.0).reshape(8, 8)
    for i in (1, 2, 3):
        _same(f(A, np.uint64(i)), row(A, np.uint64(i)))
    for huge in (2**64 - 1, 2**64 - 8):
        with pytest.raises(OverflowError):
            row(A, np.uint64(huge))
        with pytest.raises(OverflowError):
            f(A, np.uint64(huge))


def _selected_times(x, a):
    return (x[x > 0] * a).sum()


def _masked_times(x, a):
    d = x.copy()
    d[d > 0] *= a
    return d


def _periodic(d, L):
    d = d.copy()
    d[d > L / 2] -= L
    d[d < -L / 2] += L
    return (d * d).sum()


def _masked_sign(g, c):
    g = g.copy()
    big = np.abs(g) > c
    g[big] = np.sign(g[big]) * c
    return g


@pytest.mark.parametrize("fn", [_selected_times, _masked_times, _periodic, _masked_sign],
                         ids=["selected", "masked", "periodic", "sign"])
def test_a_scalar_in_work_on_a_masked_selection_is_an_input(fn):
    """A probe's find: the rewrites of ``x[m]`` work to whole arrays (``masked.lift``,
    ``masked_reductions``) dropped the node's record of its scalar arguments, so a generic
    version took the scalar as an input and kept the capture's value: 7, 14, 14, 14 for
    ``(x[x > 0] * a).sum()`` with a = 1..4, every later value wrong."""
    f = st.compile(fn)
    x = np.array([-7.5, -1.0, 2.0, 5.0, 0.25, 9.0, -0.0, 3.0])
    for a in (1.0, 2.0, 3.0, 4.0, 12.0, 1.0, 0.5):
        got, want = f(x, a), fn(x, a)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    assert f.cache_info().compiles == 2


def test_a_rewrite_that_loses_a_scalar_keeps_it_in_the_key(monkeypatch):
    """The safety net: where a rewrite drops the record of a traced call's scalar argument
    (``info["scalar_used"]`` names it, no node does), the scalar is no input: a version per
    value, each right."""
    from stax.trace import masked, masked_reductions
    monkeypatch.setattr(masked, "argument_records", lambda node: {})
    monkeypatch.setattr(masked_reductions, "argument_records", lambda node: {})
    for fn in (_selected_times, _masked_times):
        f = st.compile(fn)
        x = np.array([-1.0, 2.0, 5.0])
        for a in (1.0, 2.0, 3.0, 4.0):
            np.testing.assert_array_equal(f(x, a), fn(x, a))
        assert all(v.generic is None for v in f.versions())


@pytest.mark.parametrize("fn", [
    lambda c, lo: np.full_like(c, lo) + c,
    lambda c, lo: np.full(c.shape, lo) * c,
    lambda c, lo: np.full_like(c, fill_value=lo, dtype=np.float32) + 1,
], ids=["full_like", "full", "full_like_keywords"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_a_fill_value_is_an_input(fn, dtype):
    """``np.full_like(c, lo)`` and ``np.full(shape, lo)`` of a float dtype take a changing fill
    value as an input, cast as NumPy casts it (a probe's sweep compiled a version per value);
    into an integer array its value stays in the key."""
    f = st.compile(fn)
    c = np.linspace(0, 3, 7).astype(dtype)
    for lo in (0.5, 1.5, 2.5, -0.0, 3.0, float("nan"), 1e300, 0.1):
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            want = fn(c, lo)
        with warnings.catch_warnings(record=True) as ours:
            warnings.simplefilter("always")
            got = f(c, lo)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype and np.signbit(got).tolist() == np.signbit(want).tolist()
        assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
    if np.dtype(dtype).kind == "f":
        assert f.cache_info().compiles == 2
