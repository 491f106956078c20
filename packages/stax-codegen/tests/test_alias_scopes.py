"""Alias scopes (``cpu/alias_scopes.py``): the plan's own buffers are told apart for LLVM and from
the caller's arrays (those share one scope), NumPy steps' results are left unmarked, and a kernel
storing many buffers vectorizes."""

import numpy as np
from llvmlite import ir

from stax.codegen import Executable, generate
from stax.codegen.cpu.alias_scopes import mark_alias_scopes
from stax.codegen.cpu.costs import keep_in_memory
from stax.loop import lower_opgraph


def _function() -> tuple[ir.Function, dict[str, ir.Value]]:
    module = ir.Module("scopes")
    double = ir.DoubleType()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [double.as_pointer()] * 3), "k")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    a, c, x = fn.args
    i = ir.Constant(ir.IntType(64), 1)
    value = b.fadd(b.load(b.gep(a, [i])), b.load(b.gep(x, [i])))
    b.store(value, b.gep(c, [i]))
    b.store(value, b.select(ir.Constant(ir.IntType(1), 1), b.gep(a, [i]), a))
    b.ret_void()
    return fn, {"a": a, "c": c, "c2": c, "x": x}


def _marks(fn: ir.Function) -> list[tuple[str, str | None]]:
    return [(instr.opname, instr.metadata.get("alias.scope") and
             instr.metadata["alias.scope"].operands[0].operands[0].string)
            for instr in fn.blocks[0].instructions
            if isinstance(instr, ir.LoadInstr | ir.StoreInstr)]


def test_owned_buffers_get_a_scope_each_and_the_callers_one():
    fn, pointers = _function()
    mark_alias_scopes(fn, pointers, {"a", "c", "c2"}, {"x"})  # c2: written in place over c
    assert _marks(fn) == [("load", "k.0"), ("load", "k.2"), ("store", "k.1"), ("store", "k.0")]
    text = str(fn.module)
    assert text.count('!"k.buffers"') == 1  # one domain; a, c (with c2) and the caller's
    assert '!"k.3"' not in text


def test_unmarked_buffers_and_a_single_scope_get_nothing():
    fn, pointers = _function()
    mark_alias_scopes(fn, pointers, {"a", "c"})  # x: a NumPy step's result
    assert _marks(fn) == [("load", "k.0"), ("load", None), ("store", "k.1"), ("store", "k.0")]
    fn, pointers = _function()
    mark_alias_scopes(fn, pointers, {"c", "c2"})
    assert "alias.scope" not in str(fn.module)


def test_a_kernel_storing_many_buffers_vectorizes(build):
    """Escape-time iterations: every ``zr``, ``zi`` and ``inside`` is read twice, so each is a
    buffer of the one rows kernel; without scopes LLVM would need a run-time overlap check per
    pair of buffers and runs the rows scalar. (The ``zr`` and ``zi`` are results too: read only in their
    kernel, they would be held and never stored, ``transient.py``.)"""
    rng = np.random.default_rng(1)
    cr = rng.uniform(-2.0, 0.5, (48, 96))
    ci = rng.uniform(-1.25, 1.25, (48, 96))
    b = build(cr=cr, ci=ci)
    zr, zi = b.inputs["cr"], b.inputs["ci"]
    count, kept = None, []
    for _ in range(6):
        inside = b("le", b("add", b("mul", zr, zr), b("mul", zi, zi)), 4.0)
        zr, zi = (b("where", inside, b("add", b("sub", b("mul", zr, zr), b("mul", zi, zi)),
                                       b.inputs["cr"]), zr),
                  b("where", inside, b("add", b("mul", b("mul", zr, 2.0), zi), b.inputs["ci"]),
                    zi))
        step = b("cast", inside, dtype="int32")
        count = step if count is None else b("add", count, step)
        kept += [zr, zi]
    artifact = generate(lower_opgraph(b.program(count, *kept), materialize=keep_in_memory))
    assert len(artifact.kernels) == 1 and len(artifact.kernels[0].args) > 12  # its own buffers
    executable = Executable(artifact)
    got, *_ = executable(cr, ci)
    np.testing.assert_array_equal(got, b.expected(count)[0])
    assert "!alias.scope" in artifact.llvm_ir
    assert "x double>" in executable.module.optimized_ir
