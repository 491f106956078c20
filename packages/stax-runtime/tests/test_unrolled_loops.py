"""Python loops unroll at capture (issue 13): scheduling the hundreds of kernels an unrolled loop
makes stays about quadratic in their number (it was cubic and more: minutes for a 7x7 distance
loop), a plan of more than MAX_STEPS steps runs eagerly with a reason, and capture stops at
MAX_NODES operations."""

import time

import numpy as np
import pytest

import stax.codegen.program_plan as program_plan
import stax.runtime as stax
import stax.trace.tracer as tracer
from stax.ir import UnsupportedError


def distances(a, b):
    m, n = a.shape[1], b.shape[1]
    d = np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            d[i, j] = np.sqrt(((a[:, i] - b[:, j]) ** 2).sum())
    return d


def reference(a, b):
    return np.sqrt(((a[:, :, None] - b[:, None, :]) ** 2).sum(0))


def triangle(a):
    """Iterations of different extents (row i's first i + 1 elements): nothing to reroll, so
    one reduction and one update per iteration."""
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        out[i, :i + 1] = np.sqrt((a[i, :i + 1] ** 2).sum()) + out[i - 1, 0]
    return out


def test_an_unrolled_loop_of_reductions_compiles_and_matches_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.random((9, 9)), rng.random((9, 9))  # 81 reductions: more groups than the exact scan
    f = stax.compile(distances, strict_native=True)
    np.testing.assert_allclose(f(a, b), reference(a, b), rtol=1e-14)
    np.testing.assert_array_equal(f(a, b), f(a, b))


def test_scheduling_time_grows_about_quadratically(monkeypatch):
    spent: list[float] = []
    schedule = program_plan.schedule

    def timed(program, *rest):
        clock = time.perf_counter()
        try:
            return schedule(program, *rest)
        finally:
            spent.append(time.perf_counter() - clock)
    monkeypatch.setattr(program_plan, "schedule", timed)
    monkeypatch.setattr(program_plan, "MAX_STEPS", 10_000)
    def best(sizes: tuple[int, ...]) -> float:
        """The least scheduling time of programs of about one size (each a new program: the
        VM's speed varies 2x from one moment to the next, and a CI session once measured 60x
        where an idle host measures 13x)."""
        times = []
        for k in sizes:
            spent.clear()
            a = np.random.default_rng(k).random((k, k))
            stax.compile(triangle, strict_native=True)(a)
            times.append(sum(spent))
        return min(times)

    # 4x the kernels: 16x when quadratic, 64x and more when cubic (measured; 13x idle)
    ratio = best((96, 100, 104)) / best((24, 25, 26))
    assert ratio < 40, ratio


def triangle_drawing(a, rng):
    """``triangle`` with a generator argument: captured twice, its draws would repeat, so its
    loop is not captured again lifted (``loops.recapturable``)."""
    return triangle(a) + 0.0 * rng.random(a.shape)


def test_a_plan_of_too_many_steps_runs_eagerly_and_says_why(monkeypatch, caplog):
    monkeypatch.setattr(program_plan, "MAX_STEPS", 20)
    a = np.random.default_rng(1).random((16, 16))
    with pytest.raises(UnsupportedError, match="a Python loop unrolled at capture"):
        stax.compile(triangle_drawing, strict_native=True)(a, np.random.default_rng(2))
    f = stax.compile(triangle_drawing)
    np.testing.assert_array_equal(f(a, np.random.default_rng(2)),
                                  triangle_drawing(a, np.random.default_rng(2)))
    assert not f.versions()[0].native and "more than 20" in f.versions()[0].reason
    lifted = stax.compile(triangle)  # captured again with its loop lifted (with a capture
    np.testing.assert_allclose(lifted(a), triangle(a), rtol=1e-14)  # cache: it loaded the
    assert lifted.versions()[0].native  # unrolled capture back and ran eagerly)


def test_capture_stops_at_max_nodes(monkeypatch):
    monkeypatch.setattr(tracer, "MAX_NODES", 500)

    def long_loop(x):
        for _ in range(1000):
            x = x * 1.0001
        return x
    x = np.ones(4)
    with pytest.raises(UnsupportedError, match="capture recorded 500 operations") as info:
        stax.compile(long_loop, strict_native=True)(x)
    assert "test_unrolled_loops.py" in str(info.value)
    np.testing.assert_array_equal(stax.compile(long_loop)(x), long_loop(x))


def heat_steps(u, steps):
    u = u.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def test_the_steps_of_an_unrolled_loop_are_compiled_once():
    """Each step's kernels differ only in their buffers: one LLVM function each, the other
    steps' kernels aliases of it (first call: about 0.3 s for 30 steps, was 1 s)."""
    u = np.random.default_rng(0).standard_normal(200)
    f = stax.compile(heat_steps, strict_native=True)
    np.testing.assert_array_equal(f(u, 30), heat_steps(u, 30))
    artifact = f.versions()[0].artifact
    defined = artifact.llvm_ir.count("\ndefine ")
    aliases = artifact.llvm_ir.count(" = alias ")
    assert aliases >= 20 and defined + aliases == len(artifact.kernels), (defined, aliases)
    np.testing.assert_array_equal(f(u * 2, 30), heat_steps(u * 2, 30))


def _euler_sine(y, dt):
    for _ in range(120):
        y = y + dt * np.sin(y) * 0.5
    return y


def test_an_unrolled_loop_of_many_transcendentals_is_lifted(monkeypatch, caplog):
    """An Euler loop of ``np.sin`` unrolled into one kernel of 120 sines took seconds in LLVM
    (200 steps: 8.7 s to a first call): past ``FUNCTION_BUDGET`` evaluations the function is
    captured again with its loop lifted, a first call of a fraction of a second."""
    import logging
    monkeypatch.setenv("STAX_LOGS", "loops")
    y = np.random.default_rng(0).random(64)
    compiled = stax.compile(_euler_sine)
    with caplog.at_level(logging.INFO, logger="stax"):
        np.testing.assert_allclose(compiled(y, 0.01), _euler_sine(y, 0.01), rtol=1e-13)
    assert "captured again with them lifted" in caplog.text, caplog.text
    caplog.clear()
    short = lambda y: _euler_sine_short(y, 0.01)  # noqa: E731 (ten sines: unrolled, fused)
    with caplog.at_level(logging.INFO, logger="stax"):
        np.testing.assert_allclose(stax.compile(short)(y), short(y), rtol=1e-13)
    assert "captured again" not in caplog.text, caplog.text


def _fourier(f, x, L):
    a, b = np.zeros(20), np.zeros(20)
    for k in range(20):
        a[k] = 2 / L * np.sum(f * np.cos(2 * np.pi * k * x / L)) * (x[1] - x[0])
        b[k] = 2 / L * np.sum(f * np.sin(2 * np.pi * k * x / L)) * (x[1] - x[0])
    return a, b


def test_twenty_fourier_coefficients_are_lifted(monkeypatch, caplog):
    """40 evaluations of ``cos`` and ``sin`` fused into one kernel: 1.7 s to a first call;
    past ``FUNCTION_BUDGET`` (16) the loop is lifted (a fraction of a second)."""
    import logging
    monkeypatch.setenv("STAX_LOGS", "loops")
    x = np.linspace(0, 2, 1000)
    f = np.sign(np.sin(np.pi * x))
    compiled = stax.compile(_fourier)
    with caplog.at_level(logging.INFO, logger="stax"):
        for got, want in zip(compiled(f, x, 2.0), _fourier(f, x, 2.0)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    assert "captured again with them lifted" in caplog.text, caplog.text


def _euler_sine_short(y, dt):
    for _ in range(10):
        y = y + dt * np.sin(y) * 0.5
    return y


def _sines_with_a_break(x):
    for k in range(20):
        x = np.sin(x) + np.cos(x) + 0.1 * np.exp(-x)
        if k == 18:  # the index as a Python int: the lifted body does not compile
            break
    return x


def test_past_the_function_budget_a_loop_that_would_run_in_numpy_stays_unrolled(monkeypatch,
                                                                                  caplog):
    """A review's finding: past ``FUNCTION_BUDGET`` a loop of 60 transcendentals was captured
    again lifted, where its body runs in NumPy (it compares its index): 20 kernels became
    NumPy's speed. Such a function compiles unrolled after all."""
    import logging
    monkeypatch.setenv("STAX_LOGS", "loops")
    x = np.random.default_rng(0).random(64)
    compiled = stax.compile(_sines_with_a_break)
    with caplog.at_level(logging.INFO, logger="stax"):
        np.testing.assert_allclose(compiled(x), _sines_with_a_break(x), rtol=1e-14)
    assert "compiled unrolled after all" in caplog.text, caplog.text
    version = compiled.versions()[0]
    assert version.native and not version.artifact.externs


def _sir(s, i, r, beta, gamma, dt, steps):
    out = np.zeros((steps, 3))
    for k in range(steps):
        infections = beta * s * i * dt
        recoveries = gamma * i * dt
        s, i, r = s - infections, i + infections - recoveries, r + recoveries
        out[k] = s, i, r
    return out


def test_a_loop_storing_python_float_state_lifts_at_once(monkeypatch, caplog):
    """An SIR model on Python floats, each step's state written as a row: the first call's
    scalars are its key's values, so unrolled, each row is a constant of its own, no rerolling
    joins them, and past the kernel budget the program was refused after 0.75 s of lowering
    (1.05 s to a first call on AMD Zen 3). A loop that rebinds a Python float and stores
    constant floats lifts at once past ``FLOAT_STATE_LIMIT`` items (0.34 s); a short one
    unrolls."""
    import logging

    from stax.ir import LIFTED_LOOP
    monkeypatch.setenv("STAX_LOGS", "loops")
    args = (0.99, 0.01, 0.0, 0.3, 0.1, 0.1)
    for steps, lifted in ((400, True), (60, True), (20, False)):
        compiled = stax.compile(_sir)
        with caplog.at_level(logging.INFO, logger="stax"):
            np.testing.assert_array_equal(compiled(*args, steps), _sir(*args, steps))
            np.testing.assert_array_equal(compiled(*args, steps), _sir(*args, steps))
        assert "captured again" not in caplog.text, caplog.text
        assert (LIFTED_LOOP in str(compiled.versions()[0].artifact)) is lifted, steps
        caplog.clear()
    # a float rebound beside a constant that is not its value: the rows reroll (a review's find:
    # lifted, 5.7 us a call against 1.4)
    compiled = stax.compile(_constant_rows)
    np.testing.assert_array_equal(compiled(60)[0], _constant_rows(60)[0])
    assert LIFTED_LOOP not in str(compiled.versions()[0].artifact)


def _constant_rows(n):
    out, t = np.zeros(n), 0.0
    for k in range(n):
        t = t + 0.1
        out[k] = 0.5
    return out, t


def _sir_total(beta, gamma, s0, i0, n, dt=0.1):
    out = np.zeros((n, 3))
    s, i, r = s0, i0, 0.0
    for k in range(n):
        ds = -beta * s * i
        di = beta * s * i - gamma * i
        dr = gamma * i
        s, i, r = s + dt * ds, i + dt * di, r + dt * dr
        out[k] = s, i, r
    return out, s + i + r, -(1.0 - s) * 2


def _sir_divided(beta, gamma, s0, i0, n, dt=0.1):
    out, s, i = np.zeros(n), s0, i0
    for k in range(n):
        s, i = s - dt * beta * s * i, i + dt * (beta * s * i - gamma * i)
        out[k] = s
    return out, s / i  # Python raises where NumPy gives inf: no traced float


def test_returned_arithmetic_of_carried_floats_lifts():
    """``return out, s + i + r``: the floats a loop carries read after it in a returned
    element of ``+ - *`` and numbers only (``result_conversions.arithmetic_results``): the loop
    lifts, the element is the Python float eager computes (400 steps ran eagerly: the loop
    unrolled past the kernel budget). A quotient keeps the floats Python's (no lift), still
    eager's results."""
    from stax.ir import LIFTED_LOOP
    compiled = stax.compile(_sir_total, strict_native=True)
    for args in ((0.3, 0.1, 0.99, 0.01, 400), (0.5, 0.2, 0.9, 0.1, 400)):
        got, want = compiled(*args), _sir_total(*args)
        np.testing.assert_array_equal(got[0], want[0])
        assert type(got[1]) is float and got[1] == want[1] and got[2] == want[2]
    assert LIFTED_LOOP in str(compiled.versions()[0].artifact)
    divided = stax.compile(_sir_divided)
    got, want = divided(0.3, 0.1, 0.99, 0.01, 30), _sir_divided(0.3, 0.1, 0.99, 0.01, 30)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1]


def _with_a_numpy_scalar(x, n):
    out, s = np.zeros(n), 0.0
    for k in range(n):
        m = x[k]
        s = s + 0.1
        out[k] = s
    return out, s + m  # m an np.float32: eager's sum is a float32


def _with_a_bool(x, n):
    out, s = np.zeros(n), 0.0
    for k in range(n):
        flag = True
        s = s + 0.5
        out[k] = s
    return out, s + flag


@pytest.mark.parametrize("fn", [_with_a_numpy_scalar, _with_a_bool])
def test_returned_arithmetic_reading_another_kind_of_value_keeps_eagers_type(fn):
    """A returned element of a carried float and a name that is no Python float the loop
    carries (a review's find): lifted, the float was a traced float64 and the element
    np.float64 where eager gives np.float32 (or a Python float); the loop unrolls."""
    x = np.arange(100, dtype=np.float32) / 3
    got, want = stax.compile(fn)(x, 60), fn(x, 60)
    np.testing.assert_array_equal(got[0], want[0])
    assert type(got[1]) is type(want[1]) and got[1] == want[1]
