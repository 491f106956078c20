"""NumPy's floating-point error state (``np.errstate``, ``np.seterr``) holds for compiled calls
(issue 10 item 7): under every state a call gives eager NumPy's result or its exception, the same
RuntimeWarnings (category, text, count) and the same ``seterrcall`` calls — through the machine-code
entry, the Python dispatcher and parallel kernels; on the first call (capture) and later ones.
NaN data alone does not make calls eager (``stax.codegen.cpu.fpevents``)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime.versions import MAX_RETRY_GAP, RETRY_EVERY

STATES = {
    "warn": dict(all="warn", under="ignore"),  # NumPy's default
    "raise": dict(all="raise", under="ignore"),
    "ignore": dict(all="ignore"),
    "call": dict(all="call", under="ignore"),
    "log": dict(all="log", under="ignore"),
    "mixed": dict(divide="ignore", over="raise", invalid="warn", under="ignore"),
}


class Recorder(list):
    """A ``seterrcall`` target for the call mode (called) and the log mode (written to)."""

    def __call__(self, kind, flag):
        self.append((kind, flag))

    def write(self, text):
        self.append(text)


def observe(fn, *args, **kwargs):
    """fn(*args, **kwargs) under the current error state: (result, FloatingPointError text,
    warnings as (category, text), seterrcall calls and log lines)."""
    calls = Recorder()
    state = np.geterr()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with np.errstate(call=calls, **state):
            try:
                result, error = fn(*args, **kwargs), None
            except FloatingPointError as exc:
                result, error = None, str(exc)
    return result, error, [(w.category.__name__, str(w.message)) for w in seen], calls


def same_result(got, want, exact=True):
    if got is None or want is None or isinstance(want, str):
        return got == want
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if exact or want.dtype.kind != "f":
        return np.array_equal(got, want, equal_nan=True)
    # transcendental functions: within their ulp bounds (tested with the functions); here the
    # same NaNs and infinities, and values close
    finite = np.isfinite(want)
    return np.array_equal(np.isfinite(got), finite) and np.array_equal(got[~finite], want[~finite],
                                                                      equal_nan=True) and \
        np.allclose(got[finite], want[finite], rtol=1e-5, atol=1e-12)


def assert_like_eager(compiled, fn, args, kwargs=None, exact=True):
    """One call of ``compiled`` against one eager call of ``fn``, under the current state."""
    kwargs = kwargs or {}
    want = observe(fn, *args, **kwargs)
    got = observe(compiled, *args, **kwargs)
    assert got[1:] == want[1:], f"(error, warnings, calls): compiled {got[1:]}, eager {want[1:]}"
    assert same_result(got[0], want[0], exact), f"compiled {got[0]!r}, eager {want[0]!r}"


def big(dtype):
    return np.finfo(dtype).max / 2


# program -> (function, inputs for a float dtype or None, result exact (else transcendental))
PROGRAMS = {
    "divide": (lambda x, y: x / y,
               lambda dt: (np.array([1, 2, 0, 3], dt), np.array([0, 1, 0, 3], dt)), True),
    "log": (lambda x, y: np.log(x) + y,
            lambda dt: (np.array([0, 1, -1, 2], dt), np.ones(4, dt)), False),
    "sqrt": (lambda x, y: np.sqrt(x) * y, lambda dt: (np.array([4, -1, 9, 1], dt), np.ones(4, dt)),
             True),
    "arcsin": (lambda x, y: np.arcsin(x - y),
               lambda dt: (np.array([0.5, 3, 0, 1], dt), np.ones(4, dt)), False),
    "exp": (lambda x, y: np.exp(x) - y, lambda dt: (np.array([1, 1000, 0, 2], dt), np.ones(4, dt)),
            False),
    "multiply": (lambda x, y: x * y, lambda dt: (np.full(4, big(dt), dt), np.array([1, 4, 0, 3], dt)),
                 True),
    "inf - inf": (lambda x, y: (x * 4) - (y * 4),
                  lambda dt: (np.full(4, big(dt), dt), np.full(4, big(dt), dt)), True),
    "sum": (lambda x, y: (x * y).sum(), lambda dt: (np.full(8, big(dt), dt), np.ones(8, dt)), False),
    "where": (lambda x, y: np.where(x > 0, np.log(x), y),
              lambda dt: (np.array([0, 1, 2, 3], dt), np.zeros(4, dt)), False),
    "cast": (lambda x, y: x.astype(np.float32) + y.astype(np.float32),
             lambda dt: (np.array([1, 1e300, 2, 3], np.float64), np.ones(4, np.float64)), True),
    "cumsum": (lambda x, y: np.cumsum(x * y), lambda dt: (np.full(4, big(dt), dt), np.ones(4, dt)),
               True),
}
INTEGER_PROGRAMS = {
    "floor_divide": lambda x, y: x // y,
    "remainder": lambda x, y: x % y,
    "MIN // -1": lambda x, y: (x - 1) // y,
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_state_through_the_entry_and_the_dispatcher(name, dtype):
    fn, make, exact = PROGRAMS[name]
    x, y = make(dtype)
    compiled = stax.compile(fn)
    with np.errstate(all="ignore"):
        compiled(x, y)  # compile (the first call is tested on its own)
    assert compiled.versions()[0].entry is not None, "the machine-code entry runs these calls"
    for state in STATES.values():
        with np.errstate(**state):
            for _ in range(2):
                assert_like_eager(compiled, fn, (x, y), exact=exact)  # the entry
                assert_like_eager(compiled, fn, (x,), {"y": y}, exact=exact)  # the dispatcher
    # no event here: native again once the pause its declines above earned ends (a paused
    # version's calls run eagerly through its key's entry, counted as skipped, not as
    # fallbacks: checking fallbacks alone passed while every call ran eagerly)
    version, ones = compiled.versions()[0], (np.ones_like(x), np.ones_like(y))
    with np.errstate(all="ignore"):
        for _ in range(MAX_RETRY_GAP + RETRY_EVERY):
            assert_like_eager(compiled, fn, ones, exact=exact)
            if version.skipped == version.declines == 0:
                break
        before = compiled.cache_info()
        for _ in range(5):
            assert_like_eager(compiled, fn, ones, exact=exact)
        after = compiled.cache_info()
    assert version.skipped == version.declines == 0
    assert after.fallbacks == before.fallbacks and after.hits[1] == before.hits[1] + 5


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("name", sorted(INTEGER_PROGRAMS))
def test_integer_division_by_zero(name, dtype):
    fn = INTEGER_PROGRAMS[name]
    info = np.iinfo(dtype)
    x = np.array([7, info.min + 1, 5, info.max], dtype)
    y = np.array([0, -1 if info.min else 1, 2, 3], dtype)
    compiled = stax.compile(fn)
    for state in STATES.values():
        with np.errstate(**state):
            for _ in range(2):
                assert_like_eager(compiled, fn, (x, y))
    with np.errstate(all="raise"):  # no zero divisor, no MIN // -1: native, no exception
        before = compiled.cache_info().fallbacks
        assert_like_eager(compiled, fn, (x, np.full(4, 3, dtype)))
        assert compiled.cache_info().fallbacks == before


@pytest.mark.parametrize("state", sorted(STATES))
def test_the_first_call_reports_once(state, monkeypatch):
    """Capture runs NumPy on the examples: its reports are not given a second time."""
    monkeypatch.setenv("STAX_CACHE_DIR", "off")  # a capture every time, none from the disk

    def fn(x):
        return np.log(x) * 2 + 1 / x
    x = np.array([0.0, 1.0, -1.0])
    with np.errstate(**STATES[state]):
        compiled = stax.compile(fn)
        assert_like_eager(compiled, fn, (x,))
        assert_like_eager(compiled, fn, (x,))


def test_the_print_mode(monkeypatch, capfd):
    """NumPy's print mode writes to stderr: once per eager call, capture included."""
    monkeypatch.setenv("STAX_CACHE_DIR", "off")

    def fn(x):
        return np.sqrt(x) + 1 / x
    x = np.array([0.0, -1.0])
    with np.errstate(all="print", under="ignore"):
        fn(x)
        want = capfd.readouterr().err
        compiled = stax.compile(fn)
        for _ in range(2):
            compiled(x)
            assert capfd.readouterr().err == want
    assert want.count("Warning:") == 2


def test_reports_before_a_user_error_in_capture(monkeypatch):
    """A capture that ends in the user's own error gives what it held first, as eager does."""
    monkeypatch.setenv("STAX_CACHE_DIR", "off")

    def fn(x):
        _ = np.log(x)
        raise ValueError("the user's error")
    x = np.array([0.0, 1.0])
    for state in ("warn", "call", "log"):
        with np.errstate(**STATES[state]):
            def run(f):
                try:
                    f(x)
                except ValueError:
                    return "raised"
            assert_like_eager(lambda: run(stax.compile(fn)), lambda: run(fn), ())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_parallel_kernels(dtype):
    """Chunks on several threads report into one word; an event in the last chunk counts."""
    def fn(x):
        return np.exp(x) * 2
    x = np.zeros(1 << 20, dtype)
    compiled = stax.compile(fn)
    with np.errstate(all="ignore"):
        compiled(x)
    artifact = compiled.versions()[0].artifact
    assert any(k.parallel for k in artifact.kernels)
    for index in (0, x.size // 2 + 3, x.size - 1):
        x = np.zeros(1 << 20, dtype)
        x[index] = 1000
        for state in ("warn", "raise", "ignore", "call"):
            with np.errstate(**STATES[state]):
                assert_like_eager(compiled, fn, (x,), exact=False)


def test_the_python_thread_pool(tmp_path):
    """STAX_THREADS=python: chunks run on Python threads (in a process of its own)."""
    program = (
        "import numpy as np, stax.runtime as stax\n"
        "f = stax.compile(lambda x: np.log(x) * 2)\n"
        "x = np.ones(1 << 20); f(x)\n"
        "assert any(k.parallel for k in f.versions()[0].artifact.kernels)\n"
        "x[-1] = 0\n"
        "with np.errstate(divide='raise'):\n"
        "    try:\n"
        "        f(x); print('no error')\n"
        "    except FloatingPointError as e:\n"
        "        print('raised', e)\n"
        "with np.errstate(divide='ignore'):\n"
        "    print('ignored', f(x)[-1])\n")
    env = {**os.environ, "STAX_THREADS": "python", "STAX_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["raised divide by zero encountered in log", "ignored -inf"]


@pytest.mark.parametrize("fn", [
    lambda x, w: x > 0,
    lambda x, w: np.maximum(x, 0),
    lambda x, w: (np.maximum(x + w, 0) * 2).sum(-1),
    lambda x, w: x * 2 + w,
    lambda x, w: np.where(np.isnan(x), 0, x).sum(),
    lambda x, w: np.exp(x - x.max(-1, keepdims=True)),
    lambda x, w: np.sqrt(np.abs(x)) / (w + 10),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_and_inf_data_stay_native(fn, dtype):
    """Non-finite data without an event (NaN through comparisons, maximum, arithmetic; inf in
    sums): NumPy is silent, and so are the compiled calls, which do not run eagerly."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype(dtype)
    w = rng.standard_normal((8, 16)).astype(dtype)
    x[1, 3], x[4, 0], x[6, 6] = np.nan, np.inf, -np.inf
    compiled = stax.compile(fn)
    with np.errstate(all="raise", under="ignore"):
        for _ in range(3):
            assert_like_eager(compiled, fn, (x, w), exact=False)
    assert compiled.cache_info().fallbacks == 0
    # where NumPy raises (inf - inf), each call above was a capture that raised: compiled on the
    # same data quietly first, the cached version's calls must raise as NumPy does too
    warm = stax.compile(fn)
    with np.errstate(all="ignore"):
        warm(x, w)
    with np.errstate(all="raise", under="ignore"):
        for _ in range(2):
            assert_like_eager(warm, fn, (x, w), exact=False)
    assert warm.cache_info().compiles == 1


def test_underflow_runs_eagerly_while_it_is_not_ignored():
    """Kernels do not detect underflow: while the state asks for it, calls run eagerly."""
    def fn(x):
        return x * np.float32(1e-30)
    x = np.array([1e-20, 1.0], np.float32)
    compiled = stax.compile(fn)
    compiled(x)
    before = compiled.cache_info().fallbacks
    for state in (dict(under="warn"), dict(under="raise"), dict(all="warn")):
        with np.errstate(**state):
            assert_like_eager(compiled, fn, (x,))  # through the entry: it reads the state
            assert_like_eager(compiled, fn, (), {"x": x})
    assert compiled.cache_info().fallbacks == before + 6
    assert_like_eager(compiled, fn, (x,))  # under is ignored again: native
    assert compiled.cache_info().fallbacks == before + 6


def test_underflow_of_single_ieee_operations_is_seen():
    """A kernel of single IEEE operations reports underflow from the CPU's flags (x86-64), exactly
    as NumPy's: calls without it stay native while the state heeds underflow, and calls with it
    stay native while the state ignores it (through the entry too)."""
    def fn(x):
        return x * np.float32(1e-30) + 1
    tiny, ordinary = np.array([1e-20, 1.0], np.float32), np.array([2.0, 1.0], np.float32)
    compiled = stax.compile(fn)
    compiled(ordinary)
    version = compiled.versions()[0]
    if version.artifact.underflow_unseen:
        pytest.skip("this CPU's exception flags are not read (x86-64 only)")
    assert version.entry is not None
    for x in (tiny, ordinary):
        before = compiled.cache_info().fallbacks
        assert_like_eager(compiled, fn, (x,))  # NumPy's default state: underflow ignored
        assert compiled.cache_info().fallbacks == before
    with np.errstate(under="warn"):
        before = compiled.cache_info().fallbacks
        assert_like_eager(compiled, fn, (ordinary,))
        assert compiled.cache_info().fallbacks == before
        assert_like_eager(compiled, fn, (tiny,))
        assert compiled.cache_info().fallbacks == before + 1


def test_transcendental_kernels_run_eagerly_while_underflow_is_heeded():
    """A polynomial may make a tiny result without the CPU's flag: such a plan declines every
    call while NumPy's state does not ignore underflow, and runs natively again after."""
    def fn(x):
        return np.exp(x)
    x = np.array([1.0, 2.0])
    compiled = stax.compile(fn)
    compiled(x)
    assert compiled.versions()[0].artifact.underflow_unseen
    before = compiled.cache_info().fallbacks
    with np.errstate(under="warn"):
        assert_like_eager(compiled, fn, (x,), exact=False)
        assert_like_eager(compiled, fn, (-1000 * x,), exact=False)
    assert compiled.cache_info().fallbacks == before + 2
    assert_like_eager(compiled, fn, (x,), exact=False)
    assert compiled.cache_info().fallbacks == before + 2


def test_seterr_and_seterrcall():
    def fn(x):
        return 1 / x
    x = np.array([0.0, 2.0])
    compiled = stax.compile(fn)
    compiled(np.ones(2))
    calls = []
    old_call = np.seterrcall(lambda kind, flag: calls.append(kind))
    old = np.seterr(divide="call")
    try:
        got = compiled(x)
        assert calls == ["divide by zero"]
        np.seterr(divide="raise")
        with pytest.raises(FloatingPointError, match="divide by zero encountered in divide"):
            compiled(x)
    finally:
        np.seterr(**old)
        np.seterrcall(old_call)
    np.testing.assert_array_equal(got, [np.inf, 0.5])


def test_errstate_inside_the_function():
    """An errstate block in the compiled function: the call's events run it eagerly, where that
    block decides (the common ``divide='ignore'`` around a log)."""
    def fn(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x > 0, np.log(x), 0.0)
    x = np.array([0.0, 1.0, 2.0])
    compiled = stax.compile(fn)
    for state in ("warn", "raise"):
        with np.errstate(**STATES[state]):
            assert_like_eager(compiled, fn, (x,))


def _warns_inside(x):
    with np.errstate(divide="warn"):
        return np.log(x) * 2


def _raises_inside(x):
    with np.errstate(invalid="raise"):
        return np.sqrt(x)


def _calls_a_helper_that_raises(x):
    return _raises_inside(x) + 1


@pytest.mark.parametrize("fn, x", [(_warns_inside, [0.0, 1.0]), (_raises_inside, [-1.0, 4.0]),
                                   (_calls_a_helper_that_raises, [-1.0, 4.0])],
                         ids=["warn", "raise", "helper"])
@pytest.mark.parametrize("state", ["ignore", "warn", "raise"])
def test_an_inner_block_stricter_than_the_caller(fn, x, state):
    """The caller ignores, the function's own block warns or raises: the kernels cannot see the
    block, so such a function's calls heed every event (``errstate.heeding_all``) and one with
    an event runs eagerly, where the block decides (the call stood, silent, before: a probe)."""
    compiled = stax.compile(fn)
    x = np.array(x)
    with np.errstate(**STATES[state]):
        for _ in range(2):
            assert_like_eager(compiled, fn, (x,))
    np.testing.assert_array_equal(compiled(np.abs(x) + 1), fn(np.abs(x) + 1))


def test_a_numpy_step_and_a_kernel_report_once():
    """An extern NumPy step's events (a cast of NaN from float16 to a narrow int: NumPy's
    steps) are held while the kernels run: a declined call gives each warning once, from its
    eager run."""
    def fn(x, y):
        return x.astype(np.float16).astype(np.int16) // y
    x = np.array([np.nan, 4.0])
    y = np.array([2, 0])
    compiled = stax.compile(fn)
    with np.errstate(all="ignore"):
        compiled(x, y)
    assert compiled.versions()[0].artifact.externs
    for state in STATES.values():
        with np.errstate(**state):
            assert_like_eager(compiled, fn, (x, y))


def test_threads_each_with_their_own_state():
    """The error state is per thread: one compiled function called from threads in different
    states behaves in each as NumPy does there (states without warnings: catching warnings is
    not thread-safe)."""
    def fn(x):
        return np.sqrt(x) + 1
    x = np.array([-1.0, 4.0])
    compiled = stax.compile(fn)
    compiled(np.ones(2))
    wrong = []

    def outcome(f, state):
        calls = []
        with np.errstate(call=lambda kind, flag: calls.append(kind), **STATES[state]):
            try:
                return f(x).tolist(), None, calls
            except FloatingPointError as exc:
                return None, str(exc), calls

    def work(state):
        for _ in range(50):
            want, got = outcome(fn, state), outcome(compiled, state)
            if repr(got) != repr(want):
                wrong.append((state, got, want))
    threads = [threading.Thread(target=work, args=(s,)) for s in ("raise", "ignore", "call")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not wrong


def special_values(dtype):
    info = np.finfo(dtype)
    return np.array([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -3.0, info.max / 2, -info.max, info.max,
                     np.inf, -np.inf, np.nan, info.tiny / 4, info.tiny * 8, 89.0, 710.0], dtype)


UNARY = ["negative", "absolute", "sqrt", "floor", "ceil", "trunc", "rint", "exp", "log", "tanh",
         "sin", "cos", "tan", "log2", "log10", "log1p", "expm1", "exp2", "sinh", "cosh", "cbrt",
         "arctan", "arcsin", "arccos", "arcsinh", "arccosh", "arctanh", "square", "reciprocal",
         "spacing", "sign", "deg2rad", "rad2deg", "fabs", "positive"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "fmin",
          "copysign", "floor_divide", "remainder", "fmod", "hypot", "power", "arctan2",
          "logaddexp", "logaddexp2", "nextafter", "heaviside"]


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_function_on_special_values(dtype):
    """Each element-wise function, one special value (or pair) per call: the warnings of eager
    NumPy, always (a kernel that misses an event would return silently)."""
    values = special_values(dtype)
    one = np.ones(1, dtype)
    wrong = []
    with np.errstate(all="warn", under="ignore"):
        for name in UNARY + BINARY:
            ufunc = getattr(np, name)
            unary = name in UNARY
            fn = (lambda x: ufunc(x)) if unary else (lambda x, y: ufunc(x, y))
            compiled = stax.compile(fn)
            compiled(*([one] if unary else [one, one]))
            pairs = [(v,) for v in values] if unary else [(a, b) for a in values for b in values]
            for pair in pairs:
                args = [np.array([v], dtype) for v in pair]
                want, got = observe(fn, *args), observe(compiled, *args)
                if got[1:] != want[1:] or not same_result(got[0], want[0], exact=False):
                    wrong.append((name, pair, got, want))
    assert not wrong, wrong[:5]


def test_generators_draw_once_when_a_call_is_declined_or_run_again():
    """A call that declines after drawing from a generator argument (then runs eagerly), or
    runs again with the precise kernels (NaN data), leaves the generator as one eager call."""
    def fn(g, x):
        return np.log(x + g.standard_normal(x.shape) * 0)
    compiled = stax.compile(fn)
    mine, theirs = np.random.default_rng(1), np.random.default_rng(1)
    for x in (np.ones(3), np.array([0.0, 1.0, 2.0]), np.array([np.nan, 1.0, 2.0]), np.ones(3)):
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(compiled(mine, x), fn(theirs, x))
        with np.errstate(divide="warn", invalid="warn", under="ignore"):
            assert_like_eager(lambda: compiled(mine, x), lambda: fn(theirs, x), ())
        assert mine.standard_normal() == theirs.standard_normal()
    assert compiled.cache_info().fallbacks >= 1


@pytest.mark.parametrize("kind", ["sum", "prod"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reductions_over_non_finite_data(kind, dtype):
    """Sums and products that meet NaN or infinities: exactly NumPy's events (an overflow behind
    a NaN, inf - inf, inf * 0), none for a NaN alone, the call native unless the state heeds one."""
    def fn(x):
        return getattr(x * 1, kind)(axis=-1)
    big = np.finfo(dtype).max / 2
    rows = [[1, 2, 3, 4], [big, big, big, np.nan], [np.inf, -np.inf, 1, 2], [np.inf, 0, 1, 2],
            [np.nan, 1, 2, 3], [np.inf, 1, 2, 3]]
    compiled = stax.compile(fn)
    compiled(np.ones((1, 4), dtype))
    for row in rows:
        x = np.array([row], dtype)
        for state in ("warn", "raise", "ignore"):
            with np.errstate(**STATES[state]):
                assert_like_eager(compiled, fn, (x,), exact=False)


def quiet_root(x):
    with np.errstate(invalid="ignore"):
        return np.where(x > 0, np.sqrt(x), 0.0)


def test_a_version_declining_every_call_runs_eagerly_at_once_until_it_stands_again():
    """A function whose events NumPy reports at every call (its own ``np.errstate`` block: any
    event declines) ran its program, then NumPy, every call. After ``DECLINE_STREAK`` declines
    in a row the key runs eagerly at once, the program tried again after 32, 64, ... calls;
    the first call it serves puts it back."""
    from stax.runtime import versions as api

    f = stax.compile(quiet_root)
    negative = np.linspace(-1.0, 1.0, 1001)
    for _ in range(10):
        np.testing.assert_array_equal(f(negative), quiet_root(negative))
    (version,) = f.versions()
    assert version.declines == api.DECLINE_STREAK and version.skipped == 10 - api.DECLINE_STREAK
    positive = negative + 2.0
    for _ in range(api.RETRY_EVERY):
        np.testing.assert_array_equal(f(positive), quiet_root(positive))
    assert version.declines == 0 and version.skipped == 0  # the retry at 32 stood
    hits = sum(f.cache_info().hits.values())
    np.testing.assert_array_equal(f(positive), quiet_root(positive))
    assert sum(f.cache_info().hits.values()) == hits + 1 and version.skipped == 0


def overflowing(x):
    return x * x * 3.0


def test_a_version_whose_data_make_every_call_decline_is_paused_too():
    """A probe's finding: data that make every call decline (an overflow NumPy warns about at
    each call, a diverging iteration) ran the program, then NumPy, at every call: 24 us for
    NumPy's 5. ``DATA_DECLINE_STREAK`` declines in a row pause the version as an errstate
    block's do (retried after 32, 64, ... calls); a call it serves puts it back."""
    from stax.runtime import versions as api

    f = stax.compile(overflowing)
    huge, fine = np.full(100, 1e200), np.linspace(-1.0, 1.0, 100)
    np.testing.assert_array_equal(f(fine), overflowing(fine))
    with np.errstate(over="ignore"):
        want = overflowing(huge)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(20):
            np.testing.assert_array_equal(f(huge), want)
    assert len(caught) == 20  # NumPy's own warning, once a call
    (version,) = f.versions()
    assert version.declines == api.DATA_DECLINE_STREAK
    assert version.skipped == 20 - api.DATA_DECLINE_STREAK
    for _ in range(api.RETRY_EVERY):
        np.testing.assert_array_equal(f(fine), overflowing(fine))
    assert version.declines == 0 and version.skipped == 0


def _gated_log(x, y):
    k = int(np.argmax(x))  # a data gate, replayed in NumPy before each call
    return np.log(y[k])


def test_a_gated_version_whose_data_make_every_call_decline_is_paused_and_its_costs_told():
    """A probe's findings: with data gates, a version declining every call (``log`` of a
    negative: invalid) replayed its gates, ran, then NumPy ran the call, at every call (70 us
    for NumPy's 2), and at the 36th call the timing of its replays, which had no compiled call
    to show, raised ``ValueError: min() arg is an empty sequence``. Such a version is paused as
    any other (a call of another branch meanwhile runs eagerly: right, as every paused call)."""
    from stax.runtime import versions as api

    f = stax.compile(_gated_log)
    x, negative = np.arange(5.0), -np.ones(5)
    with np.errstate(invalid="ignore"):
        want = _gated_log(x, negative)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(60):
            np.testing.assert_array_equal(f(x, negative), want)
    assert len(caught) == 60  # NumPy's own warning, once a call
    (version,) = f.versions()
    assert version.declines >= api.DATA_DECLINE_STREAK and version.skipped > 0
    positive = np.arange(1.0, 6.0)
    for _ in range(api.RETRY_EVERY * 2):
        np.testing.assert_array_equal(f(x, positive), _gated_log(x, positive))
    assert version.declines == 0 and version.skipped == 0  # the retry came, and stood


def _scaled_overflowing(x, s):
    return x * s, x + 1e300  # float32 + a huge Python float: NumPy's overflow in cast


def test_a_version_with_a_scalar_key_entry_declining_every_call_is_paused_too():
    """A probe's finding: with a scalar argument the version's key entry passes the arrays to
    its machine-code entry, and the streak of declines was never counted there (the key entry
    counts the calls it hands on): program then NumPy at every call, 20 us for NumPy's 2. The
    machine-code entry's hits (calls that stood) tell the streak now."""
    from stax.runtime import versions as api

    f = stax.compile(_scaled_overflowing)
    x = np.ones(5, np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(40):
            got, want = f(x, 2.0), _scaled_overflowing(x, 2.0)
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)
    assert len(caught) == 80  # NumPy's own warning, once a call (of each of the two runs)
    (version,) = f.versions()
    assert version.declines >= api.DATA_DECLINE_STREAK and version.skipped > 0


def test_the_calls_a_declining_version_skips_cost_a_lookup_not_a_dispatch():
    """While the version skips calls (``eager_for_now``), each went through the whole dispatch
    (a ``np.errstate`` safe division: 19.8 us a call, NumPy 8.5): the key's eager entry answers
    them now, counted, and the dispatch comes back at the retry."""
    from stax.runtime import versions as api

    f = stax.compile(quiet_root)
    negative = np.linspace(-1.0, 1.0, 1001)
    for _ in range(api.DECLINE_STREAK + 1):  # the last one starts the skipping
        f(negative)
    (version,) = f.versions()
    hits = sum(f.cache_info().hits.values())
    skipped = version.skipped
    for _ in range(10):
        np.testing.assert_array_equal(f(negative), quiet_root(negative))
    assert sum(f.cache_info().hits.values()) == hits  # the entry answered
    assert version.skipped == skipped + 10  # and counted them as skips
    positive = negative + 2.0
    for _ in range(api.RETRY_EVERY):
        np.testing.assert_array_equal(f(positive), quiet_root(positive))
    assert version.declines == 0 and version.skipped == 0  # the retry came, and stood


def _raising_ratio(x, y):
    with np.errstate(all="raise"):
        return x / y


def _warning_square(x):
    with np.errstate(over="warn"):
        return x * x


@pytest.mark.parametrize("fn, args", [
    (_raising_ratio, (np.array([1.0, 2.0]), np.array([0.0, 1.0]))),
    (_warning_square, (np.array([1e200, 2.0]),))], ids=["raise", "warn"])
def test_a_block_stricter_than_an_ignoring_caller_on_exact_events(fn, args):
    """A review's finding (against a change reverted the same session): with a machine-code
    entry, a function's own ``np.errstate(all="raise")`` around a division the kernels report
    exactly was decided by the caller's ``ignore``, silently. Such functions keep no entry:
    their calls heed every event (``heeding_all``) and run eagerly on one."""
    compiled = stax.compile(fn)
    clean = tuple(np.abs(a) + 1.0 for a in args)
    for _ in range(3):
        compiled(*clean)
    with np.errstate(all="ignore"):
        for _ in range(3):
            assert_like_eager(compiled, fn, args)


def _underflow_raising_product(x, y):
    with np.errstate(under="raise"):
        return x * y + 1.0


def _underflow_raising_exp(x, y):
    with np.errstate(all="raise"):
        z = np.exp(x) * y
    return z.sum()


@pytest.mark.parametrize("fn", [_underflow_raising_product, _underflow_raising_exp],
                         ids=["exact", "transcendental"])
@pytest.mark.parametrize("caller", ["default", "ignore"])
def test_a_block_heeding_underflow_decides_it_whatever_the_caller(fn, caller):
    """A review's finding: ``np.errstate(under="raise")`` inside the function never raised after
    the first call, as the caller's default state ignores underflow and calls heeded what the
    caller heeds. The capture notes a block heeding underflow (``info["heeds_underflow"]``) and
    calls heed it: an underflowing call runs eagerly and the block raises, every call (the third
    and eighth included), whichever kernels compute it."""
    compiled = stax.compile(fn)
    n = 257
    cases = [(np.full(n, -800.0), np.ones(n)), (np.full(n, 1e-160), np.full(n, 1e-160)),
             (np.linspace(-1.0, 1.0, n), np.ones(n))]
    state = {} if caller == "default" else {"all": "ignore"}
    with np.errstate(**state):
        for k in range(12):
            assert_like_eager(compiled, fn, cases[k % 3], exact=False)


def _underflow_ignoring_ratio(x, y):
    with np.errstate(divide="ignore", under="ignore"):
        return np.where(y != 0, x / y, 0.0)


def test_a_block_not_heeding_underflow_keeps_calls_native():
    """The other side: a block that leaves underflow ignored heeds nothing new, so calls under
    the default state stand natively (the common ``np.errstate(divide="ignore")`` idiom)."""
    compiled = stax.compile(_underflow_ignoring_ratio)
    x, y = np.linspace(1e-300, 1.0, 64), np.linspace(-1.0, 1e300, 64)
    for _ in range(10):
        assert_like_eager(compiled, _underflow_ignoring_ratio, (x, y))
    (version,) = compiled.versions()
    assert version.native and version.declines == 0 and version.skipped == 0


class _Log:
    def __init__(self):
        self.lines = []

    def write(self, text):
        self.lines.append(text)


def _logging_square(x):
    with np.errstate(under="log"):
        return x * x


def _calling_square(x, seen):
    with np.errstate(under="call", call=lambda kind, flag: seen.append(kind)):
        return x * x


def test_a_block_logging_or_calling_on_underflow_decides_it_too():
    """A review's finding: capture runs the function under its relay of the caller's state,
    ``log`` (or ``call``) for each category the caller does not raise on, so a block setting
    underflow to ``log`` (or ``call``, captured under a caller's ``call``) looked unchanged and
    its calls never logged. Where a block runs with the relay's own mode the function's code
    tells (``code_reads.heeds_underflow``: it passes ``under=``); ``all="ignore"`` heeds nothing."""
    log, tiny, fine = _Log(), np.full(8, 1e-200), np.ones(8)
    previous = np.seterrcall(log)
    try:
        f = stax.compile(_logging_square)
        for x in (fine, tiny, fine, tiny, tiny, tiny, tiny, tiny, tiny, tiny):
            log.lines.clear()
            _logging_square(x)
            eager = len(log.lines)
            log.lines.clear()
            np.testing.assert_array_equal(f(x), x * x)
            assert len(log.lines) == eager, (x[0], len(log.lines), eager)
    finally:
        np.seterrcall(previous)
    g = stax.compile(_calling_square)
    with np.errstate(all="call", call=lambda *a: None):  # the capturing call's caller: call
        g(fine, [])
    for x in (tiny, fine, tiny, tiny, tiny, tiny, tiny, tiny, tiny):
        seen_eager, seen = [], []
        _calling_square(x, seen_eager)
        g(x, seen)
        assert len(seen) == len(seen_eager)


def _ignoring_then_dividing(x):
    with np.errstate(all="ignore"):
        y = x * x
    with np.errstate(divide="ignore"):
        return y / x


def test_blocks_that_ignore_underflow_heed_nothing_new():
    """A review's finding: a divide-only block is "unclear" about underflow (the relay's
    mode), and the code scan then took another block's ``all="ignore"`` for heeding it: every
    underflowing call ran eagerly. Keywords whose value is ``"ignore"`` heed nothing."""
    f = stax.compile(_ignoring_then_dividing)
    x = np.full(64, 1e-200)
    for _ in range(10):
        assert_like_eager(f, _ignoring_then_dividing, (x,))
    (version,) = f.versions()
    assert f._sets_errstate != 2 and version.declines == 0
