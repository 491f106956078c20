"""Unrolled loops whose iterations compute values of their own before their assignment (issue
13): ``D[i, j] = np.sqrt(((A[:, i] - B[:, j]) ** 2).sum())`` makes a reduction and an update per
iteration. Rerolling (``stax.loop.reroll``) makes the reductions of a run one reduction kernel
with one more dimension and the updates one ordered kernel reading it; nested loops reroll
twice. It must not where the order of iterations matters: a value that reads what an earlier
iteration wrote, or one that something outside the iteration reads."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

import stax.runtime as stax
from stax.loop import ComputedBuffer, ExternCall, LoopProgram, Reduction


def distances(a, b):
    m, n = a.shape[1], b.shape[1]
    d = np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            d[i, j] = np.sqrt(((a[:, i] - b[:, j]) ** 2).sum())
    return d


def rows_to_all(x):
    n = x.shape[0]
    d = np.empty((n, n))
    for i in range(n):
        d[i] = np.sqrt(((x - x[i]) ** 2).sum(axis=1))
    return d


def row_norms(db, q):
    scores = np.zeros(db.shape[0])
    for idx, row in enumerate(db):
        scores[idx] = (row * q).sum() / (np.sqrt((row * row).sum()) * np.sqrt((q * q).sum()))
    return scores


def feedback(x):
    """Each iteration's reduction reads the row the previous iteration wrote: in order only."""
    out = np.zeros_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = x[i] + (out[i - 1] ** 2).sum() * 1e-3
    return out


def sums_kept(x):
    """The iterations' sums are also returned (stacked): they are not the iterations' own."""
    out = np.zeros(x.shape[0])
    sums = []
    for i in range(x.shape[0]):
        s = x[i].sum()
        out[i] = s * 2.0
        sums.append(s)
    return out, np.stack(sums)


def _run(fn, *args, rtol=1e-13, dump=None):
    """The artifact of ``fn`` compiled for ``args``' shapes and dtypes, checked against NumPy on
    two random inputs, and its loop program (read back from the dump in ``dump``)."""
    compiled = stax.compile(fn, strict_native=True)
    for seed in (0, 1):  # the compiled version, then again on other data
        rng = np.random.default_rng(seed)
        inputs = [rng.standard_normal(a.shape).astype(a.dtype) if isinstance(a, np.ndarray)
                  else a for a in args]
        got, want = compiled(*inputs), fn(*inputs)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=0)
    artifact = compiled.versions()[0].artifact
    if dump is None:
        return artifact, None
    (path,) = dump.glob(f"{fn.__name__}.v0.loopir.json")
    return artifact, LoopProgram.from_json(json.loads(path.read_text()))


def _reductions(program: LoopProgram) -> list[ComputedBuffer]:
    return [b for b in program.buffers
            if isinstance(b, ComputedBuffer) and isinstance(b.data, Reduction)]


@pytest.fixture
def dump(tmp_path, monkeypatch):
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    return tmp_path


def test_a_double_loop_of_reductions_is_a_few_kernels(dump):
    a = np.zeros((40, 12))
    artifact, program = _run(distances, a, a, dump=dump)
    # 144 iterations: the first few are selects (one kernel), the rest rows of rows
    assert len(artifact.kernels) <= 8, len(artifact.kernels)
    assert max(np.prod(b.ranges) for b in _reductions(program)) >= 100


def test_row_loops_and_enumerate_reroll():
    artifact, _ = _run(rows_to_all, np.zeros((30, 5)))
    assert len(artifact.kernels) <= 6, len(artifact.kernels)
    artifact, _ = _run(row_norms, np.zeros((50, 16)), np.zeros(16))
    assert len(artifact.kernels) <= 6, len(artifact.kernels)


def test_an_iteration_reading_an_earlier_ones_result_keeps_its_order(dump):
    _, program = _run(feedback, np.zeros((30, 6)), rtol=0, dump=dump)
    assert len(_reductions(program)) == 29  # one reduction per iteration, in order


def test_a_value_read_outside_its_iteration_is_not_rerolled(dump):
    _, program = _run(sums_kept, np.zeros((30, 7)), dump=dump)
    assert all(b.ranges == () for b in _reductions(program))


def scaled_integers(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * 4 + x[i - 1]
    return out


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_integer_scalar_loops_reroll_with_their_overflow_checks(dtype, dump):
    """``out[i] = x[i] * 4 + x[i - 1]`` on integer scalars: each iteration's overflow check is
    its own satellite, rerolled into one check over all iterations. A call where one overflows
    runs eagerly and warns as NumPy; the others run the kernels."""
    import warnings

    info = np.iinfo(dtype)
    compiled = stax.compile(scaled_integers, strict_native=True)
    rng = np.random.default_rng(3)
    x = rng.integers(0, 20, 60).astype(dtype)
    np.testing.assert_array_equal(compiled(x), scaled_integers(x))
    artifact = compiled.versions()[0].artifact
    assert all(s.startswith("kernel") for s in artifact.steps)
    assert len(artifact.kernels) <= 8, len(artifact.kernels)
    # two checks (the product, the sum) per iteration of the first few (selects), then two
    assert len(artifact.checks) <= 2 * 10 + 2, len(artifact.checks)
    big = x.copy()
    big[40] = info.max
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        result = compiled(big)
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        expected = scaled_integers(big)
    np.testing.assert_array_equal(result, expected)
    assert sorted(str(w.message) for w in got) == sorted(str(w.message) for w in want) != []
    assert compiled._fallbacks == 1


def row_statistics(x):
    """Two arrays filled per iteration, each from the row's own reductions."""
    n = x.shape[0]
    means, spreads = np.zeros(n), np.zeros(n)
    for i in range(n):
        means[i] = x[i].mean()
        spreads[i] = x[i].max() - x[i].min()
    return means, spreads


def two_chains(x):
    """Two arrays per iteration, one in order (it reads its previous row), one parallel."""
    a, b = np.zeros_like(x), np.zeros_like(x)
    a[0] = x[0]
    for i in range(1, x.shape[0]):
        a[i] = a[i - 1] * 0.5 + x[i]
        b[i] = x[i] * i
    return a, b


def test_iterations_assigning_several_arrays_reroll(dump):
    artifact, program = _run(row_statistics, np.zeros((40, 9)), dump=dump)
    assert len(artifact.kernels) <= 8, len(artifact.kernels)
    assert max(np.prod(b.ranges) for b in _reductions(program)) >= 30
    artifact, program = _run(two_chains, np.zeros((30, 5)), rtol=0, dump=dump)
    rolled = [b for b in program.buffers if getattr(b, "updates", None) and b.ranges[0] >= 20]
    assert sorted(b.ordered for b in rolled) == [False, True]


def lagged(x, lags):
    n = x.shape[0] - lags + 1
    out = np.empty((n, lags), dtype=x.dtype)
    for j in range(lags):
        out[:, j] = x[j:j + n]
    return out


def all_but_first_row(x):
    out = np.zeros_like(x)
    for i in range(1, x.shape[0]):
        out[i] = x[i] * i
    return out


def test_a_loop_writing_every_element_once_is_the_array_itself(dump):
    """Columns 0..11 of an empty array: the rerolled loop writes each element once and reads
    none, so the array's first value is never seen: one kernel, no fill. A loop that leaves a
    row unwritten keeps its zeros (an update of the filled array)."""
    _, program = _run(lagged, np.zeros(300, np.float32), 12, rtol=0, dump=dump)
    assert len(program.buffers) == 1 and program.buffers[0].updates is None
    _, program = _run(all_but_first_row, np.zeros((20, 7)), rtol=0, dump=dump)
    assert any(getattr(b, "updates", None) for b in program.buffers)


def test_rerolled_column_assignments_run_along_memory(caplog, monkeypatch):
    """The rerolled loop over the columns comes first in the loop IR; the plain nest runs it
    innermost (``nesting.plain_order``), where the row-major result is contiguous, so the
    outer loop is over the rows (split across threads when large)."""
    monkeypatch.setenv("STAX_LOGS", "kernels")
    x = np.random.default_rng(3).standard_normal(8000).astype(np.float32)
    compiled = stax.compile(lagged, strict_native=True)
    with caplog.at_level(logging.INFO, logger="stax"):
        for _ in range(2):  # the compiling call, then the cached version's
            np.testing.assert_array_equal(compiled(x, 12), lagged(x, 12))
    assert "outer loop over [0, 7989)" in caplog.text
    for n, lags in ((40, 3), (17, 17), (500, 30)):  # short and long columns, one row
        y = x[:n].astype(np.float64)
        again = stax.compile(lagged)
        for _ in range(2):  # the compiling call, then the cached version's
            np.testing.assert_array_equal(again(y, lags), lagged(y, lags))


def block_stats(x, nblocks):
    """Two regions of one array per iteration (``out[i, 0]``, then ``out[i, 1]``): a chain."""
    bs = x.shape[0] // nblocks
    out = np.zeros((nblocks, 2))
    for i in range(nblocks):
        blk = x[i * bs:(i + 1) * bs]
        out[i, 0] = blk.mean()
        out[i, 1] = blk.std()
    return out


def overlapping_regions(x):
    """The second region of iteration i is the first of iteration i + 1: run one update at a
    time over every iteration, the first updates would land last, so it does not reroll."""
    out = np.zeros(x.shape[0] + 1)
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0
        out[i + 1] = x[i] + 1.0
    return out


def reading_its_array(x):
    """The second update reads the array the first one wrote: in order only."""
    out = np.zeros((x.shape[0], 2))
    for i in range(x.shape[0]):
        out[i, 0] = x[i].sum()
        out[i, 1] = out[i, 0] * 3.0 + out[i - 1, 1]
    return out


def test_regions_of_one_array_per_iteration_reroll(dump):
    artifact, program = _run(block_stats, np.zeros(600), 40, rtol=1e-12, dump=dump)
    assert len(artifact.kernels) <= 8, len(artifact.kernels)
    assert max(np.prod(b.ranges) for b in _reductions(program)) >= 40
    for fn in (overlapping_regions, reading_its_array):  # right, and one update per iteration
        artifact, program = _run(fn, np.zeros((30, 3)) if fn is reading_its_array
                                 else np.zeros(30), rtol=1e-13, dump=dump)
        assert sum(1 for b in program.buffers if getattr(b, "updates", None)) >= 30


def block_pairs(x, nblocks):
    """A row assigned from a list of two scalars: one array, stacked natively."""
    bs = x.shape[0] // nblocks
    out = np.zeros((nblocks, 2))
    for i in range(nblocks):
        out[i] = [x[i * bs:(i + 1) * bs].mean(), x[i * bs:(i + 1) * bs].max()]
    return out


def test_a_row_assigned_from_a_list_of_scalars_rerolls(dump):
    artifact, program = _run(block_pairs, np.zeros(600), 40, rtol=1e-12, dump=dump)
    assert len(artifact.kernels) <= 8, len(artifact.kernels)
    assert not any(isinstance(b, ExternCall) for b in program.buffers)


def euler_trajectory(y0, beta, gamma, dt, steps):
    traj = np.zeros((steps + 1, 3))
    traj[0] = y0
    for k in range(steps):
        s, i, r = traj[k]
        n = s + i + r
        traj[k + 1] = traj[k] + dt * np.array([-beta * s * i / n, beta * s * i / n - gamma * i,
                                               gamma * i])
    return traj


def logistic_row(x, steps):
    """A value read unguarded by a wide update: kept a buffer of its own (inlined, it would be
    computed at each of the update's 200 elements)."""
    out = np.zeros((steps + 1, x.shape[0]))
    out[0] = x
    for k in range(steps):
        growth = 1.0 + 0.01 * out[k, 0] / (1.0 + out[k, 1] ** 2)
        out[k + 1] = out[k] * growth
    return out


def test_scalars_read_from_the_updated_array_are_inlined_and_the_loop_rerolls(dump):
    """An Euler step on a trajectory: each step's 0-d values read row ``k`` of the array the
    step's update writes, so they could not be computed first for every iteration; inlined
    into the update (``stax.loop.order_bound_scalars``, guarded: computed once), the 20 steps
    are one ordered kernel (41 kernels and a second of compiling before), bit for bit."""
    compiled = stax.compile(euler_trajectory, strict_native=True)
    for beta in (0.3, 0.7):
        args = (np.array([990.0, 10.0, 0.0]), beta, 0.1, 0.5, 20)
        np.testing.assert_array_equal(compiled(*args), euler_trajectory(*args))
    assert len(compiled.versions()[0].artifact.kernels) <= 3
    _, program = _run(logistic_row, np.zeros(200), 12, rtol=1e-15, dump=dump)
    scalars = [b for b in program.buffers if isinstance(b, ComputedBuffer) and b.shape == ()]
    assert len(scalars) == 12, len(scalars)  # each step's growth: a buffer, not inlined


def normalized_rows(a):
    out = a.copy()
    for k in range(a.shape[0]):
        s, i, r = out[k]
        out[k] = out[k] / (s + i + r)
    return out


def shifted_rows(a):
    out = a.copy()
    for k in range(a.shape[0]):
        s, i, r = out[k]
        t = s * i + r
        out[k] = out[k] + np.array([t, t * 2.0, 1.0])
    return out


@pytest.mark.parametrize("fn", [normalized_rows, shifted_rows])
def test_scalars_read_from_the_region_written_stay_apart(fn):
    """Values read from the very row the update writes (a review's find): inlined, a later
    element of the row saw an earlier one's new value (row 2 of ``normalized_rows`` gave
    [0.29, 0.46, 0.92], NumPy [0.29, 0.33, 0.375]); they stay buffers of their own."""
    compiled = stax.compile(fn, strict_native=True)
    for rows in (2, 3, 10):
        x = np.arange(1.0, 3 * rows + 1).reshape(rows, 3)
        np.testing.assert_array_equal(compiled(x), fn(x))
