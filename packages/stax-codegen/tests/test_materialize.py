"""§6.6 materialization: the loop layer inlines pointwise values into their readers unless the
backend's policy (``cpu.costs.keep_in_memory``) finds recomputation dearer than a memory round
trip — an expensive value read by several kernels, a broadcast, a result others read too."""

import numpy as np

from stax.codegen import Executable, generate
from stax.codegen.cpu.costs import keep_in_memory
from stax.loop import Affine, Load, Reuse, Unary, lower_opgraph, postorder, xvar


def buffer_sins(buffer):
    """How many sin evaluations a computed buffer's body holds."""
    return sum(isinstance(e, Unary) and e.op == "sin" for e in postorder(buffer.data.body))


def count_sins(loop):
    return sum(buffer_sins(b) for b in loop.buffers)


def test_policy_prefers_recomputing_cheap_values_and_keeping_expensive_ones():
    cheap = Unary("tanh", Load("x", _index(), "float32"), "float32")
    dear = Unary("sin", Load("x", _index(), "float64"), "float64")
    n = 1 << 20
    assert not keep_in_memory(Reuse(cheap, "float32", n, 2 * n, False))   # recompute: fused, CSE
    assert keep_in_memory(Reuse(dear, "float64", n, 3 * n, False))        # three kernels of sin
    assert keep_in_memory(Reuse(cheap, "float32", n, 1000 * n, False))    # a broadcast
    assert keep_in_memory(Reuse(cheap, "float32", n, n, True))            # a result read again


def _index():
    return Affine.var(xvar(0))


def test_a_result_read_by_a_reduction_is_read_back_not_recomputed(build):
    x = np.random.default_rng(0).standard_normal(4096)
    b = build(x=x)
    h = b("exp", b("sin", b.inputs["x"]))
    total = b("sum", h, axis=(0,), keepdims=False, dtype=None)
    program = b.program(h, total)
    inlined = lower_opgraph(program)
    kept = lower_opgraph(program, materialize=keep_in_memory)
    assert count_sins(inlined) == 2 and count_sins(kept) == 1
    got = Executable(generate(kept))(x)
    np.testing.assert_allclose(got[0], np.exp(np.sin(x)), rtol=1e-15)
    np.testing.assert_allclose(got[1], np.exp(np.sin(x)).sum(), rtol=1e-12)


def test_a_broadcast_of_an_expensive_value_is_computed_once_per_element(build):
    """sin of a row vector read by every row: recomputed per row unless kept; a value broadcast
    along the innermost loop (a column vector) is invariant there and stays inlined."""
    x, y = np.random.default_rng(1).standard_normal((2, 300))
    b = build(x=x.reshape(1, 300), y=y.reshape(300, 1))
    loop = lower_opgraph(b.program(b("mul", b("sin", b.inputs["x"]), b.inputs["y"])),
                         materialize=keep_in_memory)
    sin_buffer = [buf for buf in loop.buffers if buffer_sins(buf)]
    assert len(sin_buffer) == 1 and sin_buffer[0].shape == (1, 300)  # kept at its own shape
    got, = Executable(generate(loop))(x.reshape(1, 300), y.reshape(300, 1))
    np.testing.assert_allclose(got, np.sin(x)[None, :] * y[:, None], rtol=1e-15)
    b = build(x=x.reshape(300, 1), y=y.reshape(1, 300))
    loop = lower_opgraph(b.program(b("mul", b("sin", b.inputs["x"]), b.inputs["y"])),
                         materialize=keep_in_memory)
    holding = [buf.shape for buf in loop.buffers if buffer_sins(buf)]
    assert holding == [(300, 300)]  # the output alone: sin(x[i]) is hoisted out of the row loop


def test_without_a_policy_everything_is_inlined(build):
    x = np.random.default_rng(2).standard_normal(64)
    b = build(x=x)
    s = b("sin", b.inputs["x"])
    loop = lower_opgraph(b.program(b("mul", s, 2.0), b("sum", s, axis=(0,), keepdims=False, dtype=None)))
    assert count_sins(loop) == 2
