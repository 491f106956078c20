"""``np.maximum.at`` and ``np.minimum.at`` into a traced array compile as scatters keeping the
extreme, each index in order as NumPy's loop (``scatter_maximum``/``scatter_minimum``); NumPy's
own quirk kept: its ``.at`` reports invalid for every NaN it meets, so NaN data runs eagerly."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


def segment_extremes(vals, seg):
    top = np.full(7, -np.inf if vals.dtype.kind == "f" else np.iinfo(vals.dtype).min,
                  dtype=vals.dtype)
    low = np.zeros(7, dtype=vals.dtype) + 3
    np.maximum.at(top, seg, vals)
    np.minimum.at(low, seg, vals * 2)
    return top, low


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8"])
def test_segment_extremes_are_numpys(dtype):
    rng = np.random.default_rng(1)
    compiled = stax.compile(segment_extremes, strict_native=True)
    for n in (50, 50, 3000):
        vals = (rng.standard_normal(n) * 40).astype(dtype)
        seg = rng.integers(-7, 7, n)  # negative positions from the end, as NumPy
        compiled(vals, seg)
        for got, want in zip(compiled(vals, seg), segment_extremes(vals, seg)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    version = compiled.versions()[-1]
    assert version.native and not version.artifact.externs


def test_a_nan_warns_as_numpys_at_does():
    vals, seg = np.array([1.0, np.nan, 3.0, -0.0]), np.array([0, 0, 1, 2])
    compiled = stax.compile(segment_extremes)
    compiled(vals[[0, 2, 2, 3]], seg)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = compiled(vals, seg)
    with warnings.catch_warnings(record=True) as eager:
        warnings.simplefilter("always")
        want = segment_extremes(vals, seg)
    assert [str(w.message) for w in seen] == [str(w.message) for w in eager]
    assert eager and "invalid" in str(eager[0].message)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_an_index_out_of_bounds_raises_numpys_error():
    compiled = stax.compile(segment_extremes)
    vals = np.arange(4.0)
    compiled(vals, np.array([0, 1, 2, 3]))
    with pytest.raises(IndexError):
        compiled(vals, np.array([0, 1, 9, 3]))


def subtract_at(x, idx, v):
    y = x.copy()
    np.subtract.at(y, idx, v)
    np.subtract.at(y, idx[:3], 3)
    return y


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8"])
def test_subtract_at_of_signed_integers_is_a_scatter_of_negated_values(dtype):
    """``np.subtract.at`` ran eagerly ("not captured yet"): x - v is x + (-v) modulo 2^n for
    signed integers of x's dtype (two's complement, the smallest value included), so it is
    ``np.add.at``'s scatter of the negated values."""
    rng = np.random.default_rng(14)
    f = stax.compile(subtract_at, strict_native=True)
    info = np.iinfo(dtype)
    for _ in range(3):
        x = rng.integers(info.min, info.max, 12, endpoint=True).astype(dtype)
        idx = rng.integers(0, 12, 40)
        v = rng.integers(info.min, info.max, 40, endpoint=True).astype(dtype)
        v[0] = info.min
        got, want = f(x, idx, v), subtract_at(x, idx, v)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert not f.versions()[-1].artifact.externs


@pytest.mark.parametrize("x_dtype,v_dtype", [("float64", "float64"), ("float64", "uint8"),
                                             ("float64", "int64"), ("uint8", "uint8"),
                                             ("int64", "int8")])
def test_other_subtract_at_runs_as_numpys_call(x_dtype, v_dtype):
    """A float's NaN would change sign negated (the subtraction returns the value's NaN as it
    is), an unsigned or narrower value's negation wraps before the cast (-1 as uint8 is 255),
    int64's smallest value negated in int64 stays negative: NumPy's call, bit for bit."""
    f = stax.compile(subtract_at)
    idx = np.array([0, 1, 1, 4])
    x = np.arange(5).astype(x_dtype)
    v = np.array([1, 2, 3, 4]).astype(v_dtype)
    if v_dtype == "int64":
        v[0] = np.iinfo(np.int64).min
    if v_dtype == "float64":
        v[:2] = [np.nan, -np.nan]
    for _ in range(2):
        with np.errstate(all="ignore"):
            got, want = f(x, idx, v), subtract_at(x, idx, v)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
