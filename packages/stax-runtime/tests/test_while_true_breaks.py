"""``while True`` with a ``break`` midway (a fixed-point iteration, Newton's method) lifts as a
``while`` loop whose test reads the data (``stax.trace.while_loops.rotate_breaks``): one
version whatever the iteration count, results and exceptions eager NumPy's."""

import numpy as np
import pytest

import stax.runtime as stax


def fixed_point(x, tol):
    y = x.copy()
    while True:
        yn = np.cos(y)
        if np.abs(yn - y).max() < tol:
            break
        y = yn
    return yn


def newton_sqrt(a, tol):
    x = a.copy()
    while True:
        step = (x * x - a) / (2 * x)
        x = x - step
        if np.abs(step).max() <= tol:
            break
    return x


def counted(y, n):
    it = 0
    while True:
        it += 1
        y = y * 0.5 + 1.0
        if it >= n:
            break
    return y, it


def raises_midway(y):
    while True:
        y = y[1:] * 2.0
        if y[0] > 100.0:
            break
    return y


@pytest.mark.parametrize("fn", [fixed_point, newton_sqrt])
def test_one_version_whatever_the_count(fn):
    compiled = stax.compile(fn)
    rng = np.random.default_rng(0)
    for scale in (1.0, 3.0, 0.5, 2.0):
        x = rng.random(32) * scale + 0.5
        got, want = compiled(x, 1e-12), fn(x, 1e-12)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)  # cos/sqrt: within an ulp
    # unrolled, a data gate per iteration: past 64 of them the key ran eagerly
    assert compiled.cache_info().compiles == 1 and compiled.cache_info().fallbacks == 0


def test_a_counter_and_a_python_test():
    compiled = stax.compile(counted)
    y = np.linspace(0.0, 1.0, 10)
    for n in (1, 5, 40):
        got, want = compiled(y, n), counted(y, n)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] and type(got[1]) is type(want[1])


def test_an_exception_midway_is_eager_s():
    compiled = stax.compile(raises_midway)
    y = np.full(5, 1.5)
    with pytest.raises(IndexError) as eager:
        raises_midway(y.copy())
    with pytest.raises(IndexError) as got:
        compiled(y.copy())
    assert str(got.value) == str(eager.value)
    big = np.full(8, 30.0)
    np.testing.assert_array_equal(compiled(big), raises_midway(big))


def counted_fixed_point(x, tol):
    y = x.copy()
    it = 0
    while True:
        it += 1  # before the loop too once rotated: still a counter
        yn = np.cos(y)
        if np.abs(yn - y).max() < tol:
            break
        y = yn
    return yn, it


def test_a_counter_stepped_in_the_first_part_is_carried():
    """``it += 1`` in S1 lands before the rotated loop as well as in it; the counter is still a
    Python int the source fixes (``loop_counters._step_before``), carried by the lifted step:
    one compile, the count returned as an int."""
    compiled = stax.compile(counted_fixed_point)
    rng = np.random.default_rng(1)
    for scale in (1.0, 2.0, 0.5):
        x = rng.random(16) * scale
        got, want = compiled(x, 1e-10), counted_fixed_point(x, 1e-10)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-14, atol=1e-15)
        assert got[1] == want[1] and type(got[1]) is int
    assert compiled.cache_info().compiles == 1 and compiled.cache_info().fallbacks == 0
