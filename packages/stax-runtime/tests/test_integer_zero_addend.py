"""``v + 0`` with a Python or NumPy integer zero is NumPy's ``v + 0.0``: ``-0.0`` becomes
``+0.0``. Normalization removed the addition (spec §4.2 accepts ``x + 0 -> x``), which users see
through ``sum(x)``, an accumulator started at 0, or ``x[i] * i + i ** 2`` at ``i = 0`` (found by
a probe of ordinary programs); it is removed now only where no reader can tell the sign."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax


def scaled_plus_k(x, k):
    return x * k + k


def builtin_sum(x):
    return sum(x)


def accumulate(x):
    acc = 0
    for v in x:
        acc = acc + v * 2
    return acc


def ported_loop(x):
    out = np.zeros_like(x)
    for i in range(len(x)):
        out[i] = x[i] * i + i ** 2
    return out


def exp_of_plus_zero(x):  # example 4.1's form: the zero's sign cannot be seen
    return np.exp(2 * x + 0)


@pytest.mark.parametrize("fn, args", [
    (scaled_plus_k, (np.array([-1.5, -0.0, 2.0]), 0)),
    (builtin_sum, (np.array([-0.0, -0.0]),)),
    (accumulate, (np.array([-0.0, -0.0], np.float32),)),
    (ported_loop, (np.array([-1.5, -0.0, 2.0]),)),
    (exp_of_plus_zero, (np.array([-0.0, 1.0]),)),
])
def test_signed_zeros_are_numpys(fn, args):
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(2):
        got, want = compiled(*args), fn(*args)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
