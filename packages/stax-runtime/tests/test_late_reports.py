"""An argument updated by one in-place ufunc (``x -= m``) is written by the call's late kernel,
which reports its floating-point events after, as NumPy's ufunc does (``stax.loop.overwrites``,
``KernelArtifact.late_reports``, ``stax.codegen.late_reports``): no twin pass decides them first.
Every case compares with eager NumPy: the argument after the call, the warnings (message,
category, line), what raises, what ``np.seterrcall`` receives."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen import Executable, KernelArtifact
from stax.loop import LoopProgram


def subtract_in_place(x, m):
    x -= m
    return x


def divide_in_place(x, s):
    x /= s
    return x


def multiply_in_place(x, s):
    x *= s
    return x


def add_in_place(x, y):
    np.add(x, y, out=x)
    return x


def subtract_assigned(x, m):
    x[...] = x - m  # NumPy subtracts into a temporary, then copies: it raises before writing
    return x


def two_updates(x, y):
    x -= 1.0
    y *= 2.0
    return x


def update_then_sum(x, m):
    x -= m
    return x.sum()


def _calls(fn, compiled, make, state=None, calls=2):
    """Eager and compiled calls on fresh arrays under ``np.errstate(**state)``, recording
    warnings, exceptions and error callbacks; both lists of outcomes."""
    outcomes = []
    for run in (fn, compiled):
        seen = []
        for _ in range(calls):
            args = make()
            called: list[tuple[str, int]] = []
            with warnings.catch_warnings(record=True) as caught, \
                    np.errstate(**(state or {})):
                warnings.simplefilter("always")
                np.seterrcall(lambda kind, flag: called.append((kind, flag)))
                try:
                    run(*args)
                    raised = None
                except FloatingPointError as exc:
                    raised = str(exc)
            seen.append(([a.copy() for a in args if isinstance(a, np.ndarray)],
                         [(str(w.message), w.category, w.lineno) for w in caught],
                         raised, called))
        outcomes.append(seen)
    return outcomes


def _alike(fn, make, state=None):
    compiled = stax.compile(fn, strict_native=True)
    make_first = make()
    compiled(*make_first)  # compile (the capture's run is NumPy's)
    eager, got = _calls(fn, compiled, make, state)
    for (want_arrays, want_warned, want_raised, want_called), \
            (arrays, warned, raised, called) in zip(eager, got):
        for a, b in zip(arrays, want_arrays):
            np.testing.assert_array_equal(a, b)
            assert np.array_equal(np.signbit(a), np.signbit(b))
        assert warned == want_warned
        assert raised == want_raised
        assert called == want_called
    return compiled


HUGE32 = np.finfo(np.float32).max


@pytest.mark.parametrize("fn, make, ufunc", [
    (subtract_in_place, lambda: (np.full(1000, 1e308), -1e308), "subtract"),
    (subtract_in_place, lambda: (np.array([np.inf, 1.0, -0.0] * 100), np.inf), "subtract"),
    (divide_in_place, lambda: (np.array([1.0, 0.0, -2.0, np.nan] * 50, np.float32),
                               np.float32(0.0)), "divide"),
    (multiply_in_place, lambda: (np.array([HUGE32, 1e-30, 0.0, np.inf], np.float32),
                                 np.float32(4.0)), "multiply"),
    (add_in_place, lambda: (np.array([1e308, -np.inf, 3.0]), np.array([1e308, np.inf, 1.0])),
     "add")],
    ids=["overflow", "invalid", "divide_by_zero", "overflow_f32", "add_out"])
@pytest.mark.parametrize("state", [None, {"all": "raise"}, {"all": "call"},
                                   {"over": "ignore", "invalid": "warn", "divide": "raise"}],
                         ids=["default", "raise", "call", "mixed"])
def test_events_of_an_in_place_ufunc_are_numpys(fn, make, ufunc, state):
    compiled = _alike(fn, make, state)
    version = compiled.versions()[-1]
    assert [u for u, _ in version.artifact.late_reports.values()] == [ufunc]
    assert "(unstored)" not in str(version.artifact)  # no twin pass


def test_underflow_is_reported_when_heeded():
    make = lambda: (np.array([1e-300, 2.0, 1e-310]), 1e-300)  # noqa: E731
    _alike(multiply_in_place, make)
    _alike(multiply_in_place, make, {"under": "warn"})
    _alike(multiply_in_place, make, {"under": "raise"})


def test_a_scalar_divisor_known_at_run_time():
    """The divisor as a 0-d array: zero, tiny, and ordinary, with the entry and without."""
    for s in (0.0, 1e-310, 3.0, np.inf):
        _alike(divide_in_place, lambda: (np.array([1.0, -1.0, 0.0, 1e308] * 30),
                                         np.array(s)))


def test_a_large_update_split_over_threads_reports_every_chunk():
    """The event sits in the last chunk (another thread's, where kernels are split)."""
    def make():
        x = np.ones(3_000_000)
        x[-5] = 1e308
        return x, -1e308
    _alike(subtract_in_place, make)
    _alike(subtract_in_place, make, {"over": "raise"})


def test_the_warning_shows_once_a_line_under_the_default_filter():
    """The warning lands in the user's module registry at the user's line, as eager NumPy's:
    under Python's "default" filter the line warns once, eager or compiled."""
    compiled = stax.compile(subtract_in_place)
    compiled(np.ones(10), 1.0)
    registry = subtract_in_place.__globals__.get("__warningregistry__")
    if registry:
        registry.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            compiled(np.full(10, 1e308), -1e308)
        subtract_in_place(np.full(10, 1e308), -1e308)
    assert [str(w.message) for w in caught] == ["overflow encountered in subtract"]
    assert caught[0].filename == __file__


def test_an_error_filter_raises_the_warning_after_the_write():
    """``warnings.simplefilter("error")``: NumPy's warning raises out of the ufunc, which had
    written x; the compiled call raises the same with x written the same."""
    compiled = stax.compile(subtract_in_place)
    compiled(np.ones(10), 1.0)
    got, want = np.full(10, 1e308), np.full(10, 1e308)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="overflow encountered in subtract"):
            subtract_in_place(want, -1e308)
        with pytest.raises(RuntimeWarning, match="overflow encountered in subtract"):
            compiled(got, -1e308)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("state", [None, {"all": "raise"}])
def test_an_assignment_from_a_temporary_keeps_its_twin(state):
    """``x[...] = x - m``: NumPy raises before x is written; the twin decides first."""
    compiled = _alike(subtract_assigned, lambda: (np.full(100, 1e308), -1e308), state)
    artifact = compiled.versions()[-1].artifact
    assert not artifact.late_reports and "(unstored)" in str(artifact)


def test_two_updated_arguments_keep_their_twins():
    """Which ufunc NumPy reports first would matter: both are decided before either write."""
    make = lambda: (np.full(50, -1e308), np.full(50, 1e308))  # noqa: E731
    compiled = _alike(two_updates, make, {"all": "raise"})
    assert not compiled.versions()[-1].artifact.late_reports


def test_a_later_reader_of_the_update_decides_its_events_first():
    """``x -= m; return x.sum()``: the sum's kernel computes ``x - m`` too, its events decline
    the call before x is written; the eager run warns once."""
    _alike(update_then_sum, lambda: (np.full(100, 1e308), -1e308))
    _alike(update_then_sum, lambda: (np.full(100, 1e308), -1e308), {"over": "raise"})


def test_the_written_out_call_reports_as_the_entry():
    """The Python call plan (``straight_line.py``: the executable called directly) reports as
    the machine-code entry does, from a document read back."""
    compiled = stax.compile(subtract_in_place, strict_native=True)
    compiled(np.ones(64), np.array(1.0))
    artifact = compiled.versions()[0].artifact
    assert artifact.schema == "stax.kernels/1.12"
    again = KernelArtifact.from_json(artifact.to_json())
    assert again.late_reports == artifact.late_reports
    run = Executable(again)
    for state, m in (({}, -1e308), ({"over": "raise"}, -1e308), ({"invalid": "raise"}, np.inf),
                     ({"all": "ignore"}, -1e308), ({}, 1.0)):
        got, want = np.full(64, 1e308), np.full(64, 1e308)
        want[0] = got[0] = np.inf
        outcomes = []
        for call, x in ((run, got), (subtract_in_place, want)):
            with warnings.catch_warnings(record=True) as caught, np.errstate(**state):
                warnings.simplefilter("always")
                try:
                    call(x, np.array(m))
                    outcomes.append([str(w.message) for w in caught])
                except FloatingPointError as exc:
                    outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1], state
        np.testing.assert_array_equal(got, want)


def test_the_loop_program_records_and_reads_back_its_late_report(tmp_path, monkeypatch):
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    compiled = stax.compile(subtract_in_place)
    compiled(np.ones(8), 2.0)
    path = next(tmp_path.glob("subtract_in_place.v*.loopir.json"))
    program = LoopProgram.from_json(__import__("json").loads(path.read_text()))
    assert program.schema == "stax.loopir/1.8"
    [(late, (ufunc, source))] = program.late_reports.items()
    assert ufunc == "subtract" and source.startswith(f"{__file__}:")
    assert program.overwrites[late] == "x"
    assert "its events reported after as subtract's" in str(program)


def own_errstate(x, m):
    with np.errstate(over="ignore"):
        x -= m
    return x


def update_two(x, y):
    x -= 1e308
    y[y < 0] = 0
    return x


def update_with_a_numpy_step(x, z):
    x -= 1e308
    return np.median(z)


def divide_then_scale(a, b, x, s):
    y = a / b
    x *= s
    return y


def test_a_function_with_its_own_error_state_keeps_the_twin():
    """Its ``np.errstate`` block decides its warnings: any event declines the call, the eager
    run decides (a late report would warn under the caller's state)."""
    compiled = _alike(own_errstate, lambda: (np.full(100, 1e308), -1e308))
    _alike(own_errstate, lambda: (np.full(100, 1e308), -1e308), {"over": "raise"})
    assert not compiled.versions()[-1].artifact.late_reports


@pytest.mark.parametrize("fn, make", [
    (update_two, lambda: (np.full(50, -1e308), np.array([-1.0, 2.0] * 25))),
    (update_with_a_numpy_step, lambda: (np.full(50, -1e308), np.arange(5.0)))],
    ids=["another_argument", "numpy_step"])
def test_what_eager_does_after_the_ufunc_is_not_done_before_a_raise(fn, make):
    """Eager NumPy raises at ``x -= 1e308`` before it writes ``y`` or runs a later step: with
    another argument written or a NumPy step, the update keeps its twin, decided first."""
    compiled = _alike(fn, make, {"over": "raise"})
    _alike(fn, make)
    assert not compiled.versions()[-1].artifact.late_reports


def test_heeded_underflow_after_a_precise_rerun_is_numpys():
    """An earlier division by zero (ignored) makes the fast kernels unsure; the late multiply's
    underflow, heeded, is NumPy's either way (the call runs as NumPy while underflow is heeded)."""
    def make():
        b = np.ones(8)
        b[3] = 0.0
        return np.ones(8), b, np.full(8, 1e-300), np.array(1e-300)
    _alike(divide_then_scale, make, {"divide": "ignore", "under": "warn"})
    _alike(divide_then_scale, make, {"divide": "ignore"})


def test_the_error_callback_gets_every_flag_the_ufunc_raised():
    """NumPy hands ``np.seterrcall``'s callback all the flags its ufunc raised, ignored ones
    too: ``('overflow', 6)`` for an overflow and an ignored underflow."""
    make = lambda: (np.array([1e300, 1e-300, 1.0, 2.0]),  # noqa: E731
                    np.array([1e10, 1e-10, 1.0, 1.0]))
    _alike(multiply_in_place, make, {"all": "call", "under": "ignore"})


def test_a_short_slice_of_a_long_array_is_not_split():
    """The bytes a kernel moves are what it touches: ``x[:16] * 2`` of 500,000 elements."""
    compiled = stax.compile(lambda x: x[:16] * 2.0)
    compiled(np.ones(500_000))
    assert not any(k.parallel for k in compiled.versions()[0].artifact.kernels)


def test_a_generic_versions_split_is_decided_per_call_without_a_shape_guard(caplog,
                                                                            monkeypatch):
    """The bytes a size-generic kernel moves are an expression of its sizes: the split is
    decided per call (``instantiate.py``), never a guard on the sizes."""
    import logging
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    caplog.set_level(logging.INFO, logger="stax")
    f = stax.compile(lambda x: x[:16] * 2.0)  # 16 elements of work, x's size in bytes
    for n in (1000, 2000, 800_000, 3000):
        x = np.arange(float(n))
        np.testing.assert_array_equal(f(x), x[:16] * 2.0)
    assert "size-generic version" in caplog.text
    assert "generate.py" not in caplog.text and f.cache_info().compiles == 2
