"""A call's arrays live exactly as long as the caller holds them: no reference cycle (which would
wait for the cycle collector) and no worker thread keeps a result, so a large result's block goes
back to the pool when it dies and the next call reuses it instead of touching fresh pages."""

import gc

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen.block_pool import default_block_pool


@pytest.mark.parametrize("fn", [
    lambda x: (np.tanh(x) * 2, np.tanh(x).sum()),             # a tuple with a NumPy scalar
    lambda x: {"a": x + 1, "b": [x.sum(), x.max(axis=0)]},    # nested containers
    lambda x: np.sin(x[np.array([0, 5])]),                    # a checked gather
    lambda x: (x @ x.T).sum(-1),                              # a NumPy step
])
def test_calls_create_no_reference_cycles(fn):
    x = np.random.default_rng(0).standard_normal((64, 64))
    compiled = stax.compile(fn)
    for _ in range(3):
        compiled(x)
    gc.collect()
    gc.disable()
    try:
        for _ in range(20):
            compiled(x)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_large_results_of_threaded_kernels_reuse_their_blocks():
    pool = default_block_pool()
    x = np.random.default_rng(1).standard_normal(1 << 21).astype(np.float32)  # 8 MiB results
    compiled = stax.compile(lambda x: (np.exp(x) * 2, np.exp(x).sum()))
    compiled(x)
    assert compiled.versions()[0].artifact.kernels[0].parallel or \
        any(k.parallel for k in compiled.versions()[0].artifact.kernels)
    compiled(x)
    allocated = pool.allocated
    for _ in range(5):
        compiled(x)
    assert pool.allocated == allocated  # every call reused the block the previous result left


def test_materialization_keeps_row_kernels_whole():
    """Per-row statistics broadcast along a row are invariant in the innermost loop: the cost
    model leaves them inlined, so layer norm and softmax stay one row kernel each."""
    def layer_norm(x, w, b):
        mean = x.mean(-1, keepdims=True)
        centered = x - mean
        var = (centered * centered).mean(-1, keepdims=True)
        return centered / np.sqrt(var + np.float32(1e-5)) * w + b

    def softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((64, 256)).astype(dtype)
        w, b = rng.standard_normal((2, 256)).astype(dtype)
        for fn, args in ((layer_norm, (x, w, b)), (softmax, (x,))):
            compiled = stax.compile(fn)
            np.testing.assert_allclose(compiled(*args), fn(*args), rtol=1e-4, atol=1e-5)
            assert len(compiled.versions()[0].artifact.kernels) == 1, fn.__name__
