"""A composite the primitives cannot reproduce (another result type, operands NEP 50 refuses for
the primitives) stays whole instead of failing the compile (found by the stress suite)."""

import numpy as np
import pytest

import stax.runtime as stax


@pytest.mark.parametrize("fn, x", [
    (np.square, np.array([True, False, True])),                     # int8, where x * x is bool
    (lambda x: np.clip(x, -1, 1), np.array([0, 5, 200], np.uint8)),  # -1 does not fit uint8
    (lambda x: np.clip(x, -1, 300), np.array([0, 5, 200], np.uint8)),
])
def test_composites_kept_whole_compile_natively(fn, x):
    f = stax.compile(fn, strict_native=True)
    for _ in range(2):
        got, want = f(x), fn(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
