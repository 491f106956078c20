"""Lifted ``while`` loops (issue 13 item 2): a loop whose test reads the data is one step of the
compiled program, its body and next test compiled once, whatever the trip count of a call;
what it computes is eager NumPy's, and a loop the lifter declines is captured as written."""

import logging
import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.ir import LIFTED_LOOP
from stax.runtime import lifted_while, replay_costs


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", "off")
    # calls of other trip counts are timed against eager ones of others: not a test's business
    monkeypatch.setattr(replay_costs, "SLOWER", 1e9)
    monkeypatch.setattr(replay_costs, "WARM_SLOWER", 1e9)


def collatz_steps(n):
    n = n.copy()
    steps = np.zeros_like(n)
    active = n > 1
    while active.any():
        even = (n % 2) == 0
        n = np.where(active, np.where(even, n // 2, 3 * n + 1), n)
        steps += active
        active = n > 1
    return steps


def newton_sqrt(a, tol):
    x = np.maximum(a, 1.0)
    err = np.inf  # a Python number: the first test is Python's, the next ones the data's
    while err > tol:
        xn = 0.5 * (x + a / x)
        err = np.max(np.abs(xn - x) / xn)
        x = xn
    return x, err


def bisect_sqrt(a, tol):
    lo = np.zeros_like(a)
    hi = np.maximum(a, 1.0)
    while (hi - lo).max() > tol:
        mid = 0.5 * (lo + hi)
        f = mid * mid - a
        lo = np.where(f < 0, mid, lo)
        hi = np.where(f >= 0, mid, hi)
    return 0.5 * (lo + hi)


def _lifted(compiled):
    version = compiled._versions[-1]
    return version.native and LIFTED_LOOP in str(version.artifact)


def _same(got, want, rtol=0.0):
    """Equal in type, dtype and value; float sums within ``rtol`` (Stax sums with NumPy's
    accuracy, not in its order: ``stax.codegen.cpu.pairwise``)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, rtol)
        return
    assert type(got) is type(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    if rtol:
        np.testing.assert_allclose(got, want, rtol=rtol)
    else:
        np.testing.assert_array_equal(got, want)


def test_a_while_loop_lifts_once_for_every_trip_count(caplog, monkeypatch):
    """Unrolled, each test was a data gate: a call with another trip count compiled again
    (4-6 s a call for 2,000 integers); lifted, one version runs them all, the iterations in
    one machine-code loop, and a call that runs none (``high`` 2) gives copies of the
    locals, which nothing else sees."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    rng = np.random.default_rng(0)
    compiled = stax.compile(collatz_steps)
    with caplog.at_level(logging.INFO, logger="stax"):
        for high in (50, 1000, 3, 5000, 2):
            n = rng.integers(1, high, 300)
            _same(compiled(n), collatz_steps(n))
            _same(compiled(n), collatz_steps(n))  # the cached version's call too
    assert _lifted(compiled)
    assert len(compiled.versions()) == 1
    text = caplog.text
    assert "while loop at" in text and "lifted into one step" in text
    assert "items run in one machine-code loop" in text
    assert "run eagerly" not in text


@pytest.mark.parametrize("fn,make", [
    (newton_sqrt, lambda rng: (rng.random(500) * 100, 1e-12)),
    (bisect_sqrt, lambda rng: (rng.random(300) * 100, 1e-9)),
])
def test_tolerance_loops_match_numpy(fn, make):
    rng = np.random.default_rng(1)
    compiled = stax.compile(fn)
    for _ in range(4):
        args = make(rng)
        _same(compiled(*args), fn(*args))
    assert _lifted(compiled)
    assert len(compiled.versions()) == 1


def power_iteration(A, tol):
    v = np.ones(A.shape[0]) / np.sqrt(A.shape[0])
    lam, lam_old = 1.0, 0.0
    while abs(lam - lam_old) > tol:
        w = np.abs(A).sum(axis=1) * v  # no matrix product: exact against NumPy
        lam_old = lam
        lam = np.sqrt((w * w).sum())
        v = w / lam
    return lam, lam_old, v


def test_python_numbers_the_first_iterations_change_settle_before_the_lift():
    """``lam_old = lam`` holds a Python number after the first iteration and a traced one
    after the second: the lift waits for it (a Python value changing from one iteration to
    the next would be a constant of the body)."""
    rng = np.random.default_rng(2)
    compiled = stax.compile(power_iteration)
    for _ in range(3):
        A = rng.random((20, 20))
        _same(compiled(A, 1e-12), power_iteration(A, 1e-12), rtol=1e-11)
    assert _lifted(compiled)


def halve_in_place(x):
    while (x > 1).any():
        x[x > 1] /= 2
    return x.sum()


def test_an_argument_updated_in_place_in_the_loop_is_written_back():
    rng = np.random.default_rng(3)
    compiled = stax.compile(halve_in_place)
    for _ in range(3):
        x = rng.random(200) * 1000
        y = x.copy()
        _same(compiled(x), halve_in_place(y), rtol=1e-15)
        np.testing.assert_array_equal(x, y)


def count_up(x, limit):
    s = x.sum() * 0.0
    while s < limit:
        s = s + 1.0
    return s


def test_long_loops_run_in_chunks_and_stop_where_numpy_does():
    """Thousands of iterations: the machine-code loop runs them in chunks (Python regains
    control between them), and stops at the first false test."""
    compiled = stax.compile(count_up)
    x = np.ones(4)
    for limit in (5.0, 5000.5, 70_000.0, 3.0):
        _same(compiled(x, limit), count_up(x, limit))


def never_runs(x):
    y = x * 2
    while y.sum() < 0:
        y = y + 1
    return y


def test_a_loop_that_runs_no_iteration_at_capture_and_some_later():
    compiled = stax.compile(never_runs)
    for x in (np.ones(5), -np.ones(5), np.ones(5), -np.arange(5.0)):
        _same(compiled(x), never_runs(x))


def blow_up(x):
    while np.isfinite(x).all():
        x = x * 1e50
    return x


def test_an_iteration_with_a_floating_point_event_warns_as_numpy():
    compiled = stax.compile(blow_up)
    for x in (np.array([1.0, 2.0]), np.array([3.0, 1e-300])):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            result = compiled(x)
        with warnings.catch_warnings(record=True) as want:
            warnings.simplefilter("always")
            expected = blow_up(x)
        _same(result, expected)
        assert [str(w.message) for w in got] == [str(w.message) for w in want]
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        compiled(np.array([1.0, 2.0]))


def nan_test(x):
    s = x.sum()
    while s > 1.0:
        x = x / 2
        x[0] = np.nan if s < 4.0 else x[0]
        s = x.sum()
    return x, s


def test_a_test_that_turns_nan_ends_the_loop():
    compiled = stax.compile(nan_test)
    for scale in (10.0, 100.0, 0.1):
        x = np.full(4, scale)
        _same(compiled(x), nan_test(x.copy()))


def counted(x, tol):
    it = 0
    err = 1.0
    while err > tol and it < 200:
        x = 0.5 * (x + 2.0 / x)
        err = np.abs(x * x - 2.0).max()
        it += 1
    return x, it


def printing(x, seen):
    while x.max() > 1:
        x = x / 2
        seen.append(1)
    return x


def test_loops_the_lifter_declines_are_captured_as_written():
    """A Python counter the body changes, a body with a Python effect: as before."""
    rng = np.random.default_rng(4)
    compiled = stax.compile(counted)
    for _ in range(3):
        x = rng.random(50) + 1
        _same(compiled(x, 1e-12), counted(x, 1e-12))
    compiled = stax.compile(printing)
    x = np.array([10.0, 3.0])
    got, want = [], []
    _same(compiled(x, got), printing(x, want))
    assert got == want


def test_numpy_runs_a_loop_it_runs_faster(monkeypatch):
    """Where NumPy ran the whole loop faster per iteration than the compiled body (measured
    at capture), the step runs the loop as written."""
    made = []

    class Timed(lifted_while.WhileRunner):
        def eager_seconds_per_item(self, arrays):
            made.append(self)
            return 0.0

    monkeypatch.setattr(lifted_while, "WhileRunner", Timed)
    compiled = stax.compile(collatz_steps)
    n = np.arange(1, 40)
    _same(compiled(n), collatz_steps(n))
    assert made and made[-1].eager
    _same(compiled(n + 7), collatz_steps(n + 7))


def halve_until_small(x):
    y = x.copy()
    while np.abs(y).max() > 1:
        y = y / 2
    return y


def test_a_call_running_no_iteration_in_numpy_copies_private_locals(monkeypatch):
    """A probe's finding: where NumPy runs the loop (faster, measured at capture), a call
    running no iteration left ``y`` the object it was before the loop; capture had a new one,
    so every such call ran eagerly ("the loop's results are other objects than at capture")
    at 12x the eager time. The whole loop now says how many iterations it ran."""
    class Timed(lifted_while.WhileRunner):
        def eager_seconds_per_item(self, arrays):
            return 0.0

    monkeypatch.setattr(lifted_while, "WhileRunner", Timed)
    compiled = stax.compile(halve_until_small)
    rng = np.random.default_rng(5)
    for scale in (5.0, 0.5, 0.25, 3.0, 0.1):
        x = rng.standard_normal(50) * scale
        got = compiled(x)
        _same(got, halve_until_small(x))
        assert got is not x
    info = compiled.cache_info()
    assert info.compiles == 1 and info.fallbacks == 0


def test_the_rewritten_function_runs_as_written_outside_capture():
    from stax.trace import loops
    clone = loops.rewritten(collatz_steps)
    assert clone is not None
    n = np.arange(1, 30)
    _same(clone(n), collatz_steps(n))


# -- loops that end at a test: ``S1; if C: [S3;] break; S3`` -------------------------------------

def fixed_point(x, tol):
    for _ in range(500):
        x = np.cos(x)
        if np.abs(x - np.cos(x)).max() < tol:
            break
    return x


def newton_for(a, tol):
    x = np.maximum(a, 1.0)
    for _ in range(100):
        xn = 0.5 * (x + a / x)
        if np.max(np.abs(xn - x) / xn) < tol:
            x = xn  # the same statement as after the test: each iteration runs it
            break
        x = xn
    return x


def bisect_until(a, tol):
    lo = np.zeros_like(a)
    hi = np.maximum(a, 1.0)
    while True:
        mid = 0.5 * (lo + hi)
        f = mid * mid - a
        lo = np.where(f < 0, mid, lo)
        hi = np.where(f >= 0, mid, hi)
        if (hi - lo).max() <= tol:
            break
    return 0.5 * (lo + hi)


def capped(x, limit):
    while x.sum() < limit:
        x = x * 2
        if x.max() > 100:
            break
    return x


@pytest.mark.parametrize("fn,make,rtol", [
    (fixed_point, lambda rng: (rng.random(200), 1e-10), 1e-15),  # cos within 1 ulp
    (newton_for, lambda rng: (rng.random(300) * 100, 1e-12), 0.0),
    (bisect_until, lambda rng: (rng.random(300) * 100, 1e-9), 0.0),
    (capped, lambda rng: ((rng.random(20) + 0.5) * rng.random() * 10, 600.0), 0.0),
])
def test_loops_ending_at_a_test_lift_and_stop_where_numpy_does(fn, make, rtol, monkeypatch):
    """Unrolled, each iteration's ``break`` test was a data gate (another count, another
    compile); lifted, the body says whether the loop goes on and the step stops there."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    rng = np.random.default_rng(5)
    compiled = stax.compile(fn)
    for _ in range(5):
        args = make(rng)
        _same(compiled(*args), fn(*args), rtol)
    assert _lifted(compiled)
    assert len(compiled.versions()) == 1


def counted_for(x, tol):
    for k in range(500):  # noqa: B007 - read after the loop
        x = np.cos(x)
        if np.abs(x - np.cos(x)).max() < tol:
            break
    return x, {"iterations": k}


def test_the_target_returned_after_a_break_is_the_last_item_as_a_python_int():
    """``return x, k`` after a ``break``: the step gives the last item it ran, which the result
    converts to a Python int (no gate: one version for every trip count)."""
    compiled = stax.compile(counted_for)
    rng = np.random.default_rng(6)
    seen = set()
    for scale in (1.0, 30.0, 0.01, 1000.0):
        x = rng.random(50) * scale
        got, want = compiled(x, 1e-9), counted_for(x, 1e-9)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-15)
        assert type(got[1]["iterations"]) is int and got[1] == want[1]
        seen.add(want[1]["iterations"])
    assert len(seen) > 1 and _lifted(compiled) and len(compiled.versions()) == 1


def counted_then_used(x, tol):
    for k in range(500):  # noqa: B007 - read after the loop
        x = np.cos(x)
        if np.abs(x - np.cos(x)).max() < tol:
            break
    return x * k


def test_a_target_read_otherwise_after_a_break_keeps_the_loop_as_written():
    """After a ``break`` the target is the data's: read by Python code (not only returned),
    the loop is not rewritten."""
    from stax.trace import loops
    assert loops.rewritten(counted_then_used) is None
    compiled = stax.compile(counted_then_used)
    x = np.random.default_rng(6).random(50)
    _same(compiled(x, 1e-6), counted_then_used(x, 1e-6), 1e-14)


def stop_on_bad(x):
    for _ in range(200):
        x = np.log(x) + 2.0
        if np.isnan(x).any():
            break
    return x


def test_an_iteration_with_an_event_runs_in_numpy_and_the_loop_still_stops():
    """An iteration whose kernels report an event runs by the body function in NumPy (its
    warning as eagerly), and its test still ends the loop."""
    compiled = stax.compile(stop_on_bad)
    for x in (np.array([3.0, 5.0]), np.array([0.2, 3.0]), np.array([0.01, 0.5])):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            result = compiled(x)
        with warnings.catch_warnings(record=True) as want:
            warnings.simplefilter("always")
            expected = stop_on_bad(x)
        np.testing.assert_allclose(result, expected, rtol=1e-14)  # log within 1 ulp
        assert [str(w.message) for w in got] == [str(w.message) for w in want]


# -- what a review found (each a wrong result before its fix) -------------------------------------

def target_bound_again(x):
    for k in range(30):  # noqa: B007 - bound again below
        x = x * 0.5
        if x.max() < 1:
            break
    k = x.sum()  # the returned k is this one, not the loop's
    return x, k


def target_bound_before(x, n):
    k = np.argmax(x)  # a loop of no item leaves this one
    for k in range(n):  # noqa: B007
        x = x * 0.5
        if x.max() < 1:
            break
    return x, k


def test_a_returned_name_the_loop_does_not_alone_bind_is_not_converted():
    compiled = stax.compile(target_bound_again)
    for x in (np.ones(3) * 8, np.ones(3) * 1000):
        _same(compiled(x), target_bound_again(x))
    compiled = stax.compile(target_bound_before)
    for n in (0, 3, 40):
        _same(compiled(np.ones(3), n), target_bound_before(np.ones(3), n))


def sqrt_until_one(x):
    n = np.zeros((), np.int64)
    while True:
        x = np.sqrt(x)
        n = n + 1
        if np.abs(x - 1).max() < 1e-3:
            break
    return n


def test_a_break_in_the_iteration_before_the_step_ends_the_loop():
    """The first iteration runs as written (``while True``) and the step runs from there: a
    call whose first iteration breaks ran one more (the step tested ``True`` alone)."""
    compiled = stax.compile(sqrt_until_one)
    for x in (np.array([4.0, 9.0, 16.0]), np.ones(3), np.array([1.0005, 1.0]), np.full(3, 1e6)):
        _same(compiled(x), sqrt_until_one(x))


def test_threads_get_their_own_last_item(monkeypatch):
    """The last item a lifted loop ran was the runner's: a thread returned another's."""
    import threading

    from stax.runtime import lifted_loops

    monkeypatch.setattr(lifted_loops.Runner, "eager_seconds_per_item", lambda self, arrays: None)
    compiled = stax.compile(counted_for)
    compiled(np.ones(20) * 3.0, 1e-9)
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(200):
            x = np.ones(20) * float(rng.choice([0.5, 3.0, 1e3]))
            if compiled(x, 1e-9)[1] != counted_for(x, 1e-9)[1]:
                errors.append(seed)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def walrus_test(x):
    d = np.zeros(())
    while (d := x.max()) > 1.0:  # the test binds d: the last value it tested
        x = x / 2
    return x, d


def test_a_test_binding_a_name_keeps_the_loop_as_written(monkeypatch):
    from stax.runtime import lifted_loops
    monkeypatch.setattr(lifted_loops.Runner, "eager_seconds_per_item", lambda self, arrays: None)
    compiled = stax.compile(walrus_test)
    for scale in (8.0, 1000.0, 0.5):
        _same(compiled(np.ones(3) * scale), walrus_test(np.ones(3) * scale))


def recomputed_each_item(x, n):
    err = np.abs(x).max()  # carried, read by no kernel of the body: it computes it anew
    for _ in range(n):
        x = x * 0.5
        err = np.abs(x).max()
    return x, err


def recomputed_each_iteration(x, tol):
    err = np.abs(x).max()
    while err > tol:
        x = x * 0.5
        err = np.abs(x).max()
    return x, err


def test_a_carried_value_no_kernel_reads_is_not_updated_in_place(monkeypatch):
    """The machine-code loop took the kernel computing ``err`` for the copy an in-place update
    skips (neither copies a named input: None == None), so ``err`` kept its first value: a
    stale result after a ``for`` loop, a ``while`` loop that never ended."""
    from stax.runtime import lifted_loops
    monkeypatch.setattr(lifted_loops.Runner, "eager_seconds_per_item", lambda self, arrays: None)
    f = stax.compile(recomputed_each_item)
    for n in (40, 40, 7):
        _same(f(np.ones(100) * 8.0, n), recomputed_each_item(np.ones(100) * 8.0, n))
    g = stax.compile(recomputed_each_iteration)
    for scale in (8.0, 1000.0):
        _same(g(np.ones(1000) * scale, 1.0), recomputed_each_iteration(np.ones(1000) * scale, 1.0))


def scratch_times_item(x):
    for i in range(600):
        t = x * i  # a scratch local: the body is wrapped; its item must stay a Python int
        x = t * 1e-3 + x
    return x


def carried_int8(x):
    k = x.sum(dtype=np.int8)  # a NumPy int8 scalar the loop carries
    while x.max() < 100:
        x = x + k
        k = k + np.int8(100)  # overflows: NumPy warns for the scalar
    return x, k


def test_wrapped_bodies_take_their_item_and_scalars_as_scalars(monkeypatch):
    """A wrapped body (scratch locals, a while loop's test) had ``*args``: capture could not
    name its item and carried NumPy scalars, so they were 0-d arrays (``x_f32 * i`` promoted
    to float64; an int8 scalar's overflow went unreported)."""
    import warnings

    from stax.runtime import lifted_loops
    monkeypatch.setattr(lifted_loops.Runner, "eager_seconds_per_item", lambda self, arrays: None)
    f = stax.compile(scratch_times_item)
    x = np.ones(8, np.float32)
    _same(f(x), scratch_times_item(x))
    g = stax.compile(carried_int8)
    for _ in range(2):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            result = g(np.zeros(3, np.float32))
        with warnings.catch_warnings(record=True) as want:
            warnings.simplefilter("always")
            expected = carried_int8(np.zeros(3, np.float32))
        _same(result, expected)
        assert [str(w.message) for w in got if "stax" not in str(w.message)] == \
            [str(w.message) for w in want]


def aliased_before(x):
    y = x * 1.0
    z = y  # a second name for the array the loop rebinds
    while y.max() > 1:
        y = y / 2
    return y, z


def test_a_call_running_no_iteration_keeps_an_aliased_local_the_same_object(monkeypatch):
    from stax.runtime import lifted_loops
    monkeypatch.setattr(lifted_loops.Runner, "eager_seconds_per_item", lambda self, arrays: None)
    f = stax.compile(aliased_before)
    f(np.ones(3) * 8.0)
    got = f(np.ones(3) * 0.5)
    assert got[0] is got[1]


def jacobi_counted(A, b, tol, maxit):
    x = np.zeros_like(b)
    D = np.diag(A)
    R = A - np.diag(D)
    err = np.inf
    it = 0
    while err > tol and it < maxit:
        xn = (b - R @ x) / D
        err = np.linalg.norm(xn - x)
        x = xn
        it += 1
    return x, it


def halve_counted(y):
    k = 0
    while k < 40 and np.abs(y).max() > 1:
        y = y / 2
        k += 1
    return y, k


def counter_used_otherwise(y):
    k = 0
    while np.abs(y).max() > 1:
        y = y / (k + 2)
        k += 1
    return y, k


@pytest.mark.parametrize("fn", [jacobi_counted, halve_counted, counter_used_otherwise])
def test_loops_counting_their_iterations_lift_and_return_python_ints(fn, caplog, monkeypatch):
    """``while err > tol and it < maxit: ...; it += 1``: the Python int counter changed at
    every iteration, so the loop never settled and unrolled with a gate per iteration (a new
    version for every iteration count). A counter (bound to int literals, stepped by ``+=``,
    read in comparisons and returned) is carried as a traced int64 and returned as a Python
    int; the ``and`` of the test is the traced conjunction. A counter read otherwise (``y /
    (k + 2)``: a NumPy integer would change the division's types) keeps the loop as before."""
    import logging

    monkeypatch.setenv("STAX_LOGS", "loops")
    rng = np.random.default_rng(21)
    f = stax.compile(fn)
    with caplog.at_level(logging.INFO, logger="stax"):
        for scale in (40.0, 3.0, 300.0, 0.5):
            if fn is jacobi_counted:
                n = 12
                args = (rng.standard_normal((n, n)) + np.eye(n) * scale, rng.standard_normal(n),
                        1e-9, 60)
            else:
                args = (rng.standard_normal(30) * scale,)
            got, want = f(*args), fn(*args)
            np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
            assert got[1] == want[1] and type(got[1]) is int
    lifted = "lifted into one step" in caplog.text
    assert lifted == (fn is not counter_used_otherwise)
    if lifted:
        assert f.cache_info().compiles == 1


def counted_to_a_limit(x, lim):
    it = 0
    while x.max() > -1.0 and it <= lim:
        x = x + 1.0
        it += 1
    return x, it


@pytest.mark.parametrize("lim", [np.float16(2048), 2048, 20.5])
def test_a_counter_compared_with_a_float_is_a_python_int(lim):
    """A review's finding: the lifted counter (int64, strong) compared with a float16 limit in
    float64, where eagerly the Python int rounds to float16 (2049 <= float16(2048)): one
    iteration fewer. A counter compared with anything but an integer keeps its loop in NumPy,
    where it is a Python int again."""
    f = stax.compile(counted_to_a_limit)
    for _ in range(2):
        got, want = f(np.zeros(4), lim), counted_to_a_limit(np.zeros(4), lim)
        _same(got[0], want[0])
        assert got[1] == want[1] and type(got[1]) is int


def newton_until(a, tol):
    y = np.maximum(a, 1.0)
    it = 0
    while True:
        y = 0.5 * (y + a / y)
        it += 1
        if np.abs(y * y - a).max() < tol or it >= 100:  # a data test or a counter: ``or``
            break
    return y, it


def test_a_break_test_joined_by_or_with_a_counter_lifts(monkeypatch, caplog):
    """``if err < tol or it >= maxit: break``: Python's ``or`` read the data test as a gate,
    so the loop unrolled with a gate per iteration and new data (another count) compiled a
    version per count, then ran eagerly (power iteration). The rotated test keeps a traced
    operand traced (``loop_counters.any_of``): one lifted step for every count."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    compiled = stax.compile(newton_until)
    rng = np.random.default_rng(3)
    with caplog.at_level(logging.INFO, logger="stax"):
        for scale in (1.0, 100.0, 1e4, 0.3, 3.0):  # (a tolerance that changes: a version
            a = rng.uniform(0.5, 2.0, 50) * scale  # each, its gate checked in the program)
            y, it = compiled(a, 1e-9)
            want_y, want_it = newton_until(a, 1e-9)
            np.testing.assert_array_equal(y, want_y)
            assert it == want_it and type(it) is int
    assert "while loop at" in caplog.text and "lifted into one step" in caplog.text
    assert compiled.cache_info().versions == 1
    a = np.full(4, 2.0)  # the counter ends it: 100 iterations of a tolerance never met
    assert compiled(a, -1.0)[1] == newton_until(a, -1.0)[1] == 100


def kepler(M, e, tol=1e-12):
    E = np.where(e < 0.8, M, np.pi * np.ones_like(M))
    it = 0
    while True:
        dE = (E - e * np.sin(E) - M) / (1 - e * np.cos(E))
        E = E - dE
        it += 1
        if np.max(np.abs(dE)) < tol or it >= 50:
            break
    return E, it


def test_a_counter_does_not_keep_the_first_iteration_as_a_gate():
    """A user probe's finding: Newton's method on Kepler's equation compiled a version (0.5 s)
    for every eccentricity. The loop lifted only after its first iteration, traced as written,
    because its counter (``it += 1``, a Python int) changed there; that iteration's test was a
    data gate, and a version with data gates keeps its scalars exact. A counter carried
    traced (``loop_counters``) now lets the step run every iteration from before the loop."""
    compiled = stax.compile(kepler)
    M = np.random.default_rng(0).uniform(0, 2 * np.pi, 500)
    for e in list(np.linspace(0.05, 0.95, 10)) * 2:
        got, want = compiled(M, float(e)), kepler(M, float(e))
        assert got[1] == want[1] and type(got[1]) is type(want[1])
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
    assert compiled.cache_info().versions <= 3  # (e < 0.8 and not: two outcomes)
    assert all(v.gates is None for v in compiled.versions())


def _shrink_first_pass(a, tol):
    x = a.copy()
    it = 0
    while np.max(np.abs(x)) > tol and it < 9:
        if it is first_pass:  # an identity: an int64 counter is no Python int
            x = x + 1.0
        x = x * 0.5
        it += 1
    return x, it


first_pass = 0


def test_a_counter_compared_by_identity_is_no_counter():
    """A review's finding: ``it is 0`` counted as a comparison of the counter, which the step
    carries as an int64, so the first iteration's branch was not taken there."""
    compiled = stax.compile(_shrink_first_pass)
    a = np.array([1.0, -0.5, 0.25])
    for tol in (0.3, 1.0, 2.0):
        got, want = compiled(a, tol), _shrink_first_pass(a, tol)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]


def _shrinks_in_its_test(x, c):
    y = x + 0.0
    while np.multiply(y, 0.9, out=y).max() > 0.5:  # the test updates y in place
        y = y + 0.01 * np.sqrt(y.min() - c[0])
    return y


def test_a_test_that_updates_a_local_in_place_is_captured_as_written():
    """A review's finding: lifted from before its first iteration, the loop dropped the update
    the test made (wrong values every call), or named a node it had erased (KeyError)."""
    compiled = stax.compile(_shrinks_in_its_test)
    x = np.random.default_rng(0).random((4, 30)) + 0.5
    ok = np.array([0.0])
    for data in (x, x, x, x * 0.1, x, x):
        np.testing.assert_array_equal(compiled(data.copy(), ok), _shrinks_in_its_test(data, ok))


def _shrink(y):
    np.multiply(y, 0.9, out=y)
    return y.max()


def _shrinks_in_a_helper(x, c):
    y = x + 0.0
    while _shrink(y) > 0.5:  # the test updates y in place, in a helper
        y = y + 0.01 * np.sqrt(y.min() - c[0])
    return y


def test_a_test_that_updates_a_local_in_place_through_a_helper():
    """Where the test is false at entry, capture forgot what the test recorded (KeyError at
    every such call), or ran the test again (its update twice: wrong values)."""
    compiled = stax.compile(_shrinks_in_a_helper)
    x = np.random.default_rng(0).random((4, 30)) + 0.5
    ok = np.array([0.0])
    for data in (x, x, x, x * 0.1, x * 0.1, x, x * 0.1):  # (the 3rd call runs eagerly: timed)
        np.testing.assert_array_equal(compiled(data.copy(), ok), _shrinks_in_a_helper(data, ok))
