"""Floating-point events and comparisons (``stax.codegen.cpu.fpevents``), at the executable.

1. A fast kernel that reads the CPU's exception flags compares quietly: NaN data through ``<``,
   ``<=``, ``>``, ``>=``, maximum/minimum, clip, where and argmax gives NumPy's bits and does not
   run again with the precise kernels (``Executable.reruns``). x86's ordered vector compares
   raise the invalid flag for a NaN operand, which the fast kernel cannot tell from a real event:
   every such call used to run twice (a tiny call 0.35 -> 7.5 us).
2. An fmax/fmin tie between different bits (0.0 and -0.0, two different NaNs) is reported
   through the events word of the kernel computing the fmax (``TIE``), in the same pass, and the
   call is declined (the runtime runs it as NumPy); there is no check pass of its own.
3. An operation in an arm of a select raises its flag on every element, as NumPy's whole-array
   operation does: AVX-512 instruction selection folds ``where(c, a / b, d)`` into a masked
   division, which raises nothing for the lanes ``c`` leaves out, and the warning was lost.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen import Executable, ExternResultMismatch, FloatingPointEvents
from stax.codegen.cpu.fpevents import NAN_QUIET


def _specials(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    bits = np.dtype(dtype).itemsize * 8
    nan_bits = (0x7FF8 << 48) | 5 if bits == 64 else 0x7FC00005
    payload = np.array([nan_bits], f"u{bits // 8}").view(dtype)[0]
    return np.array([0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal, 1.0, -1.0, 2.0,
                     -2.0, info.max, -info.max, np.inf, -np.inf, np.nan, -np.nan, payload], dtype)


def _grid(dtype):
    v = _specials(dtype)
    x, y = np.meshgrid(v, v)
    return x.ravel().copy(), y.ravel().copy()


def _bits(v) -> np.ndarray:
    v = np.asarray(v)
    return v.view(f"u{v.dtype.itemsize}") if v.dtype.kind == "f" else v


def _executable(fn, args):
    """A fresh executable of ``fn``'s plan for ``args`` (its own counters), and the plan; without
    the plan's reports on NumPy's behalf (``test_event_reports.py``): heeded events decline."""
    compiled = stax.compile(fn)
    with np.errstate(all="ignore"):
        compiled(*args)
    artifact = compiled.versions()[0].artifact
    assert artifact is not None
    artifact = dataclasses.replace(artifact, event_reports={})
    return Executable(artifact), artifact


def _flagged(v, y):
    """``v`` unchanged, computed in a kernel that reads the CPU's flags: with a multiplication
    (an operation whose events are those flags) in it."""
    return np.where(y * 0.5 > np.inf, np.zeros_like(v), v)


COMPARES = {
    "lt": lambda x, y: _flagged(x < y, y),
    "le": lambda x, y: _flagged(x <= y, y),
    "gt": lambda x, y: _flagged(x > y, y),
    "ge": lambda x, y: _flagged(x >= y, y),
    "constants": lambda x, y: _flagged(
        ((x < 0.0) ^ (x <= -0.0)) + (x > -1.0) * 2 + (0.0 < x) * 4 + (2.0 >= x) * 8
        + (x < np.inf) * 16 + (x > -np.inf) * 32 + (x >= 0.0) * 64 + (x <= 1.0) * 128
        + (x < -2.0) * 256 + (x < np.nan) * 512 + (-0.0 > x) * 1024 + (x < 0) * 2048
        + (x >= 0) * 4096, y),
    "sign": lambda x, y: _flagged(np.sign(x), y),
    "where": lambda x, y: _flagged(np.where(x < y, x, y), y),
    "maximum": lambda x, y: _flagged(np.maximum(x, y), y),
    "minimum": lambda x, y: _flagged(np.minimum(x, y), y),
    "relu": lambda x, y: _flagged(np.maximum(x, 0.0), y),
    "clip": lambda x, y: _flagged(np.clip(x, -1.0, 1.0), y),
    "argmax": lambda x, y: np.argmax(_flagged(x, y)),
    "argmin": lambda x, y: np.argmin(_flagged(x, y)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(COMPARES))
def test_comparisons_over_special_values_are_exact_and_quiet(name, dtype):
    fn = COMPARES[name]
    x, y = _grid(dtype)
    if name.startswith("arg"):
        x, y = x[30:60].copy(), y[30:60].copy()  # a NaN at 42 (not first), infinities before
    executable, artifact = _executable(fn, (x, y))
    assert "llvm.x86.sse.stmxcsr" in artifact.llvm_ir  # the kernel reads the flags
    with np.errstate(all="ignore"):
        want = fn(x, y)
    (got,) = executable(x, y)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.array_equal(_bits(got), _bits(want)), (name, x, y, got, want)
    assert executable.reruns == 0


def test_a_tiny_where_over_nan_data_runs_once():
    """The issue's case: 8 elements with NaN, the kernel computing x * 2 reads the flags."""
    fn = lambda x, y: np.where(x < y, x * 2.0, y)  # noqa: E731
    x = np.array([1.0, np.nan, 3.0, 4.0, 5.0, np.nan, 7.0, 8.0])
    y = np.array([2.0, 2.0, np.nan, 1.0, 9.0, 0.0, 1.0, np.nan])
    executable, _ = _executable(fn, (x, y))
    for _ in range(3):
        np.testing.assert_array_equal(executable(x, y)[0], fn(x, y))
        np.testing.assert_array_equal(executable.run_one(x, y), fn(x, y))
    assert executable.reruns == 0


def test_nan_data_beside_a_real_event_of_single_ieee_operations():
    """A NaN beside a real invalid operation (inf - inf) in the same call: the flag comes from
    the subtraction, which the fast kernel (single IEEE operations and a select on data:
    ``fpevents.flags_exact``) reports as its category, with no precise rerun (a loop of 16
    elements at least: a shorter one may run in padded vectors, ``short_loop_seen``)."""
    fn = lambda x, y: np.where(x < y, x - y, y)  # noqa: E731
    x = np.array([np.nan, np.inf, 1.0] + [1.0] * 17)
    y = np.array([1.0, np.inf, 2.0] + [2.0] * 17)
    executable, _ = _executable(fn, (x, y))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(executable(x, y)[0], fn(x, y))
    assert executable.reruns == 0
    with np.errstate(invalid="raise"), pytest.raises(ExternResultMismatch):
        executable(x, y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_an_fmax_tie_is_an_event_of_its_own_kernel(name, dtype):
    op = getattr(np, name)
    fn = lambda x, y: op(x, y)  # noqa: E731
    nan, other_nan = _specials(dtype)[[12, 14]]
    clean = (np.array([1.0, np.nan, -0.0, 3.0, 2.0], dtype), np.array([np.nan, 2.0, -0.0, 4.0, 2.0], dtype))
    executable, artifact = _executable(fn, clean)
    assert not artifact.checks and len(artifact.kernels) == 1
    assert [b.role for b in artifact.buffers].count("events") == 1
    (got,) = executable(*clean)
    assert np.array_equal(_bits(got), _bits(op(*clean)))
    for a, b in ((0.0, -0.0), (-0.0, 0.0), (nan, other_nan), (nan, -nan)):
        x, y = clean[0].copy(), clean[1].copy()
        x[3], y[3] = a, b
        with pytest.raises(ExternResultMismatch, match=r"fmax/fmin of 0\.0 and -0\.0"):
            executable(x, y)
        with pytest.raises(ExternResultMismatch, match=r"fmax/fmin of 0\.0 and -0\.0"):
            executable.run_one(x, y)
    assert executable.reruns == 0


def test_an_fmax_tie_in_a_kernel_that_reads_the_flags():
    """The tie and the flags in one kernel: NaN data alone runs once, a tie declines the call."""
    fn = lambda x, y: np.fmax(x * 2.0, y) + 1.0  # noqa: E731
    x = np.array([1.0, np.nan, 3.0, np.nan])
    y = np.array([np.nan, 2.0, 1.0, np.nan])
    executable, artifact = _executable(fn, (x, y))
    assert not artifact.checks and "llvm.x86.sse.stmxcsr" in artifact.llvm_ir
    np.testing.assert_array_equal(executable(x, y)[0], fn(x, y))
    assert executable.reruns == 0
    with pytest.raises(ExternResultMismatch):
        executable(np.array([1.0, 0.0, 3.0, 4.0]), np.array([0.5, -0.0, 1.0, 2.0]))


def test_the_compiled_function_gives_numpys_bits_for_a_tie():
    """Through the runtime: the declined call runs as NumPy, the next one natively."""
    fn = lambda x, y: np.fmax(x, y)  # noqa: E731
    compiled = stax.compile(fn)
    x, y = np.array([0.0, -0.0, 1.0, 2.0, 3.0]), np.array([-0.0, 0.0, 0.0, 1.0, 5.0])
    assert np.array_equal(_bits(compiled(x, y)), _bits(fn(x, y)))
    assert compiled.cache_info().fallbacks == 1
    x[:2] = 7.0
    assert np.array_equal(_bits(compiled(x, y)), _bits(fn(x, y)))
    assert compiled.cache_info().fallbacks == 1


def test_after_a_rerun_calls_start_with_the_precise_kernels():
    """Data the fast kernels cannot vouch for (an infinity into exp: inf, no event, but its
    test cannot tell it from an overflow) tends to come back: after a call that ran again with
    the precise kernels, the next ``PRECISE_FIRST_CALLS`` start with them, then one tries the
    fast ones again. Results and events stay NumPy's throughout."""
    from stax.codegen.executable import PRECISE_FIRST_CALLS

    fn = lambda x: np.exp(x)  # noqa: E731
    x = np.array([1.0, np.inf, 2.0, 3.0])
    executable, _ = _executable(fn, (x,))
    np.testing.assert_array_equal(executable(x)[0], fn(x))
    assert (executable.reruns, executable.precise_first_runs) == (1, 0)
    for k in range(PRECISE_FIRST_CALLS):
        run = executable.run_one if k % 2 else lambda a: executable(a)[0]
        np.testing.assert_array_equal(run(x), fn(x))
    assert (executable.reruns, executable.precise_first_runs) == (1, PRECISE_FIRST_CALLS)
    np.testing.assert_array_equal(executable(x)[0], fn(x))  # the fast kernels again: a rerun
    assert (executable.reruns, executable.precise_first_runs) == (2, PRECISE_FIRST_CALLS)
    # a real event on the precise-first path declines the call as before
    with np.errstate(over="raise"), pytest.raises(ExternResultMismatch):
        executable(np.array([1.0, np.nan, 1000.0, 3.0]))
    assert executable.precise_first_runs == PRECISE_FIRST_CALLS + 1
    # while underflow is heeded, which only the fast kernels see, calls start with them (for
    # exp, whose underflow they cannot see either, that declines the call: NumPy decides)
    with np.errstate(under="warn"), pytest.raises(FloatingPointEvents):
        executable(x)
    assert executable.precise_first_runs == PRECISE_FIRST_CALLS + 1


def test_warnings_stay_numpys_when_calls_start_precise():
    """Through the runtime, calls after a rerun warn exactly as NumPy (log of 0 beside NaN)."""
    import warnings

    fn = lambda x: np.log(x) * 2.0  # noqa: E731
    compiled = stax.compile(fn)
    clean, nan, zero = np.array([1.0, 2.0, 3.0]), np.array([1.0, np.nan, 3.0]), \
        np.array([1.0, np.nan, 0.0])
    for x in (clean, nan, nan, zero, nan, zero, clean):
        for state in ("warn", "ignore"):
            with warnings.catch_warnings(record=True) as got, np.errstate(divide=state):
                warnings.simplefilter("always")
                result = compiled(x)
            with warnings.catch_warnings(record=True) as want, np.errstate(divide=state):
                warnings.simplefilter("always")
                expected = fn(x)
            np.testing.assert_array_equal(result, expected)
            assert [str(w.message) for w in got] == [str(w.message) for w in want]


SELECTED_ARMS = {
    "divide": lambda x, y: np.where(x != 0, 1.0 / x, x),
    "divide_second_arm": lambda x, y: np.where(x == 0, x, y / x),
    "multiply": lambda x, y: np.where(x < 1, x * y, x),
    "add": lambda x, y: np.where(x < 1, x + y, y),
    "sqrt": lambda x, y: np.where(x >= 0, np.sqrt(x), x),
    "negated_sqrt": lambda x, y: np.where(x >= 0, -np.sqrt(x), x),
    "narrowing_cast": lambda x, y: np.where(x < 1, (x * 1.0).astype(np.float32), np.float32(0)),
    "summed": lambda x, y: np.where(x != 0, 1.0 / x, 0.0).sum(),
    "maximum": lambda x, y: np.maximum(x / y, y),
}


def _eager_report(fn, *args) -> str | None:
    try:
        with np.errstate(all="raise", under="ignore"):
            fn(*args)
    except FloatingPointError as e:
        return str(e).split(" encountered")[0]
    return None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(SELECTED_ARMS))
def test_an_operation_in_a_select_arm_reports_its_unselected_elements(name, dtype):
    fn = SELECTED_ARMS[name]
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-3, 3, 203).astype(dtype), rng.uniform(-3, 3, 203).astype(dtype)
    big = np.finfo(dtype).max
    x[[17, 100]], x[18], y[5] = 0.0, -1.0, 0.0
    x[50], y[50], x[51], y[51] = big, big, big, 2.0  # x + y, x * y overflow where x >= 1
    executable, _ = _executable(fn, (x, y))
    want = _eager_report(fn, x, y)
    if want is None:  # float32 x * 1.0 of float32 max: no overflow, no cast
        (got,) = executable(x, y)
        return
    with np.errstate(all="raise", under="ignore"), pytest.raises(FloatingPointEvents,
                                                                  match=want):
        executable(x, y)
    finite = rng.uniform(0.5, 3, x.size).astype(dtype)  # the kernel stays quiet on quiet data
    clean = rng.uniform(0.5, 3, y.size).astype(dtype)
    assert _eager_report(fn, finite, clean) is None
    with np.errstate(all="raise", under="ignore"):
        (got,) = executable(finite, clean)
    if name == "summed":  # a float sum: Stax's order of additions is not NumPy's pairwise one
        np.testing.assert_allclose(got, fn(finite, clean), rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, fn(finite, clean))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trigonometry_over_nan_data_runs_once_and_infinity_still_reports(name, dtype):
    """``np.sin`` of missing values (NaN) is no event: the fast kernel ran fine, but the
    function's range reduction compared and converted the NaN (``vcmpltpd``, ``cvttpd2qq``:
    the invalid flag), and its NaN result was tested where its chain ends: every call over
    NaN data ran again with the precise kernels (3 elements: 5.4 us against 0.4). A NaN now
    meets quiet compares alone, and the fast kernel tests the operand for +-inf, the one
    event (``fpevents.OPERAND_INFINITY``): ``sin(inf)`` warns invalid as NumPy's."""
    ufunc = getattr(np, name)
    fn = lambda x: ufunc(x) * 2.0  # noqa: E731
    x = np.array([1.0, np.nan, 3.0, -0.0, np.nan, 0.5, 1e4], dtype)
    executable, _ = _executable(fn, (x,))
    rtol = 2.5e-7 if dtype == np.float32 else 0  # (float32: within an ulp of NumPy's)
    for _ in range(3):
        np.testing.assert_allclose(executable(x)[0], np.asarray(fn(x)), rtol=rtol)
    assert executable.reruns == 0
    infinite = x.copy()
    infinite[2] = -np.inf
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError):
            fn(infinite)
        with pytest.raises(FloatingPointError):
            stax.compile(fn)(infinite)
    f = stax.compile(fn)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(f(infinite), fn(infinite), rtol=rtol)


#: per transcendental function: its data (a NaN among values in its domain), a value of an
#: event beside them and the error state category NumPy reports it in (None: it has none)
_TRANSCENDENTAL = {
    "exp": (0.5, 1000.0, "over"), "exp2": (0.5, 2000.0, "over"), "expm1": (0.5, 1000.0, "over"),
    "log": (0.5, -1.0, "invalid"), "log2": (0.5, 0.0, "divide"), "log10": (0.5, -2.0, "invalid"),
    "log1p": (0.5, -1.0, "divide"), "sinh": (0.5, 1000.0, "over"), "cosh": (0.5, -1000.0, "over"),
    "tanh": (0.5, None, None), "arcsin": (0.5, 2.0, "invalid"), "arccos": (0.5, -3.0, "invalid"),
    "arctan": (0.5, None, None), "arcsinh": (0.5, None, None), "arccosh": (1.5, 0.5, "invalid"),
    "arctanh": (0.5, 1.0, "divide"), "cbrt": (0.5, None, None),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(_TRANSCENDENTAL))
def test_transcendentals_over_nan_data_and_events_beside_it(name, dtype):
    """Missing values (NaN) are no event of ``tanh``, ``arcsin``, ``cosh``...: but the routines'
    reductions compared and converted the NaN (the invalid flag), and the NaN result was tested
    where its chain ended, so every call over NaN data ran again with the precise kernels (3
    elements: 4.6 us against 0.3). Those of ``fpevents.NAN_QUIET`` now take a NaN quietly
    (themselves, or behind a shield: ``functions._shielded``), and the fast kernel tests their
    result where no operand is NaN (``fpevents._tests_itself``): they run once. The rest (exp,
    log: the shield's cost is not paid there) still run again; results and events beside NaN
    data are NumPy's for all."""
    ufunc = getattr(np, name)
    fn = lambda x: ufunc(x) * 2.0  # noqa: E731
    inside, event, category = _TRANSCENDENTAL[name]
    x = np.array([inside, np.nan, inside * 1.25, -np.nan, inside * 1.5, np.nan], dtype)
    executable, _ = _executable(fn, (x,))
    rtol = 2.5e-7 if dtype == np.float32 else 4.5e-16  # within an ulp of NumPy's
    for _ in range(3):
        np.testing.assert_allclose(executable(x)[0], np.asarray(fn(x)), rtol=rtol)
    quiet = name in NAN_QUIET[np.dtype(dtype).name]
    assert (executable.reruns == 0) is quiet, executable.reruns
    if event is None:
        return
    with_event = x.copy()
    with_event[2] = event
    with np.errstate(**{category: "raise"}):
        with pytest.raises(FloatingPointError):
            fn(with_event)
        with pytest.raises(FloatingPointError):
            stax.compile(fn)(with_event)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(stax.compile(fn)(with_event), fn(with_event), rtol=rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["power", "arctan2", "hypot"])
def test_two_operand_functions_over_nan_keep_their_special_values(name, dtype):
    """``pow(nan, 0)`` and ``pow(1, nan)`` are 1, ``hypot(inf, nan)`` is inf (C99's, NumPy's),
    through a shield too (``functions._NAN_RESULTS``); other NaN operands give NaN, and calls
    over NaN data run once where the function is ``NAN_QUIET``."""
    ufunc = getattr(np, name)
    fn = lambda a, b: ufunc(a, b) * 2.0  # noqa: E731
    a = np.array([np.nan, 1.0, np.nan, np.inf, 0.5, -np.inf, np.nan, 2.0, 0.75], dtype)
    b = np.array([0.0, np.nan, np.nan, np.nan, np.nan, 2.0, -0.0, 3.0, 0.5], dtype)
    executable, _ = _executable(fn, (a, b))
    rtol = 2.5e-7 if dtype == np.float32 else 4.5e-16
    with np.errstate(all="ignore"):
        want = np.asarray(fn(a, b))
    for _ in range(2):
        np.testing.assert_allclose(executable(a, b)[0], want, rtol=rtol)
    finite = np.where(np.isnan(a), a, 0.5)  # NaN operands among finite ones: no event
    executable, _ = _executable(fn, (finite, b))
    for _ in range(2):
        np.testing.assert_allclose(executable(finite, b)[0], np.asarray(fn(finite, b)), rtol=rtol)
    op = {"power": "pow"}.get(name, name)
    assert (executable.reruns == 0) is (op in NAN_QUIET[np.dtype(dtype).name])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["arcsin", "arccos"])
def test_out_of_domain_nans_have_numpys_sign(name, dtype):
    """``arcsin(2)`` is NumPy's NaN with its sign bit clear (float32 and float64); float32's
    routine, computed in double through a square root of a negative, gave x86's default NaN,
    whose sign bit is set (a review's find). A NaN argument keeps its own sign."""
    ufunc = getattr(np, name)
    x = np.array([2.0, -2.0, np.inf, -np.inf, np.nan, -np.nan, 0.5, -1.0], dtype)
    with np.errstate(invalid="ignore"):
        want = ufunc(x)
        if not np.array_equal(np.signbit(want), np.signbit(ufunc(x.astype(np.float64)))):
            pytest.skip("this NumPy's float32 and float64 routines give NaNs of other signs")
        got = stax.compile(lambda a: ufunc(a))(x)
    np.testing.assert_array_max_ulp(got[6:], want[6:], maxulp=1)
    np.testing.assert_array_equal(np.signbit(got[:6]), np.signbit(want[:6]))
    assert np.isnan(got[:6]).all()
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        stax.compile(lambda a: ufunc(a))(x[:1])
