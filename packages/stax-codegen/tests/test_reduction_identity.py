"""A max/min reduction of a select whose arm is the reduction's identity (``np.nanmax``'s
``where(isnan(x), -inf, x)``, a masked ``x[m].max()``) stays a vectorized reduction: LLVM would
otherwise fold the identity into a select of the accumulator and run the loop scalar
(``extremes.identity_hidden``)."""

import numpy as np
import pytest

from stax.codegen import Executable
from stax.codegen.target import Identity


@pytest.mark.parametrize("kind, dtype", [("max", "float64"), ("min", "float32"),
                                         ("max", "int64"), ("min", "int32")])
@pytest.mark.parametrize("identity_first", [True, False])
def test_a_select_of_the_identity_is_reduced_in_vectors(build, run, kind, dtype, identity_first):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 300)) * 100).astype(dtype)
    if dtype.startswith("float"):
        x[::7, ::5] = np.nan
    identity = (-np.inf if kind == "max" else np.inf) if dtype.startswith("float") else \
        (np.iinfo(dtype).min if kind == "max" else np.iinfo(dtype).max)
    b = build(x=x)
    drop = b("isnan", b.inputs["x"]) if dtype.startswith("float") else b("lt", b.inputs["x"], 0)
    if identity_first:
        picked = b("where", drop, identity, b.inputs["x"])
    else:
        picked = b("where", b("logical_not", drop), b.inputs["x"], identity)
    out = b(kind, picked, axis=(1,), keepdims=False)
    (got,), artifact = run(b, out)
    np.testing.assert_array_equal(got, b.expected(out)[0])
    optimized = Executable(artifact).module.optimized_ir
    target = artifact.target  # the host's vector width: 512 bits with AVX-512, 256 with AVX2
    bits = Identity("cpu", target["triple"], target["cpu"], target["features"]).tuned_bits
    width = bits // 8 // np.dtype(dtype).itemsize
    assert f"<{width} x " in optimized  # a vector loop, not a scalar one
