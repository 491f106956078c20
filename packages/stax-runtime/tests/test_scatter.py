"""Scatters (issue 13): ``np.add.at`` and fancy-index assignment into arrays, captured as pure
functions of the array (spec §4.9) — never a fallback for the whole function, and NumPy's result:
repeated indices, negative indices, an index out of bounds raising NumPy's IndexError, an argument
updated in place for the caller."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax


def histogram(x, lo, hi, nbins):
    counts = np.zeros(nbins, dtype=np.int64)
    idx = np.clip(((x - lo) / (hi - lo) * nbins).astype(np.int64), 0, nbins - 1)
    np.add.at(counts, idx, 1)
    return counts


def accumulate_into(a, idx, v):
    np.add.at(a, idx, v)
    return a * 2.0


def test_add_at_on_a_local_array_is_captured():
    rng = np.random.default_rng(0)
    x = rng.random(1000)
    compiled = stax.compile(histogram, strict_native=True)
    np.testing.assert_array_equal(compiled(x, 0.0, 1.0, 16), histogram(x, 0.0, 1.0, 16))
    assert compiled.cache_info().fallbacks == 0


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_add_at_on_an_argument_updates_it_as_numpy_does(dtype):
    idx = np.array([0, 3, 3, -1, 0, 3])
    v = np.arange(6).astype(dtype)
    compiled = stax.compile(accumulate_into, strict_native=True)
    for _ in range(2):  # the compiled version on the second call
        a, b = np.ones(5, dtype), np.ones(5, dtype)
        got, want = compiled(a, idx, v), accumulate_into(b, idx, v)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(a, b)  # the repeated and negative indices added each time


def test_an_index_out_of_bounds_raises_numpy_s_error():
    compiled = stax.compile(accumulate_into)
    compiled(np.ones(5), np.array([0, 1]), np.array([1.0, 2.0]))
    with pytest.raises(IndexError):
        compiled(np.ones(5), np.array([0, 5]), np.array([1.0, 2.0]))
