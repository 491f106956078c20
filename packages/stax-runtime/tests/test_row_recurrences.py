"""Recurrences along a row (``V[:, k] = V[:, k - 1] * x``, an IIR filter over channels): the
rerolled loop's kernel runs with the rows outermost, each row's iterations in order within it
(``stax.loop.interchange.rows_apart``, ``stax.codegen.nesting.plain_order``), where every
iteration touches only its own row; where rows depend on each other the loop stays as written.
Every case bit for bit against NumPy, on the compiling call and on the cached version's."""

from __future__ import annotations

import json

import numpy as np
import pytest

import stax.runtime as stax
from stax.loop import LoopProgram, rows_apart


def _same(compiled, fn, *args):
    want = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = compiled(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
    assert np.signbit(got).tolist() == np.signbit(want).tolist()


def _rolled(tmp_path, monkeypatch, fn, *args):
    """The ordered updates of ``fn``'s loop program, each with the outer loop of its kernel
    (the rows' count where they run outermost)."""
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    compiled = stax.compile(fn, strict_native=True)
    _same(compiled, fn, *args)
    _same(compiled, fn, *args)
    (path,) = tmp_path.glob(f"{fn.__name__}.v0.loopir.json")
    program = LoopProgram.from_json(json.loads(path.read_text()))
    kernels = compiled.versions()[0].artifact.kernels
    return [(cb, next(k.outer_range for k in kernels if cb.name in k.computes))
            for cb in program.buffers if getattr(cb, "ordered", False)]


def vandermonde(x, degree):
    V = np.empty((x.shape[0], degree + 1), dtype=x.dtype)
    V[:, 0] = 1.0
    for k in range(1, degree + 1):
        V[:, k] = V[:, k - 1] * x
    return V


def iir(u, a):
    """y[t] = a * y[t - 1] + u[t] for each channel (a row)."""
    y = np.zeros_like(u)
    y[:, 0] = u[:, 0]
    for t in range(1, u.shape[1]):
        y[:, t] = a * y[:, t - 1] + u[:, t]
    return y


def fibonacci_columns(x):
    out = np.zeros((x.shape[0], 12))
    out[:, 0] = x
    out[:, 1] = x * 0.5
    for k in range(2, 12):  # two columns behind
        out[:, k] = out[:, k - 1] + out[:, k - 2]
    return out


def backwards_columns(x):
    out = np.zeros((x.shape[0], 8))
    out[:, 7] = x
    for k in range(6, -1, -1):  # the row from its end
        out[:, k] = out[:, k + 1] * 0.5 - x
    return out


def channels_3d(u):
    y = u * 1.0
    for t in range(1, u.shape[2]):  # rows of a (batch, channel) grid
        y[:, :, t] = y[:, :, t - 1] * 0.9 + u[:, :, t]
    return y


def cumulative_rows(m):
    out = np.zeros_like(m)
    out[0] = m[0]
    for i in range(1, m.shape[0]):  # each row reads the one before: rows depend on each other
        out[i] = out[i - 1] + m[i]
    return out


def specials(n, dtype):
    rng = np.random.default_rng(n)
    x = rng.uniform(-2, 2, n).astype(dtype)
    x[:4] = [np.nan, np.inf, -0.0, -np.inf][:min(4, n)]
    return x


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 7, 300, 5000])
def test_vandermonde_rows_outermost(tmp_path, monkeypatch, dtype, n):
    x = specials(n, dtype)
    with np.errstate(all="ignore"):
        rolled = _rolled(tmp_path, monkeypatch, vandermonde, x, 8)
    if n > 1:  # (one row: a loop over columns alone)
        ((node, outer),) = rolled
        assert node.ranges == (8, n) and rows_apart(node) and outer == n


@pytest.mark.parametrize("shape", [(3, 40), (64, 9), (1000, 5), (300000, 6)])
def test_a_filter_over_channels(tmp_path, monkeypatch, shape):
    u = np.random.default_rng(1).standard_normal(shape)
    ((node, outer),) = _rolled(tmp_path, monkeypatch, iir, u, 0.7)
    assert rows_apart(node) and outer == shape[0]


@pytest.mark.parametrize("fn", [fibonacci_columns, backwards_columns])
def test_reads_two_behind_and_backwards(tmp_path, monkeypatch, fn):
    x = np.random.default_rng(2).standard_normal(50)
    ((node, outer),) = _rolled(tmp_path, monkeypatch, fn, x)
    assert rows_apart(node) and outer == 50


def test_rows_of_a_grid(tmp_path, monkeypatch):
    u = np.random.default_rng(3).standard_normal((4, 5, 30))
    ((node, outer),) = _rolled(tmp_path, monkeypatch, channels_3d, u)
    assert rows_apart(node) and outer == 4


def test_rows_that_read_each_other_keep_their_order(tmp_path, monkeypatch):
    m = np.random.default_rng(4).standard_normal((40, 30))
    ((node, outer),) = _rolled(tmp_path, monkeypatch, cumulative_rows, m)
    assert not rows_apart(node) and outer == 39  # the iterations outermost, as written


def test_overflow_in_the_recurrence_is_numpys():
    x = np.full(20, 1e200)
    f = stax.compile(vandermonde)
    with pytest.warns(RuntimeWarning, match="overflow"):
        got = f(x, 4)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, vandermonde(x, 4))
