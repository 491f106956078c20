"""NumPy's semantics around ``out=`` and NumPy scalars that probes of the lifted-loop work found
broken (each failed before its fix): eager NumPy's results, result types, errors and warnings."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def _assign_into_a_scalar(x):
    v = x[2]
    v[...] = -1.0  # a NumPy scalar: TypeError
    return x


def _element_at_a_traced_position(A, x):
    k = x.argmax()
    return A[k, 0], A[0, k]


def _out_a_scalar(x):
    x = x.copy()
    np.add(x[1], 1.0, out=x[0])  # x[0] is a NumPy scalar: TypeError
    return x


def _out_zero_d(x):
    out = np.zeros(())
    np.multiply(x.sum(), 2.0, out=out)
    return out


def _out_narrower(x):
    out = np.zeros(3, np.float32)
    np.multiply(x, 2.0, out=out)
    np.sqrt(x, out=out)
    return out


def _add_in_place(x):
    x = x.copy()
    x += 1e308
    return x


def _run(fn, args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(*args)
        except Exception as exc:
            result = (type(exc), str(exc))
    return result, [str(w.message) for w in caught]


@pytest.mark.parametrize("fn, args", [
    (_assign_into_a_scalar, (np.arange(5.0),)),
    (_element_at_a_traced_position, (np.arange(30.0).reshape(6, 5), np.eye(5)[3])),
    (_out_a_scalar, (np.arange(4.0),)),
    (_out_zero_d, (np.arange(3.0),)),
    (_out_narrower, (np.array([-1.0, 1e300, 4.0]),)),
    (_add_in_place, (np.array([1e308, 1.0]),)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_compiled_calls_match_eager(fn, args):
    compiled = stax.compile(fn)
    want, want_warnings = _run(fn, [a.copy() for a in args])
    for _ in range(2):  # the capture's run, then the compiled version's
        got, got_warnings = _run(compiled, [a.copy() for a in args])
        assert got_warnings == want_warnings
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert type(g) is type(w), (g, w)
            if isinstance(w, (np.ndarray, np.generic)):
                np.testing.assert_array_equal(g, w)
            else:
                assert g == w


def test_a_masked_ufunc_computes_quietly_where_the_mask_is_false():
    """``np.divide(a, d, out=o, where=d != 0)``: NumPy computes (and warns) only where the mask
    holds; the kernels compute every lane, the others on values that raise nothing, so the
    call stays native (it declined at every call, the division by zero being reported)."""
    def safe_ratio(num, den):
        out = np.zeros_like(num)
        np.divide(num, den, out=out, where=den != 0)
        return out

    def safe_atanh(x):
        out = np.full_like(x, 7.0)
        np.arctanh(x, out=out, where=np.abs(x) < 1)
        return out

    rng = np.random.default_rng(0)
    f, g = stax.compile(safe_ratio), stax.compile(safe_atanh)
    for _ in range(3):
        num = rng.standard_normal(50)
        den = rng.integers(-2, 3, 50).astype(float)
        x = rng.choice([-1.0, 1.0, 0.5, -0.25, 2.0], 50)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_array_equal(f(num, den), safe_ratio(num, den))
            np.testing.assert_allclose(g(x), safe_atanh(x), rtol=1e-15)
    assert f.cache_info().fallbacks == 0 and g.cache_info().fallbacks == 0
    # a lane the mask keeps still warns as NumPy does
    kept = stax.compile(lambda a, d: np.divide(a, d, out=np.zeros_like(a), where=d > -1))
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        kept(np.ones(3), np.zeros(3))


def _clip_into(x, a):
    k = np.clip(x * 3, 0.0, 1.0, a)
    return a, k is a


def _sum_into(x, o):
    k = np.sum(x, 0, None, o)
    return o, k is o


def _cumsum_into(x, o):
    k = np.cumsum(x, 0, None, o)
    return o + 1, k is o


def _round_into(x, o):
    k = np.round(x * 7.3, 1, o)
    return o, k is o


def _max_into(x, o):
    k = np.max(x, 0, o)
    return o * 2, k is o


def _dot_into(x, o):
    k = np.dot(x, x.T, o)
    return o, k is o


@pytest.mark.parametrize("fn, out_shape", [
    (_clip_into, (6, 4)), (_sum_into, (4,)), (_cumsum_into, (6, 4)), (_round_into, (6, 4)),
    (_max_into, (4,)), (_dot_into, (6, 6))])
def test_an_out_given_by_position_is_written(fn, out_shape):
    """``np.clip(x, 0, 1, a)``: ``out`` by position was recorded as an argument of the
    function, its write into ``a`` lost (the compiled call returned ``a`` unchanged, and a
    result that was not ``a``; a review's find)."""
    x = np.linspace(-1, 1, 24).reshape(6, 4)
    compiled = stax.compile(fn)
    for _ in range(2):
        got_out, want_out = np.zeros(out_shape), np.zeros(out_shape)
        got, want = compiled(x, got_out), fn(x, want_out)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] is want[1] is True
        np.testing.assert_array_equal(got_out, want_out)
