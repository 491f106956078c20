"""np.searchsorted and np.interp compile natively (``stax.ir.to_opgraph.searching``): counts of a
sorted array, checked sorted at run time. Every result is NumPy's, bit for bit: NaN sorts last,
-0.0 equals 0.0, an unsorted array declines the call (NumPy runs it), and np.interp follows
``arr_interp`` branch by branch (edges, x == xp[-1], NaN x, non-finite slopes)."""

import logging
import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.ir.to_opgraph.searching import COUNT_LIMIT

RNG = np.random.default_rng(23)
SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0]


def same_bits(got, want):
    """Equal dtype, shape and bits (NaN's sign and payload aside: NaN only where NumPy's is)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind != "f":
        assert np.array_equal(got, want)
        return
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    bits = f"u{want.dtype.itemsize}"
    assert np.array_equal(got[~nan].view(bits), want[~nan].view(bits))


def kernels_only(f):
    steps = f.versions()[0].artifact.steps
    assert steps and all(s.startswith("kernel") for s in steps), steps


def sorted_array(n, dtype, special=True):
    """A sorted array in NumPy's order (NaN last), with duplicates and, for floats, special
    values."""
    if np.dtype(dtype).kind == "f":
        a = RNG.standard_normal(n).round(1).astype(dtype)
        if special and n >= 6:
            a[:5] = SPECIAL
    else:
        a = RNG.integers(-20, 20, n).astype(dtype)
    return np.sort(a)


def values(shape, dtype, a):
    """Values to look up: fresh ones, elements of ``a`` (ties) and special values."""
    if np.dtype(dtype).kind == "f":
        v = RNG.standard_normal(shape).round(1).astype(dtype)
    else:
        v = RNG.integers(-25, 25, shape).astype(dtype)
    flat = v.reshape(-1)
    if flat.size and a.size:
        picks = RNG.integers(0, a.size, min(flat.size, 8))
        flat[:picks.size] = a[picks].astype(dtype) if np.dtype(dtype).kind == "f" or \
            a.dtype.kind != "f" else np.nan_to_num(a[picks]).astype(dtype)
    if np.dtype(dtype).kind == "f" and flat.size >= 14:
        flat[8:13] = SPECIAL
    return v


def right(a, v):
    return np.searchsorted(a, v, side="right")


def left(a, v):
    return np.searchsorted(a, v)


def method(a, v):
    return a.searchsorted(v, side="right") + 1


SIZES = [0, 1, 2, 7, 25, COUNT_LIMIT, COUNT_LIMIT + 1, 1000]
DTYPES = [(np.float64, np.float64), (np.float32, np.float32), (np.int64, np.int64),
          (np.int64, np.float64), (np.float32, np.float64)]


@pytest.mark.parametrize("fn", [left, right, method])
@pytest.mark.parametrize("dtypes", DTYPES, ids=lambda d: f"{d[0].__name__}-{d[1].__name__}")
@pytest.mark.parametrize("n", SIZES)
def test_searchsorted(n, dtypes, fn):
    a = sorted_array(n, dtypes[0])
    f = stax.compile(fn)
    for shape in [(40,), (), (6, 7), (0,)]:
        v = values(shape, dtypes[1], a)
        same_bits(f(a, v), fn(a, v))
    kernels_only(f)


def test_searchsorted_layouts_and_views():
    """A strided sorted array (reversed, every other element) and a transposed 2-D ``v``."""
    base = np.sort(RNG.standard_normal(60))[::-1]
    fn = lambda a, v: np.searchsorted(a[::-2], v.T, side="right")  # noqa: E731
    f = stax.compile(fn)
    v = RNG.standard_normal((5, 9))
    same_bits(f(base, v), fn(base, v))
    kernels_only(f)


@pytest.mark.parametrize("n", [5, COUNT_LIMIT + 10])
@pytest.mark.parametrize("fn", [left, right])
def test_unsorted_arrays_run_as_numpy(fn, n):
    """A compiled search on an unsorted array (or a NaN before a number) declines: NumPy's
    binary search gives its own answer, which the compiled call returns."""
    f = stax.compile(fn)
    sorted_a = np.sort(RNG.standard_normal(n))
    v = RNG.standard_normal(50)
    same_bits(f(sorted_a, v), fn(sorted_a, v))
    shuffled = RNG.permutation(sorted_a)
    nan_inside = sorted_a.copy()
    nan_inside[n // 2] = np.nan
    step_down = sorted_a.copy()
    step_down[-1] = sorted_a[0] - 1
    for a in (shuffled, nan_inside, step_down, sorted_a):
        same_bits(f(a, v), fn(a, v))
    kernels_only(f)


def test_nan_last_and_signed_zeros():
    a = np.array([-np.inf, -1.0, -0.0, 0.0, 0.0, 2.0, np.inf, np.nan, np.nan])
    v = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 5.0, -5.0, 2.0])
    for fn in (left, right):
        f = stax.compile(fn)
        same_bits(f(a, v), fn(a, v))
        kernels_only(f)


def interp(x, xp, fp):
    return np.interp(x, xp, fp)


def interp_fills(x, xp, fp):
    return np.interp(x, xp, fp, left=-7.5, right=np.float32(3.25))


def interp_one_side(x, xp, fp):
    return np.interp(x, xp, fp, right=0)


def points(n, dtype=np.float64):
    """Increasing sample points with a repeated one (a vertical step) when there is room."""
    xp = np.sort(RNG.uniform(-3, 3, n)).astype(dtype)
    if n >= 4:
        xp[2] = xp[1]
    return xp


def queries(shape, xp, dtype=np.float64):
    """Points inside and outside [xp[0], xp[-1]], the sample points themselves (xp[-1] among
    them), NaN, infinities and signed zeros."""
    x = RNG.uniform(-4, 4, shape)
    flat = x.reshape(-1)
    if flat.size >= 16:
        flat[:xp.size if xp.size < 8 else 8] = xp[-8:]
        flat[8:13] = SPECIAL
        flat[13] = xp[-1]
    return x.astype(dtype) if np.dtype(dtype).kind == "f" else np.round(x).astype(dtype)


@pytest.mark.parametrize("fn", [interp, interp_fills, interp_one_side])
@pytest.mark.parametrize("n", [1, 2, 3, 10, COUNT_LIMIT, COUNT_LIMIT + 1, 700])
def test_interp(n, fn):
    xp, fp = points(n), RNG.standard_normal(n)
    f = stax.compile(fn)
    for shape in [(50,), (), (4, 9)]:
        x = queries(shape, xp)
        same_bits(f(x, xp, fp), fn(x, xp, fp))
    kernels_only(f)


@pytest.mark.parametrize("x_dtype, xp_dtype, fp_dtype", [
    (np.float32, np.float64, np.float32), (np.float64, np.float32, np.float64),
    (np.int64, np.float64, np.float32), (np.float64, np.int64, np.int64)])
def test_interp_dtypes(x_dtype, xp_dtype, fp_dtype):
    """NumPy interpolates in float64 whatever the dtypes: the result is float64."""
    xp = np.unique(RNG.integers(-10, 10, 12)).astype(xp_dtype)
    fp = (RNG.standard_normal(xp.size) * 5).astype(fp_dtype)
    x = queries((60,), xp.astype(np.float64) if x_dtype != np.int64 else xp, x_dtype) \
        if x_dtype != np.int64 else RNG.integers(-12, 12, 60)
    f = stax.compile(interp)
    same_bits(f(x, xp, fp), interp(x, xp, fp))
    kernels_only(f)


def test_interp_non_finite_slopes():
    """NumPy's fallbacks: an infinite sample value makes the slope infinite or NaN; the value
    then comes from the other end of the segment, or is fp[j] on a flat infinite segment."""
    xp = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, np.inf])
    fp = np.array([1.0, np.inf, np.inf, 2.0, -np.inf, 3.0, 4.0])
    x = np.array([0.0, 0.5, 1.0, 1.5, 2.5, 3.5, 4.0, 4.5, 5.5, 1e300, np.inf, -np.inf, np.nan])
    f = stax.compile(interp)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's interp warns of nothing; nor may the compiled
        got = f(x, xp, fp)  # (its kernels' events decline this call: NumPy runs it)
    same_bits(got, interp(x, xp, fp))
    with np.errstate(all="ignore"):  # the kernels' own result
        same_bits(f(x, xp, fp), interp(x, xp, fp))
    kernels_only(f)


def test_interp_declines_unsorted_points():
    """Unsorted sample points or a NaN among them: NumPy's search decides; the call declines."""
    xp, fp = points(10), RNG.standard_normal(10)
    x = queries((40,), xp)
    f = stax.compile(interp)
    same_bits(f(x, xp, fp), interp(x, xp, fp))
    with_nan = xp.copy()
    with_nan[-1] = np.nan
    for bad in (RNG.permutation(xp), with_nan, xp[::-1].copy()):
        same_bits(f(x, bad, fp), interp(x, bad, fp))
    kernels_only(f)


def test_corpus_forms():
    """The corpus programs ``searchsorted_bins`` (then ``np.bincount``) and a short
    ``interp_resample``."""
    def bins(x, edges):
        idx = np.searchsorted(edges, x, side="right")
        return np.bincount(idx, minlength=edges.shape[0] + 1)
    x, edges = RNG.standard_normal(3000), np.linspace(-3, 3, 25)
    f = stax.compile(bins)
    same_bits(f(x, edges), bins(x, edges))
    xq, xp, fp = RNG.uniform(-0.5, 10.5, 2000), np.sort(RNG.uniform(0, 10, 50)), \
        RNG.standard_normal(50)
    g = stax.compile(interp)
    same_bits(g(xq, xp, fp), interp(xq, xp, fp))
    kernels_only(g)


def bin_counts(x, edges):
    idx = np.searchsorted(edges, x, side="right")
    return np.bincount(idx, minlength=edges.shape[0] + 1) * 2


def test_bincount_within_minlength_has_no_gate(caplog):
    """``np.bincount(idx, minlength=m)`` whose counts fit in m is planned at length m with no data
    gate (no NumPy replay per call); a call with a value past m gets a longer result from
    NumPy's step, which declines the call: it runs eagerly and returns NumPy's result."""
    f = stax.compile(lambda idx, m: np.bincount(idx, minlength=m) * 2)
    idx = np.array([0, 1, 1, 3])
    np.testing.assert_array_equal(f(idx, 5), [2, 4, 0, 2, 0])
    assert f.versions()[0].gates is None
    with caplog.at_level(logging.WARNING, logger="stax"):
        np.testing.assert_array_equal(f(np.array([0, 1, 1, 7]), 5), [2, 4, 0, 0, 0, 0, 0, 2])
    assert any("calls like this one run eagerly" in r.getMessage() for r in caplog.records)
    np.testing.assert_array_equal(f(np.array([4, 4, 0, 2]), 5), [2, 0, 2, 0, 4])
    with pytest.raises(ValueError):
        f(np.array([-1, 2, 2, 2]), 5)  # NumPy's own error
    assert f.cache_info().versions == 1
    g = stax.compile(bin_counts)
    edges, x = np.linspace(-2, 2, 9), np.random.default_rng(0).standard_normal(1000)
    np.testing.assert_array_equal(g(x, edges), bin_counts(x, edges))
    np.testing.assert_array_equal(g(x * 10, edges), bin_counts(x * 10, edges))
    assert g.versions()[0].gates is None


def test_a_scalar_value_searched_gives_numpys_scalar():
    """``np.searchsorted(c, v)`` of a NumPy scalar ``v`` is NumPy's int64 scalar (hashable),
    not a 0-d array: the rule's new 0-d value keeps capture's scalar result."""
    def where_half(c):
        return np.searchsorted(c, c[-1] / 2)

    c = np.arange(1.0, 9.0)
    f = stax.compile(where_half, strict_native=True)
    f(c)
    got, want = f(c), where_half(c)
    assert type(got) is type(want) is np.int64 and got == want
    assert {got: 1} == {want: 1}


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8", "bool"])
def test_bincount_is_a_native_scatter_bit_for_bit(dtype):
    """``np.bincount`` within its minlength: zeros plus a summing scatter, the weights added in
    the elements' order as NumPy's loop adds them (same bits), counts int64, weighted sums
    float64 whatever the weights' dtype; no NumPy step."""
    def group_mean(labels, vals, ints):
        s = np.bincount(labels, weights=vals, minlength=9)
        c = np.bincount(labels, minlength=9)
        return s / np.maximum(c, 1), c, np.bincount(labels, ints, 9)

    rng = np.random.default_rng(5)
    f = stax.compile(group_mean)
    for _ in range(3):
        labels = rng.integers(0, 2 if dtype == "bool" else 9, 2000).astype(dtype)
        vals = rng.standard_normal(2000) * 1e3
        ints = rng.integers(-50, 50, 2000).astype(np.int16)
        for got, want in zip(f(labels, vals, ints), group_mean(labels, vals, ints)):
            same_bits(got, want)
    kernels_only(f)


def test_native_bincount_declines_values_outside_its_length():
    """A value past minlength: NumPy's longer result; a negative one: NumPy's ValueError."""
    def counts(x, w):
        return np.bincount(x, weights=w, minlength=6) + 1

    f = stax.compile(counts)
    x, w = np.array([0, 5, 2, 2, 1]), np.arange(5.0)
    f(x, w)
    same_bits(f(x, w), counts(x, w))
    kernels_only(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_bits(f(np.array([0, 5, 9, 2, 1]), w), counts(np.array([0, 5, 9, 2, 1]), w))
    with pytest.raises(ValueError, match="negative"):
        f(np.array([0, -1, 2, 2, 1]), w)
    assert f.cache_info().versions == 1
