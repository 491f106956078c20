"""x[m] = f(x[m]) compiles to a select over whole arrays (issue 13): no NumPy step for the masked
reads, no data gate on their count (a call with another count reuses the version), NumPy's
values, and no floating-point report NumPy would not make."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def wrap(d, h, period):
    d = d.copy()
    d[d > h] = d[d > h] - period
    d[d < -h] += period
    return d


def fixes(x):
    y = x * 1.0
    y[y == 0] = -1
    y[np.isnan(y)] = 0.0
    m = y > 1
    y[m] = np.sqrt(y[m]) * 2 + y.mean()
    return y


def log_of_positives(x):
    y = x.copy()
    y[y > 0] = np.log(y[y > 0])
    return y


def two_arrays(x, w):
    out = x.copy()
    m = w > 0
    out[m] = x[m] * w[m] - 1
    return out


def read_used_after(x):
    y = x.copy()
    t = y[y > 0]
    y[y > 0] = t + 1
    return y, t.sum(), len(t)


RNG = np.random.default_rng(3)


def data(k):
    x = RNG.uniform(-3, 3, 40 + k)
    x[:4] = [0.0, np.nan, -0.0, np.inf]
    return x


CASES = [(wrap, lambda k: (data(k)[4:], 1.0, 2.0)), (fixes, lambda k: (data(k),)),
         (log_of_positives, lambda k: (data(k),)),
         (two_arrays, lambda k: (data(k)[4:].astype(np.float32), RNG.standard_normal(36 + k))),
         (read_used_after, lambda k: (data(k)[4:],))]


@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_masked_updates_match_numpy_without_numpys_masked_reads(fn, make):
    f = stax.compile(fn, strict_native=True)
    for k in (0, 0, 0):  # the same shape, other data: other mask counts
        args = make(k)
        with warnings.catch_warnings(record=True) as eager_warnings:
            warnings.simplefilter("always")
            want = fn(*args)
        with warnings.catch_warnings(record=True) as compiled_warnings:
            warnings.simplefilter("always")
            got = f(*args)
        assert [str(w.message) for w in compiled_warnings] == \
            [str(w.message) for w in eager_warnings]
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            if np.ndim(w):
                np.testing.assert_array_equal(g, w)
            else:  # a float sum: Stax's summation order is not NumPy's pairwise one
                np.testing.assert_allclose(g, w, rtol=1e-13)
    version = f.versions()[0]
    if fn is not read_used_after:  # its count is a result: a NumPy step, gated (a version each)
        assert f.cache_info().versions == 1
        assert version.gates is None
        assert all(b.role != "extern" for b in version.artifact.buffers)


def test_a_mask_computed_twice_is_the_same_mask_but_another_is_not():
    def other_mask(x):
        y = x.copy()
        y[y > 0] = y[y > 1] * 2  # NumPy's own error when the counts differ: not lifted
        return y
    x = np.array([0.5, 2.0, 3.0, -1.0])
    with pytest.raises(ValueError):
        other_mask(x)
    with pytest.raises(ValueError):
        stax.compile(other_mask)(x)


def putmask_and_copyto(x, w):
    y = x * 1.0
    np.putmask(y, y < 0, 0.0)
    np.putmask(y, w > 1, w)
    out = np.zeros_like(y)
    np.copyto(out, y * 2, where=w < 0)
    np.copyto(out, 7, where=np.isnan(x))
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_putmask_and_copyto_where_are_selects(dtype):
    f = stax.compile(putmask_and_copyto, strict_native=True)
    for _ in range(3):
        x, w = data(0).astype(dtype), RNG.standard_normal(40).astype(dtype)
        np.testing.assert_array_equal(f(x, w), putmask_and_copyto(x, w))
    assert f.cache_info().versions == 1
    assert all(b.role != "extern" for b in f.versions()[0].artifact.buffers)


def test_putmask_casting_errors_are_numpys():
    def bad(x):
        y = np.zeros(x.shape, dtype=np.int64)
        np.copyto(y, x, where=x > 0)  # same_kind: float into int is refused, as eager
        return y
    with pytest.raises(TypeError):
        bad(data(0))
    with pytest.raises(TypeError):
        stax.compile(bad)(data(0))


@pytest.mark.parametrize("shape", [(5, 5), (4, 7), (7, 4)])
def test_fill_diagonal_of_a_computed_matrix_is_a_select(shape):
    def zero_diagonal(p):
        d = p[:, None] - p[None, :shape[1]]
        np.fill_diagonal(d, 0.0)
        return d * 2
    f = stax.compile(zero_diagonal, strict_native=True)
    p = RNG.standard_normal(shape[0])
    p = np.concatenate([p, RNG.standard_normal(max(0, shape[1] - shape[0]))])
    np.testing.assert_array_equal(f(p), zero_diagonal(p))
    assert all(b.role != "extern" for b in f.versions()[0].artifact.buffers)
