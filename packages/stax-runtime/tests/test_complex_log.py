"""np.log of complex64/complex128 values compiles natively (``stax.loop.complex_log``): glibc's
clog branch for branch with Stax's own log, log1p, hypot and arctan2, so each part is within a
few ulp of NumPy's (3 measured), C99's special values exactly, a zero's divide-by-zero report
NumPy's own (the call runs eagerly), and no spurious event on huge, tiny or unit-circle data."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import stax.runtime as stax

#: the most ulps either part may differ from NumPy's (glibc's real functions and ours round
#: differently; measured 3 in the real part near |z| = 0.63, 1 elsewhere)
MAX_ULP = 4


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    both_nan = np.isnan(got) & np.isnan(want)
    same = (got == want) | both_nan
    spacing = np.spacing(np.abs(np.where(same, 1, want)).astype(want.dtype))
    return np.where(same, 0, np.abs(got - want) / spacing)


def _inputs(complex_type, rng):
    real = np.float64 if complex_type == np.complex128 else np.float32
    info = np.finfo(real)
    specials = [0.0, -0.0, 1.0, -1.0, 2.0, np.inf, -np.inf, np.nan, info.max, -info.max,
                info.tiny, info.tiny / 8, 0.5, 0.75, 1.5, 1 + info.eps, 1 - info.eps]
    grid = np.array(list(itertools.product(specials, specials)), dtype=real)
    wide = np.exp(rng.uniform(-700 if real == np.float64 else -85,
                              700 if real == np.float64 else 85, (2, 3000))).astype(real)
    angle = rng.uniform(0, 6.3, 3000)
    radius = 1 + rng.standard_normal(3000) * 1e-6
    normal = rng.standard_normal((2, 3000))
    cases = [(grid[:, 0], grid[:, 1]), (wide[0] * normal[0], wide[1] * normal[1]),
             (radius * np.cos(angle), radius * np.sin(angle)), (normal[0], normal[1])]
    out = []
    for re, im in cases:
        z = np.empty(len(re), complex_type)
        z.real, z.imag = re, im
        out.append(z)
    return out


@pytest.mark.parametrize("complex_type", [np.complex128, np.complex64])
def test_within_a_few_ulp_with_special_values_exact(complex_type):
    f = stax.compile(lambda z: np.log(z), strict_native=True)
    special, *others = _inputs(complex_type, np.random.default_rng(0))
    with warnings.catch_warnings(record=True) as got_warnings:
        warnings.simplefilter("always")
        got = f(special)
    with warnings.catch_warnings(record=True) as want_warnings:
        warnings.simplefilter("always")
        want = np.log(special)
    np.testing.assert_array_equal(got, want)  # zeros, infinities, NaN: exactly C99's
    np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))
    assert [str(w.message) for w in got_warnings] == [str(w.message) for w in want_warnings]
    declined = f._fallbacks  # the zero's divide-by-zero: that call ran eagerly
    for z in others:
        for layout in (z, z[::-2]):
            got, want = f(layout), np.log(layout)
            assert _ulps(got.real, want.real).max() <= MAX_ULP
            assert _ulps(got.imag, want.imag).max() <= MAX_ULP
    assert f._fallbacks == declined  # no spurious event on any of them
    assert all(s.startswith("kernel") for v in f.versions() for s in v.artifact.steps)
