"""Steps whose values the function does not use report their floating-point events as eager
NumPy's do (issue 10, stress strategy ``dead_warnings``): NumPy computes ``_ = np.log(x)`` and
warns "divide by zero encountered in log" for a zero, or raises under ``np.errstate``, or calls
the error callback; a compiled function computes such a step for its events, in the kernel of
the live steps it shares a loop with, and drops only steps that cannot report one."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stax.runtime as stax

STATES = {
    "warn": dict(all="warn", under="ignore"),
    "raise": dict(all="raise", under="ignore"),
    "ignore": dict(all="ignore"),
    "call": dict(all="call", under="ignore"),
    "mixed": dict(divide="ignore", over="raise", invalid="warn", under="ignore"),
}


def observe(fn, *args):
    """(result, FloatingPointError text, warnings, seterrcall calls) of fn(*args) under the
    current error state."""
    calls = []
    state = np.geterr()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with np.errstate(call=lambda kind, flag: calls.append((kind, flag)), **state):
            try:
                result, error = fn(*args), None
            except FloatingPointError as exc:
                result, error = None, str(exc)
    return result, error, [(w.category.__name__, str(w.message)) for w in seen], calls


def assert_like_eager(compiled, fn, *args):
    want, got = observe(fn, *args), observe(compiled, *args)
    assert got[1:] == want[1:], f"(error, warnings, calls): compiled {got[1:]}, eager {want[1:]}"
    if want[0] is not None:
        np.testing.assert_array_equal(got[0], want[0])


def unused_log(x):
    _ = np.log(x)
    return x + 1


def unused_sqrt_statement(x):
    np.sqrt(x)
    return x * 2


def unused_chain(x, y):
    t = x / y        # read only by the unused step below: computed for the events of both
    _ = np.exp(t)
    return x - y


def unused_reduction(x):
    _ = (x * x).sum()  # overflows for large x
    return x + 1


def unused_integer_division(k):
    _ = k // (k - 1)   # integer division by zero warns too
    return k + 1


def unused_cast(x):
    _ = x.astype(np.int32)  # a NaN cast to an integer is invalid (NumPy computes this cast)
    return np.abs(x)


CASES = {
    "log": (unused_log, (np.array([0.0, 1.0, -1.0, 2.0]),)),
    "sqrt statement": (unused_sqrt_statement, (np.array([4.0, -1.0, 9.0]),)),
    "chain": (unused_chain, (np.array([1.0, 800.0, 0.0, 2.0]), np.array([1.0, 1.0, 0.0, 0.0]))),
    "reduction": (unused_reduction, (np.full(8, 1e200),)),
    "integer division": (unused_integer_division, (np.arange(4),)),  # 1 // 0
    "cast": (unused_cast, (np.array([np.nan, 1.0, 2.0]),)),
}


@pytest.mark.parametrize("warm", [False, True], ids=["capture", "compiled"])
@pytest.mark.parametrize("state", sorted(STATES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_unused_steps_report_as_eager(case, state, warm, monkeypatch):
    """Warn, raise, ignore and call: from the first call (capture) on, or on a function compiled
    before (its calls go through the machine-code entry)."""
    monkeypatch.setenv("STAX_CACHE_DIR", "off")
    fn, args = CASES[case]
    compiled = stax.compile(fn)
    if warm:
        with np.errstate(all="ignore"):
            compiled(*args)
        assert compiled.cache_info().compiles == 1
    with np.errstate(**STATES[state]):
        for _ in range(3):
            assert_like_eager(compiled, fn, *args)


@pytest.mark.parametrize("case", sorted(CASES))
def test_without_events_the_call_stays_native(case):
    """The unused step's events are heeded, but there are none: no call runs eagerly."""
    fn, args = CASES[case]
    clean = tuple(np.full_like(a, 2) for a in args)
    compiled = stax.compile(fn)
    with np.errstate(**STATES["raise"]):
        compiled(*clean)
        before = compiled.cache_info().fallbacks
        for _ in range(2):
            assert_like_eager(compiled, fn, *clean)
        assert compiled.cache_info().fallbacks == before


def test_an_unused_step_shares_the_live_steps_kernel():
    """``np.sqrt(x)`` unused next to ``x * 2``: one kernel reads x once and computes both (the
    unused value is never returned)."""
    x = np.linspace(-1.0, 1.0, 64)
    compiled = stax.compile(unused_sqrt_statement)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(compiled(x), x * 2)
    artifact = compiled.versions()[0].artifact
    (kernel,) = artifact.kernels
    assert len(kernel.computes) == 2 and len(artifact.outputs) == 1 and not artifact.externs
    assert "llvm.sqrt" in artifact.llvm_ir


def test_an_unused_step_is_computed_but_never_stored():
    """The unused value gets no buffer: it is no argument of the kernel computing it, has no
    planned buffer or storage, counts in no written bytes, and the kernel has one store (the
    live value's); its operation stays, tested for being finite (``keep_for_events``)."""
    x = np.linspace(1.0, 2.0, 64)
    compiled = stax.compile(unused_sqrt_statement)
    compiled(x)
    artifact = compiled.versions()[0].artifact
    (kernel,) = artifact.kernels
    unused = [name for name in kernel.computes if name not in kernel.args]
    assert len(unused) == 1 and len(kernel.computes) == 2
    assert unused[0] not in {b.name for b in artifact.buffers}
    assert unused[0] not in artifact.storage.storage
    assert kernel.bytes_written == x.nbytes
    body = artifact.llvm_ir.split(f'define void @"{kernel.name}"')[1].split("\n}")[0]
    assert body.count("store double") == 1 and "llvm.sqrt" in body


def silent_integer(x, k):
    _ = k * 3 + 1          # integer arithmetic: no event NumPy reports
    _ = x > 0              # a comparison
    _ = x.T                # a view
    _ = np.maximum(x, 0)   # exact
    return x + 1


def plain(x, k):
    return x + 1


def test_unused_steps_that_cannot_report_cost_nothing():
    """Steps no event can come from stay dropped: the same plan as without them."""
    x, k = np.ones((3, 4)), np.arange(4)
    a, b = stax.compile(silent_integer), stax.compile(plain)
    a(x, k)
    b(x, k)
    mine, theirs = a.versions()[0].artifact, b.versions()[0].artifact
    assert [k.computes for k in mine.kernels] == [k.computes for k in theirs.kernels]
    assert mine.llvm_ir.split("\n", 3)[-1] == theirs.llvm_ir.split("\n", 3)[-1]
    assert [b.name for b in mine.buffers] == [b.name for b in theirs.buffers]


def test_an_unused_assignment_casting_floats_into_integers_warns():
    """Found by the stress suite: ``v0 = y.copy(); v0[1:] = t`` with ``v0`` unused, float values
    into an int64 array: NumPy's cast of a NaN or infinity is invalid; the step counted as one
    that cannot report (item assignments move data) and was dropped."""
    def fn(y, t):
        v0 = y.copy()
        v0[1:] = t
        return np.abs(t)

    y, t = np.zeros((3, 4), np.int64), np.array([1.0, np.nan, np.inf, 2.0])
    compiled = stax.compile(fn)
    for call in (fn, compiled, compiled):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(y.copy(), t)
        assert sorted({str(w.message) for w in caught}) == ["invalid value encountered in cast"]
