"""Vector dot products and Euclidean norms compile natively as a product and a sum (issue 13,
``stax.ir.to_opgraph.products``): every spelling of the 1-D dot product, ``np.linalg.norm`` over
everything or one axis, in NumPy's dtypes and shapes, within rounding of NumPy's BLAS; a
product that overflows declines the call so NumPy's own result and warning come back; matrix
products stay NumPy's calls."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def dots(a, b):
    return np.dot(a, b), a @ b, np.inner(a, b), a.dot(b), np.vdot(a, b), np.matmul(a, b)


def norms(x):
    return (np.linalg.norm(x), np.linalg.norm(x, axis=1, keepdims=True),
            np.linalg.norm(x, axis=0), np.linalg.norm(x, keepdims=True),
            np.linalg.norm(x[0], 2), np.linalg.norm(x.T, axis=(1,)))


def _same(got, want, dtype):
    rtol = 2e-6 if dtype == np.float32 else 1e-14
    for g, w in zip(got, want):
        assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=rtol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
def test_dot_and_norm_spellings_match_numpy(dtype):
    rng = np.random.default_rng(0)
    f, g = stax.compile(dots, strict_native=True), stax.compile(norms, strict_native=True)
    for n in (1, 37, 300):
        a, b = ((rng.standard_normal(n) * 10).astype(dtype) for _ in range(2))
        _same(f(a, b), dots(a, b), dtype)
        x = (rng.standard_normal((n, 7)) * 10).astype(dtype)
        _same(g(x), norms(x), dtype)
    for compiled in (f, g):
        assert all(_kernels_only(v) for v in compiled.versions())


def _kernels_only(version) -> bool:
    return version.native and all(s.startswith("kernel") for s in version.artifact.steps)


def test_layouts_and_fusion_into_one_kernel():
    def cosine(a, b):
        return np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))

    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 30))
    f = stax.compile(cosine, strict_native=True)
    for a, b in ((x[:, 3], x[:, 5]), (x[::-1, 0], x[:, 2]), (np.broadcast_to(x[0, :1], (40,)),
                                                            x[:, 7])):
        np.testing.assert_allclose(f(a, b), cosine(a, b), rtol=1e-14)
    assert all(_kernels_only(v) for v in f.versions())


def test_an_overflowing_product_runs_as_numpy_with_its_warning():
    x = np.array([1e200, 1.0])
    f = stax.compile(np.linalg.norm)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        result = f(x)
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        expected = np.linalg.norm(x)
    assert result == expected == np.inf
    assert [str(w.message) for w in got] == [str(w.message) for w in want]


def test_matrix_products_stay_numpy_calls():
    def gram(a):
        return a @ a.T

    a = np.random.default_rng(2).standard_normal((6, 4))
    f = stax.compile(gram)
    np.testing.assert_array_equal(f(a), gram(a))
    assert not _kernels_only(f.versions()[0])


def test_a_chain_of_numpy_products_holds_two_results_at_a_time():
    """Each NumPy step's result is dropped after its last reader: eight chained products of a
    (128, 128) matrix peak near two results, not eight (as eager NumPy)."""
    import tracemalloc

    def power(a):
        r = a
        for _ in range(8):
            r = r @ a
        return r

    a = np.random.default_rng(0).standard_normal((128, 128)) / 8
    f = stax.compile(power)
    np.testing.assert_array_equal(f(a), power(a))
    tracemalloc.start()
    try:
        f(a)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * a.nbytes, peak


def gram(x):
    xn = x * 2.5 + 1
    return xn @ xn.T, xn[::2] @ xn[1::2].T, xn.T @ xn


def test_views_of_a_computed_operand_reach_numpy_as_views():
    """``xn @ xn.T`` gets one memory for both operands (NumPy's symmetric product, whose rounding
    differs from the general one's) and strided views stay views: NumPy's bits, no copies."""
    x = np.random.default_rng(1).standard_normal((40, 24))
    f = stax.compile(gram)
    for got, want in zip(f(x), gram(x)):
        np.testing.assert_array_equal(got, want)
    artifact = f.versions()[0].artifact
    views = [e for e in artifact.externs if e.target == "stax.ops.view"]
    assert len(views) >= 3 and len(artifact.kernels) == 1
