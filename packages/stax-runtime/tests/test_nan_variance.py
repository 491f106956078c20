"""np.nanvar and np.nanstd compiled natively, as NumPy 2's ``_nanvar`` computes them: NaNs out of
the sums and the count, the mean divided in float64 for float32 data, NumPy's dtypes and scalar
results. A slice with no more numbers than ``ddof`` (NumPy warns "Degrees of freedom <= 0" and
puts NaN) makes the compiled call decline, so NumPy runs it and warns itself."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax

RNG = np.random.default_rng(11)

LAYOUTS = {
    "C": lambda base: base,
    "transposed": lambda base: base.T,
    "sliced": lambda base: base[::2, 1:],
}
BASES = {"C": (9, 13), "transposed": (13, 9), "sliced": (18, 14)}  # each a (9, 13) array

AXES = [None, 0, 1, (0, 1), -1]


def data(layout: str, dtype: type) -> np.ndarray:
    """A (9, 13) array in ``layout`` with NaN, -0.0 and 0.0 entries, every row and column keeping
    at least three numbers (so ddof up to 2 leaves every slice a degree of freedom)."""
    base = RNG.standard_normal(BASES[layout]).astype(dtype) * 3 + 1
    x = LAYOUTS[layout](base)
    holes = RNG.random(x.shape) < 0.3
    holes[:3, :] = holes[:, :3] = False
    x[holes] = np.nan
    x[4, 5], x[5, 4], x[0, 0] = -0.0, 0.0, -0.0
    return x


def run(fn, *args):
    """The call's result and the messages of the warnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [str(w.message) for w in caught]


def assert_numpys(got, want, dtype):
    assert type(got) is type(want) and np.shape(got) == np.shape(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-13,
                               equal_nan=True)


def assert_native(compiled):
    assert all(b.role != "extern" for b in compiled.versions()[0].artifact.buffers)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("ddof", [0, 1, 2])
def test_nanvar_nanstd_match_numpy(dtype, layout, axis, keepdims, ddof):
    def fn(x):
        return (np.nanvar(x, axis=axis, ddof=ddof, keepdims=keepdims),
                np.nanstd(x, axis=axis, ddof=ddof, keepdims=keepdims))
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(3):  # the first call is the capture's eager run; the others run the kernels
        x = data(layout, dtype)
        want, eager_warnings = run(fn, x)
        got, compiled_warnings = run(compiled, x)
        assert eager_warnings == [] and compiled_warnings == []
        for g, w in zip(got, want):
            assert_numpys(g, w, dtype)
    assert compiled.cache_info().versions == 1 and compiled.cache_info().fallbacks == 0
    assert_native(compiled)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_three_axes_and_a_tuple_of_two(dtype):
    def fn(x):
        return np.nanstd(x, axis=(0, 2), ddof=1), np.nanvar(x, axis=(2, 1), keepdims=True)
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(3):
        x = RNG.standard_normal((4, 5, 6)).astype(dtype)
        x[RNG.random(x.shape) < 0.2] = np.nan
        x[:, :, 0] = 1.5
        for got, want in zip(run(compiled, x)[0], fn(x)):
            assert_numpys(got, want, dtype)
    assert_native(compiled)


def nan_standardize(x):
    return (x - np.nanmean(x, axis=0)) / np.nanstd(x, axis=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_corpus_standardization_is_native(dtype):
    compiled = stax.compile(nan_standardize, strict_native=True)
    for _ in range(3):
        x = data("C", dtype)
        assert_numpys(compiled(x), nan_standardize(x), dtype)
    assert_native(compiled)


@pytest.mark.parametrize("kind", ["nanvar", "nanstd"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("column", ["only NaN", "one number"])
def test_too_few_numbers_run_as_numpy_which_warns(kind, dtype, column):
    reduce = getattr(np, kind)

    def fn(x):
        return reduce(x, axis=0, ddof=1)
    compiled = stax.compile(fn, strict_native=True)
    good = data("C", dtype)
    run(compiled, good)  # the capture
    bad = good.copy()
    bad[1 if column == "only NaN" else 0:, 4] = np.nan
    for x in (bad, good, bad):
        want, eager_warnings = run(fn, x)
        got, compiled_warnings = run(compiled, x)
        assert compiled_warnings == eager_warnings
        assert_numpys(got, want, dtype)
        if x is bad:
            assert eager_warnings == ["Degrees of freedom <= 0 for slice."]
            assert np.isnan(got[4]) and not np.isnan(got).all()
    assert compiled.cache_info().versions == 1
    assert_native(compiled)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_infinities_give_numpys_nan_and_warning(dtype):
    def fn(x):
        return np.nanstd(x, axis=1)
    compiled = stax.compile(fn, strict_native=True)
    run(compiled, data("C", dtype))
    x = data("C", dtype)
    x[2, 7], x[6, 1] = np.inf, -np.inf
    want, eager_warnings = run(fn, x)
    got, compiled_warnings = run(compiled, x)
    assert eager_warnings and compiled_warnings == eager_warnings
    assert np.isnan(want[2]) and np.isnan(want[6])
    assert_numpys(got, want, dtype)


def test_negative_ddof_and_all_nan_rows():
    """count - ddof > 0 everywhere: no check; a row of only NaNs is 0 / -ddof = 0 in NumPy."""
    def fn(x):
        return np.nanvar(x, axis=1, ddof=-1)
    compiled = stax.compile(fn, strict_native=True)
    run(compiled, data("C", np.float64))
    x = data("C", np.float64)
    assert_numpys(run(compiled, x)[0], fn(x), np.float64)
    x[3] = np.nan
    want, eager_warnings = run(fn, x)
    got, compiled_warnings = run(compiled, x)
    assert compiled_warnings == eager_warnings == [] and want[3] == 0.0
    assert_numpys(got, want, np.float64)
    assert_native(compiled)


@pytest.mark.parametrize("call", [
    lambda x: np.nanvar(x, axis=0, dtype=np.float64),
    lambda x: np.nanstd(x, axis=0, out=np.empty(x.shape[1], x.dtype)),
    lambda x: np.nanvar(x, axis=0, where=x > 0),
    lambda x: np.nanvar(x, axis=0, correction=1),
    lambda x: np.nanstd(x, axis=0, ddof=1.0),
    lambda x: np.nanvar(x[:1], axis=0, ddof=1),
    lambda x: np.nanvar(x[:0], axis=0),
    lambda x: np.nanvar(x.astype(np.complex128), axis=0),
], ids=["dtype", "out", "where", "correction", "float ddof", "too few rows", "empty axis",
        "complex"])
def test_other_forms_run_as_numpy(call):
    x = data("C", np.float32)
    compiled = stax.compile(call)
    run(compiled, x)  # the capture (a NumPy step's warning may be repeated by the compile)
    for _ in range(2):
        want, eager_warnings = run(call, x)
        got, compiled_warnings = run(compiled, x)
        assert compiled_warnings == eager_warnings
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape, axis", [((), None), ((7,), None), ((7,), -1), ((0, 5), 1),
                                         ((5, 0), 0)], ids=str)
def test_other_ranks_and_empty_results(shape, axis):
    def fn(x):
        return np.nanvar(x, axis=axis), np.nanstd(x, axis=axis, ddof=-2, keepdims=True)
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(3):
        x = RNG.standard_normal(shape).astype(np.float32)
        got, compiled_warnings = run(compiled, x)
        assert compiled_warnings == []
        for g, w in zip(got, fn(x)):
            assert_numpys(g, w, np.float32)
    assert_native(compiled)


@pytest.mark.parametrize("layout", ["reversed", "stepped", "broadcast", "transposed_reversed"])
@pytest.mark.parametrize("fn", [lambda x: np.nanmax(x), lambda x: np.nanmin(x, axis=0),
                                lambda x: np.nansum(x, axis=1), lambda x: np.nanmean(x),
                                lambda x: np.count_nonzero(x, axis=0)],
                         ids=["nanmax", "nanmin", "nansum", "nanmean", "count_nonzero"])
def test_float16_nan_reductions_of_strided_views_stay_compiled(fn, layout):
    """float16's isnan and where run as NumPy steps, whose results are checked against capture:
    their layout was taken as the operand's (negative strides for a reversed one) where NumPy
    gives a fresh dense array, so every call declined (found by a probe)."""
    base = np.arange(48, dtype=np.float16).reshape(6, 8)
    base[2, 3] = np.nan
    view = {"reversed": base[::-1], "stepped": base[:, ::2],
            "broadcast": np.broadcast_to(base[1], (6, 8)),
            "transposed_reversed": base.T[::-1]}[layout]
    compiled = stax.compile(fn)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(view), fn(view))
    assert compiled.cache_info().fallbacks == 0
