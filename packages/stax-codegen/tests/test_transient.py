"""Buffers only their own kernel reads, at the element it computes, are never stored
(``transient.py``): no kernel argument, no storage, their float events still reported."""

import numpy as np
import pytest

from stax.codegen import Executable, generate
from stax.codegen.cpu.costs import keep_in_memory
from stax.codegen.executable import FloatingPointEvents
from stax.codegen.program_plan import plan_program
from stax.codegen.transient import transient_buffers
from stax.loop import lower_opgraph


def _gelu(b, x):
    """``x`` read four times: realized in memory (``keep_in_memory``), every reader fused."""
    cube = b("mul", b("mul", x, x), x)
    inner = b("mul", b("add", x, b("mul", cube, 0.044715)), 0.7978845608)
    return b("mul", b("mul", x, 0.5), b("add", b("tanh", inner), 1.0))


def test_a_value_read_only_in_its_kernel_is_held_not_stored(build):
    x = np.random.default_rng(0).standard_normal((64, 300)).astype(np.float32)
    b = build(x=x)
    h = b("mul", b("exp", b.inputs["x"]), b("tanh", b.inputs["x"]))  # costly: kept, not recomputed
    out = _gelu(b, h)
    program = lower_opgraph(b.program(out), materialize=keep_in_memory)
    stored_before = len(program.buffers)
    artifact = generate(program)
    assert len(artifact.kernels) == 1
    (kernel,) = artifact.kernels
    held = [c for c in kernel.computes if c not in kernel.args]
    assert held and len(kernel.computes) == stored_before  # every other value is held
    assert all(p.name not in held for p in artifact.buffers)  # no storage either
    assert f"{held[0]} (unstored)" in str(artifact)
    got, = Executable(artifact)(x)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=2e-6, atol=1e-7)


def test_a_held_value_still_reports_its_events(build):
    x = np.array([1.0, 2.0, 0.0, -3.0], np.float32)
    calm = -np.abs(x)  # exp(tanh(x)) <= 1: no overflow
    b = build(x=calm)
    big = b("mul", b("exp", b("tanh", b.inputs["x"])), 2e38)  # overflows: NumPy warns
    out = _gelu(b, b("minimum", big, 1.0))
    program = lower_opgraph(b.program(out), materialize=keep_in_memory)
    artifact = generate(program)
    (kernel,) = artifact.kernels
    assert [c for c in kernel.computes if c not in kernel.args]
    executable = Executable(artifact)
    with pytest.raises(FloatingPointEvents, match="overflow"):  # the runtime then runs NumPy
        executable(x)
    got, = executable(calm)
    np.testing.assert_array_equal(got, b.expected(out)[0])


def test_values_read_in_another_phase_or_at_another_element_are_stored(build):
    """Softmax's exp is read by the row's sum (a later phase) and by the division; the row sum
    by every element of the row: neither is held at its element. The exp is held one row at a
    time instead (``row_scratch.py``); the row sum, a result, is stored."""
    x = np.random.default_rng(1).standard_normal((8, 40))
    b = build(x=x)
    e = b("exp", b("tanh", b.inputs["x"]))
    total = b("sum", e, axis=(1,), keepdims=True, dtype="float64")
    out = b("truediv", e, total)
    program = lower_opgraph(b.program(out), materialize=keep_in_memory)
    plan = plan_program(program, transient=True)
    assert len(plan.groups) == 1 and len(plan.groups[0].nest.phases) == 3
    assert not transient_buffers(plan.groups, plan.output_names)
    exp = next(n.name for n in plan.groups[0].nest.phases[0])
    assert plan.row_scratch == {exp: 40}
    artifact = generate(program)
    assert str(artifact).count("(unstored)") == 1 and f"{exp} (unstored)" in str(artifact)
    got, = Executable(artifact)(x)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=1e-14)
