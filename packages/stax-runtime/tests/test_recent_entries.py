"""Dispatch level 0 (``recent_entries.py``): calls that take turns between a few sizes, layouts
or scalar values go to the entry installed for their kind lately, not through the dispatcher
(which cost 8-23 us a call for NumPy's 2); the table picks an entry, the entry checks its key,
so results never change."""

import threading

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime.recent_entries import MAX_RECENT


def scaled_sum(x):
    return (x * 2.0 + 1.0).sum()


def powered(x, p):
    return (np.abs(x) ** p).sum()


def _same(got, want):
    """Equal to NumPy's, a sum's order aside (the kernels add in another order than NumPy's
    pairwise summation: the user guide's "what is exact")."""
    rtol = 1e-5 if np.asarray(want).dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=0)
    assert np.asarray(got).dtype == np.asarray(want).dtype


def _dispatched(f, calls, rounds=5):
    """How many levels 2-3 hits and misses ``rounds`` of ``calls`` made, after three rounds of
    warm-up (versions compiled, their entries installed), checking every result against
    NumPy."""
    for _ in range(3):
        for args in calls:
            f(*args)
    before = f.cache_info()
    for _ in range(rounds):
        for args in calls:
            _same(f(*args), f.fn(*args))
    after = f.cache_info()
    assert after.hits[1] - before.hits[1] == rounds * len(calls) - (
        after.hits[2] - before.hits[2]) - (after.hits[3] - before.hits[3]) - (
        after.misses - before.misses) - (after.fallbacks - before.fallbacks)
    return (after.hits[2] - before.hits[2]) + (after.hits[3] - before.hits[3]) + \
        after.misses - before.misses


def test_sizes_and_layouts_taking_turns_skip_the_dispatcher():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((30, 20))
    calls = [(rng.standard_normal(n),) for n in (100, 200, 300)] + \
        [(base,), (base.T,), (base[::2],), (base.astype(np.float32),)]
    assert _dispatched(stax.compile(scaled_sum), calls) == 0


def test_scalar_values_taking_turns_skip_the_dispatcher():
    rng = np.random.default_rng(1)
    calls = [(rng.standard_normal(n), p) for n in (50, 70) for p in (2.0, 3.0, 1.5)]
    assert _dispatched(stax.compile(powered), calls) == 0


def signed(x, c):
    return x * np.copysign(1.0, c) + c


@pytest.mark.parametrize("values", [(0.0, -0.0), (float("nan"), 1.0), (1, 1.0, True)])
def test_scalars_equal_as_keys_are_told_apart_by_the_entry(values):
    """0.0 == -0.0 and 1 == 1.0 == True hash alike: the table may pick the other one's entry,
    whose own comparison hands the call on (a NaN never finds its entry: the dispatcher)."""
    f = stax.compile(signed)
    x = np.linspace(-1.0, 1.0, 7)
    for _ in range(4):
        for c in values:
            np.testing.assert_array_equal(f(x, c), signed(x, c))
            assert np.signbit(f(x, c)).tolist() == np.signbit(signed(x, c)).tolist()


def test_kinds_past_the_table_go_through_the_dispatcher():
    f = stax.compile(scaled_sum)
    xs = [np.ones(n) for n in range(1, MAX_RECENT + 6)]
    for _ in range(3):
        for x in xs:
            _same(f(x), scaled_sum(x))
    assert len(f._recent.table) <= MAX_RECENT


def picked(x, i):
    return x[i] * 2.0 + x.sum()


def test_an_entry_that_raises_leaves_the_next_calls_right():
    f = stax.compile(picked)
    a, b = np.arange(5.0), np.arange(8.0)
    for _ in range(3):
        for x, i in ((a, 1), (b, 6), (a, 3)):
            _same(f(x, i), picked(x, i))
    with pytest.raises(IndexError):
        f(a, 7)
    for x, i in ((b, 7), (a, 4), (b, 0)):
        _same(f(x, i), picked(x, i))


def test_new_code_drops_the_table_with_the_versions():
    def g(x):
        return x + 1.0

    f = stax.compile(g)
    xs = [np.ones(3), np.ones(4), np.ones((2, 2))]
    for _ in range(3):
        for x in xs:
            _same(f(x), x + 1.0)

    def h(x):
        return x - 1.0

    g.__code__ = h.__code__  # what autoreload does
    for _ in range(3):
        for x in xs:
            _same(f(x), x - 1.0)


def test_threads_taking_turns_get_their_own_results():
    f = stax.compile(powered)
    rng = np.random.default_rng(2)
    calls = [(rng.standard_normal(n), p) for n in (40, 60, 80) for p in (2.0, 0.5)]
    want = [powered(*args) for args in calls]
    errors = []

    def work(offset):
        try:
            for k in range(300):
                j = (k + offset) % len(calls)
                _same(f(*calls[j]), want[j])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(o,)) for o in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_a_declined_version_leaves_no_entry_behind():
    """The dispatch that finds a version declining empties the table, and the entry it
    installed before that version ran does not go back in (a review found it did)."""
    def root(x):
        return np.sqrt(x) * 2.0

    f = stax.compile(root)
    a, b = np.ones(10), np.ones(20)
    for _ in range(3):
        f(a)
        f(b)
    with pytest.warns(RuntimeWarning, match="invalid value"):
        _same(f(-np.ones(10)), np.full(10, np.nan))
    assert not any(key[0][0] == (10,) for key in f._recent.table)
    _same(f(a), root(a))


def test_the_entry_that_handed_a_call_back_is_not_tried_again(monkeypatch):
    """A call its kind's entry hands back (the kernels saw an invalid value) goes on to the
    dispatcher, not to that entry again from the table: the kernels ran twice (a review)."""
    def root(x):
        return np.sqrt(x) * 2.0

    f = stax.compile(root)
    a, b = np.ones(10), np.ones(20)
    for _ in range(3):
        f(b)
        f(a)
    ran = []
    real = type(f._recent).run
    monkeypatch.setattr(type(f._recent), "run",
                        lambda self, entry, key, args: ran.append(entry) or real(self, entry, key,
                                                                                 args))
    with pytest.warns(RuntimeWarning, match="invalid value"):
        f(-a)  # a's entry installed, and in the table under a's key
    assert not ran
