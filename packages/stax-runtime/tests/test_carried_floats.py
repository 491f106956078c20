"""Python floats a lifted ``for`` loop carries (``stax.trace.loop_counters.carried_floats``):
``t += dt`` in a time-stepping loop, an SIR model's ``S, I, R``. Each is an input and a result
of the lifted step, a Python float in the body (weak, as NEP 50 takes it), returned as a float;
a loop whose float is read after it otherwise, or becomes a NumPy scalar, keeps eager's
semantics (before, every such loop unrolled: 2,000 steps of ``t += dt`` captured in 38 s)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import stax.runtime as st
from stax.trace import loops

RNG = np.random.default_rng(3301)


def euler(x, dt, n):
    t = 0.0
    for _ in range(n):
        x = x + dt * (np.cos(t) - x)
        t += dt
    return x, t


def sir(S, V, R, beta, gamma, dt, n):
    out = np.zeros((n, 3))
    for k in range(n):
        dS = -beta * S * V * dt
        dR = gamma * V * dt
        S, V, R = S + dS, V - dS - dR, R + dR
        out[k] = S, V, R
    return out, S


def decays(x, g, n):
    for _ in range(n):
        x = x * g + 1.0
        g = g * 0.5
    return x, g


def read_after(x, n):
    t = 0.5
    for _ in range(n):
        x = x + t
        t = t * 1.5
    return x * t  # a float32 x times a Python float: float32


def becomes_numpy(x, n):
    t = 0.0
    for i in range(n):
        t = t + x[i]  # an np.float64 from the second item on
    return t


def _same(got, want, ulps=0):
    """Equal types, dtypes and values; within ``ulps`` where the body calls a transcendental
    (np.cos of the carried time: Stax's own, within an ulp of NumPy's, as for arrays)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for a, b in zip(got, want):
            _same(a, b, ulps)
        return
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
    if ulps and isinstance(want, np.ndarray):
        np.testing.assert_array_max_ulp(got, want, maxulp=ulps)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fn, args", [
    (euler, (RNG.standard_normal(64), 0.01, 400)),
    (euler, (RNG.standard_normal(64).astype(np.float32), 0.01, 400)),
    (sir, (0.99, 0.01, 0.0, 0.3, 0.1, 0.1, 300)),
    (decays, (RNG.standard_normal(16).astype(np.float32), 0.9, 300)),
    (read_after, (RNG.standard_normal(16).astype(np.float32), 50)),
    (becomes_numpy, (RNG.standard_normal(300), 300)),
])
def test_carried_floats_keep_eager_results(fn, args):
    compiled = st.compile(fn)
    for _ in range(2):
        _same(compiled(*args), fn(*args), ulps=4 if fn is euler else 0)


def test_a_time_stepping_loop_lifts_with_its_float_time(caplog, monkeypatch):
    monkeypatch.setenv("STAX_LOGS", "loops")
    compiled = st.compile(euler)
    x = RNG.standard_normal(64)
    with caplog.at_level(logging.INFO, logger="stax"):
        got = compiled(x, 0.01, 400)
    assert "iterations lifted into one step" in caplog.text and "inputs dt, t, x" in caplog.text, \
        caplog.text
    assert "items run in one machine-code loop" in caplog.text, caplog.text
    _same(got, euler(x, 0.01, 400), ulps=4)
    _same(compiled(x, 0.02, 400), euler(x, 0.02, 400), ulps=4)


def polynomial_forcing(x, dt, n):
    t = 0.0
    for _ in range(n):
        x = x + dt * (t * t - x)
        t += dt
    return x, t


def test_a_carried_float_in_arithmetic_is_bit_for_bit():
    compiled = st.compile(polynomial_forcing)
    x = RNG.standard_normal(64)
    for dt in (0.01, 0.003, -0.0):
        _same(compiled(x, dt, 400), polynomial_forcing(x, dt, 400))


@pytest.mark.parametrize("fn, args", [
    (sir, (0.99, 0.01, 0.0, 0.3, 0.1, 0.1, 300)),
    (polynomial_forcing, (RNG.standard_normal(64), 0.01, 400)),
])
def test_a_body_kept_compiled_never_runs_a_version_of_another_float(fn, args, monkeypatch):
    """The runner's direct calls skip the key: a body version exact in the first item's float
    ran every later item (an SIR model 0.87 off) where timing kept the compiled body (NumPy
    was faster here, which hid it); the test keeps it compiled."""
    from stax.runtime import lifted_loops
    monkeypatch.setattr(lifted_loops.Runner, "eager_seconds_per_item", lambda self, arrays: None)
    compiled = st.compile(fn)
    for _ in range(2):
        _same(compiled(*args), fn(*args))


def test_a_plan_too_big_unrolled_lifts_with_a_capture_cache(caplog, monkeypatch, tmp_path):
    """The capture of a plan too big when unrolled was stored on disk, and the capture again
    with every loop lifted loaded it back: with a cache directory (the default) such a function
    always ran eagerly."""
    monkeypatch.setenv("STAX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("STAX_LOGS", "loops")
    # (a loop of Python float state lifts at once now, ``FLOAT_STATE_LIMIT``: each row here
    # a constant of the item's own, 300 kernels unrolled)
    compiled = st.compile(residues)
    args = (RNG.standard_normal(300), 300)
    with caplog.at_level(logging.INFO, logger="stax"):
        _same(compiled(*args), residues(*args))
    assert "captured again with them lifted" in caplog.text, caplog.text
    assert "iterations lifted into one step" in caplog.text, caplog.text


def residues(x, n):
    out = np.zeros(n)
    for k in range(n):
        out[k] = (k * k) % 7 + 0.5
    return out + x


def augmented_after(x, n):
    t = 0.5
    for _ in range(n):
        x = x * 0.999
        t = t * 1.0001
    t += x  # read by the augmented assignment: a Python float with float32 x gives float32
    return t


def read_by_locals(x, n):
    t = 0.5
    for _ in range(n):
        x = x * 0.999
        t = t * 1.0001
    return x, locals()["t"]


def nested_carry(x, n):
    t = 0.5
    for _ in range(3):
        for _ in range(n):  # unrolled inside the outer body: t a constant of its version
            x = x + t
            t = t * 1.0001
        x = x * t
    return x, t


@pytest.mark.parametrize("fn", [augmented_after, read_by_locals, nested_carry])
def test_a_float_read_after_its_loop_otherwise_is_not_carried(fn):
    """A name the source reads after the loop by an augmented assignment or through
    ``locals()`` stays a Python float there (it was a float64 traced value: float64 results and
    ``np.float64`` types); an outer loop whose body holds the float as a constant (an inner
    loop unrolled) does not run in the machine-code loop (it crashed: no buffer carried it)."""
    x = np.linspace(0, 1, 16).astype(np.float32)
    compiled = st.compile(fn)
    _same(compiled(x, 2000), fn(x, 2000))


def grows(x, t, n):
    for _ in range(n):
        x = x * 0.999 + t
        t = t * 1.0001
    return x, t


def test_a_carried_float_from_a_scalar_argument_is_one_version_for_every_value():
    """The loop's start compared the float before and after the first iteration (a read: a
    version per value of the argument, 90 ms each, eager past eight)."""
    compiled = st.compile(grows)
    x = RNG.standard_normal(64)
    for t in (0.5, 1.5, -0.0, 2.5, 1e300, np.nan):
        _same(compiled(x, t, 1500), grows(x, t, 1500))
    assert compiled.cache_info().compiles == 2, compiled.cache_info()


def nested_time(x, n, m):
    t = 0.0
    for _ in range(m):
        for _ in range(n):
            x = x + 0.001 * (t - x)
            t += 0.001
    return x, t


def fills(out, n):
    t = 0.0
    for i in range(n):
        out[i] = t
        t += 0.5
    return out


def raises_past_limit(x, n, lim):
    t = 0.0
    for _ in range(n):
        x = x * 0.999 + 0.001
        t += 0.01
        if t > lim:
            raise ValueError("too big")
    return x, t


@pytest.mark.parametrize("fn, args", [
    (nested_time, (np.ones(8, np.float32), 600, 3)),  # the inner loop runs again: not carried
    (nested_time, (np.ones(8), 600, 2)),
    (fills, (np.zeros(1200), 1200)),  # an argument updated in place beside the float (crashed)
    (raises_past_limit, (np.ones(8), 600, 100.0)),  # read by the body: run by NumPy, no warning
])
def test_probe_found_carried_float_programs(fn, args, caplog):
    compiled = st.compile(fn)
    with caplog.at_level(logging.WARNING, logger="stax"):
        for _ in range(2):
            call = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
            _same(compiled(*call), fn(*tuple(a.copy() if isinstance(a, np.ndarray) else a
                                             for a in args)))
    assert "reached its limit" not in caplog.text, caplog.text


def rk4_closure(y0, omega, zeta, dt, n):
    def rhs(t, y):  # its own ``t``: no reader of the loop's
        return np.array([y[1], -2 * zeta * omega * y[1] - omega * omega * y[0] + np.cos(t)])
    y = y0
    t = 0.0
    for _ in range(n):
        k1 = rhs(t, y)
        k2 = rhs(t + dt / 2, y + dt / 2 * k1)
        k3 = rhs(t + dt / 2, y + dt / 2 * k2)
        k4 = rhs(t + dt, y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + dt
    return y, t


def test_a_nested_function_whose_parameter_is_named_as_the_carried_float(caplog, monkeypatch):
    """A probe's finding: a nested ``rhs(t, y)`` named the loop's carried ``t`` as a parameter
    of its own, read as another scope sharing it: the loop unrolled (2,101 buffers), fell back
    after 7 s, and did so again for every new ``omega``."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    compiled = st.compile(rk4_closure)
    y0 = np.array([1.0, 0.0])
    with caplog.at_level(logging.INFO, logger="stax"):
        for n in (300, 301):
            _same(compiled(y0, 1.0, 0.05, 0.01, n), rk4_closure(y0, 1.0, 0.05, 0.01, n))
    assert "iterations lifted into one step" in caplog.text, caplog.text


def rk4_shared(y0, dt, n):
    def rhs(y):  # reads the loop's ``t``: it is not carried
        return -y + np.cos(t)
    t = 0.0
    y = y0
    for _ in range(n):
        y = y + dt * rhs(y)
        t = t + dt
    return y, t


def test_a_nested_function_reading_the_loops_float_still_sees_it():
    compiled = st.compile(rk4_shared)
    y0 = np.array([1.0, 0.5])
    for n in (50, 60):
        _same(compiled(y0, 0.01, n), rk4_shared(y0, 0.01, n))


def numpy_time(x, dt, n):  # ``dt`` a NumPy scalar argument: ``t`` a NumPy scalar from the
    t = 0.0  # first item on (NEP 50), carried as a 0-d buffer
    for _ in range(n):
        t += dt
        x = x * 0.999 + t
    return x, t


def numpy_count(x, dt, n):
    t = 0
    for _ in range(n):
        t += dt
        x = x + t
    return x, t


@pytest.mark.parametrize("fn, x, dt", [
    (numpy_time, np.ones(8, np.float32), np.float32(0.1)),
    (numpy_time, np.ones(8), np.float16(0.1)),
    (numpy_time, np.ones(8, np.float32), np.float64(0.1)),
    (numpy_count, np.ones(8, np.int32), np.int16(300)),  # overflows: NumPy's scalar add warns
    (numpy_count, np.ones(8, np.int16), np.int8(3)),
])
def test_a_numpy_scalar_the_loop_rebinds_lifts(fn, x, dt, caplog, monkeypatch):
    """A probe's find: "the body updates 't' in place, which is not a traced array", the loop
    unrolled (1,500 steps 1.7 s, every count again); now carried as a NumPy scalar is."""
    import warnings
    monkeypatch.setenv("STAX_LOGS", "loops")
    compiled = st.compile(fn)

    def observe(f, n, **state):
        with warnings.catch_warnings(record=True) as seen, np.errstate(**state):
            warnings.simplefilter("always")
            try:
                out = f(x.copy(), dt, n)
            except FloatingPointError as exc:
                return None, str(exc), len(seen)
        return out, None, [str(w.message) for w in seen]
    with caplog.at_level(logging.INFO, logger="stax"):
        for n in (1500, 1501, 7):
            for state in ({}, {"all": "raise"}):
                got, want = observe(compiled, n, **state), observe(fn, n, **state)
                assert got[1:] == want[1:]
                if want[0] is not None:
                    for g, w in zip(got[0], want[0]):
                        assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype
                        np.testing.assert_array_equal(g, w)
    assert "iterations lifted into one step" in caplog.text, caplog.text


def goertzel(x, k):
    """A recurrence over the samples started from Python floats: ``s1`` is an ``np.float64``
    after the first sample, ``s2 = s1`` after the second."""
    n = x.shape[0]
    w = 2 * np.pi * k / n
    coeff = 2 * np.cos(w)
    s1 = 0.0
    s2 = 0.0
    for v in x:
        s0 = v + coeff * s1 - s2
        s2 = s1
        s1 = s0
    return s1 * s1 + s2 * s2 - coeff * s1 * s2, s1 - np.exp(-1j * w) * s2


def three_deep(x, a):
    s1, s2, s3 = 0.0, 0.0, 1
    for v in x:
        s3 = s2
        s2 = s1
        s1 = v * a + s2 - 0.5 * s3
    return s1, s2, s3


@pytest.mark.parametrize("fn, extra", [(goertzel, 3), (three_deep, 0.7)])
def test_python_numbers_that_turn_traced_one_by_one_are_peeled(fn, extra, caplog,
                                                               monkeypatch):
    """Each iteration recorded as written while it makes another local traced (``s2 = s1``);
    the rest lifted from there (it unrolled: 1,000 samples 12 s for a first call). A small
    ``UNROLL_LIMIT``: the loop is too long to unroll from its first item."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    monkeypatch.setattr(loops, "UNROLL_LIMIT", 60)
    compiled = st.compile(fn)
    for n in (1, 2, 3, 4, 6, 300):
        x = RNG.standard_normal(n)
        for _ in range(2):
            got, want = compiled(x, extra), fn(x, extra)
            for g, w in zip(got, want):
                assert type(g) is type(w)
                np.testing.assert_allclose(g, w, rtol=1e-13)
    with caplog.at_level(logging.INFO, logger="stax"):
        st.compile(fn, strict_native=True)(RNG.standard_normal(300), extra)
    assert "iterations lifted into one step" in caplog.text  # (not unrolled, then captured
    assert "captured again" not in caplog.text  # again: the whole loop once per iteration)
