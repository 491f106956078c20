"""A call's arrays live exactly as long as the caller holds them: no reference cycle (which would
wait for the cycle collector) and no worker thread keeps a result, so a large result's block goes
back to the pool when it dies and the next call reuses it instead of touching fresh pages."""

import gc

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen.memory import default_block_pool


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
