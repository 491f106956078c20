"""``np.diag`` natively: of a 1-D array a select on the k-th diagonal (a kernel), of a 2-D array
a view of it — no NumPy step, so such programs keep the machine-code entry (a Jacobi iteration
with ``A - np.diag(np.diag(A))`` ran every kernel from Python: 0.7x NumPy, now 5x)."""

import numpy as np
import pytest

import stax.runtime as stax


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int8", "uint8"])
@pytest.mark.parametrize("k", [0, 1, 3, -1, -2])
@pytest.mark.parametrize("name", ["diag", "diagflat"])
def test_diag_of_a_vector_is_numpys(dtype, k, name):
    matrix = getattr(np, name)

    def fn(v):
        return matrix(v, k) * 2

    rng = np.random.default_rng(k + 7)
    for v in ((rng.standard_normal(7) * 5).astype(dtype),
              (rng.standard_normal(14) * 5).astype(dtype)[::-2]):
        compiled = stax.compile(fn, strict_native=True)
        compiled(v)
        got, want = compiled(v), fn(v)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert not compiled.versions()[0].artifact.externs


def jacobi(A, b):
    D = np.diag(A)
    Rm = A - np.diag(D)
    x = np.zeros_like(b)
    for _ in range(20):
        x = (b - Rm @ x) / D
    return x


def test_a_jacobi_iteration_has_no_numpy_step_and_an_entry():
    rng = np.random.default_rng(3)
    A = rng.random((30, 30))
    A += np.diag(A.sum(1) + 1)
    b = rng.random(30)
    compiled = stax.compile(jacobi, strict_native=True)
    compiled(A, b)
    np.testing.assert_allclose(compiled(A, b), jacobi(A, b), rtol=1e-12)
    version = compiled.versions()[0]
    assert not version.artifact.externs
    assert version.entry is not None and not isinstance(version.entry, str)


def test_a_returned_view_of_a_private_value_is_computed_natively():
    """``np.bincount(...).reshape(n, n)`` returned: nothing else sees the counts, so the view
    is computed (no NumPy step); a view of a value also returned stays NumPy's own view, whose
    memory the other result shares, as eager's."""
    def confusion(pred, target):
        return np.bincount(target * 4 + pred, minlength=16).reshape(4, 4)

    def both(x):
        h = x * 2
        return h, h.reshape(2, -1)

    rng = np.random.default_rng(1)
    p, t = rng.integers(0, 4, 500), rng.integers(0, 4, 500)
    f = stax.compile(confusion, strict_native=True)
    f(p, t)
    np.testing.assert_array_equal(f(p, t), confusion(p, t))
    assert not f.versions()[0].artifact.externs
    g = stax.compile(both)
    x = np.arange(6.0)
    g(x)
    a, b = g(x)
    a[0] = 99.0
    assert b[0, 0] == 99.0


def test_a_returned_view_in_numpys_own_layout_stays_numpys_view():
    """A broadcast (read-only, zero strides), a reversal or a step of a private value: NumPy's
    layout and flags, so NumPy's view object."""
    def broadcast(x):
        return np.broadcast_to(x * 2, (3, x.shape[0]))

    def reversed_(x):
        return (x + 1)[::-1]

    x = np.arange(5.0)
    for fn in (broadcast, reversed_):
        f = stax.compile(fn)
        f(x)
        got, want = f(x), fn(x)
        np.testing.assert_array_equal(got, want)
        assert got.strides == want.strides and got.flags.writeable == want.flags.writeable


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int8", "bool", "complex128"])
@pytest.mark.parametrize("k", [0, 2, -3, 9])
def test_trace_sums_a_diagonal_view(dtype, k):
    """``np.trace`` / ``a.trace()`` of a 2-D array: the sum of its k-th diagonal (in NumPy's
    sum dtype: int64 for int8 and bool), read as a strided view; it was a NumPy step. (A
    version generic in sizes, made as the shapes change, keeps NumPy's call.)"""
    rng = np.random.default_rng(k + 3)
    a = (rng.standard_normal((6, 8)) * 4).astype(dtype) if dtype != "complex128" else \
        rng.standard_normal((6, 8)) + 1j * rng.standard_normal((6, 8))

    def fn(x):
        return np.trace(x, k), x.T.trace(offset=k)

    compiled = stax.compile(fn, strict_native=True)
    for x in (a, a.T, a[::-1, 1::2], np.asfortranarray(a)):
        for _ in range(2):
            for got, want in zip(compiled(x), fn(x)):
                assert type(got) is type(want)
                np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == "float32" else 1e-14)
    assert all(b.role != "extern" for b in compiled.versions()[0].artifact.buffers)
