"""Kernels equal up to the names of their buffers are emitted once (``cpu/same_kernels.py``): the
key that decides it (the steps of an unrolled loop: stax-runtime's test_unrolled_loops.py)."""

from stax.codegen.cpu.emit import KernelSpec
from stax.codegen.cpu.same_kernels import kernel_key
from stax.codegen.nesting import Nest
from stax.loop import Affine, Binary, ComputedBuffer, Const, Load, Pointwise, xvar


def step(source, target, constant=0.5, dtype="float64"):
    """``target[i] = source[i] * constant``, a kernel's spec."""
    i = Affine.var(xvar(0))
    node = ComputedBuffer(target, (8,), dtype, (1,), i,
                          Pointwise((8,), Binary("mul", Load(source, i, dtype),
                                                 Const(constant, dtype), dtype)))
    return KernelSpec(f"kernel_{target}", (node,), Nest("plain", ((node,),)), (source, target),
                      {source: dtype, target: dtype})


def test_the_key_ignores_buffer_names_and_nothing_else():
    assert kernel_key(step("u0", "u1")) == kernel_key(step("u1", "u2"))
    assert kernel_key(step("x", "y")) == kernel_key(step("y", "x"))  # positions, not names
    assert kernel_key(step("u0", "u1")) != kernel_key(step("u0", "u1", 0.25))
    assert kernel_key(step("u0", "u1", 0.0)) != kernel_key(step("u0", "u1", -0.0))
    assert kernel_key(step("u0", "u1", 1)) != kernel_key(step("u0", "u1", 1.0))
    assert kernel_key(step("u0", "u1")) != kernel_key(step("u0", "u1", dtype="float32"))


def test_the_key_of_a_deep_shared_expression_is_linear():
    """Operands shared down a chain (complex arithmetic's parts) are recorded once: 2^60 paths,
    60 records."""
    i = Affine.var(xvar(0))
    value = Load("x", i, "float64")
    for _ in range(60):
        value = Binary("add", value, value, "float64")
    node = ComputedBuffer("y", (8,), "float64", (1,), i, Pointwise((8,), value))
    spec = KernelSpec("k", (node,), Nest("plain", ((node,),)), ("x", "y"),
                      {"x": "float64", "y": "float64"})
    assert kernel_key(spec) == kernel_key(spec)


def test_functions_of_the_index_are_charged_for_the_parallel_decision():
    """Index arithmetic folds; exp of an arange does not: the parallel decision counts it."""
    from stax.codegen.cpu.costs import work
    from stax.loop import Index, Unary

    i = Affine.var(xvar(0))
    index = Binary("mul", Index(i, "float64"), Const(0.5, "float64"), "float64")
    assert work(index) == 0
    assert work(Unary("exp", index, "float64")) > 50
