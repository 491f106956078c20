"""A lifted loop's items in one machine-code loop (``stax.codegen.cpu.item_loop``): buffers
swapped between items, arguments updated in place where the body copies and region-updates
them, and an item whose kernels report an event or an index out of bounds handed to the
dispatcher — what the loop computes, warns and raises is eager NumPy's."""

import logging
import re
import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen import KernelArtifact
from stax.runtime import lifted_loops
from stax.trace import loops


@pytest.fixture(autouse=True)
def small_limit(monkeypatch):
    monkeypatch.setattr(loops, "UNROLL_LIMIT", 30)  # lift loops of tests' sizes
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


def _same_as_numpy(fn, *args, rtol=0.0):
    """Call ``fn`` compiled and eagerly on copies of ``args``: equal results, warnings and
    arguments afterwards. Returns the compiled function."""
    compiled = stax.compile(fn)
    for _ in range(2):  # the first call captures, the second runs the compiled version
        mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            result = compiled(*mine)
        with warnings.catch_warnings(record=True) as want:
            warnings.simplefilter("always")
            expected = fn(*theirs)
        assert np.asarray(result).dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(result, expected, rtol=rtol, atol=0)
        assert [str(w.message) for w in got] == [str(w.message) for w in want]
        for a, b in zip(mine, theirs):
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, b)
    return compiled


def trajectory(y0, rate, steps):
    traj = np.zeros((steps + 1, y0.shape[0]))
    traj[0] = y0
    for k in range(steps):
        traj[k + 1] = traj[k] + rate * traj[k] * (1.0 - traj[k])
    return traj


def test_rows_written_in_place_one_loop(caplog, monkeypatch):
    monkeypatch.setenv("STAX_LOGS", "loops")
    with caplog.at_level(logging.INFO, logger="stax"):
        _same_as_numpy(trajectory, np.array([0.1, 0.2, 0.3]), 0.5, 200)
    assert "items run in one machine-code loop" in caplog.text
    assert "updated in place: traj" in caplog.text


def fibonacci_rows(a, b, n):
    for _ in range(n):
        a, b = b, a + b
    return a, b


def test_carried_arrays_move_between_items(caplog, monkeypatch):
    monkeypatch.setenv("STAX_LOGS", "loops")
    with caplog.at_level(logging.INFO, logger="stax"):
        _same_as_numpy(fibonacci_rows, np.arange(4.0), np.ones(4), 60)
    assert "buffers moved: a, b" in caplog.text


def running_mean(x):
    out = np.zeros(x.shape[0])
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
        out[i] = total / (i + 1)
    return out


def test_a_running_total_beside_an_updated_array_runs_in_one_machine_code_loop(
        caplog, monkeypatch):
    """The running total's buffer moves between items; the freed buffer of each carried value
    goes to its own next value's allocation (paired in sorted order, the 0-d total and the
    vector swapped: every item ran as its own call, 10x slower than NumPy)."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    with caplog.at_level(logging.INFO, logger="stax"):
        _same_as_numpy(running_mean, np.random.default_rng(2).standard_normal(300))
    assert "items run in one machine-code loop" in caplog.text
    assert "buffers moved: total" in caplog.text


def test_a_carried_array_whose_first_layout_differs():
    """A transposed start: the first items run through the dispatcher, then the loop."""
    def decay(u, steps):
        for _ in range(steps):
            u = 0.5 * u + 0.25 * np.roll(u, 1, axis=0)
        return u

    u = np.ascontiguousarray(np.random.default_rng(0).random((5, 7)).T).T
    _same_as_numpy(decay, u, 80)


def roots(x, k):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = np.sqrt(x[i] - k)
    return out


def test_an_item_with_an_event_warns_once_as_numpy():
    x = np.linspace(1.0, 2.0, 100)
    x[37] = -5.0  # sqrt of a negative at item 37: NumPy's invalid-value warning, a NaN
    _same_as_numpy(roots, x, 0.5)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        stax.compile(roots)(x, 0.5)


def shifted(x, offset):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i + offset] * 2.0
    return out


def test_an_index_out_of_bounds_at_a_late_item_raises_as_numpy():
    x = np.arange(60.0)
    compiled = _same_as_numpy(shifted, x, -3)  # negative indices wrap: fine
    with pytest.raises(IndexError):
        shifted(x, 3)
    with pytest.raises(IndexError):
        compiled(x, 3)


def scaled_running_sum(x, w):
    acc = np.zeros(x.shape[1], dtype=x.dtype)
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        acc = acc * w + x[i]
        out[i] = acc
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_dtypes_and_new_data_reuse_the_loop(dtype):
    rng = np.random.default_rng(3)
    x = (rng.random((90, 6)) * 10).astype(dtype)
    w = dtype(1) if np.issubdtype(dtype, np.integer) else dtype(0.75)
    compiled = _same_as_numpy(scaled_running_sum, x, w)
    y = (rng.random((90, 6)) * 10).astype(dtype)
    np.testing.assert_array_equal(compiled(y, w), scaled_running_sum(y, w))


def test_the_copy_an_in_place_update_skips_is_in_the_kernels_document(monkeypatch):
    bodies = []
    made = lifted_loops.ItemLoopRun.of

    def spy(runner, args, exit=None):
        bodies.append(runner.compiled._versions[-1].artifact)
        return made(runner, args, exit)

    monkeypatch.setattr(lifted_loops.ItemLoopRun, "of", staticmethod(spy))
    stax.compile(trajectory)(np.array([0.1, 0.2]), 0.5, 40)
    body = bodies[0]
    assert [k.copies for k in body.kernels if k.copies] == ["traj"]
    doc = body.to_json()
    assert doc["schema"] == "stax.kernels/1.6"
    again = KernelArtifact.from_json(doc)
    assert [k.copies for k in again.kernels] == [k.copies for k in body.kernels]
    assert "copies traj" in str(body)


def mean_of_first(x):
    acc = 0.0
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        acc = acc + x[i]
        out[i] = acc / (i + 1)
    return out


def test_the_item_as_a_number_compiles_where_int64_means_the_same(caplog, monkeypatch):
    monkeypatch.setenv("STAX_LOGS", "loops")
    with caplog.at_level(logging.INFO, logger="stax"):
        _same_as_numpy(mean_of_first, np.random.default_rng(2).random(200))
    # it compiles; which way then runs the items is timed (``lifted_loops.first_run``): on a
    # busy host NumPy's 0.7 us an item once beat the compiled 0.9 us
    assert "body compiled once" in caplog.text or re.search(
        r"body run by NumPy: [0-9.]+ us an item, compiled", caplog.text), caplog.text

    def scaled32(x):
        out = np.zeros_like(x)
        for i in range(x.shape[0]):
            out[i] = x[i] * i  # float32 * Python int stays float32 (NEP 50): runs in NumPy
        return out

    x = np.random.default_rng(3).random(100).astype(np.float32)
    compiled = _same_as_numpy(scaled32, x)
    assert compiled(x).dtype == np.float32


def forced_decay(y):
    dt = 0.01
    for i in range(y.shape[0] * 40):
        t = i * dt
        y = y + dt * (np.cos(1.3 * t) - 0.1 * y) + (t + 1.0) / 2.0 * 1e-3
    return y


def test_a_time_from_the_item_compiles(caplog, monkeypatch):
    """A probe's ``t = i * dt`` in a time-stepping loop: refused ("with a non-int constant"),
    so the loop ran in NumPy (1.4 ms, NumPy 1.3). ``i * dt``, ``(t + 1) / 2`` and ``np.cos(1.3
    * t)`` are Python floats eagerly and the same doubles as int64 and float64 NumPy scalars
    (every item below 2**53): the body compiles. Into float32 arrays it would differ (NEP 50)
    and runs in NumPy; a division by a float that may be zero too (Python raises)."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    y = np.linspace(-1.0, 1.0, 25)
    with caplog.at_level(logging.INFO, logger="stax"):
        _same_as_numpy(forced_decay, y, rtol=1e-13)  # (cos: within an ulp of NumPy's)
    assert "does not compile on its own" not in caplog.text

    def over_time(y):
        for i in range(1, 200):
            t = i * 0.5
            y = y + 1.0 / t
        return y

    def from_zero(y):
        for i in range(200):
            t = i * 0.5
            y = y + 1.0 / t  # i = 0: Python's ZeroDivisionError
        return y

    _same_as_numpy(over_time, y)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="stax"):
        with pytest.raises(ZeroDivisionError):
            stax.compile(from_zero)(y)
    with pytest.raises(ZeroDivisionError):
        from_zero(y)


def test_one_object_by_two_names_stays_one():
    def aliases(a, x):
        for i in range(x.shape[0]):
            c = a + x[i]
            a = c
            b = c
        a += 1
        return b

    _same_as_numpy(aliases, np.zeros(3), np.ones((100, 3)))


def test_a_row_bound_in_the_body_is_a_view_after_the_loop():
    def last_row(x):
        s = np.zeros(x.shape[1])
        for i in range(x.shape[0]):
            s = s + x[i]
            r = x[i]
        r[0] = -1.0  # writes into x, as eager Python's view does
        return s

    _same_as_numpy(last_row, np.ones((100, 3)))


def test_underflow_inside_a_lifted_loop_is_numpys():
    def decays(X):
        s = np.zeros(X.shape[1])
        for i in range(X.shape[0]):
            s = s + np.exp(-X[i])
        return s

    X = np.random.default_rng(0).random((100, 6))
    X[20, 2] = 800.0
    compiled = stax.compile(decays)
    compiled(X)
    with np.errstate(under="raise"):
        with pytest.raises(FloatingPointError):
            decays(X)
        with pytest.raises(FloatingPointError):
            compiled(X)
    with np.errstate(under="ignore"):
        np.testing.assert_allclose(compiled(X), decays(X), rtol=1e-15)


def test_a_local_read_before_the_body_binds_it_is_unbound_at_the_first_item():
    def previous(x):
        acc = np.zeros(x.shape[1])
        for i in range(x.shape[0]):
            try:
                acc = acc + prev  # unbound on the first iteration
            except NameError:
                acc = acc + 100.0
            prev = x[i] * 2  # noqa: F841 - read by the next iteration
        return acc

    _same_as_numpy(previous, np.ones((100, 4)))


EFFECTS = []


def test_a_body_with_python_effects_unrolls_each_iteration_once(caplog, monkeypatch):
    def logged(x):
        acc = np.zeros(x.shape[1])
        for i in range(x.shape[0]):
            EFFECTS.append(i)
            acc = acc + x[i]
        return acc

    monkeypatch.setenv("STAX_LOGS", "loops")
    EFFECTS.clear()
    with caplog.at_level(logging.INFO, logger="stax"):
        result = stax.compile(logged)(np.ones((100, 3)))
    np.testing.assert_array_equal(result, np.full(3, 100.0))
    assert EFFECTS == list(range(100))  # once per iteration, plain ints
    assert "EFFECTS.append" in caplog.text


def test_a_float_scalar_stored_into_an_int8_array_raises_as_numpy():
    def fill(x):
        out = np.zeros(x.shape, dtype=np.int8)
        for i in range(x.shape[0]):
            out[i] = x[i] > 0
            out[i, 0] = x[i, 0] * 100
        return out

    x = np.random.default_rng(0).standard_normal((100, 40))
    with pytest.raises(OverflowError):
        fill(x)
    compiled = stax.compile(fill)
    for _ in range(2):
        with pytest.raises(OverflowError):
            compiled(x)
    small = x / 100
    np.testing.assert_array_equal(compiled(small), fill(small))


def test_warnings_before_an_error_in_a_loop_are_numpys():
    def overflowing(x):
        out = np.zeros(x.shape[0])
        for i in range(x.shape[0]):
            out[i] = x[i] + (i + 250)
        return out

    x = np.arange(1200, dtype=np.uint8)
    counts = []
    for fn in (overflowing, stax.compile(overflowing), stax.compile(overflowing)):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            with pytest.raises(OverflowError):
                fn(x)
        counts.append(len(got))
    assert counts[1] == counts[2] == counts[0]


def weighted_distances(A, B, W):
    D = np.zeros((A.shape[1], B.shape[1]))
    for i in range(A.shape[1]):
        for j in range(B.shape[1]):
            D[i, j] = np.sqrt((((A[:, i] - B[:, j]) / W[:, i]) ** 2).sum())
    return D


def test_an_outer_loop_whose_body_holds_an_inner_loop_runs_in_one_machine_code_loop(
        caplog, monkeypatch):
    """The outer loop's body (the inner loop, unrolled: ``D[i, j]`` at the outer item is an
    index, not data) returns a constant with its arrays, which the item loop keeps itself
    (slot -1): "items run one call each: a result is a constant" made a (70, 70) distance loop
    7x slower."""
    monkeypatch.setattr(loops, "UNROLL_LIMIT", 1_000)
    monkeypatch.setenv("STAX_LOGS", "loops")
    rng = np.random.default_rng(11)
    A, B, W = rng.random((8, 70)), rng.random((8, 70)), rng.random((8, 70)) + 0.5
    with caplog.at_level(logging.INFO, logger="stax"):
        _same_as_numpy(weighted_distances, A, B, W, rtol=1e-13)
    assert "items run in one machine-code loop" in caplog.text
    assert "items run one call each" not in caplog.text and "run by NumPy" not in caplog.text


def relax(u, r, steps):
    u = u.copy()
    total = 0.0
    peak = 0.0
    for _ in range(steps):
        u[1:-1] = u[1:-1] + r * (u[2:] - 2 * u[1:-1] + u[:-2])
        total = total + u.sum()
        peak = u.max()  # no item reads it: a result the run copies out of its memory
    return u, total, peak


def test_threads_running_one_machine_code_loop_at_once_each_get_their_own_memory():
    """A run's memory (the intermediates' block, the stand-ins) is kept for the next run
    (``ItemLoop._frame``); the foreign call lets other threads run, so two threads in one
    loop at once must each hold a frame of their own: each thread's results are the bits one
    thread alone computes (NumPy's up to the sum's order)."""
    from concurrent.futures import ThreadPoolExecutor

    compiled = stax.compile(relax)
    rng = np.random.default_rng(7)
    inputs = [rng.random(4000) for _ in range(8)]
    for u in inputs:  # the first calls capture and settle (their sums' order may differ)
        compiled(u, 0.2, 60)
    alone = [compiled(u, 0.2, 60) for u in inputs]
    for (u, total, peak), x in zip(alone, inputs):
        want_u, want_total, want_peak = relax(x, 0.2, 60)
        np.testing.assert_array_equal(u, want_u)
        np.testing.assert_allclose(total, want_total, rtol=1e-13)
        assert peak == want_peak

    def calls(k):
        for _ in range(30):
            u, total, peak = compiled(inputs[k], 0.2, 60)
            np.testing.assert_array_equal(u, alone[k][0])
            assert peak == alone[k][2]
            # (the calls ``replay_costs`` times eagerly sum in NumPy's order: 1 ulp apart)
            np.testing.assert_allclose(total, alone[k][1], rtol=1e-13)
        return True

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(calls, range(8)))
    externs = {e.target for e in compiled.versions()[0].artifact.externs}
    assert "stax.functional.lifted_loop" in externs  # the loop ran as one step each call
