"""Floating-point events NumPy is asked to report (``stax.codegen.event_reports``): a call whose
events all come from operations capture can name stands, and NumPy warns, raises, calls or logs
exactly as in the eager run (message, category, the user's file and line, the warning registry);
every other call with heeded events still declines and runs eagerly."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stax.runtime as stax


class Recorder(list):
    def __call__(self, kind, flag):
        self.append((kind, flag))

    def write(self, text):
        self.append(text)


def observe(fn, *args):
    """(result, FloatingPointError text, warnings as (category, text, file, line), callback
    calls) of one call under the current error state."""
    calls = Recorder()
    state = np.geterr()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with np.errstate(call=calls, **state):
            try:
                result, error = fn(*args), None
            except (FloatingPointError, RuntimeWarning) as exc:  # (a warning the filters raise)
                result, error = None, f"{type(exc).__name__}: {exc}"
    return result, error, [(w.category.__name__, str(w.message), w.filename, w.lineno)
                           for w in seen], calls


def safe_log(x):
    return np.where(x > 0, np.log1p(x), 0.0)


def safe_ratio(a, d):
    return np.where(d != 0, a / d, 0.0)


def log_then_scale(x, w):  # an invalid value may come from log or from the product
    return np.where(x > 0, np.log(x), 0.0) * w


def _quiet_log(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x)


def _middle(x):
    return _quiet_log(x)


def quiet_deep(x):  # the block is two calls down: no static look at the code finds it
    return _middle(x) + 1.0


STATES = {
    "warn": dict(all="warn", under="ignore"),
    "raise": dict(all="raise", under="ignore"),
    "ignore": dict(all="ignore"),
    "call": dict(all="call", under="ignore"),
    "log": dict(all="log", under="ignore"),
    "mixed": dict(divide="raise", over="ignore", invalid="warn", under="ignore"),
}


def _data(dtype):
    x = np.linspace(-2.0, 3.0, 101).astype(dtype)
    d = np.where(np.arange(101) % 7 == 0, 0.0, np.linspace(0.5, 2.0, 101)).astype(dtype)
    return x, d


@pytest.mark.parametrize("state", sorted(STATES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reported_calls_stand_and_report_as_eager(state, dtype):
    x, d = _data(dtype)
    cases = [(safe_log, (x,)), (safe_ratio, (x, d)), (safe_ratio, (np.zeros_like(d), d))]
    for fn, args in cases:  # (log1p within its ulp bound; the quotients exact)
        compiled = stax.compile(fn)
        with np.errstate(all="ignore"):
            compiled(*[np.ones_like(a) for a in args])  # compiled on data without events
        fallbacks = compiled.cache_info().fallbacks
        with np.errstate(**STATES[state]):
            for _ in range(3):
                want, got = observe(fn, *args), observe(compiled, *args)
                assert got[1:] == want[1:], (fn.__name__, got[1:], want[1:])
                if want[0] is not None:
                    np.testing.assert_allclose(got[0], want[0], rtol=4e-7 if fn is safe_log
                                               else 0, atol=0)
        assert compiled.cache_info().fallbacks == fallbacks, "the calls did not stand"


def test_the_default_filter_shows_the_warning_once_per_line_as_eager():
    x, _ = _data(np.float64)
    compiled = stax.compile(safe_log)
    compiled(np.ones(3))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for _ in range(4):
            compiled(x)
    # the registry of this module, as eager NumPy's warning from ``safe_log``'s line keeps
    assert [str(w.message) for w in seen] == ["divide by zero encountered in log1p",  # log1p(-1)
                                              "invalid value encountered in log1p"]
    assert {(w.filename, w.lineno) for w in seen} == {(__file__,
                                                       safe_log.__code__.co_firstlineno + 1)}


def test_a_category_two_operations_may_raise_still_declines():
    x = np.array([-1.0, 0.0, 1.0, 2.0])
    w = np.array([1.0, np.inf, 0.0, 1.0])
    compiled = stax.compile(log_then_scale)
    compiled(np.ones(4), np.ones(4))
    with np.errstate(all="warn", under="ignore"):
        want, got = observe(log_then_scale, x, w), observe(compiled, x, w)
    assert got[1:] == want[1:]
    np.testing.assert_array_equal(got[0], want[0])
    assert compiled.cache_info().fallbacks >= 1  # invalid: log's or the product's


def test_an_errstate_block_deep_in_the_callees_is_left_to_numpy():
    x = np.array([0.0, -1.0, 2.0])
    compiled = stax.compile(quiet_deep)
    compiled(np.ones(3))
    for state in ("warn", "raise"):
        with np.errstate(**STATES[state]):
            want, got = observe(quiet_deep, x), observe(compiled, x)
        assert got[1:] == want[1:] == (None, [], [])
        np.testing.assert_array_equal(got[0], want[0])


def test_the_documents_name_the_reports_and_read_back(tmp_path, monkeypatch):
    from stax.codegen import Executable, generate, load_artifact
    from stax.ir import load_capture, lower_capture
    from stax.loop import load_loopir, lower_opgraph

    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    stax.compile(safe_ratio)(np.ones(101), np.ones(101))
    doc = {s: tmp_path / f"safe_ratio.v0.{s}.json" for s in ("capture", "opgraph", "loopir",
                                                            "kernels")}
    loop = load_loopir(doc["loopir"])
    name, dtype, source, _ = loop.event_reports["divide"]
    assert (name, dtype) == ("divide", "float64")
    assert source.endswith(f":{safe_ratio.__code__.co_firstlineno + 1} in safe_ratio")
    assert "divide events reported as divide from" in str(loop)
    assert loop.to_json()["schema"] == "stax.loopir/1.10"
    assert lower_opgraph(lower_capture(load_capture(doc["capture"]))).to_json() == loop.to_json()
    artifact = load_artifact(doc["kernels"])
    assert artifact.to_json()["schema"] == "stax.kernels/1.14"
    assert generate(loop).event_reports == artifact.event_reports == loop.event_reports
    a, d = _data(np.float64)
    with warnings.catch_warnings(record=True) as seen:  # the document alone reports them
        warnings.simplefilter("always")
        got = Executable(artifact)(a, d)[0]
    np.testing.assert_array_equal(got, safe_ratio(a, d))
    assert [str(w.message) for w in seen] == ["divide by zero encountered in divide"]


def shift_then_log(x):
    x += 1.0
    return np.log(x)


def test_a_function_updating_an_argument_leaves_its_events_to_numpy():
    """``x += 1`` then a log that raises: eager NumPy wrote the argument before the error; a
    report (made before the call writes its arguments) would not have."""
    compiled = stax.compile(shift_then_log)
    compiled(np.ones(3))
    mine, theirs = np.array([-1.0, 0.0, 2.0]), np.array([-1.0, 0.0, 2.0])
    with np.errstate(divide="raise", invalid="ignore"):
        with pytest.raises(FloatingPointError, match="divide by zero encountered in log"):
            shift_then_log(theirs)
        with pytest.raises(FloatingPointError, match="divide by zero encountered in log"):
            compiled(mine)
    np.testing.assert_array_equal(mine, theirs)


def plain_ratio(a, d):
    return a / d * 2.0


def test_the_machine_code_entry_serves_calls_with_events():
    """Ignored events, and heeded ones NumPy reports, stand in the machine-code entry itself
    (``entry_events.settle_events``): no second run through the dispatcher; an error NumPy
    raises there leaves nothing behind. (Events of single IEEE operations: the CPU's flags
    say which. A non-finite value read by ``where`` or a transcendental function needs the
    precise kernels, which the dispatcher runs.)"""
    x, d = _data(np.float64)
    compiled = stax.compile(plain_ratio)
    for _ in range(3):
        compiled(np.ones_like(x), np.ones_like(d))
    (version,) = compiled.versions()
    assert version.entry is not None
    hits = version.entry.hits
    for state in ("ignore", "warn", "call", "raise", "log"):
        with np.errstate(**STATES[state]):
            for _ in range(3):
                want, got = observe(plain_ratio, x, d), observe(compiled, x, d)
                assert got[1:] == want[1:], (state, got[1:], want[1:])
                if want[0] is not None:
                    np.testing.assert_array_equal(got[0], want[0])
    assert version.entry.hits == hits + 12  # (a call that raised is no hit)
    with np.errstate(all="warn", under="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's warning as an exception, from the entry
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in divide"):
            compiled(x, d)


def _quiet_by_filter(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.log(x)


def _strict_by_filter(x):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return np.log(x)


def _caught(x, d):
    try:
        return x / d
    except (FloatingPointError, RuntimeWarning):
        return np.zeros_like(x)


def _big_number(x):
    return x + 1e300  # (float32: NumPy casts 1e300 first, "overflow encountered in cast")


def _half(x):
    return np.tan(x)


def _unsigned(a, b):
    return a // b


REVIEWED = [  # a review's findings: each behaved otherwise than eager NumPy
    (_quiet_by_filter, (np.array([0.0, 1.0, 2.0]),)),
    (_strict_by_filter, (np.array([0.0, 1.0, 2.0]),)),
    (_caught, (np.array([1.0, 2.0]), np.array([0.0, 1.0]))),
    (_big_number, (np.array([1.0, 2.0], np.float32),)),
    (_half, (np.array([np.inf, 1.0], np.float16),)),
    (_unsigned, (np.array([4, 5], np.uint8), np.array([0, 2], np.uint8))),
]


@pytest.mark.parametrize("fn, args", REVIEWED, ids=[f.__name__ for f, _ in REVIEWED])
@pytest.mark.parametrize("state", ["warn", "raise", "call"])
def test_filters_handlers_and_casts_as_eager(fn, args, state):
    """A ``catch_warnings`` block or a ``try``/``except`` in the function (the report would
    come after them), a Python number NumPy casts first (its own "overflow encountered in
    cast"), float16 and unsigned operands of the report (which must cast nothing)."""
    compiled = stax.compile(fn)
    compiled(*[np.ones_like(a) for a in args])
    with np.errstate(**STATES[state]):
        for _ in range(2):
            want, got = observe(fn, *args), observe(compiled, *args)
            assert got[1:] == want[1:], (got[1:], want[1:])
            if want[0] is not None:
                np.testing.assert_array_equal(got[0], want[0])


def test_an_entry_starts_with_the_precise_kernels_while_recent_calls_needed_them():
    """A call whose fast kernels could not tell (``MAYBE``: log1p over negatives) makes the
    next calls start with the precise kernels; the machine-code entry ran the fast ones first
    anyway and went to the dispatcher after them (half of every such call thrown away): it
    reads the executable's word and hands the call over at once."""
    from stax.codegen import Executable

    x = np.linspace(0.5, 4.0, 64)  # no events: the entry runs it whole
    compiled = stax.compile(safe_log)
    compiled(x)
    executable = Executable(compiled.versions()[0].artifact)
    handed = []

    def slow(*arrays):
        handed.append(1)
        return executable(*arrays)[0]

    entry = executable.entry([x], slow)
    # within the ulp our float64 log1p promises (NumPy's is the C library's on AVX2 hosts,
    # whose last bit differs from ours in 7 of these 64: AMD Zen 3)
    np.testing.assert_array_max_ulp(entry.function(x), safe_log(x), maxulp=1)
    assert (entry.hits, len(handed)) == (1, 0)
    executable._precise_left[0] = 2  # two calls start precise
    for _ in range(3):
        np.testing.assert_array_max_ulp(entry.function(x), safe_log(x), maxulp=1)
    assert (entry.hits, len(handed)) == (2, 2)  # two handed over, then its own again
