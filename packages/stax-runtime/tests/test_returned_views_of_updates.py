"""A view of an argument the function updated in place, returned (``x -= m; return x[1:]``),
shares the argument's memory as eager's does (``WritebackPlan.views``): it was a view of the
buffer copied back, so writing through it left the argument unchanged (found by a probe)."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax


def center_tail(x):
    x -= x.mean()
    return x[1:]


def scale_strided(x):
    x *= 2.0
    return x[::2]


def relu_transposed(x):
    x[x < 0] = 0
    return x.T


def views_in_a_list(x):
    x += 1.0
    return [x[0], x.T[::-1], x]


def view_of_a_view(x):
    np.clip(x, -1.0, 1.0, out=x)
    return x.reshape(-1)[2:].reshape(2, -1), x.sum()


CASES = [(center_tail, (6,)), (scale_strided, (7,)), (relu_transposed, (3, 4)),
         (views_in_a_list, (3, 4)), (view_of_a_view, (3, 4))]


def _arrays(result):
    return [r for r in (result if isinstance(result, (list, tuple)) else [result])
            if isinstance(r, np.ndarray) and r.ndim]


@pytest.mark.parametrize("fn, shape", CASES)
def test_returned_views_share_the_argument(fn, shape):
    compiled = stax.compile(fn)
    rng = np.random.default_rng(0)
    for _ in range(3):
        base = rng.standard_normal(shape) * 2
        ours, eager = base.copy(), base.copy()
        got, want = compiled(ours), fn(eager)
        np.testing.assert_array_equal(ours, eager)
        for g, w in zip(_arrays(got), _arrays(want)):
            np.testing.assert_array_equal(g, w)
            assert np.shares_memory(g, ours) == np.shares_memory(w, eager)
            assert g.strides == w.strides
            g.flat[0] = w.flat[0] = 100.0  # writes through reach the argument
        np.testing.assert_array_equal(ours, eager)


def _scale(x):
    x *= 2
    return x


def _relax(u):
    u *= 3


def _add_to(x, y):
    x += y


def _zero_diagonal(x):
    np.fill_diagonal(x, 0)


def _masked(x):
    x[x > 4] = 0
    return x.sum()


def _views(dtype):
    """Arguments that are strided views of a larger array, and where they come from."""
    base = np.arange(48).reshape(6, 8).astype(dtype)
    return {"column": (base, lambda b: b[:, 0]), "interior": (base, lambda b: b[1:-1, 1:-1]),
            "step": (base, lambda b: b[:, ::2]), "transposed": (base, lambda b: b[::2].T),
            "fortran": (np.asfortranarray(base[:6, :6]), lambda b: b)}


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.uint8])
@pytest.mark.parametrize("fn", [_scale, _relax, _zero_diagonal, _masked, _add_to])
def test_updates_of_strided_argument_views_reach_the_argument(fn, dtype):
    """An update written over a strided view of a caller's array lands in that array, and a
    returned argument is the argument (a probe saw the update lost when a layout pass copied
    the buffer written over the argument into the row-major layout of its value)."""
    for name, (base, view) in _views(dtype).items():
        if fn is _zero_diagonal and view(base).ndim != 2:
            continue
        extra = (np.ones(view(base).shape, dtype),) if fn is _add_to else ()
        want_base, got_base = base.copy(order="K"), base.copy(order="K")
        compiled = stax.compile(fn)
        for _ in range(2):
            want = fn(view(want_base), *extra)
            got = compiled(view(got_base), *extra)
            np.testing.assert_array_equal(got_base, want_base, err_msg=name)
            if isinstance(want, np.ndarray) and want.ndim:
                assert np.shares_memory(got, got_base), name
            else:
                np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("fn", [lambda x: x.real, lambda x: np.real(x), lambda x: np.asarray(x),
                                lambda x: x.astype(x.dtype, copy=False),
                                lambda x: np.ascontiguousarray(x)],
                         ids=["real", "np_real", "asarray", "astype_no_copy", "ascontiguous"])
def test_a_call_that_gives_its_argument_back_returns_the_argument(fn):
    """NumPy gives the very argument back (``x.real`` of a real array): capture keeps that value
    (``Tracer.record``), so the call returns the caller's array, and writing through the result
    updates it, as eagerly (a probe found a copy)."""
    compiled = stax.compile(fn)
    for x in (np.arange(4.0), np.arange(6, dtype=np.int32)):
        assert fn(x) is x
        assert compiled(x) is x and compiled(x) is x


def test_an_update_through_the_real_part_of_a_real_argument():
    def bump(x):
        r = x.real
        r += 1
        return x
    compiled = stax.compile(bump)
    for _ in range(2):  # the compiling call, then the cached version's
        want, got = np.arange(3.0), np.arange(3.0)
        bump(want)
        assert compiled(got) is got
        np.testing.assert_array_equal(got, want)
