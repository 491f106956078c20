"""A lifted step's steady calls (``stax.runtime.steady_loops``): once a call ran every item in
the machine-code loop, later calls of the same layouts go straight into it. Each either
completes the call as the general path would or changes nothing and hands the call over:
results, warnings, errors and arguments are eager NumPy's on every call, whatever stops the
machine code (an event, an index out of bounds), whatever changes (layouts, a scalar the
machine code holds as a constant, the count of items, the data deciding the iterations)."""

import threading
import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen.cpu import item_loop
from stax.runtime import replay_costs, steady_loops
from stax.trace import loops


@pytest.fixture(autouse=True)
def small_limit(monkeypatch):
    monkeypatch.setattr(loops, "UNROLL_LIMIT", 30)  # lift loops of tests' sizes
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


@pytest.fixture
def steady(monkeypatch):
    """The number of calls the steady path completed, and of those it handed over; no key goes
    eager on a timing (a loaded host timed a Jacobi loop's 64 us against eager's 50)."""
    monkeypatch.setattr(replay_costs, "SLOWER", 1e9)
    monkeypatch.setattr(replay_costs, "WARM_SLOWER", 1e9)
    seen = {"ran": 0, "handed": 0}
    call = steady_loops.SteadyCall.__call__

    def counted(self, arrays):
        out = call(self, arrays)
        seen["ran" if out is not None else "handed"] += 1
        return out

    monkeypatch.setattr(steady_loops.SteadyCall, "__call__", counted)
    return seen


def _eager_and_compiled(fn, compiled, *args):
    """Both calls on copies of ``args``: results, warnings and the arguments afterwards."""
    out = []
    for run in (fn, compiled):
        mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            result = run(*mine)
        out.append((result, [str(w.message) for w in got], mine))
    (want, want_warned, want_args), (got, got_warned, got_args) = out
    assert got_warned == want_warned
    for a, b in zip(got_args, want_args):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
    return got, want


def jacobi(A, b, tol):
    D = np.diag(A)
    R = A - np.diagflat(D)
    x = np.zeros_like(b)
    err = np.inf
    while err > tol:
        x_new = (b - R @ x) / D
        err = np.max(np.abs(x_new - x))
        x = x_new
    return x


def _system(seed, n=30, spread=1.0):
    r = np.random.default_rng(seed)
    A = r.standard_normal((n, n)) * spread / n
    return A + np.diag(r.uniform(2.0, 3.0, n)), r.standard_normal(n)


def test_a_while_loop_whose_iterations_the_data_decides(steady):
    compiled = stax.compile(jacobi)
    for seed in range(12):  # iteration counts differ from call to call
        A, b = _system(seed, spread=0.5 + seed / 4)
        got, want = _eager_and_compiled(jacobi, compiled, A, b, 1e-10)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert steady["ran"] >= 8
    A, b = _system(99)  # another layout: the general path, then steady again
    got, want = _eager_and_compiled(jacobi, compiled, np.asfortranarray(A), b[::-1].copy(), 1e-8)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_a_loop_the_test_ends_before_its_first_iteration(steady):
    compiled = stax.compile(jacobi)
    A, b = _system(1)
    for _ in range(4):
        _eager_and_compiled(jacobi, compiled, A, b, 1e-10)
    # the first iteration, before the step, already meets the tolerance: the step runs none
    got, want = _eager_and_compiled(jacobi, compiled, A, b, 1e3)
    np.testing.assert_array_equal(got, want)


def roots(x, k):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = np.sqrt(x[i] - k)
    return out


def test_an_event_after_steady_calls_warns_and_raises_as_numpy(steady):
    compiled = stax.compile(roots)
    x = np.linspace(1.0, 2.0, 100)
    for _ in range(4):
        _eager_and_compiled(roots, compiled, x, 0.5)
    assert steady["ran"] >= 1
    bad = x.copy()
    bad[61] = -3.0  # the machine code stops at item 61: handed over, NumPy's warning once
    for data in (bad, x, bad, bad, x, x, x):
        got, want = _eager_and_compiled(roots, compiled, data, 0.5)
        np.testing.assert_array_equal(got, want)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        compiled(bad, 0.5)
    assert steady["handed"] >= 1


def shifted(x, offset):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i + offset] * 2.0
    return out


def test_an_index_out_of_bounds_after_steady_calls_raises():
    compiled = stax.compile(shifted)
    x = np.arange(60.0)
    for _ in range(4):
        got, want = _eager_and_compiled(shifted, compiled, x, -3)
        np.testing.assert_array_equal(got, want)
    with pytest.raises(IndexError):
        compiled(x, 3)
    np.testing.assert_array_equal(compiled(x, -3), shifted(x, -3))


def scaled_running_sum(x, w):
    acc = np.zeros(x.shape[1], dtype=x.dtype)
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        acc = acc * w + x[i]
        out[i] = acc
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_new_scalars_and_layouts_between_steady_calls(steady, dtype):
    rng = np.random.default_rng(3)
    compiled = stax.compile(scaled_running_sum)
    x = (rng.random((90, 6)) * 10).astype(dtype)
    weights = [1, 1, 1, 2, 1, 3] if dtype is np.int64 else [0.75, 0.75, 0.75, 0.5, 0.75, -0.0]
    for w in weights:
        got, want = _eager_and_compiled(scaled_running_sum, compiled, x, dtype(w))
        np.testing.assert_array_equal(got, want)
    for data in (x[::2], x.T.copy().T, x[:, ::-1], x[:45]):
        got, want = _eager_and_compiled(scaled_running_sum, compiled, data, dtype(weights[0]))
        np.testing.assert_array_equal(got, want)
    assert steady["ran"] >= 2


def euler(y, dt, nsteps):
    for _ in range(nsteps):
        y = y + dt * (0.1 - 0.5 * y + 0.01 * y * y * y)
    return y


def test_a_count_from_an_argument_each_call_its_own(steady):
    compiled = stax.compile(euler)
    rng = np.random.default_rng(5)
    for n in (2000, 2001, 2500, 2001, 2000, 2300, 2000):
        y = rng.standard_normal(50)
        got, want = _eager_and_compiled(euler, compiled, y, 0.01, n)
        np.testing.assert_array_equal(got, want)
    assert steady["ran"] >= 3


def two_names(x):
    a = b = np.zeros_like(x)
    for i in range(x.shape[0]):
        a[i] = x[i] * 2.0
    return a, b


def test_results_that_are_one_object_stay_one_across_steady_calls(steady):
    compiled = stax.compile(two_names)
    for seed in range(5):
        x = np.random.default_rng(seed).standard_normal(40)
        a, b = compiled(x)
        assert a is b
        np.testing.assert_array_equal(a, x * 2.0)


def test_threads_sharing_a_steady_call_get_their_own_results():
    compiled = stax.compile(jacobi)
    systems = [_system(seed) for seed in range(8)]
    for A, b in systems[:3]:
        compiled(A, b, 1e-10)
    errors = []

    def work(A, b):
        try:
            for _ in range(30):
                np.testing.assert_allclose(compiled(A, b, 1e-10), jacobi(A, b, 1e-10),
                                           rtol=1e-12, atol=1e-14)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=s) for s in systems]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def roots_in_place(x):
    for i in range(x.shape[0]):
        x[i] = np.sqrt(x[i]) + 1.0
    return x.sum()


def test_an_argument_updated_in_place_is_whole_when_an_item_stops(steady):
    """The machine code updates the step's own copy: a call handed over at item 61 finds the
    argument as the caller gave it, and runs it again from the start."""
    compiled = stax.compile(roots_in_place)
    x = np.linspace(1.0, 2.0, 100)
    for _ in range(4):
        got, want = _eager_and_compiled(roots_in_place, compiled, x)
        assert got == want
    assert steady["ran"] >= 1
    bad = x.copy()
    bad[61] = -3.0
    for data in (bad, x, bad):
        with np.errstate(invalid="ignore"):  # the call stands: no eager run behind it
            got, want = _eager_and_compiled(roots_in_place, compiled, data)
        np.testing.assert_array_equal(got, want)


def decay(x, rate, floor):
    n = 0
    while x.max() > floor:
        x = x * rate + 0.001
        n += 1
    return x, n


def test_a_while_loop_of_many_machine_code_runs(steady, monkeypatch):
    """Past the first run's iterations (``FIRST_CHUNK``) each next run starts from the
    previous one's results: each iteration runs once."""
    ran = []
    run = item_loop.ItemLoop.run

    def counted(self, *args):
        out = run(self, *args)
        ran.append(out[0])
        return out

    monkeypatch.setattr(item_loop.ItemLoop, "run", counted)
    compiled = stax.compile(decay)
    rng = np.random.default_rng(0)
    for top in (50.0, 900.0, 40.0, 3000.0, 700.0, 20000.0, 5000.0):
        x = rng.uniform(0.0, top, 64)
        before = steady["ran"]
        (got, got_n), (want, want_n) = _eager_and_compiled(decay, compiled, x, 0.99, 1.0)
        np.testing.assert_array_equal(got, want)
        assert got_n == want_n and type(got_n) is type(want_n)
        if steady["ran"] > before:  # (some calls run eagerly: timed against NumPy)
            assert sum(ran) == want_n
        ran.clear()
    assert steady["ran"] >= 3


def shrinks_in_its_test(x, c):
    y = x + 0.0
    while np.multiply(y, 0.9, out=y).max() > 0.5:  # the test updates y in place
        y += 0.01 * (np.sqrt(y.min() - c[0]) > -1.0)  # c[0] = 0.3: invalid at a late iteration
    return y


def test_a_test_that_updates_a_local_in_place_runs_once():
    """A review's finding: a call handed over after the steady call ran the loop's test
    started again from the arguments, without the test's update (such a loop is now captured
    as written: ``test_while_loops.py``)."""
    compiled = stax.compile(shrinks_in_its_test)
    x = np.random.default_rng(0).random((4, 300)) + 0.5
    ok, late = np.array([0.0]), np.array([0.3])
    with np.errstate(all="ignore"):
        for _ in range(12):
            compiled(x.copy(), ok)
        for data, c in ((x * 0.1, ok), (x, late), (x, ok), (x * 0.1, ok)):
            got, want = _eager_and_compiled(shrinks_in_its_test, compiled, data, c)
            np.testing.assert_array_equal(got, want)
