"""The CPU backend as a ``Target`` (issue 11 item 1): made on first use (importing stax.codegen
asks LLVM nothing about the host), one object the pipeline takes, and modules without import
cycles."""

import subprocess
import sys
import textwrap
from dataclasses import replace

import llvmlite
import llvmlite.binding as llvm
import numpy as np
import pytest

import stax.codegen
from stax.codegen import (
    CODEGEN_VERSION,
    CodegenOptions,
    Identity,
    Target,
    cpu_target,
    generate,
    target_for,
)
from stax.codegen.cpu import registry, vmath64
from stax.codegen.cpu.costs import keep_in_memory, work
from stax.codegen.cpu.host import vector_choice
from stax.codegen.cpu.target import cpu_basis
from stax.codegen.cpu.vector_width import with_width
from stax.codegen.cpu.vmath.trig32 import TRIG32_LIMIT
from stax.codegen.cpu.vmath64 import dd
from stax.ir.structure import import_cycles, import_graph
from stax.loop import LOWERINGS, LoopProgram, lower_opgraph


def test_no_import_cycle_between_modules_of_stax_codegen():
    graph = import_graph("stax.codegen", lazy=True)  # imports inside functions count too
    assert "stax.codegen.cpu.jit" in graph and len(graph) > 20  # the walk found the package
    assert import_cycles(graph) == []


def test_importing_stax_codegen_asks_llvm_nothing_about_the_host():
    """Every module of stax.codegen imported with LLVM's host queries refusing: the host is
    probed on first use of a target, never at import."""
    script = textwrap.dedent("""
        import importlib, pkgutil
        import llvmlite.binding as llvm
        def refuse(*args, **kwargs):
            raise AssertionError("the host was probed at import")
        for name in ("get_process_triple", "get_host_cpu_name", "get_host_cpu_features",
                     "initialize_native_target", "initialize_native_asmprinter"):
            setattr(llvm, name, refuse)
        import stax.codegen
        names = [m.name for m in pkgutil.walk_packages(stax.codegen.__path__, "stax.codegen.")]
        for name in names:
            importlib.import_module(name)
        print(len(names))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 20


def test_the_cpu_target_is_this_host():
    target = cpu_target()
    assert target is cpu_target() is target_for("cpu")  # probed once
    assert target.device == "cpu"
    features = llvm.get_host_cpu_features().flatten()
    bits, _ = vector_choice()  # the tuned width joins the features (vector_width.py)
    assert target.identity == Identity("cpu", llvm.get_process_triple(), llvm.get_host_cpu_name(),
                                       with_width(features, bits) if bits else features)
    assert target.identity.fma == ("+fma" in llvm.get_host_cpu_features().flatten().split(","))
    # the compiler: llvmlite and the LLVM options every module is optimized with
    from stax.codegen.cpu.host import LLVM_OPTIONS
    # and where kernels are split over threads (parallel_work.py): their plans depend on it
    assert target.cache_key == (CODEGEN_VERSION, " ".join((llvmlite.__version__, *LLVM_OPTIONS)),
                                f"parallel {target.parallel_work}", *target.identity.key())
    assert target.basis == cpu_basis() == frozenset(LOWERINGS)  # every operator has an emitter
    assert {"float32", "float64", "int64", "bool"} <= target.loop_dtypes
    assert "float16" not in target.loop_dtypes
    assert target.materialize is keep_in_memory and target.element_cost is work


def test_the_basis_is_what_the_emitter_emits(monkeypatch):
    """An op that is a loop operator leaves the CPU's basis with its emitter (a GPU target's
    basis is derived the same way from its own emitters)."""
    monkeypatch.delitem(registry.BINARY, "hypot")
    monkeypatch.delitem(registry.UNARY, "cbrt")
    basis = cpu_basis()
    assert "hypot" not in basis and "cbrt" not in basis
    assert basis == frozenset(LOWERINGS) - {"hypot", "cbrt"}
    assert "hypot" not in replace(cpu_target(), basis=basis).loop_options.ops


def test_the_cpu_limits_are_its_kernels():
    limits = cpu_target().limits
    assert dict(limits.trig_reduction) == {"float32": TRIG32_LIMIT, "float64": vmath64.TRIG_LIMIT}
    assert TRIG32_LIMIT == vmath64.TRIG_LIMIT == 2.0 ** 23 * np.pi / 2
    assert limits.fmod_limit("float32") == 2.0 ** 22 and limits.fmod_limit("float64") == 2.0 ** 51
    with pytest.raises(KeyError):
        limits.fmod_limit("int32")


def test_identity_features():
    avx512 = Identity("cpu", "x86_64-unknown-linux-gnu", "skx", "+sse2,+avx,+avx2,+fma,+avx512f")
    avx2 = Identity("cpu", "x86_64-unknown-linux-gnu", "haswell", "+sse2,+avx,+avx2,+fma,-avx512f")
    old = Identity("cpu", "x86_64-unknown-linux-gnu", "core2", "+sse2,-avx,-fma")
    arm = Identity("cpu", "aarch64-unknown-linux-gnu", "neoverse-n1", "+neon,+fp-armv8")
    assert [i.vector_bits for i in (avx512, avx2, old, arm)] == [512, 256, 128, 128]
    assert [i.fma for i in (avx512, avx2, old)] == [True, True, False]
    assert Identity("cpu", "riscv64", "generic", "").vector_bits == 0
    assert avx2.to_json() == {"device": "cpu", "triple": "x86_64-unknown-linux-gnu",
                              "cpu": "haswell", "features": "+sse2,+avx,+avx2,+fma,-avx512f"}
    hash(cpu_target())  # frozen and hashable


def test_unknown_device_is_refused():
    with pytest.raises(ValueError, match="no target for device 'tpu'; known devices: cpu, cuda"):
        target_for("tpu")


def exp_program(build, n: int) -> LoopProgram:
    builder = build(x=np.ones((4, n // 4), np.float32))
    return lower_opgraph(builder.program(builder("exp", builder.inputs["x"])))


def test_generate_takes_the_target_and_its_cost_model(build):
    program = exp_program(build, 1 << 12)
    options = CodegenOptions(parallel_threshold=1 << 20)
    default = generate(program, options)
    assert default.target == {**cpu_target().identity.to_json(), "parallel_work": 1 << 20}
    assert default.codegen_version == CODEGEN_VERSION
    assert not default.kernels[0].parallel  # 4096 elements of exp: cheap
    dear = replace(cpu_target(), element_cost=lambda expr: 1 << 10)
    planned = generate(program, options, target=dear)
    assert planned.kernels[0].parallel  # the target's cost model decided
    assert planned.llvm_ir == default.llvm_ir


def test_generate_refuses_a_target_it_cannot_emit_for(build):
    program = exp_program(build, 8)
    other = replace(cpu_target(), identity=replace(cpu_target().identity, cpu="not-this-cpu"))
    with pytest.raises(ValueError, match="makes code for this host"):
        generate(program, target=other)
    gpu = replace(cpu_target(), identity=Identity("rocm", "amdgcn-amd-amdhsa", "gfx942", ""))
    with pytest.raises(ValueError, match="no emitter for device 'rocm'"):
        generate(program, target=gpu)


def test_target_is_a_public_name():
    assert stax.codegen.Target is Target
    assert {"Target", "Identity", "NumericLimits", "DiskCache", "cpu_target", "target_for",
            "CODEGEN_VERSION"} <= set(stax.codegen.__all__)


def test_exact_products_follow_the_hosts_fma(build, monkeypatch):
    """float64 kernels take FMA's exact products where the host has it (asked when a kernel is
    built, not at import), Dekker's splitting otherwise."""
    def sin_ir() -> str:
        builder = build(x=np.ones(8))
        return generate(lower_opgraph(builder.program(builder("sin", builder.inputs["x"])))).llvm_ir

    assert dd.has_fma() == cpu_target().identity.fma
    assert ('@"llvm.fma.f64"' in sin_ir()) == cpu_target().identity.fma
    monkeypatch.setattr(dd, "has_fma", lambda: False)
    assert '@"llvm.fma.f64"' not in sin_ir()


def test_the_loop_layers_defaults_are_the_cpu_targets_options():
    """The runtime lowers with ``cpu_target().loop_options``; code that calls the layers directly
    (``lower_opgraph`` then ``generate``) gets the loop layer's defaults, which must be the same
    checks, or such kernels would run past the CPU's trig and fmod limits unchecked."""
    from stax.loop.options import DEFAULT_OPTIONS

    options = cpu_target().loop_options
    assert options.ops == frozenset(LOWERINGS)  # every op: the defaults' None
    assert replace(options, ops=None) == DEFAULT_OPTIONS
