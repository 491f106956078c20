"""Vector dot products, matrix-vector products and Euclidean norms compile natively as a product
and a sum (issues 13 and 14, ``stax.ir.to_opgraph.products``): every spelling of the 1-D dot
product and of ``A @ v`` / ``v @ A``, ``np.linalg.norm`` over everything or one axis, in NumPy's
dtypes and shapes, within rounding of NumPy's BLAS; a product that overflows declines the call
so NumPy's own result and warning come back; products of two matrices stay NumPy's calls."""

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
        x = (rng.standard_normal((n, 7)) * 10).astype(dtype)
        for _ in range(2):  # the compiling call (a new key), then the cached version's
            _same(f(a, b), dots(a, b), dtype)
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
        for _ in range(2):  # the compiling call (a new key), then the cached version's
            np.testing.assert_allclose(f(a, b), cosine(a, b), rtol=1e-14)
    assert all(_kernels_only(v) for v in f.versions())


def test_an_overflowing_product_runs_as_numpy_with_its_warning():
    x = np.array([1e200, 1.0])
    f = stax.compile(np.linalg.norm)
    for _ in range(2):  # the compiling call, then the cached version's
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
    for _ in range(2):  # the compiling call (a new key), then the cached version's
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
    for _ in range(2):  # the compiling call (a new key), then the cached version's
        for got, want in zip(f(x), gram(x)):
            np.testing.assert_array_equal(got, want)
    artifact = f.versions()[0].artifact
    views = [e for e in artifact.externs if e.target == "stax.ops.view"]
    assert len(views) >= 3 and len(artifact.kernels) == 1


def matrix_vector(A, v, u):
    return A @ v, np.dot(A, v), A.dot(v), np.matmul(A, v), u @ A, np.dot(u, A), A.T @ u, v @ A.T


@pytest.mark.parametrize("dtypes", [(np.float64, np.float64), (np.float32, np.float32),
                                    (np.int32, np.int64), (np.float32, np.float64),
                                    (np.int64, np.float32)])
def test_matrix_vector_spellings_match_numpy(dtypes):
    rng = np.random.default_rng(3)
    f = stax.compile(matrix_vector, strict_native=True)
    for n, k in ((1, 1), (37, 5), (300, 64), (3, 1000)):
        A = (rng.standard_normal((n, k)) * 10).astype(dtypes[0])
        v = (rng.standard_normal(k) * 10).astype(dtypes[1])
        u = (rng.standard_normal(n) * 10).astype(dtypes[1])
        for _ in range(2):  # the compiling call (a new key), then the cached version's
            got, want = f(A, v, u), matrix_vector(A, v, u)
            _within_product_bound(got, want, A, v, u)
    assert all(_kernels_only(v) for v in f.versions())


def _within_product_bound(got, want, A, v, u):
    """Each result as NumPy's (type, dtype, shape), and within the rounding bound of a sum of
    products in another order: k ulps of the sum of the products' magnitudes (integers exact)."""
    a, x, y = (np.abs(t.astype(np.float64)) for t in (A, v, u))
    scales = [a @ x] * 4 + [y @ a] * 2 + [a.T @ y, x @ a.T]
    n, k = A.shape
    terms = [k] * 4 + [n] * 3 + [k]  # the length of each result's sums
    for g, w, scale, k in zip(got, want, scales, terms):
        assert type(g) is type(w) and g.dtype == w.dtype and g.shape == w.shape
        if np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(g, w)
            continue
        bound = 2 * (k + 1) * np.finfo(w.dtype).eps * scale
        assert np.all(np.abs(g.astype(np.float64) - w) <= bound), (g, w)


def test_matrix_vector_layouts_and_special_values():
    rng = np.random.default_rng(4)
    base = rng.standard_normal((60, 48))
    base[3, 7], base[10, 2], base[20, 5] = np.nan, np.inf, -0.0
    f = stax.compile(matrix_vector, strict_native=True)
    for A in (base, base.T[:, :40].T.copy(order="F")[:, ::-1], base[::2, 1::3],
              np.broadcast_to(base[0], (60, 48))):
        v, u = rng.standard_normal(A.shape[1]), rng.standard_normal(A.shape[0])
        for _ in range(2):  # the compiling call (a new key), then the cached version's
            with np.errstate(invalid="ignore"):
                got, want = f(A, v, u), matrix_vector(A, v, u)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    for _ in range(2):
        empty = f(np.zeros((0, 3)), np.ones(3), np.ones(0))
        for g, w in zip(empty, matrix_vector(np.zeros((0, 3)), np.ones(3), np.ones(0))):
            np.testing.assert_array_equal(g, w)
            assert g.shape == w.shape and g.dtype == w.dtype


def test_a_logistic_gradient_step_is_kernels_only():
    """``X @ w``, the sigmoid and ``X.T @ r`` fuse around the products (two passes over X)."""
    def step(X, y, w):
        p = 1 / (1 + np.exp(-(X @ w)))
        return w - 0.1 * (X.T @ (p - y)) / len(y)

    rng = np.random.default_rng(5)
    X = rng.standard_normal((500, 16)).astype(np.float32)
    y = (rng.random(500) > 0.5).astype(np.float32)
    w = rng.standard_normal(16).astype(np.float32)
    f = stax.compile(step, strict_native=True)
    for _ in range(2):  # the compiling call (a new key), then the cached version's
        np.testing.assert_allclose(f(X, y, w), step(X, y, w), rtol=1e-5, atol=1e-6)
    (version,) = f.versions()
    assert _kernels_only(version) and len(version.artifact.kernels) == 2


def vector_norms(x, v):
    return (np.linalg.norm(v, np.inf), np.linalg.norm(v, -np.inf), np.linalg.norm(v, 1),
            np.linalg.norm(v, 0), np.linalg.norm(x, np.inf, axis=1),
            np.linalg.norm(x, 1, axis=0, keepdims=True), np.linalg.norm(x, -np.inf, axis=-1),
            np.linalg.norm(x.T, 0, axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_vector_norms_of_other_orders_compile(dtype):
    """A probe's Jacobi: ``np.linalg.norm(x_new - x, np.inf) < tol`` was a NumPy step, so the
    loop's body ran one dispatched call an item (0.93x NumPy); the inf, -inf, 1 and 0 norms of
    a vector are NumPy's reductions of ``abs(x)`` (or of ``x != 0``): natively, bit for bit
    but the 1-norm's summation order."""
    f = stax.compile(vector_norms, strict_native=True)
    rng = np.random.default_rng(5)
    for n in (1, 9, 40):
        x = (rng.standard_normal((n, 6)) * 10).astype(dtype)
        v = x[:, 0].copy()
        v[0] = 0
        got, want = f(x, v), vector_norms(x, v)
        for g, w, order in zip(got, want, (np.inf, -np.inf, 1, 0, np.inf, 1, -np.inf, 0)):
            assert np.asarray(g).dtype == np.asarray(w).dtype and np.shape(g) == np.shape(w)
            if order == 1:
                np.testing.assert_allclose(g, w, rtol=1e-6 if dtype == np.float32 else 1e-13)
            else:
                np.testing.assert_array_equal(g, w)
    nan = np.array([np.nan, 1.0, -np.inf])
    assert np.isnan(f(np.ones((2, 6)), nan)[0]) and f(np.ones((2, 6)), nan)[3] == 3.0
    assert all(not v.artifact.externs for v in f.versions())  # kernels only
