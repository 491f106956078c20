"""Capture never draws from a random generator it does not own (spec §3.7, issue 10 item 5).

A draw the function could make is refused *before* it happens, so no generator state is saved
and put back (which would rewind another thread's draws): after a refused capture every
generator is exactly where it was, and the eager call that follows draws once.
"""

import random
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from stax.ir import UnsupportedError
from stax.trace import trace

X = np.arange(4.0)
RNG = np.random.default_rng(3)
STATE = random.Random(5)
CONFIG = SimpleNamespace(rng=np.random.default_rng(4))


def _states():
    return (np.random.get_state()[1].copy(), np.random.get_state()[2], RNG.bit_generator.state,
            random.getstate(), STATE.getstate(), CONFIG.rng.bit_generator.state)


def _unchanged(before):
    after = _states()
    assert np.array_equal(before[0], after[0]) and before[1:] == after[1:]


def noise(n):
    return RNG.normal(size=n)


class Model:
    def __init__(self):
        self.rng = np.random.default_rng(7)

    def jitter(self, x):
        return x + self.rng.random()


@pytest.mark.parametrize("fn", [
    lambda x: x * np.random.rand(),                      # legacy function, through the module
    lambda x: x + np.random.normal(size=4),
    lambda x: (np.random.seed(0), x)[1],                 # reseeding is as bad as drawing
    lambda x: x * np.random.mtrand._rand.random(),        # the global RandomState itself
    lambda x: x * RNG.random(),                           # a Generator in a global
    lambda x: x + noise(4),                               # ... reached through a helper
    lambda x: x * CONFIG.rng.random(),                    # ... as an attribute of a global
    lambda x: x * random.random(),                        # the random module's functions
    lambda x: x * random.uniform(0, 1),
    lambda x: x * STATE.random(),                         # a random.Random instance
    lambda x: x * np.random.default_rng().random(),       # a generator seeded by the OS
], ids=["rand", "normal", "seed", "_rand", "global-generator", "helper", "attribute",
        "random.random", "random.uniform", "Random-instance", "default_rng()"])
def test_a_reachable_draw_is_refused_before_it_happens(fn):
    before = _states()
    with pytest.raises(UnsupportedError, match=r"draws random numbers from np\.random"):
        trace(fn, (X,))
    _unchanged(before)


def test_generators_named_by_import_or_closure_or_argument_are_refused():
    from random import random as stdlib_random

    from numpy.random import rand  # bound to the global RandomState before any capture

    rng = np.random.default_rng(1)
    before = rng.bit_generator.state
    for fn, args in [(lambda x: x * rand(), (X,)), (lambda x: x * stdlib_random(), (X,)),
                     (lambda x: x * rng.random(), (X,)),
                     (lambda x, m: m.jitter(x), (X, Model())),
                     (lambda x, r: x * r.rand(), (X, np.random.RandomState(0)))]:
        with pytest.raises(UnsupportedError, match="draws random numbers"):
            trace(fn, args)
    assert rng.bit_generator.state == before


def test_a_refusal_the_function_catches_still_fails_the_capture():
    def careful(x):
        try:
            scale = np.random.rand()
        except Exception:
            scale = 1.0  # the capture would bake this in: a different result
        return x * scale

    before = _states()
    with pytest.raises(UnsupportedError, match=r"numpy\.random\.rand"):
        trace(careful, (X,))
    _unchanged(before)


def test_a_generator_argument_is_traced_on_a_private_copy():
    rng = np.random.default_rng(11)
    before = rng.bit_generator.state
    capture = trace(lambda x, g: x + g.standard_normal(4), (X, rng))
    assert [n.target for n in capture.graph.nodes if n.meta.get("random")] == ["standard_normal"]
    assert rng.bit_generator.state == before  # capture drew from its copy, nothing put back


def test_functions_that_only_mention_unrelated_names_still_compile():
    def f(x, seed=3):
        random_part = x * 2.0  # names like 'random' or 'normal' that are not generators
        return random_part.sum() + seed

    trace(f, (X,))
    trace(lambda x: x * np.float64(2.0), (X,))


def test_other_threads_draw_freely_while_a_capture_runs():
    """The guards refuse draws only in the capturing thread: a thread drawing meanwhile gets
    its numbers, from the same stream, exactly once."""
    np.random.seed(21)
    drawn = []

    def other():
        drawn.append(np.random.rand())
        drawn.append(random.random())

    def f(x):
        worker = threading.Thread(target=other)
        worker.start()
        worker.join(timeout=30)
        return x + 1

    trace(f, (X,))
    assert len(drawn) == 2
    after = np.random.rand()  # the stream goes on after the other thread's draw, not rewound
    np.random.seed(21)
    assert [drawn[0], after] == [np.random.rand(), np.random.rand()]


def test_guards_are_removed_when_no_capture_runs():
    from stax.trace.isolation import refusing_draws

    originals = (np.random.rand, np.random.seed, random.random, vars(random.Random).get("random"))
    with refusing_draws():
        assert np.random.rand is not originals[0] and random.random is not originals[2]
        with refusing_draws():
            pass
        assert np.random.rand is not originals[0]  # still capturing: still guarded
    assert (np.random.rand, np.random.seed, random.random,
            vars(random.Random).get("random")) == originals


def test_a_users_own_replacement_is_wrapped_and_kept(monkeypatch):
    """Guards wrap what they find (a test's monkeypatch of np.random.rand, say) and put it back."""
    calls = []

    def fake_rand(*args):
        calls.append(args)
        return 0.5

    monkeypatch.setattr(np.random, "rand", fake_rand)
    with pytest.raises(UnsupportedError, match=r"numpy\.random\.rand"):
        trace(lambda x: x * np.random.rand(), (X,))
    assert np.random.rand is fake_rand and not calls
    assert np.random.rand() == 0.5


class Hostile:
    """An object whose attribute dictionary cannot be read."""

    @property
    def __dict__(self):
        raise RuntimeError("no")


HOSTILE = Hostile()


def test_a_value_that_breaks_the_scan_is_a_refusal_not_a_crash():
    with pytest.raises(UnsupportedError, match="could not check"):
        trace(lambda x: x * (HOSTILE is not None), (X,))
