"""Threads compiling and calling at once: several threads make the first calls of the same compiled
functions (one compile must serve them all), compile functions of their own from the same Python
functions, and call functions of other programs meanwhile; every result, side effect and random
stream is compared with eager NumPy computed beforehand. A thread that does not finish fails the
test (it never blocks the run)."""

import faulthandler
import sys
import threading

import numpy as np
import pytest
import stress_flags as flags
from hypothesis import given
from hypothesis import strategies as st
from stress_gen import programs
from stress_run import ERRSTATES, STATS, Check, Loaded, Outcome, observe, report

import stax.runtime as stax

pytestmark = pytest.mark.slow  # seconds to minutes; still run in CI

JOIN_S = 120  # per test: every thread must be done by then
# programs that threads call at once: nothing changes between calls but the arguments, and calls
# ignore floating-point errors (warnings raised in threads cannot be recorded per call)
KNOWN = flags.ENABLED - {"errstate"}


def _run_threads(targets, timeout=JOIN_S):
    threads = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    alive = [t for t in threads if t.is_alive()]
    if alive:
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        raise AssertionError(f"{len(alive)} of {len(threads)} threads still running after {timeout} s "
                             "(a hang; tracebacks on stderr)")


@flags.stress_settings(flags.scaled(0.05, 4))
@given(st.lists(programs(known=KNOWN, still=True, calls=(2, 3), modes=("ignore",)),
                min_size=2, max_size=4),
       st.integers(2, 6), st.randoms(use_true_random=False))
def test_threads_compile_and_call_the_same_functions_at_once(progs, n_threads, random):
    loaded = [Loaded(p) for p in progs]
    checks = [Check(p, warnings_too=False) for p in progs]
    expected = {(i, k): checks[i].expect(loaded[i], call)
                for i, p in enumerate(progs) for k, call in enumerate(p.calls)}
    shared = [stax.compile(item.prog) for item in loaded]  # first called by the threads
    plans = []
    for _ in range(n_threads):  # every thread makes every call, in its own order
        tasks = [(i, k, random.random() < 0.3) for i, k in expected]
        random.shuffle(tasks)
        plans.append([(i, k, own, loaded[i].state.build(progs[i].calls[k])[0])
                      for i, k, own in tasks])
    barrier = threading.Barrier(n_threads)
    outcomes: list[tuple[int, int, int, Outcome]] = []

    def worker(t):
        own = {}
        barrier.wait()
        for i, k, mine, args in plans[t]:
            if mine and i not in own:
                own[i] = stax.compile(loaded[i].prog)
            fn = own[i] if mine else shared[i]
            with np.errstate(**ERRSTATES[progs[i].calls[k].errstate]):
                try:
                    got, exc = fn(*args), None
                except Exception as e:
                    got, exc = None, e
            outcomes.append((t, i, k, Outcome(got, exc, set(), observe(progs[i], args, loaded[i]))))

    _run_threads([lambda t=t: worker(t) for t in range(n_threads)])
    for t, i, k, outcome in outcomes:
        checks[i].verify(expected[i, k], outcome, f"thread {t}, call {k}")
    for i, cf in enumerate(shared):  # one compile per new key, however many threads asked at once
        distinct = len({(c.seed, tuple(c.shape)) for c in progs[i].calls})
        if cf.cache_info().compiles > distinct:
            checks[i].problems.append(f"{cf.cache_info().compiles} compiles for {distinct} calls")
    STATS["programs in threads"] += len(progs)
    for i, c in enumerate(checks):
        if c.problems:
            raise AssertionError(report(progs[i], c.problems))


@pytest.mark.skipif(not flags.enabled("threads_random"),
                    reason="known defect off (issue 10 item 5): STAX_STRESS_KNOWN=threads_random")
@flags.stress_settings(flags.scaled(0.01, 2))
@given(st.lists(programs(known=KNOWN, still=True, big=False, calls=(1, 2), modes=("ignore",)),
                min_size=1,
                max_size=3), st.integers(0, 2**31 - 1))
def test_compiling_leaves_the_global_random_stream_to_other_threads(progs, seed):
    """Threads drawing from np.random while others compile: together they must draw exactly the
    first N numbers of the seeded stream, each once (a compile that saves and restores the global
    state rewinds the others' draws: issue 10 item 5)."""
    loaded = [Loaded(p) for p in progs]
    args = [item.prepare(p.calls[0]) for item, p in zip(loaded, progs)]
    stop = threading.Event()
    draws: list[list[float]] = [[], []]
    np.random.seed(seed)

    def drawer(j):
        while not stop.is_set():
            draws[j].append(float(np.random.random()))

    def compiler():
        try:
            for item, a in zip(loaded, args):
                with np.errstate(all="ignore"):
                    try:
                        stax.compile(item.prog)(*a)
                    except Exception:
                        pass
        finally:
            stop.set()

    _run_threads([lambda: drawer(0), lambda: drawer(1), compiler])
    drawn = sorted(draws[0] + draws[1])
    stream = sorted(np.random.RandomState(seed).random_sample(len(drawn)).tolist())
    STATS["programs in threads"] += len(progs)
    repeated = len(drawn) - len(set(drawn))
    assert drawn == stream, (f"{len(drawn)} draws by two threads while another compiled: "
                             f"{repeated} repeated, {len(set(drawn) - set(stream))} not from the stream")
