"""Data gates tested by the machine-code entry (``stax.codegen.cpu.entry_gates``): a version
whose gates its program checks gets an entry that compares their values itself, and a call of
another branch goes from one version's entry to the other's, never through the dispatcher."""

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen.cpu import entry_gates
from stax.codegen.cpu.entry import Entry
from stax.codegen.cpu.entry_gates import EntryGate
from stax.runtime.gates import GateReplay


def clip_or_root(x):
    if np.any(x < 0):
        return x * 0.0
    return np.sqrt(x)


def on_a_product(x):
    m = x[3] * x[5]
    if m:  # a float's truth: -0.0 false, NaN true
        return x + 1.0
    return x - 1.0


def scaled_by_a_capped_max(x):
    return x / max(1.0, x.max())  # which side builtin max returned: an int gate


def times_the_count(x):
    return x * len(x[x > 0.5])  # a shape from the mask's count


def no_replay(monkeypatch):
    def refuse(self, leaves):
        raise AssertionError("a gate checked in the program was replayed")
    monkeypatch.setattr(GateReplay, "matches", refuse)


def counting_dispatches(monkeypatch, f):
    seen = []
    run = f._find_and_run

    def counted(*args, **kwargs):
        seen.append(1)
        return run(*args, **kwargs)
    monkeypatch.setattr(f, "_find_and_run", counted)
    return seen


def same(got, want):
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype and got.shape == want.shape


def test_a_branch_on_a_reduction_is_tested_in_machine_code(monkeypatch):
    f = stax.compile(clip_or_root, strict_native=True)
    x = np.abs(np.random.default_rng(0).standard_normal(60))
    same(f(x), clip_or_root(x))
    version = f.versions()[0]
    assert isinstance(version.entry, Entry) and version.gates_in_program
    no_replay(monkeypatch)
    seen = counting_dispatches(monkeypatch, f)
    before = version.entry.hits
    for _ in range(5):
        same(f(x), clip_or_root(x))
    assert version.entry.hits == before + 5 and not seen
    assert version.gate_check.passed >= 6  # (the entry counts its passes too)


def test_calls_of_alternating_branches_go_from_entry_to_entry(monkeypatch):
    f = stax.compile(clip_or_root, strict_native=True)
    x = np.abs(np.random.default_rng(1).standard_normal(60))
    for a in (x, -x):  # one version per branch
        same(f(a), clip_or_root(a))
    assert len(f.versions()) == 2
    assert all(isinstance(v.entry, Entry) for v in f.versions())
    no_replay(monkeypatch)
    for a in (x, -x):  # the entries settle in
        same(f(a), clip_or_root(a))
    seen = counting_dispatches(monkeypatch, f)
    for _ in range(6):
        for a in (x, -x, -x, x):
            same(f(a), clip_or_root(a))
    assert not seen, "a call of the other branch went through the dispatcher"
    assert len(f.versions()) == 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_floats_truth_as_python_reads_it(dtype):
    """``if m:`` of a float: -0.0 and 0.0 false, NaN and the rest true, as the entry reads them
    after either branch was compiled, in any order of calls."""
    f = stax.compile(on_a_product, strict_native=True)
    base = np.full(16, -3.0, dtype)
    inputs = []
    for value in (0.0, -0.0, np.nan, 2.5, -1.0, np.inf, 1e-30):
        a = base.copy()
        a[5] = value
        inputs.append(a)
    with np.errstate(under="ignore"):
        for _ in range(3):
            for a in inputs + inputs[::-1]:
                same(f(a), on_a_product(a))
    assert len(f.versions()) == 2
    assert {type(v.entry) for v in f.versions()} == {Entry}


def test_which_side_a_builtin_max_returned(monkeypatch):
    f = stax.compile(scaled_by_a_capped_max, strict_native=True)
    rng = np.random.default_rng(2)
    small, big = rng.uniform(0, 0.5, 40), rng.uniform(0, 5.0, 40)
    for a in (small, big):
        same(f(a), scaled_by_a_capped_max(a))
    no_replay(monkeypatch)
    for _ in range(4):
        for a in (big, small, small, big):
            same(f(a), scaled_by_a_capped_max(a))
    assert all(isinstance(v.entry, Entry) for v in f.versions())


def test_a_shape_from_a_masks_count():
    f = stax.compile(times_the_count, strict_native=True)
    rng = np.random.default_rng(3)
    a, b = rng.uniform(0, 1, 30), rng.uniform(0, 1, 30)
    b[:] = np.where(b > 0.5, 0.0, b)  # no element above: a count of 0
    for _ in range(4):
        for x in (a, b, b, a):
            same(f(x), times_the_count(x))
    assert {type(v.entry) for v in f.versions()} == {Entry}


def test_gates_found_untrustworthy_are_replayed_again(monkeypatch):
    """A version whose gate values differ from NumPy's (``GateCheck.active`` cleared) has every
    call of its entry handed to the dispatcher, which replays them."""
    f = stax.compile(clip_or_root, strict_native=True)
    x = np.abs(np.random.default_rng(4).standard_normal(60))
    same(f(x), clip_or_root(x))
    version = f.versions()[0]
    version.gate_check.active = False
    hits = version.entry.hits
    replayed = []
    matches = GateReplay.matches

    def counted(self, leaves, memo=None):
        replayed.append(1)
        return matches(self, leaves, memo)
    monkeypatch.setattr(GateReplay, "matches", counted)
    for a in (x, -x, x):
        same(f(a), clip_or_root(a))
    assert version.entry.hits == hits and replayed


def test_what_the_entry_compares():
    class B:
        def __init__(self, name, shape, dtype):
            self.name, self.shape, self.dtype = name, shape, dtype
    outputs = [{"buffer": "g"}]
    slots = {"g": 3}

    def plan(shape, dtype, gate):
        return entry_gates.tested_gates([B("g", shape, dtype)], outputs, (gate,), slots)

    assert plan((), "bool", EntryGate("truth", True)) == ((3, "bool", EntryGate("truth", True)),)
    assert isinstance(plan((), "float64", EntryGate("truth", True)), tuple)
    assert isinstance(plan((1, 1), "float32", EntryGate("equal", 0.5)), tuple)
    assert isinstance(plan((), "uint64", EntryGate("equal", 2 ** 64 - 1)), tuple)
    assert isinstance(plan((), "float32", EntryGate("equal", float("nan"))), tuple)
    # no value of the dtype is the outcome, or the entry does not read such a value
    assert isinstance(plan((), "float32", EntryGate("equal", 0.1)), str)
    assert isinstance(plan((), "int8", EntryGate("equal", 300)), str)
    assert isinstance(plan((), "uint8", EntryGate("equal", -1)), str)
    assert isinstance(plan((2,), "bool", EntryGate("truth", True)), str)
    assert isinstance(plan((), "complex128", EntryGate("truth", True)), str)
    assert isinstance(plan((), "int64", EntryGate("truth", 1)), str)
    assert isinstance(entry_gates.tested_gates([], [{"const": True}], (EntryGate("truth", True),), slots), str)
