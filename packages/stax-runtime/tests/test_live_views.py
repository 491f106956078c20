"""Writes into an array that live views ``x[key]`` show (``stax.trace.live_views``): the views
are made again from the written value, as NumPy's show the write; memory shared otherwise (a
transpose) keeps the write refused. Each program against eager NumPy, natively."""

import numpy as np
import pytest

import stax.runtime as stax


def base_then_view(x):
    u = x.copy()
    inner = u[1:-1]
    u[0] = u[1]
    inner += 1.0
    return u, inner


def view_of_a_view(x):
    u = x.copy()
    a = u[1:]
    b = a[1:]
    u[2] = 7.0
    b *= 2.0
    return a, b, u


def siblings(x):
    u = x.copy()
    a, b = u[:5], u[3:]
    a += 1.0
    b *= 2.0
    return u, a, b


def row_and_column(x):
    u = x.reshape(2, 4).copy()
    row, col = u[1], u[:, 2]
    u[1, 2] = -5.0
    row[0] = col.sum()
    return u, row, col


def argument_viewed(x):
    r = x[1:]
    x[2] = -1.0
    return r.sum()


def operand_kept(a):
    b = a * 2
    v, w = b[:-1], b[2:]
    b[1:] += v  # NumPy reads v before writing; afterwards v shows the write
    w += 1.0
    return b, v, w


def written_view_with_views(x):
    v = x[1:]
    u = v[::2]  # a view of the view written below: made again after it (a review's find)
    v *= 2.0
    return u + 0


def sibling_of_a_written_view(x):
    y = x.copy()
    v = y[1:]
    w, u = v[1:], v[:2]
    w[0] = 100.0
    np.copyto(v[3:], 5.0)
    return u + 0, w + 0


def view_of_a_view_in_a_loop(a):
    b = a.reshape(4, 2).copy()
    top = b[0]
    half = top[::2]
    for i in range(1, b.shape[0]):
        top += b[i]
        b[i] = half.sum()
    return b


def neumann_heat(u0, r, steps):
    u = u0.copy()
    inner = u[1:-1]  # bound once, before the loop
    for _ in range(steps):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        inner += r * lap
        u[0] = u[1]
        u[-1] = u[-2]
    return u


def automaton(cells, steps):
    hist = np.zeros((steps + 1, cells.shape[0]), dtype=np.uint8)
    hist[0] = cells
    for t in range(steps):
        row = hist[t]  # a view of hist, alive while hist[t + 1] is written
        hist[t + 1] = np.roll(row, 1) ^ (row | np.roll(row, -1))
    return hist


def transposed(x):
    u = x.reshape(2, 4).copy()
    t = u.T  # not x[key]: where it shows the write is not recorded
    u[0] = 1.0
    return t


def check(fn, *args):
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(2):
        mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        got, want = compiled(*mine), fn(*theirs)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g, w)
            assert np.asarray(g).dtype == np.asarray(w).dtype
        for m, t in zip(mine, theirs):  # arguments written as eager writes them
            np.testing.assert_array_equal(m, t)


@pytest.mark.parametrize("fn", [base_then_view, view_of_a_view, siblings, row_and_column,
                                argument_viewed, operand_kept, written_view_with_views,
                                sibling_of_a_written_view, view_of_a_view_in_a_loop])
def test_views_show_writes_into_their_base(fn):
    check(fn, np.arange(1.0, 9.0) * np.array([1, -2, 3, -4, 5, -6, 7, -8]))


def test_a_view_bound_before_a_loop():
    check(neumann_heat, np.random.default_rng(0).standard_normal(200), 0.2, 50)


def test_a_row_view_while_the_next_row_is_written():
    cells = (np.random.default_rng(1).uniform(size=64) < 0.5).astype(np.uint8)
    check(automaton, cells, 40)


def test_memory_shared_otherwise_keeps_the_write_refused():
    with pytest.raises(stax.UnsupportedError, match="another value views"):
        stax.compile(transposed, strict_native=True)(np.arange(8.0))
    np.testing.assert_array_equal(stax.compile(transposed)(np.arange(8.0)),
                                  transposed(np.arange(8.0)))
