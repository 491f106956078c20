"""Calls of plans with several NumPy steps, written out as one function
(``stax.codegen.straight_line``) that records NumPy's floating-point events once around all its
steps: under every error state they warn, raise or call as eager NumPy does, once, whichever step
(or kernel between them) meets the event; NumPy's error state is the caller's again after every
call, one that returns, declines or raises."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen import Executable, KernelArtifact, errstate
from stax.codegen.executable import ExternRaised

STATES = {
    "warn": dict(all="warn", under="ignore"),  # NumPy's default
    "raise": dict(all="raise", under="ignore"),
    "ignore": dict(all="ignore"),
    "call": dict(all="call", under="ignore"),
    "mixed": dict(divide="ignore", over="raise", invalid="warn", under="ignore"),
}


def observe(fn, *args):
    """fn(*args) under the current error state: (result, FloatingPointError text, warnings,
    seterrcall calls)."""
    calls = []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with np.errstate(call=lambda kind, flag: calls.append(kind), **np.geterr()):
            try:
                result, error = fn(*args), None
            except FloatingPointError as exc:
                result, error = None, str(exc)
    return result, error, [(w.category.__name__, str(w.message)) for w in seen], calls


def assert_like_eager(compiled, fn, args):
    want, got = observe(fn, *args), observe(compiled, *args)
    assert got[1:] == want[1:], f"(error, warnings, calls): compiled {got[1:]}, eager {want[1:]}"
    if want[0] is None:
        assert got[0] is None
    else:
        np.testing.assert_array_equal(got[0], want[0])


def three_products(A, B):
    r = A @ B
    r = r @ B
    return r @ B


def products_around_a_kernel(A, B, c):
    r = (A @ B) / c
    return (r @ B) + 1.0


def big(value):
    return np.full((4, 4), value)


def numpy_steps(compiled):
    return [e.target for e in compiled.versions()[0].artifact.externs]


@pytest.fixture(autouse=True)
def _state_is_restored():
    before = np.geterr(), np.geterrcall()
    yield
    assert (np.geterr(), np.geterrcall()) == before
    assert not errstate.report(0), "a NumPy step's recording was left in place"


@pytest.mark.parametrize("state", sorted(STATES))
def test_an_event_of_the_second_step_reports_once(state):
    """The second of three products overflows (the third meets only infinities): one warning,
    one FloatingPointError, one call, as eager NumPy."""
    compiled = stax.compile(three_products)
    with np.errstate(all="ignore"):
        compiled(big(1.0), big(1.0))
    assert numpy_steps(compiled) == ["operator.matmul"] * 3
    with np.errstate(**STATES[state]):
        assert_like_eager(compiled, three_products, (big(1e150), big(1e100)))
        assert_like_eager(compiled, three_products, (big(1.0), big(2.0)))  # no event: native


@pytest.mark.parametrize("state", sorted(STATES))
def test_a_kernel_between_steps_declines_and_steps_report_once(state):
    """A kernel's division by zero between two products declines the call (the recording spans
    the kernel); the eager run gives the kernel's warning and the second product's, once each."""
    compiled = stax.compile(products_around_a_kernel)
    c = np.ones((4, 4))
    with np.errstate(all="ignore"):
        compiled(big(1.0), big(1.0), c)
    assert numpy_steps(compiled) == ["operator.matmul"] * 2
    zero = c.copy()
    zero[1, 2] = 0.0
    with np.errstate(**STATES[state]):
        for args in ((big(1.0), big(1.0), zero),          # the kernel alone
                     (big(1e150), big(1e100), c),         # the second product alone
                     (big(1e150), big(1e100), zero),      # both, in eager order
                     (big(1.0), big(1.0), c)):            # none
            assert_like_eager(compiled, products_around_a_kernel, args)


def test_events_are_recorded_once_per_call(monkeypatch):
    """The recording is entered once around all the steps of a call, not once per step."""
    compiled = stax.compile(three_products)
    compiled(big(1.0), big(1.0))
    entered = []
    start = errstate.start_recording
    monkeypatch.setattr(errstate, "start_recording", lambda events: entered.append(1) or
                        start(events))
    executable = Executable(compiled.versions()[0].artifact)
    want = three_products(big(1.0), big(2.0))
    np.testing.assert_array_equal(executable.run(big(1.0), big(2.0))[0], want)
    np.testing.assert_array_equal(executable.run_one(big(1.0), big(2.0)), want)
    assert len(entered) == 2


def test_a_step_that_raises_leaves_the_callers_state():
    """NumPy's error from the second step (a singular matrix) is raised by the eager run, as
    NumPy raises it, and the recording the step ran under is undone."""
    def fn(A, B):
        return np.linalg.inv(A @ B) @ B
    compiled = stax.compile(fn)
    eye = np.eye(3)
    np.testing.assert_array_equal(compiled(eye, eye), fn(eye, eye))
    assert "numpy.linalg.inv" in numpy_steps(compiled)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for state in ("warn", "raise", "call"):
            with np.errstate(call=lambda *a: None, **STATES[state]):
                with pytest.raises(np.linalg.LinAlgError):
                    compiled(np.ones((3, 3)), eye)


def test_no_text_of_a_numpy_step_is_executed(tmp_path):
    """A keyword's name in a document is a value of the call, never Python source."""
    def fn(x):
        return np.sort(x, axis=0) + 1.0
    compiled = stax.compile(fn)
    x = np.array([3.0, 1.0, 2.0])
    compiled(x)
    doc = compiled.versions()[0].artifact.to_json()
    step = next(e for e in doc["externs"] if e["target"] == "numpy.sort")
    marker = tmp_path / "pwned"
    key = f"axis=0); __import__('os').system('touch {marker}'); (0"
    step["kwargs"] = {"dict": [[key, 0]]}
    executable = Executable(KernelArtifact.from_json(doc))
    with pytest.raises(ExternRaised, match=r"unexpected keyword|invalid keyword"):
        executable.run(x)
    assert not marker.exists()
