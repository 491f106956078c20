"""Data gates checked by the compiled program (``gate_checks.py``, issue 14): the kernels compute
the gate values once, the runner compares them, a mismatch finds the other branch's version;
gates whose value the kernels may round otherwise (a float sum) are replayed in NumPy."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime import gate_checks
from stax.runtime.gates import GateReplay


def stencil_normalize(x):
    s = x[1:-1, 1:-1] * 4 - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]
    y = np.abs(s)
    return y / (max(1.0, y.max()) + 1e-9)


def stencil_branch(x):
    s = x[1:-1, 1:-1] * 4 - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]
    y = np.abs(s)
    if y.max() > 1.0:
        return y / y.max()
    return y


def branch_on_mean(x):
    return x * 2.0 if x.mean() > 0 else x - 1.0


def no_replay(monkeypatch):
    """Replaying a gate before a call fails the test: the program checks them."""
    def refuse(self, leaves):
        raise AssertionError("a gate checked in the program was replayed")
    monkeypatch.setattr(GateReplay, "matches", refuse)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_branches_taken_by_the_kernels_values(monkeypatch, dtype):
    f = stax.compile(stencil_branch, strict_native=True)
    rng = np.random.default_rng(0)
    big = rng.standard_normal((40, 50)).astype(dtype)
    small = (big * 1e-3).astype(dtype)
    np.testing.assert_array_equal(f(big), stencil_branch(big))
    assert f.versions()[0].gates_in_program
    no_replay(monkeypatch)
    for x in (small, big, small, small, big, np.asfortranarray(small)):
        np.testing.assert_array_equal(f(x), stencil_branch(x))
    # one per branch (each tried first when it last held), and the other layout's
    assert len(f.versions()) == 3
    assert all(v.gates_in_program for v in f.versions())


def test_a_rounded_gate_value_is_replayed():
    """A float mean may round otherwise in the kernels than in NumPy: its gate is replayed,
    so near a tie the branch is eager's."""
    f = stax.compile(branch_on_mean, strict_native=True)
    x = np.array([1.0, -1.0, 1e-17, 0.0], np.float64)
    np.testing.assert_array_equal(f(x), branch_on_mean(x))
    assert not f.versions()[0].gates_in_program
    for y in (-x, x, np.zeros(4)):
        np.testing.assert_array_equal(f(y), branch_on_mean(y))


def test_which_slices_are_exact():
    from stax.trace.tracer import trace

    def capture(fn, *args):
        return trace(fn, args, {}, name=fn.__name__,
                     arg_names=[f"a{i}" for i in range(len(args))])

    x = np.arange(12.0).reshape(3, 4)
    n = np.arange(12).reshape(3, 4)
    assert gate_checks.inexact_node(capture(stencil_normalize, np.ones((5, 5), np.float32))) \
        is None
    assert gate_checks.inexact_node(capture(lambda a: a * 2 if n.sum() > 3 else a, x)) is None
    assert gate_checks.inexact_node(
        capture(lambda a, b: a if (a[b.argmax() % 3] > 2).any() else -a, x, n)) is None
    for fn in (lambda a: a * 2 if a.sum() > 3 else a,  # float sum: rounding order
               lambda a: a * 2 if np.exp(a).max() > 3 else a,  # within 1 ulp, not exact
               lambda a: a * float(np.linalg.norm(a))):
        assert gate_checks.inexact_node(capture(fn, x)) is not None
    # a gate whose value is a whole list is replayed too
    listed = capture(lambda a: a + sum(a[0].tolist()), x)
    assert listed.gates and gate_checks.inexact_node(listed) is not None


def test_an_argument_is_written_only_by_the_branch_that_holds(monkeypatch):
    def update(x):
        x *= 2
        if x.max() > 4:
            x[0] = -1.0
        else:
            x += 1
        return x.min()

    f = stax.compile(update, strict_native=True)
    rng = np.random.default_rng(1)
    for scale in (1.0, 10.0, 1.0, 0.1, 10.0):
        x = rng.random(64) * scale
        mine, eager = x.copy(), x.copy()
        assert f(mine) == update(eager)
        np.testing.assert_array_equal(mine, eager)
    assert len(f.versions()) == 2 and all(v.gates_in_program for v in f.versions())


def test_a_value_gate_compiles_once_per_value():
    def scale(x):
        return x * int(np.argmax(x))

    f = stax.compile(scale, strict_native=True)
    rng = np.random.default_rng(2)
    for _ in range(6):
        x = rng.random(5)
        np.testing.assert_array_equal(f(x), scale(x))
    assert len(f.versions()) == len({int(v.gates.expected[0]) for v in f.versions()})
    assert all(v.gates_in_program for v in f.versions())


def test_draws_are_made_once_when_the_branch_changes():
    def noisy(x, rng):
        noise = rng.standard_normal(x.shape)
        return x + noise if x.max() > 0 else x - noise

    f = stax.compile(noisy)
    for sign in (1, -1, 1, -1):
        x = sign * np.abs(np.linspace(0.5, 1.0, 8))
        mine, eager = np.random.default_rng(5), np.random.default_rng(5)
        np.testing.assert_array_equal(f(x, mine), noisy(x, eager))
        assert mine.bit_generator.state == eager.bit_generator.state


def test_events_in_a_gates_slice_are_reported():
    def ratio(x, y):
        return x if (x / y).max() > 1 else -x

    f = stax.compile(ratio)
    x, y = np.ones(4), np.array([1.0, 2.0, 0.0, 4.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = f(x, y)
    np.testing.assert_array_equal(got, ratio(x, y))
    assert any("divide by zero" in str(w.message) for w in caught)
