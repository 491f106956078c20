"""Matrix products in the machine-code entry (``cpu/entry_blas.py``, ``cpu/blas.py``): NumPy's
``gemm`` called between the kernels with NumPy's arguments, so a program with products has an
entry, and its results are NumPy's bit for bit; anything NumPy computes otherwise (a matrix
times itself transposed, vectors) or a product that raises a floating-point event goes the
dispatcher's way, as before."""

import threading
import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen.cpu.blas import numpys_gemm

pytestmark = pytest.mark.skipif(numpys_gemm() is None, reason="NumPy's BLAS is not OpenBLAS")


def matrix_power(a):
    result = np.eye(a.shape[0], dtype=a.dtype)
    for _ in range(5):
        result = result @ a
    return result


def layer(x, w, b):
    return np.tanh(x @ w + b)


def gram_scaled(x, y):
    return (x @ y) * 0.5


def _entry_runs(compiled, *args):
    """The compiled call's result, and whether the entry ran it."""
    version = compiled.versions()[0]
    hits = version.entry.hits if version.entry is not None and hasattr(version.entry, "hits") \
        else None
    got = compiled(*args)
    ran = hits is not None and version.entry.hits == hits + 1
    return got, ran


def _same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_chain_of_products_is_numpys_bit_for_bit(dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((48, 48)) / 6).astype(dtype)
    compiled = stax.compile(matrix_power)
    compiled(a)
    for _ in range(2):
        got, ran = _entry_runs(compiled, a)
        _same_bits(got, matrix_power(a))
        assert ran


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_operands_of_either_order_and_kernels_around(order, dtype):
    rng = np.random.default_rng(1)
    x = np.asarray(rng.standard_normal((37, 64)), dtype, order=order)
    w = np.asarray(rng.standard_normal((64, 23)) / 8, dtype, order=order)
    b = rng.standard_normal(23).astype(dtype)
    compiled = stax.compile(layer)
    compiled(x, w, b)
    got, ran = _entry_runs(compiled, x, w, b)
    np.testing.assert_allclose(got, layer(x, w, b), rtol=2e-6 if dtype == np.float32 else 1e-14)
    assert ran
    xw = compiled.versions()[0]
    assert "matmul" in str(xw.artifact)


def test_one_array_as_both_operands_goes_the_dispatchers_way():
    """``f(a, a)``: NumPy multiplies ``a @ a`` with gemm, but the guard cannot know a product
    of an array and its own transpose from it: both operands one array go slow."""
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    compiled = stax.compile(gram_scaled)
    compiled(x, y)
    got, ran = _entry_runs(compiled, x, y)
    _same_bits(got, gram_scaled(x, y))
    assert ran
    got, ran = _entry_runs(compiled, x, x)
    _same_bits(got, gram_scaled(x, x))
    assert not ran
    got, ran = _entry_runs(compiled, x, np.ascontiguousarray(x.T).T)  # the transpose: syrk
    _same_bits(got, gram_scaled(x, np.ascontiguousarray(x.T).T))


def test_a_product_that_overflows_warns_as_numpy():
    compiled = stax.compile(gram_scaled)
    ok = np.ones((8, 8))
    compiled(ok, ok.copy())
    big = np.full((8, 8), 1e200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compiled(big, big.copy())
    assert np.isinf(got).all()
    assert [str(w.message) for w in caught] == ["overflow encountered in matmul"]
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="matmul"):
        compiled(big, big.copy())


def test_a_large_product_lets_other_threads_run():
    """The GIL is released around a large ``gemm``, as NumPy releases it."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((300, 300)), rng.standard_normal((300, 300))
    compiled = stax.compile(gram_scaled)
    compiled(x, y)
    results = []
    worker = threading.Thread(target=lambda: results.extend(compiled(x, y) for _ in range(20)))
    worker.start()
    mine = [compiled(x, y) for _ in range(20)]
    worker.join()
    want = gram_scaled(x, y)
    for got in mine + results:
        _same_bits(got, want)
