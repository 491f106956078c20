"""Float -> integer casts compile natively (issue 13: ``((x - lo) / w).astype(np.int64)``
was a NumPy step): C's truncation toward zero where the value fits; NaN or a value outside the
type's range fails a check and the call runs as NumPy, which gives its minimum integer and its
"invalid value encountered in cast" warning, once."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def plain(x):
    return x.astype(np.int64)


def scaled(x):
    return (x * 3).astype(np.int32) + 1


def bins(x):
    return np.clip(((x + 4) / 8 * 16).astype(np.int64), 0, 15)


def _run(compiled, fn, x):
    for _ in range(2):  # a compiling call for a new layout, then the cached version's
        with warnings.catch_warnings(record=True) as got_warnings:
            warnings.simplefilter("always")
            got = compiled(x)
        with warnings.catch_warnings(record=True) as want_warnings:
            warnings.simplefilter("always")
            want = fn(x)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
        assert [str(w.message) for w in got_warnings] == [str(w.message) for w in want_warnings]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn", [plain, scaled, bins])
def test_casts_truncate_like_numpy_and_special_values_run_as_numpy(fn, dtype):
    rng = np.random.default_rng(0)
    compiled = stax.compile(fn, strict_native=True)
    x = (rng.standard_normal((40, 25)) * 1e3).astype(dtype)
    x[0, :6] = [-0.0, 0.5, -0.7, -1.5, 2.5, -2.5]
    for layout in (x, x.T, x[::2, 3:], np.broadcast_to(x[0], (7, 25))):
        _run(compiled, fn, layout)
    assert all(s.startswith("kernel") for s in compiled.versions()[0].artifact.steps)
    bits = 64 if fn is plain or fn is bins else 32
    edges = [np.nan, np.inf, -np.inf, 2.0 ** (bits - 1), -(2.0 ** (bits - 1)), 1e30]
    for edge in edges:
        y = x.copy()
        y[5, 7] = edge
        _run(compiled, fn, y)


def test_narrow_and_unsigned_targets_keep_numpys_cast():
    def narrow(x):
        return x.astype(np.int8), x.astype(np.uint32)

    x = np.array([1.5, -2.5, 300.0, 70000.5])
    compiled = stax.compile(narrow)
    with np.errstate(all="ignore"):
        for _ in range(2):  # the compiling call, then the cached version's
            for g, w in zip(compiled(x), narrow(x)):
                np.testing.assert_array_equal(g, w)


NARROW = [np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("src", [np.float64, np.float32])
@pytest.mark.parametrize("dst", NARROW)
def test_narrow_and_unsigned_casts_of_values_that_fit_are_native(src, dst):
    """``(x * 255).round().astype(np.uint8)`` of an image: truncation, C's and NumPy's alike,
    where the value fits (above -1 for an unsigned type); the rest (NumPy's answer there is its C
    compiler's) fails the check, and the call runs as NumPy, with its warning."""
    info = np.iinfo(dst)
    top = min(float(info.max), 2.0 ** 24)  # (float32 holds every integer below)
    rng = np.random.default_rng(1)
    x = rng.uniform(max(float(info.min), -1e6), min(top, 1e6), (30, 20)).astype(src)
    x[0, :6] = [-0.0, 0.5, -0.5 if info.min == 0 else -1.5, -0.99, 1.99, top - 0.5]

    def cast(a):
        return a.astype(dst)

    compiled = stax.compile(cast, strict_native=True)
    for layout in (x, x.T, x[::2, 3:]):
        _run(compiled, cast, layout)
    assert all(s.startswith("kernel") for v in compiled.versions() for s in v.artifact.steps)
    for edge in (np.nan, np.inf, float(info.max) * 4 + 8, float(info.min) - 8):
        y = x.copy()
        y[3, 4] = edge
        _run(stax.compile(cast), cast, y)
