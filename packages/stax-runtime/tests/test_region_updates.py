"""Assignments into a buffer nothing else reads are region updates written in place (issue 13,
spec §4.9 with §7's in-place reuse): a chain ``out[i, :] = ...`` costs one pass to build ``out``
and one per region, not a select over the whole array per assignment. Every case is compared
with eager NumPy bit for bit, and the plans are checked to be what the design says."""

from __future__ import annotations

import json

import numpy as np
import pytest

import stax.runtime as stax
from stax.loop import LoopProgram, loads
from stax.loop.interpreter import interpret


def _compiled(fn, *args, dump=None):
    """``fn`` compiled: NumPy's results on the compiling call (on ``args`` themselves, which
    ``fn`` may update, as eager NumPy does) and on the cached version's (on copies of them)."""
    originals = [a.copy() if isinstance(a, np.ndarray) else a for a in args]

    def copies():
        return [a.copy() if isinstance(a, np.ndarray) else a for a in originals]
    compiled = stax.compile(fn, strict_native=True)
    want = fn(*copies())
    want = want if isinstance(want, tuple) else (want,)
    for call_args in (args, copies()):  # the compiling call, then the cached version's
        got = compiled(*call_args)
        got = got if isinstance(got, tuple) else (got,)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
            assert np.asarray(g).dtype == np.asarray(w).dtype
    return compiled


def _loop_program(tmp_path, monkeypatch, fn, *args) -> LoopProgram:
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    _compiled(fn, *args)
    (path,) = tmp_path.glob(f"{fn.__name__}.v0.loopir.json")
    return LoopProgram.from_json(json.loads(path.read_text()))


def affine_rows(x, w, b):
    n, m = x.shape
    out = np.zeros((n, m))
    for i in range(n):
        out[i, :] = x[i] * w + b
    return out


def vandermonde(x, degree):
    V = np.empty((x.shape[0], degree + 1))
    V[:, 0] = 1.0
    for k in range(1, degree + 1):
        V[:, k] = V[:, k - 1] * x
    return V


def block_diagonal(blocks):
    k, n, _ = blocks.shape
    out = np.zeros((k * n, k * n))
    for i in range(k):
        out[i * n:(i + 1) * n, i * n:(i + 1) * n] = blocks[i]
    return out


def heat_steps(u0):
    u = np.zeros(u0.shape[0] + 2)
    u[1:-1] = u0
    for _ in range(6):  # each step reads its neighbours: staged, never read after overwriting
        u[1:-1] = u[1:-1] + 0.25 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return u


def test_row_chain_is_one_update_per_row(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    x, w, b = rng.random((40, 128)), rng.random(128), rng.random(128)
    program = _loop_program(tmp_path, monkeypatch, affine_rows, x, w, b)
    # a chain of 40 assignments: each row a region update, and the 40 updates one loop again
    # (rerolled); no row reads another, no two rows store to one element (not in order), and
    # together they write every element: the zeros are never seen, so the loop is the buffer
    # itself, one kernel, split across threads
    (rolled,) = program.buffers
    assert rolled.updates is None and not rolled.ordered
    assert rolled.ranges == (40, 128) and str(rolled.store_index) == "128*x0 + x1"


def test_update_reading_another_column_needs_no_copy(tmp_path, monkeypatch):
    x = np.linspace(-2.0, 2.0, 37)
    program = _loop_program(tmp_path, monkeypatch, vandermonde, x, 6)
    updates = [cb for cb in program.buffers if getattr(cb, "updates", None)]
    # columns 1..6, one loop (rerolled); column 0 is a select in the buffer they update.
    # Column k - 1 and column k are disjoint blocks: each iteration reads its buffer directly
    (rolled,) = updates
    assert rolled.ranges == (6, 37) and rolled.ordered
    assert any(ld.buffer == rolled.updates for ld in _loads(rolled))


def test_overlapping_reads_are_staged(tmp_path, monkeypatch):
    u0 = np.random.default_rng(1).standard_normal(40)
    program = _loop_program(tmp_path, monkeypatch, heat_steps, u0)
    updates = [cb for cb in program.buffers if getattr(cb, "updates", None)]
    assert updates
    for cb in updates:  # the neighbours were computed into a buffer of their own first
        assert not any(ld.buffer == cb.updates for ld in _loads(cb))


def _loads(cb):
    return loads(cb.data.body)


@pytest.mark.parametrize("fn,args", [
    (affine_rows, lambda r: (r.random((30, 17)), r.random(17), r.random(17))),
    (vandermonde, lambda r: (r.uniform(-3, 3, 101), 7)),
    (block_diagonal, lambda r: (r.random((5, 7, 7)),)),
    (heat_steps, lambda r: (r.standard_normal(64),)),
])
def test_programs_match_numpy(fn, args):
    _compiled(fn, *args(np.random.default_rng(2)))


def test_loop_ir_round_trip_and_interpreter(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    blocks = rng.random((12, 3, 3))  # a chain of 12: region updates
    program = _loop_program(tmp_path, monkeypatch, block_diagonal, blocks)
    again = LoopProgram.from_json(json.loads(json.dumps(program.to_json())))
    assert again.to_json() == program.to_json()
    assert "updated in place" in str(program)
    (got,) = interpret(again, [blocks]).outputs
    np.testing.assert_array_equal(got, block_diagonal(blocks))
    x, w, b = rng.random((12, 80)), rng.random(80), rng.random(80)
    program = _loop_program(tmp_path, monkeypatch, affine_rows, x, w, b)  # every row: a kernel
    (got,) = interpret(program, [x, w, b]).outputs
    np.testing.assert_array_equal(got, affine_rows(x, w, b))


def test_a_few_assignments_stay_selects_in_one_kernel(tmp_path, monkeypatch):
    rng = np.random.default_rng(7)
    x, w, b = rng.random((5, 4)), rng.random(4), rng.random(4)
    program = _loop_program(tmp_path, monkeypatch, affine_rows, x, w, b)
    assert not any(getattr(cb, "updates", None) for cb in program.buffers)
    assert len(program.buffers) == 1


def test_old_value_still_read_is_not_overwritten():
    def keeps_a_copy(x):
        a = x * 2.0
        a[0] = 1.0
        b = a + 0.0        # read after the next assignment: a's buffer must survive it
        a[1] = 5.0
        return a, b

    def reads_a_reduction(x):
        a = x * 2.0
        a[0] = -1.0
        a[1] = a.max()     # a reduction of the old value, assigned into it
        a[2:4] = a[:2]     # the elements just written, read before they are overwritten
        return a

    def reversed_and_transposed(x):
        a = x.T * 1.5
        a[0, ::-1] = x[:, 0]
        a[-1, :] = a[0, :] + 1.0
        a[1:3, 1] = 0.5
        return a

    rng = np.random.default_rng(4)
    _compiled(keeps_a_copy, rng.random(6))
    _compiled(reads_a_reduction, rng.random(8))
    _compiled(reversed_and_transposed, rng.random((5, 4)))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "uint8"])
def test_dtypes_and_special_values(dtype):
    def fill(x, y):
        out = np.zeros_like(x)
        out[0] = y[0]
        out[1, :] = y[1] + y[2]
        out[2:, 0] = y[3, :3]
        out[-1, -1] = y[0, 0]
        return out

    rng = np.random.default_rng(5)
    if dtype == "bool":
        x, y = rng.random((5, 6)) > 0.5, rng.random((5, 6)) > 0.5
    elif dtype.startswith("float"):
        x = rng.standard_normal((5, 6)).astype(dtype)
        y = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-30, 3.0] * 5, dtype).reshape(5, 6)
    else:
        x, y = (rng.integers(0, 100, (5, 6)).astype(dtype) for _ in range(2))
    with np.errstate(all="ignore"):
        _compiled(fill, x, y)


@pytest.mark.parametrize("shape", [(6, 7), (64, 48)])
def test_random_assignment_chains_match_numpy(shape):
    """Chains of assignments with random regions whose values read the array itself at random
    places (overlapping the region or not): the in-place plan must give NumPy's result, on a
    small array (mostly selects) and a large one (mostly region updates)."""
    rng = np.random.default_rng(6)

    def region():
        key = []
        for n in shape:
            kind = rng.integers(3)
            if kind == 0:
                key.append(int(rng.integers(-n, n)))
            else:
                lo = int(rng.integers(0, n))
                hi = int(rng.integers(lo + 1, n + 1))
                key.append(slice(lo, hi) if kind == 1 else slice(hi - 1, lo - 1 if lo else None, -1))
        return tuple(key)

    def size(key):
        return tuple(len(range(*k.indices(n))) for k, n in zip(key, shape) if isinstance(k, slice))

    for _ in range(25):
        steps = []
        for _ in range(int(rng.integers(2, 12))):
            key = region()
            want = size(key)
            source = None
            for _ in range(20):  # a region of the same size elsewhere in the array, if any
                other = region()
                if size(other) == want:
                    source = other
                    break
            steps.append((key, source, float(rng.standard_normal())))

        def program(x, steps=steps):
            a = x + 1.0
            for key, source, c in steps:
                a[key] = c if source is None else a[source] * c + x[source]
            return a

        _compiled(program, rng.standard_normal(shape))


# -- rerolling: a run of updates an unrolled loop made is one ordered loop again ----------------

def running_max(x):
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = max(out[i - 1], x[i])  # reads what the iteration before stored
    return out


def cumulative_rows(m):
    out = np.zeros_like(m)
    out[0] = m[0]
    for i in range(1, m.shape[0]):
        out[i] = out[i - 1] + m[i]
    return out


def overwrite_same_row(x):
    out = np.zeros((4, x.shape[0]))
    for k in range(6):
        out[1, :] = x * k  # the same region each time: the last write stays
    return out


@pytest.mark.parametrize("fn,args", [
    (affine_rows, lambda r: (r.random((60, 50)), r.random(50), r.random(50))),
    (vandermonde, lambda r: (r.uniform(-2, 2, 500), 9)),
    (block_diagonal, lambda r: (r.random((6, 20, 20)),)),
    (running_max, lambda r: (r.integers(-50, 50, 64).astype(np.int32),)),
    (running_max, lambda r: (np.where(r.random(40) < 0.2, np.nan, r.standard_normal(40)),)),
    (cumulative_rows, lambda r: (r.random((40, 30)).astype(np.float32),)),
    (overwrite_same_row, lambda r: (r.random(9),)),
])
def test_unrolled_loops_are_rerolled_into_one_ordered_kernel(fn, args):
    compiled = _compiled(fn, *args(np.random.default_rng(8)))
    steps = compiled.versions()[0].artifact.steps
    assert len(steps) <= 2, steps  # the buffer's first value, then every iteration in one loop
    _compiled(fn, *args(np.random.default_rng(9)))  # the compiled version on other data


def test_a_rerolled_update_is_ordered_in_the_loop_ir(tmp_path, monkeypatch):
    rng = np.random.default_rng(10)
    x = rng.integers(-9, 9, 20).astype(np.int64)
    program = _loop_program(tmp_path, monkeypatch, running_max, x)
    (rolled,) = [cb for cb in program.buffers if getattr(cb, "ordered", False)]
    assert rolled.ranges[0] >= 3 and "in order" in str(program)
    again = LoopProgram.from_json(json.loads(json.dumps(program.to_json())))
    assert again.to_json() == program.to_json()
    (got,) = interpret(again, [x]).outputs
    np.testing.assert_array_equal(got, running_max(x))


def test_rerolled_loops_backwards_and_reading_ahead_match_numpy():
    def backwards(x):
        out = x * 1.0
        for i in range(x.shape[0] - 2, -1, -1):  # reads the row after, stored one step earlier
            out[i, :] = out[i + 1, ::-1] * 0.5 + x[i]
        return out

    def ahead(x):
        out = x * 1.0
        for i in range(x.shape[0] - 1):  # reads the old row after (not yet overwritten)
            out[i, 1:] = out[i + 1, :-1] - out[i, 1:]
        return out

    rng = np.random.default_rng(11)
    for fn in (backwards, ahead):
        compiled = _compiled(fn, rng.standard_normal((12, 7)))
        assert len(compiled.versions()[0].artifact.steps) <= 2
        _compiled(fn, rng.standard_normal((12, 7)))


def test_loops_using_their_index_as_a_number_are_rerolled():
    def scaled(x):
        out = np.zeros((4, 60))
        out[:, 0] = 1.0
        for i in range(1, 60, 3):  # i in the value: the constant steps with the iteration
            out[:, i] = x[:, i - 1] / (i * out[:, i - 1] + 1)
        return out

    def signed(x):
        out = x * 1.0
        for i in range(40):
            out[i, :] = out[i, :] * (i - 20) - 2 * i  # negative, zero and positive constants
        return out

    rng = np.random.default_rng(13)
    for fn, shape in ((scaled, (4, 60)), (signed, (40, 9))):
        compiled = _compiled(fn, rng.standard_normal(shape))
        # a few runs at most: the passes simplify x * 1 and x - 0, which splits a run there
        assert len(compiled.versions()[0].artifact.steps) <= 6
        _compiled(fn, rng.standard_normal(shape))


def test_assignments_with_any_slice_step_are_region_updates():
    """``out[j::40] = x * j``, ``y[1::2] = ...``, ``x[::3, 1::2] = c``, ``out[::-2] = 5``: a
    region update at every step-th element (no select addresses it), in a copy when the old
    value is still read; they were NumPy steps copying the whole array each."""
    def interleave(x):
        out = np.zeros(x.shape[0] * 40)
        for j in range(40):
            out[j::40] = x * j
        return out

    def odd(x):
        y = x.copy()
        y[1::2] = x[1::2] * 2
        return y

    def grid(x):
        x = x * 1.0
        x[::3, 1::2] = -1.0
        return x

    def backwards(x):
        out = x.copy()
        out[::-2] = 5
        return out, x

    def argument(a):
        a[::2] = -0.0
        return a * 2

    rng = np.random.default_rng(14)
    for fn, shape in ((interleave, (100,)), (odd, (1001,)), (grid, (9, 7)), (backwards, (11,)),
                      (argument, (13,))):
        compiled = _compiled(fn, rng.standard_normal(shape))
        assert all(s.startswith("kernel") for s in compiled.versions()[0].artifact.steps)
        x = rng.standard_normal(shape)
        kept = x.copy()
        _compiled(fn, x)
        if fn is not argument:
            np.testing.assert_array_equal(x, kept)  # the argument itself untouched
        else:  # updated in place, as eager NumPy updates it
            argument(kept)
            np.testing.assert_array_equal(np.signbit(x), np.signbit(kept))
            np.testing.assert_array_equal(x, kept)
    assert len(_compiled(interleave, rng.standard_normal(50)).versions()[0].artifact.kernels) <= 4


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_checks_of_an_old_value_run_before_its_update(dtype):
    """``s[i + 1] = s[i] + v`` on NumPy integer scalars: each addition has an overflow check
    reading ``s`` before the next update overwrites it; fused together, the checks ran after
    the first update (an internal compiler error: the function fell back, and raised under
    ``strict_native``). Found by a probe of ordinary programs."""
    def cumulative(x):
        s = np.zeros(len(x) + 1, dtype=x.dtype)
        for i, v in enumerate(x):
            s[i + 1] = s[i] + v
        return s

    compiled = stax.compile(cumulative, strict_native=True)
    for values in ([3, 1, 4], [7, -2, 5]):
        x = np.array(values, dtype=dtype)
        np.testing.assert_array_equal(compiled(x), cumulative(x))


def _sliding_pairs(U):
    return np.lib.stride_tricks.sliding_window_view(U, 2)


@pytest.mark.parametrize("form", ["sum", "product"])
def test_an_update_reading_a_numpy_steps_view_of_its_array_reads_it_first(form):
    """``sliding_window_view(U, 2)`` is a NumPy step here (``np.median`` of it is one): its
    result is U's memory, which the update reads one element behind where it writes. In place,
    each element read its neighbour already overwritten (a wrong result, silently); the value
    is now computed into a buffer of its own first (``updates._reads_a_step_of``)."""
    def update(x):
        U = x * 2.0
        if form == "sum":
            U[1:] = _sliding_pairs(U)[:, 0] + np.median(_sliding_pairs(U), axis=1)
        else:
            U[1:] = np.median(_sliding_pairs(U), axis=1) * _sliding_pairs(U)[:, 0]
        return U

    compiled = stax.compile(update, strict_native=True)
    for x in (np.arange(10.0), np.random.default_rng(4).standard_normal(33)):
        for _ in range(2):  # the capture's run, then the compiled version's
            np.testing.assert_array_equal(compiled(x), update(x))
