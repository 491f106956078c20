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
