"""Spec example 1.1 end to end, against eager NumPy."""

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime import nn


def f_numpy(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def f_relu(x, w):
    return (nn.relu(x + w) * 2).sum(-1)


def tolerance(x, w):
    terms = np.abs(np.maximum(x + w, 0) * 2)
    return 4 * x.shape[-1] * np.finfo(np.float32).eps * terms.sum(-1) + 1e-30


SHAPES = [(64, 128), (4096 // 8, 4096 // 8), (1, 128), (64, 129), (7, 3), (1, 1), (3, 4097),
          (17, 1023)]


@pytest.mark.parametrize("fn", [f_numpy, f_relu], ids=["numpy", "relu"])
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_numpy(fn, shape):
    rng = np.random.default_rng(hash(shape) % 1000)
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal(shape, dtype=np.float32)
    cf = stax.compile(fn, strict_native=True)
    want = f_numpy(x, w)
    for _ in range(2):  # the compiling call, then the cached version's
        got = cf(x, w)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.all(np.abs(got - want) <= tolerance(x, w))


@pytest.mark.parametrize("layout", ["transposed", "sliced", "broadcast_w", "reversed"])
def test_layouts(layout):
    rng = np.random.default_rng(7)
    base = rng.standard_normal((128, 64), dtype=np.float32)
    w = rng.standard_normal((64, 128), dtype=np.float32)
    x = {"transposed": base.T, "sliced": np.repeat(base.T, 3, axis=1)[:, ::3],
         "broadcast_w": base.T, "reversed": base.T[::-1]}[layout]
    if layout == "broadcast_w":
        w = w[:1]
    cf = stax.compile(f_numpy, strict_native=True)
    want = f_numpy(x, w)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_allclose(cf(x, w), want, rtol=1e-5, atol=1e-4)
    assert cf.cache_info().fallbacks == 0


def test_nan_and_inf_inputs():
    x = np.zeros((4, 8), np.float32)
    w = np.zeros((4, 8), np.float32)
    x[0, 3] = np.nan
    x[1, 0] = np.inf
    w[2, 5] = -np.inf
    x[3, :] = -0.0
    cf, want = stax.compile(f_relu, strict_native=True), f_numpy(x, w)
    for _ in range(2):  # the compiling call, then the cached version's
        got = cf(x, w)
        np.testing.assert_array_equal(got, want)  # NaN, Inf, 0 — exact here
        assert np.isnan(got[0]) and got[1] == np.inf and got[2] == 0.0


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64, np.uint8])
def test_other_dtypes(dtype):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((9, 33)) * 20).astype(dtype)
    w = (rng.standard_normal((9, 33)) * 20).astype(dtype)
    cf, want = stax.compile(f_numpy, strict_native=True), f_numpy(x, w)
    for _ in range(2):  # the compiling call, then the cached version's
        got = cf(x, w)
        assert got.dtype == want.dtype
        if np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-12)
        else:
            np.testing.assert_array_equal(got, want)


def test_example_1_1_compiles_to_one_kernel_and_no_intermediate():
    x = np.ones((64, 128), np.float32)
    cf = stax.compile(f_relu, strict_native=True)
    cf(x, x)
    (version,) = cf.versions()
    artifact = version.artifact
    assert len(artifact.kernels) == 1
    assert artifact.intermediates == []
