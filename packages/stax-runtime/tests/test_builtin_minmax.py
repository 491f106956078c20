"""Python's builtin max/min on traced NumPy scalars are recorded as selects, not data gates
(``stax.trace.minmax``): bit for bit Python's choice (the first of equals, NaN only in first
place), natively, with one version for every input; where the chosen item's type could differ
(mixed types) the gates stay, and results are eager's."""

import builtins
import functools
import warnings
from builtins import max as builtin_max

import numpy as np
import pytest

import stax.runtime as stax

ORIGINAL_MAX, ORIGINAL_MIN = builtins.max, builtins.min


def gates(f):
    return [len(v.gates.kinds) if v.gates is not None else 0 for v in f.versions()]


def same(got, want):
    """Eager's type, dtype and bits (NaNs included)."""
    assert type(got) is type(want)
    if isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def eager_and_compiled(fn, f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want, error = fn(*args), None
        except Exception as exc:
            want, error = None, exc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):  # a (possibly) compiling call, then the cached version's
            if error is not None:
                with pytest.raises(type(error)):
                    f(*args)
                continue
            same(f(*args), want)


# -- running maximum, the corpus program -------------------------------------------------------

def running_max(x):
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = max(out[i - 1], x[i])
    return out


def running_min(x):
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = min(out[i - 1], x[i])
    return out


def _inputs(dtype, count=6, n=40):
    rng = np.random.default_rng(11)
    arrays = []
    for _ in range(count):
        if np.dtype(dtype).kind == "f":
            x = rng.choice([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -2.25, 7.0], n).astype(dtype)
        else:
            x = rng.integers(-1000, 1000, n).astype(dtype)
        arrays.append(x)
    return arrays


@pytest.mark.parametrize("fn", [running_max, running_min])
@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.float32, np.uint8, np.int64])
def test_running_extremum_is_native_without_gates(fn, dtype):
    f = stax.compile(fn, strict_native=True)
    for x in _inputs(dtype):
        got = f(x)
        same(got, fn(x))
    assert f.cache_info().versions == 1 and gates(f) == [0]
    version = f.versions()[0]
    assert version.native and not version.artifact.externs  # kernels only


def pairs(x):
    a, b = x[0], x[1]
    return np.array([max(a, b), max(b, a), min(a, b), min(b, a)])


SPECIAL = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0]


def test_python_semantics_of_nan_and_signed_zeros():
    """max(nan, 1.0) is nan, max(1.0, nan) is 1.0; max(0.0, -0.0) is 0.0, max(-0.0, 0.0) is
    -0.0: the first argument unless a later one is strictly greater."""
    f = stax.compile(pairs, strict_native=True)
    for a in SPECIAL:
        for b in SPECIAL:
            x = np.array([a, b])
            same(f(x), pairs(x))
    assert f.cache_info().versions == 1 and gates(f) == [0]


def several(x):
    return np.array([max(x[0], x[1], x[2]), min(x[2], x[0], x[1]), max([x[0], x[1], x[2]]),
                     min((x[1], x[2])), max(x[i] for i in range(3)), max(x[0], np.float64(0.5)),
                     builtins.max(x[1], x[2]), max(*[x[2], x[0]])])


def from_import(x):
    return builtin_max(x[0], x[1]) - builtin_max(x[1], x[2])


@pytest.mark.parametrize("fn", [several, from_import])
def test_forms_of_the_call(fn):
    f = stax.compile(fn, strict_native=True)
    for a in SPECIAL:
        for b in SPECIAL[::2]:
            x = np.array([a, b, 1.0])
            same(f(x), fn(x))
    assert f.cache_info().versions == 1 and gates(f) == [0]


def test_builtins_are_put_back():
    f = stax.compile(running_max)
    f(np.arange(5))
    assert builtins.max is ORIGINAL_MAX and builtins.min is ORIGINAL_MIN
    assert from_import.__globals__["builtin_max"] is ORIGINAL_MAX


# -- Python floats with float64: weak results ------------------------------------------------

def normalize(y):
    return y / (max(1.0, y.max()) + 1e-9)


def clamp_below(y):
    return y - min(0.0, y.min()) * 2


def store(y):
    out = np.zeros(3)
    out[0] = max(0.0, y[0])
    out[1] = min(y[1], -1.5, y[2])
    return out * y[:3]


def clip_each(y):
    out = np.empty_like(y)
    for i in range(y.shape[0]):
        out[i] = min(max(y[i], 0.0), 1.0)  # a weak value among the items of another
    return out


def clamp_twice(y):
    low = max(-1.0, y.min())
    return y * min(low, 0.5, np.float64(0.25)) - max(low + 1.0, 2.0)


LARGE, SMALL = np.linspace(0.0, 3.0, 9), np.linspace(-0.5, 0.5, 9)


@pytest.mark.parametrize("fn", [normalize, clamp_below, store, clip_each, clamp_twice])
@pytest.mark.parametrize("first", [LARGE, SMALL], ids=["traced-first", "float-first"])
def test_python_float_with_float64_has_no_gate(fn, first):
    f = stax.compile(fn, strict_native=True)
    for y in (first, LARGE, SMALL, -LARGE, np.r_[np.nan, LARGE[1:]], np.r_[SMALL[:-1], np.nan]):
        same(f(y), fn(y))
    assert f.cache_info().versions == 1 and gates(f) == [0]


def returned(y):
    return max(1.0, y.max())


def with_float32(y, x):
    return x / max(1.0, y.max())


def to_zero_division(y):
    return 1.0 / (max(0.0, y.max()) - 0.0)


def by_type(y):
    s = max(1.0, y.max())
    return y * (2.0 if isinstance(s, np.floating) else 3.0)


def power(y):
    return y + max(-8.0, y.min()) ** (1 / 3)


X32 = np.linspace(1, 2, 9, dtype=np.float32)


@pytest.mark.parametrize("fn, extra", [(returned, ()), (with_float32, (X32,)),
                                       (to_zero_division, ()), (by_type, ()), (power, ())])
@pytest.mark.parametrize("first", [LARGE, -4 * LARGE], ids=["traced-first", "float-first"])
def test_uses_that_tell_a_python_float_from_float64_are_gated(fn, extra, first):
    """The type of the result is Python's (a float or an np.float64), a float32 operand keeps
    float32 only with a Python float, Python's float arithmetic raises (``1.0 / 0.0``) or makes
    a complex number (``(-8.0) ** (1 / 3)``): each call as eager."""
    f = stax.compile(fn)
    for y in (first, LARGE, -4 * LARGE, -LARGE, first):
        eager_and_compiled(fn, f, y, *extra)
    assert f.cache_info().versions <= 2


def nested_returned(y):
    return min(max(y.min(), -1.0), 0.5)


def test_nested_choices_settle_to_pythons_type():
    """The inner max's Python float (-1.0), the outer's (0.5) or the traced minimum: a float or
    an np.float64, as eager returns."""
    for first in (LARGE, -4 * LARGE, LARGE + 1):
        f = stax.compile(nested_returned)
        for y in (first, LARGE, -4 * LARGE, LARGE + 1, SMALL, first):
            eager_and_compiled(nested_returned, f, y)
        assert f.cache_info().versions <= 3


def overflowing(y):
    return y + max(1e308, y.max()) * 10.0


@pytest.mark.parametrize("mode", ["warn", "raise", "ignore"])
def test_python_float_arithmetic_reports_nothing(mode):
    """1e308 * 10.0 is inf without a report in Python, with one in NumPy: the compiled call runs
    eagerly when the kernel reports it, and capture computes it quietly."""
    y_small, y_large = np.array([1.0, 2.0]), np.array([1.0, 1.5e308])
    for order in ([y_small, y_large], [y_large, y_small]):
        f = stax.compile(overflowing)
        for y in order * 2:
            with np.errstate(over=mode), warnings.catch_warnings(record=True) as eager:
                warnings.simplefilter("always")
                try:
                    want, error = overflowing(y), None
                except FloatingPointError as exc:
                    want, error = None, exc
            with np.errstate(over=mode), warnings.catch_warnings(record=True) as compiled:
                warnings.simplefilter("always")
                if error is not None:
                    with pytest.raises(FloatingPointError):
                        f(y)
                else:
                    same(f(y), want)
            assert [str(w.message) for w in compiled] == [str(w.message) for w in eager]


# -- what keeps the gate ---------------------------------------------------------------------

def float32_with_python_float(x):
    return max(0.5, x.max()) * 1e-50


def int_with_python_int(x):
    return max(x[0], 0) * x


def float_with_python_int(y):
    return min(y[0], 1) + y


def mixed_dtypes(x, y):
    return max(x[0], y[0]) * 2


def zero_d_arrays(x):
    a = np.where(x[0] > 0, x[0], x[1])  # a 0-d array: Python returns that object
    return max(a, x[2]) + x


def reduced_by_c_code(x):
    return functools.reduce(max, [x[0], x[1], x[2]])


def array_arguments(x):
    return max(x)  # iterates x, comparing its elements


def ambiguous(x):
    return max(x, x[::-1])


I32, I64 = np.arange(-3, 5, dtype=np.int32), np.arange(5, dtype=np.int64)


@pytest.mark.parametrize("fn, argsets", [
    (float32_with_python_float, [(np.float32([0.25, 1.5]),), (np.float32([0.25, 0.125]),)]),
    (int_with_python_int, [(I32,), (-I32[::-1],)]),
    (float_with_python_int, [(LARGE,), (-LARGE,)]),
    (mixed_dtypes, [(I32, I64), (I32[::-1], I64)]),
    (zero_d_arrays, [(np.array([1.0, 2.0, 0.5]),), (np.array([-1.0, 2.0, 3.0]),)]),
    (reduced_by_c_code, [(np.array([1.0, 3.0, 2.0]),), (np.array([3.0, 1.0, 2.0]),)]),
    (array_arguments, [(np.array([1.0, 3.0, 2.0]),), (np.array([3.0, np.nan, 2.0]),)]),
])
def test_mixed_types_keep_their_gates(fn, argsets):
    f = stax.compile(fn)
    for args in argsets:
        eager_and_compiled(fn, f, *args)
    assert builtins.sum(gates(f)) > 0


def test_ambiguous_truth_is_numpys_error():
    f = stax.compile(ambiguous)
    with pytest.raises(ValueError, match="ambiguous"):
        f(np.arange(3.0))


def test_a_function_named_max_is_not_the_builtin():
    scope = {"np": np}
    exec("def max(a, b):\n    return a + b\n\n"
         "def f(x):\n    return max(x[0], x[1]) * x\n", scope)
    f = stax.compile(scope["f"], strict_native=True)
    x = np.array([1.0, 2.0])
    for _ in range(2):  # the compiling call, then the cached version's
        same(f(x), x * 3.0)

    def local(x, max=lambda a, b: a - b):
        return max(x[0], x[1]) + x
    g = stax.compile(local)
    for _ in range(2):
        same(g(x), local(x))
