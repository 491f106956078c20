"""Lifted loops whose body slices at its item (issue 13 item 2): ``blk = x[i * bs:(i + 1) *
bs]``, ``x[i:i + w]``, ``out[i * bs:(i + 1) * bs] = ...``. The body is compiled once with the
slice's start read at run time (``dynamic_slice``); an item where NumPy's slice would differ
from the length capture saw (clipped at the end, a negative start) runs that item in NumPy, and
a block the body binds and nothing after the loop reads is neither taken nor returned by the
lifted step."""

import contextlib
import logging

import numpy as np
import pytest

import stax.runtime as stax
from stax.ir import LIFTED_LOOP
from stax.trace import loops


@pytest.fixture(autouse=True)
def small_limit(monkeypatch):
    monkeypatch.setattr(loops, "UNROLL_LIMIT", 30)  # lift loops of tests' sizes
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


def block_stats(x, nblocks):
    bs = x.shape[0] // nblocks
    out = np.zeros((nblocks, 2))
    for i in range(nblocks):
        blk = x[i * bs:(i + 1) * bs]
        out[i, 0] = blk.mean()
        out[i, 1] = blk.std()
    return out


def block_scale(x, bs):
    out = np.empty_like(x)
    for i in range(x.shape[0] // bs):
        blk = x[i * bs:(i + 1) * bs]
        out[i * bs:(i + 1) * bs] = (blk - blk.min()) / (blk.max() - blk.min() + 1e-12)
    return out


def column_blocks(A, bs):
    out = np.zeros((A.shape[0], A.shape[1] // bs))
    for j in range(A.shape[1] // bs):
        out[:, j] = A[:, j * bs:(j + 1) * bs].sum(axis=1)
    return out


def ragged_sums(x, bs):  # the last block is shorter: NumPy clips the slice
    out = np.zeros((x.shape[0] + bs - 1) // bs)
    for i in range(out.shape[0]):
        out[i] = x[i * bs:(i + 1) * bs].sum()
    return out


def window_lengths(x, w):  # only the length of a clipped window is used
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = len(x[i:i + w]) + x[i]
    return y


def last_block(x, bs):  # the block is read after the loop: the last one, as Python has it
    out = np.zeros(x.shape[0] // bs)
    for i in range(x.shape[0] // bs):
        blk = x[i * bs:(i + 1) * bs]
        out[i] = blk.sum()
    return out, blk


@contextlib.contextmanager
def _logs(monkeypatch):
    with monkeypatch.context() as patch:
        patch.setenv("STAX_LOGS", "loops")
        yield


def _lifted(compiled):
    version = compiled._versions[-1]
    assert version.native, version.reason
    return LIFTED_LOOP in str(version.artifact)


def _data(n, seed=0):
    x = np.random.default_rng(seed).standard_normal(n)
    x[[3, 50, 77]] = np.nan, -0.0, np.inf
    return x


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_blocks_of_an_array_run_in_one_compiled_body(layout, caplog, monkeypatch):
    x = _data(2400)
    x = x if layout == "contiguous" else _data(4800)[::2]
    compiled = stax.compile(block_stats)
    with caplog.at_level(logging.INFO, logger="stax"), _logs(monkeypatch):
        got = compiled(x, 60)
    assert _lifted(compiled)
    assert "body compiled once" in caplog.text and "machine-code loop" in caplog.text
    np.testing.assert_allclose(got, block_stats(x, 60), rtol=1e-13, equal_nan=True)
    y = _data(2400, seed=1)  # the same version, other data
    np.testing.assert_allclose(compiled(y, 60), block_stats(y, 60), rtol=1e-13, equal_nan=True)


def test_writes_into_blocks_and_column_blocks():
    x = np.random.default_rng(2).standard_normal(1200)
    compiled = stax.compile(block_scale)
    np.testing.assert_allclose(compiled(x, 40), block_scale(x, 40), rtol=1e-14)
    assert _lifted(compiled)
    A = np.random.default_rng(3).standard_normal((7, 400))
    compiled = stax.compile(column_blocks)
    np.testing.assert_allclose(compiled(A, 8), column_blocks(A, 8), rtol=1e-13, atol=1e-15)
    assert _lifted(compiled)


def test_an_item_whose_slice_numpy_clips_runs_in_numpy(caplog, monkeypatch):
    x = np.random.default_rng(4).standard_normal(1003)
    compiled = stax.compile(ragged_sums)
    with caplog.at_level(logging.INFO, logger="stax"), _logs(monkeypatch):
        np.testing.assert_allclose(compiled(x, 17), ragged_sums(x, 17), rtol=1e-13, atol=1e-15)
    assert "body compiled once" in caplog.text  # the other items stay compiled
    compiled = stax.compile(window_lengths)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(compiled(x[:300], 5), window_lengths(x[:300], 5))


def test_a_block_read_after_the_loop_is_the_last_one():
    x = np.arange(600.0)
    compiled = stax.compile(last_block)
    want_sums, want_block = last_block(x, 50)
    for _ in range(2):  # the compiling call, then the cached version's
        got_sums, got_block = compiled(x, 50)
        np.testing.assert_array_equal(got_sums, want_sums)
        np.testing.assert_array_equal(got_block, want_block)


def _site(fn):
    assert loops.rewritten(fn) is not None
    (site,) = loops._entry(fn, fn.__code__)[1]
    return site


def test_a_block_nothing_reads_after_the_loop_is_scratch():
    assert _site(block_stats).scratch == frozenset({"blk"})
    assert _site(last_block).scratch == frozenset()  # returned after the loop


def after_another_loop(x, bs):
    head = np.zeros(3)
    for k in range(3):
        head[k] = x[k] * 2.0
    out = np.zeros(x.shape[0] // bs)
    for i in range(x.shape[0] // bs):
        blk = x[i * bs:(i + 1) * bs]
        out[i] = blk.max() - blk.min()
    return head, out


def test_scratch_is_found_after_another_rewritten_loop():
    """The rewrite of the first loop reads ``locals()``: scratch is decided on the user's own
    source, before any loop is rewritten."""
    assert loops.rewritten(after_another_loop) is not None
    _, second = loops._entry(after_another_loop, after_another_loop.__code__)[1]
    assert second.scratch == frozenset({"blk"})
    x = np.random.default_rng(5).standard_normal(900)
    for got, want in zip(stax.compile(after_another_loop)(x, 30), after_another_loop(x, 30)):
        np.testing.assert_array_equal(got, want)


def trailing_sums(x):  # x[i - 4:i + 1] is empty for i < 4 (a negative start)
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i - 4:i + 1].sum()
    return out


def trailing_rows(x):  # rows of a matrix, the first two windows empty
    out = np.zeros((x.shape[0] // 8, 8))
    rows = x.reshape(-1, 8)
    for i in range(rows.shape[0]):
        out[i] = rows[i - 2:i + 1].sum(axis=0) * 0.5
    return out


@pytest.mark.parametrize("fn", [trailing_sums, trailing_rows])
def test_a_loop_whose_first_items_are_degenerate_compiles_at_a_typical_one(fn, caplog,
                                                                           monkeypatch):
    """Traced at the first item, the body's slice had length 0 and every later item declined
    it, so the loop ran in NumPy; it is traced at the middle item now (its results dropped,
    nothing written), the first items run in NumPy and the others compiled."""
    x = np.random.default_rng(6).standard_normal(8000)
    compiled = stax.compile(fn)
    with caplog.at_level(logging.INFO, logger="stax"), _logs(monkeypatch):
        got = compiled(x)
    np.testing.assert_allclose(got, fn(x), rtol=1e-13)
    assert "body compiled once" in caplog.text and _lifted(compiled)
    y = np.random.default_rng(7).standard_normal(8000)
    np.testing.assert_allclose(compiled(y), fn(y), rtol=1e-13)


def clamped_means(x, w):  # the window's start clamped with Python's builtin max
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[max(0, i - w + 1):i + 1].mean()
    return out


def clamped_float32(x32):  # a float32 value times the clamped int: NEP 50 keeps float32
    out = np.zeros(x32.shape[0], np.float32)
    for i in range(x32.shape[0]):
        out[i] = x32[i] * max(0, i - 3)
    return out


def test_a_window_start_clamped_by_max_compiles(caplog, monkeypatch):
    """``max(0, i - w + 1)`` of the item and a Python int: a select of int64 values whose every
    use is one where the int64 means the Python int (here a slice bound), so the body compiles;
    multiplied into a float32 value (where an int64 would make float64), the loop runs as NumPy
    does."""
    x = np.random.default_rng(8).standard_normal(5000)
    compiled = stax.compile(clamped_means)
    with caplog.at_level(logging.INFO, logger="stax"), _logs(monkeypatch):
        np.testing.assert_allclose(compiled(x, 7), clamped_means(x, 7), rtol=1e-13)
    assert "body compiled once" in caplog.text and _lifted(compiled)
    x32 = x.astype(np.float32)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="stax"), _logs(monkeypatch):
        got, want = stax.compile(clamped_float32)(x32), clamped_float32(x32)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert "a Python int and an int64 differ: with a float32 operand" in caplog.text


def heat_rows(u0, r, nt):
    U = np.zeros((nt, u0.shape[0]))
    U[0] = u0
    for n in range(nt - 1):
        U[n + 1, 1:-1] = U[n, 1:-1] + r * (U[n, 2:] - 2 * U[n, 1:-1] + U[n, :-2])
    return U


def columns_from(A, v):
    out = np.zeros_like(A)
    for j in range(A.shape[1]):
        out[2:, j] = A[2:, j] * v[j]
        out[:3, -j - 1] += v[j]
    return out


def rows_past_the_end(x, k):
    U = np.zeros((8, x.shape[0]))
    for n in range(8):
        U[n + k, 1:] = x[1:] * n
    return U


def test_an_item_row_and_a_constant_slice_are_written_in_the_machine_code_loop(caplog,
                                                                               monkeypatch):
    """A probe's finding: ``U[n + 1, 1:-1] = ...`` (a row's interior at the item) was a NumPy
    step, so the body ran one dispatched call an item and then in NumPy (0.98x); a constant
    slice beside a traced integer is a scatter at a constant ramp, checked as the integer is."""
    rng = np.random.default_rng(0)
    u = rng.standard_normal(60)
    compiled = stax.compile(heat_rows)
    with caplog.at_level(logging.INFO, logger="stax"), _logs(monkeypatch):
        for r in (0.2, 0.25):
            np.testing.assert_array_equal(compiled(u, r, 40), heat_rows(u, r, 40))
    assert _lifted(compiled)
    assert "items run in one machine-code loop" in caplog.text, caplog.text
    A, v = rng.standard_normal((9, 40)), rng.standard_normal(40)
    compiled = stax.compile(columns_from)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(A, v), columns_from(A, v))
    compiled = stax.compile(rows_past_the_end)
    x = np.arange(5.0)
    np.testing.assert_array_equal(compiled(x, 0), rows_past_the_end(x, 0))
    with pytest.raises(IndexError):
        rows_past_the_end(x, 1)
    with pytest.raises(IndexError):
        compiled(x, 1)
    np.testing.assert_array_equal(compiled(x, -8), rows_past_the_end(x, -8))
