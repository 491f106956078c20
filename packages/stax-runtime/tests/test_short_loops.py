"""Short loops are not unrolled (``stax.codegen.cpu.loop_hints``): LLVM fully unrolled the
loops of small shapes, a layer norm of (2, 16, 32) float32 growing tenfold in IR and taking
1.2 s to optimize. The optimized module stays about the size of the emitted one."""

import numpy as np

import stax.runtime as stax
from stax.codegen.cpu import jit


def layer_norm(z, g, b):
    mu = z.mean(-1, keepdims=True)
    var = ((z - mu) ** 2).mean(-1, keepdims=True)
    return (z - mu) / np.sqrt(var + 1e-5) * g + b


def test_a_small_layer_norm_is_not_unrolled(monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", "off")
    z = np.random.default_rng(0).standard_normal((2, 16, 32)).astype(np.float32)
    g, b = np.ones(32, np.float32), np.zeros(32, np.float32)
    f = stax.compile(layer_norm)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_allclose(f(z, g, b), layer_norm(z, g, b), rtol=1e-5, atol=1e-5)
    ir = f.versions()[0].artifact.llvm_ir
    assert "llvm.loop.unroll.disable" in ir
    assert len(str(jit._optimized_module(ir))) < 4 * len(ir)  # it was 11x
