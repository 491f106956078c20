"""A version whose gates are replayed in NumPy is timed against eager calls (``replay_costs``):
two of its calls run eagerly, and where the compiled calls are slower the key runs eagerly
from then on. The decision's threshold is set here, so the tests do not depend on the host's
speed."""

import logging

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime import replay_costs


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


def slower_by(monkeypatch, factor):
    """Both looks' thresholds (cold calls, then warm ones) set to ``factor``."""
    monkeypatch.setattr(replay_costs, "SLOWER", factor)
    monkeypatch.setattr(replay_costs, "WARM_SLOWER", factor)


#: calls after which a version is decided either way (kept at the first look, the second's)
DECIDED = replay_costs.WARM_EAGER_CALLS[-1]


def greedy_picks(scores, thresh):
    keep = []
    s = scores.copy()
    while True:
        i = int(np.argmax(s))  # read into Python: a gate the program cannot check
        if s[i] < thresh:
            break
        keep.append(i)
        s[max(0, i - 3):i + 4] = -np.inf
    return np.array(keep, dtype=np.int64)


@pytest.mark.parametrize("slower, eager_from_now_on", [(0.0, True), (1e9, False)])
def test_a_replayed_key_runs_eagerly_where_measured_slower(monkeypatch, caplog, slower,
                                                          eager_from_now_on):
    slower_by(monkeypatch, slower)
    monkeypatch.setenv("STAX_LOGS", "perf")
    x = np.random.default_rng(0).random(200)
    f = stax.compile(greedy_picks)
    with caplog.at_level(logging.INFO, logger="stax"):
        for _ in range(DECIDED):
            np.testing.assert_array_equal(f(x, 0.9), greedy_picks(x, 0.9))
    version = f.versions()[0]
    assert version.gates is not None and not version.gates_in_program
    costs = version.replay_costs
    assert costs.decided and costs.warm is not eager_from_now_on  # the second look: kept
    looks = replay_costs.WARM_EAGER_CALLS if costs.warm else replay_costs.EAGER_CALLS
    assert len(costs.eager) == len(looks)
    assert len(costs.compiled) >= replay_costs.COMPILED_SAMPLES
    assert ("its key runs eagerly" in caplog.text) is eager_from_now_on
    assert (f.cache_info().fallbacks > 0) is eager_from_now_on
    np.testing.assert_array_equal(f(x * 0.99, 0.9), greedy_picks(x * 0.99, 0.9))


def test_gates_checked_in_the_program_are_not_timed():
    def branch(x):
        return x * 2 if x.max() > 0.5 else x - 1

    f = stax.compile(branch)
    x = np.random.default_rng(1).random(100)
    for _ in range(8):
        f(x)
    version = f.versions()[0]
    assert version.gates_in_program and version.replay_costs.calls == 0


def small_solve(a, b):
    z = np.linalg.solve(a, b)  # a NumPy step: the call goes through the Python runner
    return z * 2 + 1, (z ** 2).sum()


@pytest.mark.parametrize("slower, eager_from_now_on", [(0.0, True), (1e9, False)])
def test_a_version_with_numpy_steps_is_timed_too(monkeypatch, caplog, slower, eager_from_now_on):
    slower_by(monkeypatch, slower)
    monkeypatch.setenv("STAX_LOGS", "perf")
    rng = np.random.default_rng(2)
    a, b = rng.random((6, 6)) + np.eye(6) * 6, rng.random(6)
    f = stax.compile(small_solve)
    with caplog.at_level(logging.INFO, logger="stax"):
        for _ in range(DECIDED):
            got, want = f(a, b), small_solve(a, b)
            np.testing.assert_allclose(got[0], want[0], rtol=1e-14)
    costs = f.versions()[0].replay_costs
    assert costs.decided and "NumPy steps and kernels" in caplog.text
    assert ("its key runs eagerly" in caplog.text) is eager_from_now_on
    assert "stax.runtime.gate" not in caplog.text


def clip_norm(g, largest):
    n = np.sqrt((g * g).sum())  # a float sum of 16: a NumPy step, its bits NumPy's
    if n > largest:  # a gate the program checks
        g = g * (largest / n)
    return g


@pytest.mark.parametrize("slower, eager_from_now_on", [(0.0, True), (1e9, False)])
def test_a_version_checking_its_gates_with_numpy_steps_is_timed(monkeypatch, caplog, slower,
                                                                 eager_from_now_on):
    """Gradient clipping of 16 floats: its gate checked in the program, but its float sum a
    NumPy step between kernels launched from Python (10.8 us a call, NumPy 1.5): timed."""
    slower_by(monkeypatch, slower)
    monkeypatch.setenv("STAX_LOGS", "perf")
    g = np.random.default_rng(4).standard_normal(16)
    f = stax.compile(clip_norm)
    with caplog.at_level(logging.INFO, logger="stax"):
        for _ in range(DECIDED):
            np.testing.assert_array_equal(f(g, 3.0), clip_norm(g, 3.0))
    version = f.versions()[0]
    assert version.gates_in_program and version.replay_costs.decided
    assert ("its key runs eagerly" in caplog.text) is eager_from_now_on
    assert "NumPy steps and kernels" in caplog.text and "replaying" not in caplog.text


def test_a_replay_outside_the_calls_is_not_counted_in_their_time(monkeypatch):
    """``explain`` replays a version's gates to say whether it matches; a program that checks
    its gates itself replays none in its calls, so that replay's time is not theirs (a lifted
    ``while`` loop's 120 us replay made its 50 us calls count 170 and its key ran eagerly)."""
    slower_by(monkeypatch, 1e9)
    g = np.random.default_rng(5).standard_normal(16)
    f = stax.compile(clip_norm)
    f(g, 3.0)
    assert f.explain(g, 3.0)[0].matches
    version = f.versions()[0]
    assert version.gates_in_program
    version.gates.seconds = 1.0  # as a slow replay outside the calls leaves it
    for _ in range(DECIDED):
        np.testing.assert_array_equal(f(g, 3.0), clip_norm(g, 3.0))
    costs = version.replay_costs
    assert costs.decided and max(costs.compiled) < 0.5


def test_a_version_of_kernels_alone_is_not_timed():
    f = stax.compile(lambda x: np.sqrt(x) * 2)
    x = np.arange(50.0)
    for _ in range(8):
        f(x)
    assert f.versions()[0].replay_costs.calls == 0


def solve_then_scale(a, b):
    z = np.linalg.solve(a, b)
    return z * 2 + 1


def test_a_key_gone_eager_runs_the_function_itself_from_the_next_call_on(monkeypatch):
    """The version's entry stayed installed after the decision, so later calls still ran the
    compiled program (its bits, not NumPy's), and an eager call went through the whole
    dispatch (6.5 us a call over NumPy's): the eager version answers with its own entry."""
    slower_by(monkeypatch, 0.0)
    rng = np.random.default_rng(4)
    a, b = rng.random((6, 6)) + np.eye(6) * 6, rng.random(6)
    f = stax.compile(solve_then_scale)
    for _ in range(replay_costs.EAGER_CALLS[-1]):  # the last timed eager call decides
        f(a, b)
    assert f.versions()[0].replay_costs.decided
    runs = []
    function = f._traced_function()

    def counted(*args):
        runs.append(1)
        return function(*args)

    monkeypatch.setattr(f, "_traced_function", lambda: counted)
    monkeypatch.setattr(f, "_eager_function", lambda sigma: counted)
    for _ in range(5):
        np.testing.assert_array_equal(f(a, b), solve_then_scale(a, b))
    assert len(runs) == 5  # the function itself ran each call
    dispatched = sum(f.cache_info().hits.values())
    for _ in range(5):
        f(a, b)
    assert sum(f.cache_info().hits.values()) == dispatched  # the key entry answered


def noisy(x, sigma, rng):
    return np.sort(x) + sigma * rng.standard_normal(x.shape)


def test_a_generic_version_measured_slower_runs_its_other_keys_eagerly(monkeypatch):
    """A probe's ``noisy(x, sigma, rng)`` with ``sigma`` changing: the scalar-generic version
    measured slower made only the first ``sigma``'s key eager; every other value ran the
    version (26 us a call, NumPy 2.7), and the generator argument kept every call from a key
    entry. The version itself runs eagerly now, its calls through a key entry that compares
    the generator's kind."""
    slower_by(monkeypatch, 0.0)
    x = np.random.default_rng(3).random(50)
    f = stax.compile(noisy)
    for k in range(12):
        sigma = 0.1 * (k + 1)
        np.testing.assert_array_equal(f(x, sigma, np.random.default_rng(k)),
                                      noisy(x, sigma, np.random.default_rng(k)))
    version = f.versions()[-1]
    assert version.generic is not None and version.slower
    hits = sum(f.cache_info().hits.values())
    for k in range(5):  # new values: eager, through the key entry
        sigma = 3.0 + k
        np.testing.assert_array_equal(f(x, sigma, np.random.default_rng(k)),
                                      noisy(x, sigma, np.random.default_rng(k)))
    assert version.replay_costs.compiled and f.cache_info().compiles == 2
    assert sum(f.cache_info().hits.values()) == hits  # no dispatch: the key entry answered


def _looked(cold: dict[str, float], warm: dict[str, float], keys=lambda call: ()
            ) -> tuple[bool | None, int]:
    """A ``ReplayCosts`` fed call after call with each kind's time (``cold`` for the first
    look's calls, ``warm`` for the second's) and key: its decision and the call that made
    it."""
    costs = replay_costs.ReplayCosts()
    for call in range(1, 100):
        key = keys(call)
        how = costs.next_call()
        if how is None:
            if costs.decided:
                return None, call
            continue
        times = warm if costs.warm else cold
        seconds = times[how](call) if callable(times[how]) else times[how]
        if seconds is None:  # the call declined: no sample
            continue
        costs.add(how, seconds, key)
        if how == "eager":
            slower = costs.slower_than_eager()
            if slower is not None:
                return slower, call
    raise AssertionError("never decided")


def test_the_second_look_times_warm_calls_fastest_against_fastest():
    """Cold calls of both kinds take up to twice their steady time: Jacobi iterations whose
    warm calls take 64 us compiled and 45 eager looked kept from their first calls (median
    102 us against 87); the warm look finds them slower."""
    assert _looked({"compiled": 1.0, "eager": 1.0}, {"compiled": 1.4, "eager": 1.0}) == \
        (True, replay_costs.WARM_EAGER_CALLS[-1])
    assert _looked({"compiled": 1.0, "eager": 1.0}, {"compiled": 1.0, "eager": 1.0}) == \
        (False, replay_costs.WARM_EAGER_CALLS[-1])
    # clearly slower at the first look: decided there
    assert _looked({"compiled": 2.0, "eager": 1.0}, {}) == (True, replay_costs.EAGER_CALLS[-1])


def test_only_calls_alike_are_compared():
    """A generic version's calls of other loop counts do other work: a lifted time-stepping
    loop judged at 8-14 steps (38 us a call, eager 31) ran every later count eagerly, 100
    steps 5.4x slower than compiled. Calls of a count seen by both kinds decide; a sweep
    whose every call has its own count keeps the version."""
    slower = ({"compiled": 1.4, "eager": 1.0}, {"compiled": 1.4, "eager": 1.0})
    assert _looked(*slower, keys=lambda call: call) == (False, replay_costs.WARM_EAGER_CALLS[-1])
    assert _looked(*slower, keys=lambda call: call % 2) == (True, replay_costs.EAGER_CALLS[-1])


def test_the_key_of_a_call():
    x = np.zeros((3, 4))
    assert replay_costs.call_key((x, 3, 0.5), {}) == replay_costs.call_key((x + 1, 3, 0.5), {})
    assert replay_costs.call_key((x, 3), {}) != replay_costs.call_key((x, 4), {})
    assert replay_costs.call_key((x, np.int64(3)), {}) != replay_costs.call_key((x, 3), {})
    assert replay_costs.call_key((x,), {}) != replay_costs.call_key((x.T,), {})
    assert replay_costs.call_key((x, 0.5), {}) == replay_costs.call_key((x, 2.5), {})


def test_a_declined_call_leaves_no_look_undecided():
    """A compiled call that declines (an overflow: NumPy's warning from the eager run) gives
    no sample: the first look never completed, and every later call was timed, its time kept
    (1,056 samples after 1,060 calls). The warm look decides instead, and timing ends."""
    cold = {"compiled": lambda call: None if call == 5 else 1.0, "eager": 1.0}
    assert _looked(cold, {"compiled": 1.0, "eager": 1.0}) == \
        (False, replay_costs.WARM_EAGER_CALLS[-1])
    costs = replay_costs.ReplayCosts()
    for call in range(1, 200):
        how = costs.next_call()
        if how is not None and call != 5:
            costs.add(how, 1.0)
    assert costs.decided and len(costs.compiled) <= replay_costs.WARM_EAGER_CALLS[-1]


def test_a_call_that_made_a_size_instance_is_no_timing_sample():
    """A probe's find: ``np.clip(x, lo, None)`` over sizes cycling 5, 7, 9 was timed on calls
    that each made the machine code of a new size (hundreds of microseconds) and judged slower
    than NumPy: such calls are no sample now (``replay_costs.instances_made``)."""
    def sorted_twice(x):
        return np.sort(x) * 2.0  # a NumPy step: its version is timed against eager

    f = stax.compile(sorted_twice)
    rng = np.random.default_rng(0)
    for n in (5, 7):
        x = rng.random(n)
        np.testing.assert_array_equal(f(x), sorted_twice(x))
    version = f.versions()[-1]
    assert version.generic is not None
    for n in range(9, 40):  # each call a new size: a new instance
        x = rng.random(n)
        np.testing.assert_array_equal(f(x), sorted_twice(x))
    assert not version.replay_costs.compiled
    x = rng.random(9)
    for _ in range(8):  # a size seen before: timed
        np.testing.assert_array_equal(f(x), sorted_twice(x))
    assert version.replay_costs.compiled or version.replay_costs.decided
