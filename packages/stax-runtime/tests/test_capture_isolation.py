"""Capture is invisible to the rest of the program (issue 10 items 5, 6, 14): random streams of
other threads, warnings, the Python-level answers a traced value gives."""

import threading
import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime import UnsupportedError

X = np.arange(4.0)


@pytest.mark.slow
def test_compiling_while_another_thread_draws_neither_repeats_nor_skips_draws():
    """One thread draws from np.random without pause while this one compiles functions, some of
    which draw too. Every number of the seeded stream is drawn exactly once (a capture that
    saved and restored the global state rewound the other thread: duplicated draws), and the
    functions that do not draw compile natively (they were refused for the other's draws)."""
    np.random.seed(1234)
    stop = threading.Event()
    drawn: list[float] = []

    def drawer():
        while not stop.is_set():
            drawn.append(np.random.random())

    worker = threading.Thread(target=drawer)
    worker.start()
    ones, natives, draws = np.ones(1), [], []
    try:
        for i in range(8):
            plain = stax.compile(lambda x, i=i: x * 2.0 + i)
            plain(X)
            natives.append(plain.versions()[0].native)
            noisy = stax.compile(lambda x, i=i: x * np.random.rand())
            draws += [float(noisy(ones)[0]) for _ in range(3)]  # eager: one draw per call
            assert not noisy.versions()[0].native
    finally:
        stop.set()
        worker.join(timeout=60)
    everything = drawn + draws
    assert len(set(everything)) == len(everything), "a draw was repeated"
    np.random.seed(1234)
    assert sorted(everything) == sorted(np.random.random_sample(len(everything)).tolist())
    assert all(natives)


def test_a_draw_runs_once_per_call_in_the_callers_thread():
    def f(x):
        return x * np.random.rand(), threading.get_ident()

    np.random.seed(8)
    eager = [f(X) for _ in range(3)]
    np.random.seed(8)
    cf = stax.compile(f)
    compiled = [cf(X) for _ in range(3)]
    for (a, ta), (b, tb) in zip(compiled, eager):
        np.testing.assert_array_equal(a, b)
        assert ta == tb == threading.get_ident()
    with pytest.raises(UnsupportedError, match=r"numpy\.random\.rand"):
        stax.compile(f, strict_native=True)(X)


def _divide(x):
    return x / (x - x)


def _warned(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn(*args)
        except ValueError:
            pass
    return [(str(w.message), w.category, w.filename, w.lineno) for w in caught]


def test_floating_point_warnings_are_eagers_own_on_every_call():
    """Capture gives none of its own (the call after it gives eager's), and every warning points
    at the user's line, not at Stax's files."""
    expected = _warned(_divide, X)
    assert expected and all(w[2] == __file__ for w in expected)
    cf = stax.compile(_divide)
    for _ in range(2):
        assert _warned(cf, X) == expected


def test_warnings_before_a_users_error_in_capture_are_given_first():
    def broken(x):
        y = x / 0.0
        return y + np.ones(3)  # shapes (4,) and (3,): NumPy's ValueError, after the warnings

    expected = _warned(broken, X)
    assert expected and all(w[2] == __file__ for w in expected)
    assert _warned(stax.compile(broken), X) == expected
    with pytest.raises(ValueError, match="broadcast"), np.errstate(all="ignore"):
        stax.compile(broken)(X)


def test_warnings_as_errors_raise_as_eager():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="divide by zero"):
            _divide(X)
        with pytest.raises(RuntimeWarning, match="divide by zero"):
            stax.compile(_divide)(X)


def test_branches_on_isinstance_compile_the_eager_branch():
    def f(x):
        s = x.sum()
        if isinstance(x, np.ndarray) and isinstance(s, np.floating):
            return x * 2.0
        return x * 3.0

    np.testing.assert_array_equal(stax.compile(f, strict_native=True)(X), X * 2.0)


def test_type_of_a_traced_value_runs_eagerly():
    def f(x):
        return x * 2.0 if type(x) is np.ndarray else x * 3.0

    cf = stax.compile(f)
    np.testing.assert_array_equal(cf(X), X * 2.0)
    assert not cf.versions()[0].native
    with pytest.raises(UnsupportedError, match=r"calls type\(\)"):
        stax.compile(f, strict_native=True)(X)


@pytest.mark.parametrize("f", [
    lambda x: str(x.sum()), lambda x: f"{x.sum():.2f}", lambda x: repr(x),
    lambda x: "%s" % x.max(),  # noqa: UP031  (the construct under test)
    lambda x: {x.sum(): 1},
], ids=["str", "f-string", "repr", "percent", "dict-key"])
def test_text_of_a_traced_value_is_eagers_text(f):
    cf = stax.compile(f)
    assert repr(cf(X)) == repr(f(X))
    with pytest.raises(UnsupportedError, match="of a traced"):
        stax.compile(f, strict_native=True)(X)


@pytest.mark.parametrize("f", [
    lambda x: np.asarray(x) * 2.0,
    lambda x: np.asanyarray(x) + 1.0,
    lambda x: np.asarray(x, dtype=np.float32) * 2,
    lambda x: np.array(x) + 1.0,
    lambda x: np.ascontiguousarray(x[::2]) * 3.0,
    lambda x: np.asfortranarray(x) - 1.0,
], ids=["asarray", "asanyarray", "asarray-dtype", "array", "ascontiguousarray", "asfortranarray"])
def test_defensive_conversions_of_an_argument_compile(f):
    compiled, want = stax.compile(f, strict_native=True), f(X)
    for _ in range(2):  # the compiling call, then the cached version's
        got = compiled(X)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_a_traced_value_kept_past_its_capture_is_the_eager_value():
    kept = []

    def f(x):
        kept.append(x * 2.0)  # a side effect the compiled version would not repeat
        return x + 1.0

    cf = stax.compile(f)
    for calls in (1, 2):
        np.testing.assert_array_equal(cf(X), X + 1.0)  # the side effect runs eagerly...
        assert len(kept) == calls and all(type(v) is np.ndarray for v in kept)
        np.testing.assert_array_equal(kept[-1], X * 2.0)  # ...and capture's is eager's value
