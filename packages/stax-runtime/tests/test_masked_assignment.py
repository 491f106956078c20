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


def putmask_patterns(x, pattern, m):
    y = x.copy()
    np.putmask(y, np.isnan(y), pattern)  # a short pattern, repeated over y's elements
    z = x.T.copy()  # (C order over z's own shape, F in memory)
    np.putmask(z, m.ravel(), [7.0, -1.0, 2.5])  # a mask of z's size, another shape
    np.putmask(z, z > 1, x.T)  # values of z's shape
    return y, z


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_putmask_repeats_a_short_pattern_in_c_order(dtype):
    f = stax.compile(putmask_patterns, strict_native=True)
    rng = np.random.default_rng(5)
    for shape in ((6, 7), (5, 4)):
        x = rng.standard_normal(shape).astype(dtype)
        x[rng.uniform(size=shape) < 0.3] = np.nan
        pattern, m = np.array([9, 8, 7, 6], dtype), rng.uniform(size=shape[::-1]) < 0.5
        for _ in range(2):
            for got, want in zip(f(x, pattern, m), putmask_patterns(x, pattern, m)):
                np.testing.assert_array_equal(got, want)
                assert got.dtype == want.dtype
    assert all(b.role != "extern" for v in f.versions() for b in v.artifact.buffers)
    with pytest.raises(ValueError, match="same size"):  # NumPy's own error
        stax.compile(putmask_patterns)(x, pattern, m[:2])


def place_values(x, vals):
    y = x.copy()
    np.place(y, y < 0, vals)  # the k-th negative takes vals[k % len(vals)]
    np.place(y, np.isnan(y), [5.0])  # one value: a select
    big = (np.abs(x) * 1000).astype(np.int64) + 2 ** 60  # kept exactly where not placed
    np.place(big, x > 0.5, [1.5, -2.7, 3.2])  # cast as NumPy casts them (truncated)
    np.putmask(big, x < -1, np.int32(7))
    np.copyto(big, 2.5, casting="unsafe", where=x < -1.5)  # (2.5 cast first: 2)
    return y, big


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_place_takes_values_by_the_masks_count(dtype):
    f = stax.compile(place_values, strict_native=True)
    rng = np.random.default_rng(6)
    for shape in ((50,), (6, 7)):
        x = rng.standard_normal(shape).astype(dtype)
        for layout in (x, x.T, x[::-1]):
            y = layout.copy()
            y[rng.uniform(size=y.shape) < 0.2] = np.nan
            for a in (layout, y):
                vals = np.array([9, 8, 7], dtype)
                with np.errstate(invalid="ignore"):  # (the NaNs' cast: NumPy's own call)
                    for got, want in zip(f(a, vals), place_values(a, vals)):
                        np.testing.assert_array_equal(got, want)
                        assert got.dtype == want.dtype
    native = [v for v in f.versions() if v.native and v.artifact is not None]
    assert native and all(b.role != "extern" for v in native for b in v.artifact.buffers)
    with pytest.raises(ValueError, match="empty"):  # NumPy's own error
        stax.compile(place_values)(x, np.array([], dtype))


def copyto_overflowing_constant(a, m):
    b = a.copy()
    np.copyto(b, 1e300, where=m)  # float32: "overflow encountered in cast", every call
    return b


def test_a_constant_whose_cast_warns_warns_on_every_call():
    f = stax.compile(copyto_overflowing_constant, strict_native=True)
    a, m = np.arange(3, dtype=np.float32), np.array([True, False, True])
    for _ in range(2):
        with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
            got = f(a, m)
        np.testing.assert_array_equal(got, copyto_overflowing_constant(a, m))


def test_putmask_casting_errors_are_numpys():
    def bad(x):
        y = np.zeros(x.shape, dtype=np.int64)
        np.copyto(y, x, where=x > 0)  # same_kind: float into int is refused, as eager
        return y
    with pytest.raises(TypeError):
        bad(data(0))
    with pytest.raises(TypeError):
        stax.compile(bad)(data(0))


def copyto_casting(x):
    ints = np.zeros(x.shape, np.int32)
    np.copyto(ints, x * 2, casting="unsafe")  # truncated, as ``ints[...] = x * 2``
    out = np.ones_like(x)
    np.copyto(out, x * 3, "same_kind", x > 0)  # casting and where by position
    return ints, out


def test_copyto_with_casting_is_captured():
    """``casting=`` (by keyword or position) only allows or refuses the copy: the values are
    the assignment's (it fell back: "numpy.copyto() returned a NoneType, not an array")."""
    f = stax.compile(copyto_casting, strict_native=True)
    for seed in range(2):
        x = data(seed)
        for got, want in zip(f(x), copyto_casting(x)):
            assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)

    def refused(x):
        ints = np.zeros(x.shape, np.int32)
        np.copyto(ints, x, casting="safe")
        return ints
    with pytest.raises(TypeError):
        refused(data(0))
    with pytest.raises(TypeError):
        stax.compile(refused)(data(0))


@pytest.mark.parametrize("shape", [(5, 5), (4, 7), (7, 4)])
def test_fill_diagonal_of_a_computed_matrix_is_a_select(shape):
    def zero_diagonal(p):
        d = p[:, None] - p[None, :shape[1]]
        np.fill_diagonal(d, 0.0)
        return d * 2
    f = stax.compile(zero_diagonal, strict_native=True)
    p = RNG.standard_normal(shape[0])
    p = np.concatenate([p, RNG.standard_normal(max(0, shape[1] - shape[0]))])
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(f(p), zero_diagonal(p))
    assert all(b.role != "extern" for b in f.versions()[0].artifact.buffers)


QUIET_CASES = {  # each reports an event on the unselected elements if computed there
    "sqrt_of_negatives": lambda x: _set(x, x < 0, lambda v: -np.sqrt(-v)),
    "log_of_positives": lambda x: _set(x, x > 0, np.log),
    "reciprocal_of_nonzeros": lambda x: _set(x, x != 0, lambda v: 1.0 / v),
    "arccosh_above_one": lambda x: _set(x, x >= 1, np.arccosh),
    "arctanh_inside": lambda x: _set(x, np.abs(x) < 1, np.arctanh),  # arctanh(1) divides by 0
    "log_of_log": lambda x: _set(x, x > 1, lambda v: np.log(np.log(v)) + 1),
    "float32_exp_small": lambda x: _set(x.astype(np.float32), x < 80, lambda v: np.exp(v) * 2),
}


#: cases IEEE arithmetic decides to the bit (square roots, quotients)
IEEE_EXACT = ("sqrt_of_negatives", "reciprocal_of_nonzeros")


def _set(x, m, f):
    y = x.copy()
    y[m] = f(y[m])
    return y


def _same(got, want):
    """float32 exp, log: within NumPy's float32 ulp promise, not its bits. float64 log,
    arccosh, arctanh: Stax's and NumPy's are each within 1 ulp of the correctly rounded value
    (NumPy's own differs by host: SIMD loops on AVX-512, the C library's elsewhere), so within
    2 of each other; NaN where NumPy has NaN, and the same zeros and infinities."""
    assert got.dtype == want.dtype
    if want.dtype == np.float32:
        np.testing.assert_allclose(got, want, rtol=3e-7, atol=0)
    else:
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        finite = ~np.isnan(want)
        np.testing.assert_array_max_ulp(got[finite], want[finite], maxulp=2)
        np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(want[finite]))


@pytest.mark.parametrize("name", list(QUIET_CASES))
def test_unselected_elements_report_no_event(name):
    """``x[m] = f(x[m])``: ``f`` of the elements ``m`` leaves alone reports nothing (NumPy never
    computes it), so the call runs natively with NumPy's errstate at "raise": no eager run, no
    second run with the precise kernels (finite data and NaN: an infinity through ``log`` is a
    non-finite value the fast kernels cannot judge, and does run again, with NumPy's result)."""
    from stax.codegen import Executable
    fn = QUIET_CASES[name]
    same = np.testing.assert_array_equal if name in IEEE_EXACT else _same
    x = np.concatenate([RNG.uniform(-3, 3, 61), RNG.uniform(-300, 300, 61),
                        [0.0, -0.0, 1.0, -1.0, 0.5, np.nan]])
    compiled = stax.compile(fn, strict_native=True)
    with np.errstate(all="raise", under="ignore"):
        want = fn(x)
        for _ in range(2):  # the compiling call, then the cached version's
            same(compiled(x), want)
    executable = Executable(compiled.versions()[0].artifact)
    with np.errstate(all="raise", under="ignore"):
        (again,) = executable(x)
    same(again, want)
    assert executable.reruns == 0
    x = np.concatenate([x, [np.inf, -np.inf]])
    with np.errstate(all="ignore"):
        for _ in range(2):  # another shape: a compiling call, then the cached version's
            same(compiled(x), fn(x))


def test_an_event_on_a_selected_element_is_still_numpys():
    f = stax.compile(QUIET_CASES["log_of_positives"])
    x = np.array([2.0, -1.0, 0.0, 5.0])
    y = x.copy()
    y[1] = 1e-320  # log of a subnormal: finite, no event
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(f(y), QUIET_CASES["log_of_positives"](y))
    def inverse_nonnegative(x):
        y = x.copy()
        y[x >= 0] = 1.0 / y[x >= 0]  # 1 / 0.0 on a selected element: NumPy's divide warning
        return y
    g = stax.compile(inverse_nonnegative)
    for _ in range(2):  # the compiling call, then the cached version's
        with pytest.warns(RuntimeWarning, match="divide"):
            got = g(x)
        np.testing.assert_array_equal(got, np.array([0.5, -1.0, np.inf, 0.2]))


@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float64", "float32"),
                                    ("int64", "int32"), ("float32", "int64")])
def test_a_traced_value_of_another_dtype_is_cast_into_the_mask(dtypes):
    """``z[z > 0] = y.max()``: NumPy casts the 0-d value to z's dtype first; the capture rule
    emits that cast (it was an undeclared op: an internal compiler error, eager every call)."""
    def f(x, y):
        z = x.copy()
        z[z > 0] = y.max()
        return z

    x = (np.linspace(-3, 3, 11) * 7).astype(dtypes[0])
    y = (np.arange(5) * 1.5).astype(dtypes[1])
    compiled = stax.compile(f, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        got, want = compiled(x, y), f(x, y)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
