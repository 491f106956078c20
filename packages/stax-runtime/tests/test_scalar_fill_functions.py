"""np.putmask, np.copyto(where=) and np.fill_diagonal with a scalar argument as the value: the
scalar stays a run-time input (one generic version for every value, as ``x[m] = s`` has), and
results, dtypes and the updated argument are eager NumPy's."""

import numpy as np
import pytest

import stax.runtime as stax


def putmask(x, thr):
    np.putmask(x, x > thr, thr)
    return x


def copyto_where(x, v):
    np.copyto(x, v, where=x < 0)
    return x * 2


def fill_diagonal(a, v):
    np.fill_diagonal(a, v)
    return a


CASES = [
    (putmask, lambda r: (r.standard_normal(20), float(r.uniform()))),
    (copyto_where, lambda r: (r.standard_normal(20).astype(np.float32), float(r.uniform()))),
    (fill_diagonal, lambda r: (r.standard_normal((4, 4)), int(r.integers(-5, 5)))),
]


@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_scalar_value_is_a_run_time_input(fn, make):
    compiled = stax.compile(fn)
    for seed in range(12):
        x, v = make(np.random.default_rng(seed))
        eager_x = x.copy()
        got, want = compiled(x, v), fn(eager_x, v)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(x, eager_x)
    # the first value's version, then one generic version for the rest
    assert compiled.cache_info().versions == 2
    assert compiled.cache_info().fallbacks == 0
