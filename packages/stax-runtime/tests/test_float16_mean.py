"""A float16 mean is NumPy's: summed in float32 (``_mean``), so a sum past 65504 is no
infinity. The extern passed the result dtype to ``np.mean``, which then summed in float16
(found by a probe of floating-point events)."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax


@pytest.mark.parametrize("fn", [lambda x: x.mean(), lambda x: x.mean(axis=0),
                                lambda x: (x * 1).mean(), lambda x: np.mean(x, keepdims=True)])
def test_a_float16_mean_does_not_overflow(fn):
    compiled = stax.compile(fn)
    for value in (2.0, 16000.0, 2.0):
        x = np.full((7, 3), value, np.float16)
        with np.errstate(all="ignore"):
            got, want = compiled(x), fn(x)
        np.testing.assert_array_equal(got, want)
        assert np.asarray(got).dtype == np.float16


@pytest.mark.parametrize("fn", [lambda x: x.mean(dtype=np.float16),
                                lambda x: np.mean(x, axis=0, dtype="float16"),
                                lambda x: x.mean(dtype=np.float32)])
def test_a_float16_mean_with_its_dtype_named_is_numpys(fn):
    """``dtype=np.float16`` asked for by name sums in float16, as NumPy does (inf where the sum
    passes 65504, with its overflow warning); the extern took it for the default and summed in
    float32 (a probe's find)."""
    import warnings
    compiled = stax.compile(fn)
    rng = np.random.default_rng(0)
    for x in (np.full((7, 3), 16000.0, np.float16), rng.standard_normal((50, 4)).astype(np.float16)):
        with warnings.catch_warnings(record=True) as eager_warnings:
            warnings.simplefilter("always")
            want = fn(x)
        with warnings.catch_warnings(record=True) as compiled_warnings:
            warnings.simplefilter("always")
            got = compiled(x)
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (got, want)
        assert [str(w.message) for w in compiled_warnings] == \
            [str(w.message) for w in eager_warnings]
