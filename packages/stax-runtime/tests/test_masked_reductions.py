"""Reductions of masked selections compile as masked reductions (``x[m].sum()`` as
``where(m, x, 0).sum()``): no NumPy step for the selection, no data gate on its count (a call
with another count runs the same kernels), NumPy's values (float sums within rounding), and
NumPy's own warnings and errors where the selection is empty (those calls decline to NumPy)."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.trace.tracer import trace


def positive_sum(x):
    return x[x > 0].sum()


def masked_mean(x, y):
    m = y > 0.3
    return x[m].mean()


def product_sum(x, y):
    m = y > 0
    return (x[m] * y[m]).sum()


def masked_extremes(x, y):
    m = y > 0
    return x[m].max(), np.min(x[m])


def threshold_indices(x, t):
    idx = np.where(x > t)[0]
    return idx.sum(), x[idx].mean()


def assorted(x):
    m = x > 0.5
    s = x[m]
    return s.prod(), s.any(), (s > 1).all(), (s - s.mean()).sum()


def entropy(p):
    return -(p[p > 0] * np.log(p[p > 0])).sum()


def positions(x):
    m = x > 0
    return x[np.nonzero(m)].sum(), np.flatnonzero(m).sum(), np.nonzero(m)[1].sum(), \
        x[np.where(m)].max()


def flat_gather(x):
    return x[np.flatnonzero(x < 0)].mean()


def int_work(a, b):
    m = b > 0
    return (a[m] * b[m]).sum(), a[m].max(), a[m].mean(), np.sum(a[m] // b[m], axis=0)


RNG = np.random.default_rng(11)


def floats(shape, dtype=np.float64, specials=True):
    x = RNG.standard_normal(shape).astype(dtype)
    if specials:
        flat = x.reshape(-1)
        flat[::13] = -0.0
        flat[5::17] = np.nan
    return x


def layouts(x):
    """The array, a transposed view (2-D) or a strided slice of a larger one (1-D)."""
    if x.ndim == 2:
        return [x, np.ascontiguousarray(x.T).T]
    bigger = np.repeat(x, 2)
    bigger[::2] = x
    return [x, bigger[::2]]


def ints(shape, dtype, low=-50, high=50):
    return RNG.integers(low, high, shape).astype(dtype)


CASES = [
    (positive_sum, lambda: (floats(1000),)),
    (positive_sum, lambda: (floats((30, 40), np.float32),)),
    (positive_sum, lambda: (ints(500, np.int32),)),
    (masked_mean, lambda: (floats(700, np.float32), RNG.random(700))),
    (masked_mean, lambda: (ints((20, 30), np.int64), RNG.random((20, 30)))),
    (masked_mean, lambda: (RNG.random(300) > 0.5, RNG.random(300))),
    (product_sum, lambda: (floats(600), floats(600, specials=False))),
    (masked_extremes, lambda: (floats((25, 40), np.float32), floats((25, 40)))),
    (masked_extremes, lambda: (ints(400, np.int8), floats(400))),
    (masked_extremes, lambda: (ints(400, np.uint8, 0, 250), floats(400))),
    (threshold_indices, lambda: (floats(5000, specials=False), 1.5)),
    (assorted, lambda: (floats(300),)),
    (entropy, lambda: (np.where(RNG.random(800) > 0.3, RNG.random(800), 0.0),)),
    (positions, lambda: (floats((30, 20)),)),
    (flat_gather, lambda: (floats(900, np.float32),)),
    (int_work, lambda: (ints(800, np.int32, -2**30, 2**30), ints(800, np.int32))),
    (int_work, lambda: (ints((40, 20), np.int16), ints((40, 20), np.int16))),
]


def call(fn, args):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            result = fn(*args)
        except ValueError as exc:
            result = exc
    return result, sorted(str(w.message) for w in seen)


def same(got, want):
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want)
        return
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w), (g, w)
        assert np.asarray(g).dtype == np.asarray(w).dtype
        if np.asarray(w).dtype.kind == "f" and not np.isnan(w):
            np.testing.assert_allclose(g, w, rtol=1e-5 if np.asarray(w).dtype == np.float32
                                       else 1e-12, atol=1e-5)
        else:
            assert g == w or (np.isnan(g) and np.isnan(w)), (g, w)
            if w == 0 and np.asarray(w).dtype.kind == "f":
                assert np.signbit(g) == np.signbit(w)


def kernels_only(f):
    assert len(f.versions()) == 1
    steps = f.versions()[0].artifact.steps
    assert steps and all(s.startswith("kernel") for s in steps), steps


@pytest.mark.parametrize("fn, make", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in
                                                 enumerate(CASES)])
def test_masked_reductions_match_numpy_with_kernels_only(fn, make):
    f = stax.compile(fn, strict_native=True)
    args = make()
    variants = [tuple(layout if a is args[0] else a for a in args) for layout in layouts(args[0])]
    for i, variant in enumerate(variants):
        g = stax.compile(fn, strict_native=True) if i else f
        for k in range(3):  # other data, other selection counts: the same version
            data = variant if k == 0 else tuple(_other(a) for a in variant)
            got, got_warnings = call(g, data)
            want, want_warnings = call(fn, data)
            same(got, want)
            assert got_warnings == want_warnings
        assert g._fallbacks == 0
        kernels_only(g)
    assert not trace(fn, args).gates


def _other(a):
    """``a`` with new values drawn over its range (other selection counts), written in place so
    that its layout stays; NaN and -0.0 again where ``a`` had them."""
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.kind == "b":
        new = RNG.random(a.shape) > RNG.random()
    elif a.dtype.kind in "iu":
        new = RNG.integers(a.min(), int(a.max()) + 1, a.shape)
    else:
        new = RNG.uniform(np.nanmin(a), np.nanmax(a), a.shape)
        if np.isnan(a).any():
            new.reshape(-1)[3::17] = np.nan
        if (np.signbit(a) & (a == 0)).any():
            new.reshape(-1)[::13] = -0.0
    a[...] = new.astype(a.dtype)
    return a


EMPTY = [  # (function, data selecting something, data selecting nothing)
    (masked_mean, lambda: (floats(50), RNG.random(50)), lambda: (floats(50), np.zeros(50))),
    (masked_extremes, lambda: (floats(50), floats(50)), lambda: (floats(50), -np.ones(50))),
    (threshold_indices, lambda: (floats(50, specials=False), 0.5),
     lambda: (floats(50, specials=False) - 100, 0.5)),
    (int_work, lambda: (ints(60, np.int32), ints(60, np.int32)),
     lambda: (ints(60, np.int32), ints(60, np.int32, -9, 0))),
]


@pytest.mark.parametrize("fn, some, none", EMPTY, ids=[c[0].__name__ for c in EMPTY])
def test_empty_selections_give_numpys_nan_warnings_and_errors(fn, some, none):
    f = stax.compile(fn, strict_native=True)
    args = some()
    same(call(f, args)[0], call(fn, args)[0])
    for _ in range(2):  # the compiled version declines these calls: NumPy runs them
        args = none()
        got, got_warnings = call(f, args)
        want, want_warnings = call(fn, args)
        same(got, want)
        assert got_warnings == want_warnings
    assert len(f.versions()) == 1
    kernels_only(f)


def test_empty_sums_and_products_need_no_decline():
    def sums(x):
        s = x[x > 5]
        return s.sum(), s.prod(), s.any(), s.all(), np.where(x > 5)[0].sum()
    f = stax.compile(sums, strict_native=True)
    x = floats(200, specials=False)
    same(f(x + 10), sums(x + 10))
    same(f(x), sums(x))  # nothing above 5: 0.0, 1.0, False, True, 0
    assert f._fallbacks == 0
    kernels_only(f)


def test_count_nonzero_of_a_selection_needs_no_count_gate():
    def counted(x):
        return np.count_nonzero(x[x > 0] > 1)  # NumPy's own count_nonzero (a NumPy step)
    f = stax.compile(counted, strict_native=True)
    x = floats(300)
    assert not trace(counted, (x,)).gates
    for _ in range(3):
        same(f(x), counted(x))
        x = _other(x)
    assert f._fallbacks == 0 and len(f.versions()) == 1


def test_nans_and_negative_zeros_follow_numpy():
    x = np.array([-0.0, -0.0, 1.0, np.nan, -2.0, np.nan, 3.0])

    def sums(x, y):
        m = y > 0
        return x[m].sum(), x[m].max(), x[m].min(), x[m].prod(), x[m].mean()
    f = stax.compile(sums, strict_native=True)
    for y in ([1, 1, 0, 0, 0, 0, 0], [1, 0, 1, 0, 1, 0, 1], [0, 1, 0, 1, 0, 0, 0],
              [1, 1, 1, 0, 1, 0, 1], [0, 0, 0, 0, 1, 0, 0]):
        y = np.array(y, dtype=np.float64)
        same(f(x, y), sums(x, y))
    assert f._fallbacks == 0
    kernels_only(f)


def test_integer_sums_wrap_as_numpy():
    def wrap(a):
        s = a[a > 0]
        return (s * s).sum(), (s * 3).prod(), s.astype(np.int8).sum()
    f = stax.compile(wrap, strict_native=True)
    for _ in range(3):
        a = ints(300, np.int32, -2**31, 2**31 - 1)
        same(f(a), wrap(a))
    assert f._fallbacks == 0
    kernels_only(f)


def test_selections_used_otherwise_keep_their_count_gate():
    def counted(x):
        t = x[x > 0]
        return t.sum() / float(len(t))  # float() reads the count (test_selection_counts.py)

    def returned(x):
        t = x[x > 0]
        return t, t.sum()

    x = floats(100)
    for fn in (counted, returned):
        capture = trace(fn, (x,))
        assert [g.kind for g in capture.gates] == ["shape"]
        f = stax.compile(fn)
        same(f(x)[-1] if fn is returned else f(x), fn(x)[-1] if fn is returned else fn(x))
        y = np.abs(x)  # another count: not the first version's
        got, want = f(y), fn(y)
        if fn is returned:
            np.testing.assert_array_equal(got[0], want[0])
            got, want = got[1], want[1]
        same(got, want)


@pytest.mark.parametrize("fn", [
    lambda x: x[x > 0].sum() / x[x > 0].shape[0],
    lambda x: x[x > 0].sum() / len(x[x > 0]),
    lambda x: (x[x > 0] * 2).sum() / (x[x > 0] * 2).size,
    lambda x: np.unique(np.round(x)).sum() / len(np.unique(np.round(x))),
    lambda x: x[x > 0].sum() / np.nonzero(x > 0)[0].shape[0],
], ids=["shape", "len", "derived_size", "unique", "nonzero"])
@pytest.mark.parametrize("dynamic", [None, False, True])
def test_a_count_read_as_a_size_keeps_its_gate(fn, dynamic):
    """A probe's wrong results (session 22): the size of a value whose shape comes from the
    data (``x[m]``, ``np.unique``, ``np.nonzero``, what is computed from them), read by
    ``.shape``, ``.size`` or ``len()``, was a size following the shape: the traced count in
    every later call. It is Python's number, read: the count gate stays."""
    f = stax.compile(fn, dynamic=dynamic)
    x = floats(100)
    for y in (x, np.abs(x), -x, x + 0.5, x[:60] * 3, x - 0.25):
        same(f(y), fn(y))


def test_whole_array_work_raises_no_events_on_unselected_elements():
    def logs(x):
        m = x > 0
        return np.log(x[m]).sum(), (1.0 / x[m]).max()
    f = stax.compile(logs, strict_native=True)
    x = floats(500, specials=False)
    x[::3] = 0.0
    with np.errstate(divide="raise", invalid="raise"):
        same(f(x), logs(x))
        same(f(-x), logs(-x))
    assert f._fallbacks == 0
    kernels_only(f)


def test_a_branch_on_a_float_sum_of_a_selection_takes_numpys_way():
    """A data gate reading ``x[m].sum()`` keeps the selection (NumPy's own sum of it): the
    whole-array ``where(m, x, 0).sum()`` adds other elements in another order, and a branch on
    its equality with NumPy's sum, or on a threshold an ulp away, went the other way."""
    def check_total(x, pos):
        if x[x > 0].sum() == pos.sum():
            return x * 2
        return x * 3

    def above(x, c):
        return x * 2 if x[x > 0].sum() >= c else x * 3

    def counted(x):  # an integer count is exact either way
        return x * 2 if (x > 0).sum() > 10 else x * 3

    x = np.random.default_rng(1).standard_normal(1000)
    f = stax.compile(check_total)
    for pos in (x[x > 0] + 1.0, x[x > 0] + 1.0, x[x > 0], x[x > 0]):
        np.testing.assert_array_equal(f(x, pos), check_total(x, pos))
    g = stax.compile(above)
    total = x[x > 0].sum()
    for c in (np.float64(0.0), np.float64(0.0), np.nextafter(total, np.inf), total):
        np.testing.assert_array_equal(g(x, c), above(x, c))
    h = stax.compile(counted)
    h(x)
    np.testing.assert_array_equal(h(x), counted(x))
