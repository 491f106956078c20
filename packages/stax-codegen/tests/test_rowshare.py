"""Row kernels keep an expensive value a reduction phase computed instead of recomputing it in a
later element-wise phase (spec §7.5: stored in the later node's own buffer, overwritten in place)."""

import numpy as np
import pytest

from stax.codegen import Executable


def softmax(b, x, axis=1):
    top = b("max", x, axis=(axis,), keepdims=True)
    e = b("exp", b("sub", x, top))
    total = b("sum", e, axis=(axis,), keepdims=True, dtype="float32")
    return b("truediv", e, total)


def exp_count(artifact):
    """How many exp polynomials the optimized kernel evaluates per element: each needs one
    rint, vectorized or scalar remainder alike, so count the distinct rint sites per loop shape."""
    return rounded_exponents(Executable(artifact).module.llvm_ir)  # one site per evaluation


def rounded_exponents(ir_text):
    """Each float32 exponential rounds ``x log2 e`` to an integer once: by ``llvm.rint``, or
    (AVX-512, ``vmath.lanes32.exp32``) by adding the shifter 1.5 2^23, which LLVM writes
    ``0x4168000000000000``."""
    return ir_text.count('call float @"llvm.rint.f32"') + \
        ir_text.count(", float 0x4168000000000000)")


def rows(shape, special=False):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 4
    if special:
        x[0, 3], x[1, :] = np.nan, -np.inf
        x[2, 5], x[3, 0], x[4, 2] = np.inf, -0.0, 80.0
    return x


@pytest.mark.parametrize("shape", [(1, 9), (7, 17), (33, 1023), (5, 4097)])
def test_softmax_computes_exp_once_per_element(build, run, shape):
    b = build(x=rows(shape))
    out = softmax(b, b.inputs["x"])
    (got,), artifact = run(b, out)
    assert len(artifact.kernels) == 1
    assert exp_count(artifact) == 1
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=3e-6, atol=1e-7)


def test_special_values_and_transposed_rows(build, run):
    x = rows((9, 40), special=True)
    with np.errstate(all="ignore"):
        b = build(x=np.ascontiguousarray(x.T).T)  # column-major rows
        out = softmax(b, b.inputs["x"])
        (got,), _ = run(b, out)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=3e-6, atol=1e-7)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(b.expected(out)[0]))


def test_a_value_of_another_dtype_is_recomputed(build, run):
    """The later node stores float64: the float32 exp cannot live in its buffer."""
    x = rows((6, 50))
    b = build(x=x)
    e = b("exp", b.inputs["x"])
    total = b("sum", e, axis=(1,), keepdims=True, dtype="float32")
    wide = b("cast", b("truediv", e, total), dtype="float64")
    (got,), artifact = run(b, wide)
    assert exp_count(artifact) == 2
    np.testing.assert_allclose(got, b.expected(wide)[0], rtol=3e-6)


def test_single_element_rows(build, run):
    b = build(x=rows((3, 1)))
    out = softmax(b, b.inputs["x"])
    (got,), _ = run(b, out)
    np.testing.assert_array_equal(got, b.expected(out)[0])
