"""The stress harness itself: it must see every kind of difference it claims to check. A compiled
function is replaced by a deliberately wrong one, and the check must report it."""

import numpy as np
import pytest
import stress_run
from hypothesis import given, settings
from stress_gen import programs
from stress_program import Call, Leaf, Owner, Program, Step
from stress_run import Check, leaf_difference


def test_leaf_difference_sees_bits_signs_nans_types_and_bounds():
    a = np.array([1.0, -0.0, np.nan])
    assert leaf_difference(a.copy(), a, True, 0.0) is None
    assert "bit-exact" in leaf_difference(np.array([1.0, 0.0, np.nan]), a, True, 0.0)
    assert "NaN" in leaf_difference(np.array([1.0, -0.0, 1.0]), a, True, 0.0)
    assert "type" in leaf_difference(np.float64(1.0), 1.0, True, 0.0)
    assert "float32" in leaf_difference(a.astype(np.float32), a, True, 0.0)
    near = np.array([1.0 + 1e-15, 0.0, np.nan])
    assert leaf_difference(near, a, False, 1e-15) is None  # within the bound
    assert "off by" in leaf_difference(near, a, False, 1e-17)
    assert "Inf" in leaf_difference(np.array([np.inf, 0.0, np.nan]), a, False, 1.0)


def _program(lines, ret_text, steps, exact, uses_rng=False):
    owners = [Owner("x", "arg", "array")] + ([Owner("rng", "arg", "rng")] if uses_rng else [])
    leaves = [Leaf("x", "x", [], "array", "float64", "full", "C", "fresh")]
    probe = []
    for i, line in enumerate(lines):
        probe += [f"_rec({i}, 'in', (x, ))", line, f"_rec({i}, 'out', {line.split(' = ')[0]})"]
    return Program(owners, leaves, lines, probe, len(exact) - 1, ret_text, steps, exact, len(exact),
                   [[0]], seed=1, calls=[Call(1, [3, 4]), Call(2, [3, 4])], specials=False)


@pytest.mark.parametrize("wrong, expected", [
    (lambda f: lambda *a: f(*a) * (1 + 1e-15), "bit-exact"),          # one rounding off
    (lambda f: lambda *a: f(*a)[::-1].copy(), "bit-exact"),           # elements moved
    (lambda f: lambda *a: f(*a).astype(np.float32), "float32"),       # a dtype
    (lambda f: lambda x: (x.__setitem__((0, 0), 7.0), f(x))[1], "argument x"),  # a side effect
    (lambda f: lambda *a: (_ for _ in ()).throw(ValueError("no")), "compiled ValueError"),
])
def test_a_wrong_compiled_function_is_reported(monkeypatch, wrong, expected):
    program = _program(["v0 = x * 2"], "v0", [Step(1, "exact", [0])], [True, True])
    monkeypatch.setattr(stress_run.stax, "compile", lambda fn: wrong(fn))
    problems = Check(program, warnings_too=False).run()
    assert any(expected in p for p in problems), problems


def test_a_stale_result_is_reported(monkeypatch):
    """A compiled function that keeps returning its first result (a frozen value)."""
    program = _program(["v0 = x * 2"], "v0", [Step(1, "exact", [0])], [True, True])

    def frozen(fn):
        first = []
        return lambda *a: first[0] if first else first.append(fn(*a)) or first[0]
    monkeypatch.setattr(stress_run.stax, "compile", frozen)
    problems = Check(program, warnings_too=False).run()
    assert problems and problems[0].startswith("call 1"), problems


def test_a_generator_left_behind_is_reported(monkeypatch):
    program = _program(["v0 = rng.standard_normal(x.shape)"], "v0", [Step(1, "exact", [])],
                       [True, True], uses_rng=True)
    program.probe_lines = ["_rec(0, 'in', ())", "v0 = rng.standard_normal(x.shape)",
                           "_rec(0, 'out', v0)"]

    def fresh_stream(fn):  # draws from a copy: the caller's generator does not advance
        import copy
        return lambda x, rng: fn(x, copy.deepcopy(rng))
    monkeypatch.setattr(stress_run.stax, "compile", fresh_stream)
    problems = Check(program, warnings_too=False).run()
    assert any("rng state differs" in p for p in problems), problems


def test_an_inexact_value_out_of_its_bound_is_reported(monkeypatch):
    """sum over a row: within n eps sum|x| passes, ten times the value does not."""
    program = _program(["v0 = x.sum(axis=-1)"], "v0", [Step(1, "sum", [0], {"axis": -1})],
                       [True, False])
    monkeypatch.setattr(stress_run.stax, "compile", lambda fn: lambda *a: fn(*a) * 1.1)
    problems = Check(program, warnings_too=False).run()
    assert problems and "off by" in problems[0], problems


@settings(max_examples=30, deadline=None, database=None, derandomize=True)
@given(programs())
def test_every_program_agrees_with_itself_uncompiled(program):
    """The generator's programs, the probe and the error bounds are consistent: the eager function
    compared with itself shows no difference (so a difference is Stax's, not the harness's)."""
    real = stress_run.stax.compile
    stress_run.stax.compile = lambda fn: fn
    try:
        assert Check(program, warnings_too=True).run() == []
    finally:
        stress_run.stax.compile = real
