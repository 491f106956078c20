"""Double buffering in a loop (issue 13: "a fixed-count time-stepping loop with in-place stencil
updates on views of local arrays"): ``b[1:-1] = f(a); a, b = b, a``. The body updates ``b`` in
place and binds it anew, which the lift refused, so the loop unrolled: a 20-element Jacobi
smoother of 1,200 steps took 56 s for its first call (a probe's find), 2-D 12x12 of 600 steps
18 s. Where every array the loop's names hold is the function's own (no argument, view, other
name, container, attribute or closure can reach one: ``LoopSite.own_buffers``, judged on the
function's source by ``stax.trace.swapped_buffers``; ``lift_plan._own_buffer``), the step
leaves each object holding the final value of the name it had, which only the objects'
identities tell from eager's; otherwise the loop unrolls as before. Results and arguments as
eager NumPy's, for even and odd step counts."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import stax.runtime as stax
from stax.trace.loops import lifting_every_loop


def swapped(u, n):
    a = u.copy()
    b = u.copy()
    for _ in range(n):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a


def swapped_2d(u, n):
    a = u.copy()
    b = u.copy()
    for _ in range(n):
        b[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
        a, b = b, a
    return a


def swapped_both_returned(u, n):
    a = np.zeros_like(u)
    b = u.copy()
    for _ in range(n):
        a[1:-1] = b[1:-1] + 0.1 * (b[:-2] - 2 * b[1:-1] + b[2:])
        a, b = b, a
    return a, b


# an object another name sees: the loop unrolls (eager's object identities are observable)
def swapped_argument(u, n):
    a = u
    b = u.copy()
    for _ in range(n):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a


def swapped_kept(u, n):
    a = u.copy()
    b = u.copy()
    keep = a
    for _ in range(n):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a, keep


def swapped_listed(u, n):
    a = u.copy()
    b = u.copy()
    both = [a, b]
    for _ in range(n):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a, both[0]


def swapped_viewed(u, n):
    a = u.copy()
    b = u.copy()
    inner = a[1:-1]
    for _ in range(n):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a, inner.copy()


def swapped_kept_with_an_inner_loop(u, n):  # (a loop inside the body ran before the lift)
    a = u.copy()
    b = u.copy()
    keep = a
    for _ in range(n):
        for k in range(2):
            b[k + 1] = b[k + 1] * 1.0
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a, keep


def swapped_in_an_outer_loop(u, n):  # the alias is outside the outer loop
    a = u.copy()
    b = u.copy()
    keep = a
    for _ in range(2):
        for _ in range(n):
            b[1:-1] = 0.5 * (a[:-2] + a[2:])
            a, b = b, a
    return a, keep


class _Holder:
    pass


def swapped_held_by_an_attribute(u, n):
    a = u.copy()
    b = u.copy()
    holder = _Holder()
    holder.a = a
    for _ in range(n):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a, holder.a


def swapped_held_in_a_nested_container(u, n):
    a = u.copy()
    b = u.copy()
    held = {"k": (a,)}
    for _ in range(n):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a, held["k"][0]


def swapped_held_by_a_default(u, n):
    a = u.copy()
    b = u.copy()
    get = lambda x=a: x  # noqa: E731
    for _ in range(n):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a, get()


def swapped_kept_by_a_zeroth_difference(u, n):  # ``np.diff(a, 0)`` is ``a`` itself
    a = u.copy()
    b = u.copy()
    keep = np.diff(a, 0)
    for _ in range(n):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a, keep


def _check(fn, shape, counts):
    compiled = stax.compile(fn)
    for n in counts:
        u = np.sin(np.linspace(0, 3, int(np.prod(shape)))).reshape(shape)
        given, eager_given = u.copy(), u.copy()
        got, want = compiled(given, n), fn(eager_given, n)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(given, eager_given)


@pytest.mark.parametrize("fn, shape", [(swapped, (20,)), (swapped_2d, (12, 12)),
                                       (swapped_both_returned, (30,))])
def test_swapped_buffers_lift_and_match_eager(fn, shape, caplog, monkeypatch):
    monkeypatch.setenv("STAX_LOGS", "loops")
    with caplog.at_level(logging.INFO, logger="stax"):
        _check(fn, shape, (300, 301, 300, 7, 1200))
    assert "iterations lifted into one step" in caplog.text, caplog.text
    assert "binds it anew" not in caplog.text, caplog.text


@pytest.mark.parametrize("fn", [swapped_argument, swapped_kept, swapped_listed, swapped_viewed,
                                swapped_kept_with_an_inner_loop, swapped_in_an_outer_loop,
                                swapped_held_by_an_attribute, swapped_held_in_a_nested_container,
                                swapped_held_by_a_default, swapped_kept_by_a_zeroth_difference])
def test_swapped_buffers_another_name_sees_stay_eager_semantics(fn, caplog, monkeypatch):
    """Every loop offered to the lift, however short (``lifting_every_loop``): refused."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    with caplog.at_level(logging.INFO, logger="stax"), lifting_every_loop():
        _check(fn, (20,), (40, 41, 6, 7))
    assert "iterations lifted into one step" not in caplog.text, caplog.text
    assert "binds it anew" in caplog.text or "not captured yet" in caplog.text, caplog.text
