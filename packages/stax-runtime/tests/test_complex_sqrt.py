"""np.sqrt of complex64/complex128 values compiles natively, bit for bit NumPy's (glibc's csqrt
with its hypot, operation for operation: ``stax.loop.complex_roots``), special values and the
scaled branches (huge, tiny, subnormal parts) included, with no spurious floating-point event
(a call with one would run eagerly: counted here)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.loop.complex_roots import GLIBC_CSQRT

pytestmark = pytest.mark.skipif(not GLIBC_CSQRT, reason="NumPy's csqrt is not glibc >= 2.35's here")


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint64 if a.dtype == np.float64 else np.uint32)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        both_nan = np.isnan(g) & np.isnan(w)
        mismatch = ~both_nan & (_bits(np.ascontiguousarray(g)) != _bits(np.ascontiguousarray(w)))
        assert not mismatch.any(), (got[mismatch][:4], want[mismatch][:4])


def _inputs(complex_type, rng):
    real = np.float64 if complex_type == np.complex128 else np.float32
    info = np.finfo(real)
    specials = [0.0, -0.0, 1.0, -1.0, -2.0, np.inf, -np.inf, np.nan, info.max, -info.max,
                info.tiny, -info.tiny, info.tiny / 8, info.max / 3, 1e-30, -1e30, 0.5]
    grid = np.array(list(itertools.product(specials, specials)), dtype=real)
    wide = np.exp(rng.uniform(-700 if real == np.float64 else -85,
                              700 if real == np.float64 else 85, (2, 4000))).astype(real)
    signs = rng.standard_normal((2, 4000)).astype(real)
    out = []
    for re, im in ((grid[:, 0], grid[:, 1]), (wide[0] * signs[0], wide[1] * signs[1]),
                   (signs[0], signs[1])):
        z = np.empty(len(re), complex_type)
        z.real, z.imag = re, im
        out.append(z)
    return out


@pytest.mark.parametrize("complex_type", [np.complex128, np.complex64])
def test_bit_for_bit_numpys_with_special_values_and_no_spurious_events(complex_type):
    f = stax.compile(lambda z: np.sqrt(z), strict_native=True)
    for z in _inputs(complex_type, np.random.default_rng(0)):
        for layout in (z, z[::-3]):
            for _ in range(2):  # a compiling call (a new key), then the cached version's
                with warnings.catch_warnings(record=True) as got_warnings:
                    warnings.simplefilter("always")
                    got = f(layout)
                _same(got, np.sqrt(layout))
                assert not got_warnings
    assert f._fallbacks == 0  # every call ran the kernels: no event declined one
    assert all(s.startswith("kernel") for v in f.versions() for s in v.artifact.steps)


def test_fused_with_other_complex_work():
    def branch(z):
        return np.sqrt(z) * np.conj(z) + 1

    rng = np.random.default_rng(1)
    z = rng.standard_normal(500) + 1j * rng.standard_normal(500)
    z[::7] = -np.abs(z[::7]) + 0j
    z.imag[::11] = -0.0
    f = stax.compile(branch, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        _same(f(z), branch(z))
    assert len(f.versions()[0].artifact.kernels) == 1


def test_complex_kernels_compute_with_no_nan_constant():
    """A NaN constant an instruction computes with makes the whole kernel a precise one (every
    operation checked: several times slower, ``jit.nan_operands``); the complex rules make their
    NaN results from the NaN operands instead."""
    from stax.codegen.cpu.jit import nan_operands

    def programs(z):
        return np.abs(z), np.exp(z), np.sqrt(z), z / (z + 1)

    z = np.array([1 + 2j, np.nan + 1j, np.inf - 1j, 0j])
    for dtype in (np.complex128, np.complex64):
        f = stax.compile(programs)
        for _ in range(2):  # the compiling call, then the cached version's
            for g, w in zip(f(z.astype(dtype)), programs(z.astype(dtype))):
                _same(g, w)
        artifact = f.versions()[0].artifact
        assert not nan_operands(artifact.llvm_ir)
