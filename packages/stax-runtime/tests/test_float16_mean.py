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
