"""The CUDA target and its Triton source, without running anything (neither Triton nor torch is
needed): the target's basis follows its emitters, the artifact records the plan's nests and
launches, the source takes the shape the plan says (one persistent reduction for example 1.1, a
loop when a row does not fit a block), and what the emitter cannot make yet is refused by name."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import stax.codegen
from stax.codegen import (
    KernelArtifact,
    Target,
    cpu_target,
    generate,
    generate_triton,
    target_for,
    triton_target,
)
from stax.codegen.triton import registry
from stax.codegen.triton import target as target_module
from stax.codegen.triton.launch import LaunchPolicy
from stax.codegen.triton.target import NEEDS_NEST, triton_basis
from stax.ir import tree_flatten
from stax.ir.passes import decompose_to_basis
from stax.loop import (
    LOWERINGS,
    OPERATORS,
    Affine,
    Binary,
    ComputedBuffer,
    Const,
    InputBuffer,
    Load,
    LoopProgram,
    OutputRef,
    Pointwise,
    lower_opgraph,
)

#: loop operators the Triton emitter has no emitter for yet (their ops are NumPy steps):
#: float // and % (an exact fmod), gcd and lcm (loops of their own)
NOT_YET = {"py_floordiv", "py_mod", "gcd", "lcm"}


def cuda_program(builder, *outputs):
    target = triton_target()
    program = builder.program(*outputs)
    decompose_to_basis(program.graph, basis=target.basis)
    return lower_opgraph(program, materialize=target.materialize, options=target.loop_options)


def test_importing_stax_codegen_imports_neither_triton_nor_torch():
    script = textwrap.dedent("""
        import importlib, pkgutil, sys
        import stax.codegen
        from stax.codegen import target_for
        for m in pkgutil.walk_packages(stax.codegen.triton.__path__, "stax.codegen.triton."):
            importlib.import_module(m.name)
        target_for("cuda")
        print(sorted(m for m in ("triton", "torch") if m in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_the_cuda_target():
    target = triton_target()
    assert target is target_for("cuda") and isinstance(target, Target)
    assert target.device == "cuda"
    assert target.identity.triple == "nvptx64-nvidia-cuda"
    assert target.cache_key[-3:] == ("nvptx64-nvidia-cuda", "generic", "")
    assert target.cache_key != cpu_target().cache_key
    assert {"float32", "float64", "int32", "bool", "uint64"} <= target.loop_dtypes
    options = target.loop_options
    assert options.trig_reduction_limit.float64 is None  # libdevice reduces every argument
    assert options.fmod_exact_quotient.float32 is None  # float // and % are NumPy steps
    assert {"triton_target", "generate_triton", "TritonExecutable"} <= set(stax.codegen.__all__)


def test_operator_emitters_cover_all_but_the_documented_gaps():
    missing = {name for name in OPERATORS if not registry.emits(name)}
    assert missing == NOT_YET


def test_the_basis_is_what_the_emitters_emit(monkeypatch):
    basis = triton_basis()
    assert basis == triton_target().basis
    assert basis == {op for op in LOWERINGS if op not in NOT_YET}
    monkeypatch.delitem(registry.UNARY, "tanh")
    assert "tanh" not in triton_basis()
    # an op whose lowering needs a nest the emitter lacks leaves the basis with it
    monkeypatch.setattr(target_module, "NESTS", ("plain", "tiled", "columns", "rows"))
    assert set(NEEDS_NEST) & triton_basis() == set()


def test_an_op_outside_the_basis_is_a_numpy_step(build):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    b = build(x=x)
    out = b("cumsum", b("gcd", b.inputs["x"], 4), axis=1, dtype="int64")
    artifact = generate(cuda_program(b, out), target=triton_target())
    assert [e.target for e in artifact.externs] == ["numpy.gcd"]
    assert [k.nest.kind for k in artifact.kernels] == ["scan"]


def test_what_the_emitter_cannot_make_is_refused_by_name(build, monkeypatch):
    """An operator without an emitter (lowered for the CPU, whose basis has it; or an emitter
    removed) raises NotImplementedError naming it, so a caller can run the program another way."""
    b = build(x=np.arange(12, dtype=np.int32))
    cpu_lowered = lower_opgraph(b.program(b("gcd", b.inputs["x"], 4)))
    with pytest.raises(NotImplementedError, match="no Triton emitter for the binary operator 'gcd'"):
        generate(cpu_lowered, target=triton_target())
    x = np.ones((3, 4), np.float32)
    b = build(x=x)
    program = cuda_program(b, b("tanh", b.inputs["x"]))
    monkeypatch.delitem(registry.UNARY, "tanh")
    with pytest.raises(NotImplementedError, match="no Triton emitter for the unary operator 'tanh'"):
        generate(program, target=triton_target())


def example_1_1(build, shape):
    x = np.ones(shape, np.float32)
    b = build(x=x, w=x.copy())
    out = b("sum", b("mul", b("maximum", b("add", b.inputs["x"], b.inputs["w"]), 0), 2),
            axis=(1,), keepdims=False, dtype="float32")
    return cuda_program(b, out)


def test_example_1_1_is_one_persistent_reduction(build):
    """Listing 1.2's shape: a 2-D block of XBLOCK rows by the whole row, reduced once, no loop;
    masked at the ends of a ragged shape (the masks of whole blocks are constants Triton folds
    away)."""
    artifact = generate(example_1_1(build, (64, 128)), target=triton_target())
    (kernel,) = artifact.kernels
    assert kernel.nest.kind == "plain" and kernel.index_bits == 32
    launch = kernel.launch
    assert launch.constants == {"XBLOCK": 32, "R0_BLOCK": 128} and launch.grid == (2,)
    source = artifact.triton_source
    assert source.count("@triton.jit") == 1
    for line in ["def kernel_0(x_ptr, w_ptr, buf0_ptr, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):",
                 "xindex = xoffset + tl.arange(0, XBLOCK)[:, None]",
                 "xmask = tl.full([XBLOCK, 1], True, tl.int1)",
                 "r0_mask = tl.full([1, R0_BLOCK], True, tl.int1)",
                 "tl.load(x_ptr + (r0 + 128 * x0), mask, other=0)", "tl.store(buf0_ptr + (x0), red"]:
        assert line in source, line
    assert "for r0_offset" not in source and "tl.sum(" in source
    compile(source, "<kernels>", "exec")  # valid Python
    ragged = generate(example_1_1(build, (60, 100)), target=triton_target()).triton_source
    assert "xmask = xindex < xnumel" in ragged and "r0_mask = r0_index < 100" in ragged


def test_a_row_that_does_not_fit_a_block_is_looped(build):
    policy = LaunchPolicy(max_persistent=64, looped_r0_block=32)
    artifact = generate_triton(example_1_1(build, (8, 100)), policy=policy)
    source = artifact.triton_source
    assert "for r0_offset in range(0, 100, R0_BLOCK):" in source
    assert "acc" in source and "tl.sum(acc" in source
    assert artifact.kernels[0].launch.constants["R0_BLOCK"] == 32


def test_the_document_records_source_and_launches(build):
    artifact = generate(example_1_1(build, (16, 8)), target=triton_target())
    doc = artifact.to_json()
    assert doc["schema"] == "stax.kernels/1.5" and doc["llvm_ir"] == ""
    assert doc["target"]["device"] == "cuda"
    assert doc["kernels"][0]["launch"] == {"grid": [1], "blocks": {"XBLOCK": 16, "R0_BLOCK": 8},
                                           "num_warps": 1}
    again = KernelArtifact.from_json(json.loads(json.dumps(doc)))
    assert again.to_json() == doc and again.triton_source == artifact.triton_source
    assert "grid (1,), XBLOCK=16, R0_BLOCK=8, 1 warps" in str(artifact)
    cpu = generate(lower_opgraph(build(x=np.ones(4, np.float32)).program()), target=cpu_target())
    assert cpu.to_json()["schema"] == "stax.kernels/1.4" and "triton_source" not in cpu.to_json()


def test_a_large_kernel_indexes_in_64_bits():
    """Indices that may pass 2**31 (a masked lane's included) are int64 from the program id
    on; a small kernel's are int32."""
    def program(n):
        x = InputBuffer("x", (n,), "float32", (1,))
        body = Binary("add", Load("x", Affine.var("x0"), "float32"), Const(1.0, "float32"),
                      "float32")
        out = ComputedBuffer("y", (n,), "float32", (1,), Affine.var("x0"), Pointwise((n,), body))
        return LoopProgram("big", [x], ["x"], tree_flatten(((0,), {}))[1], [out],
                           [OutputRef("y")], tree_flatten((0,))[1])
    big = generate_triton(program((1 << 31) - 100))
    assert big.kernels[0].index_bits == 64
    assert "xoffset = tl.program_id(0).to(tl.int64) * XBLOCK" in big.triton_source
    small = generate_triton(program(1000))
    assert small.kernels[0].index_bits == 32 and "tl.int64" not in small.triton_source


def test_columns_nests_take_wide_rows(build):
    """x.sum(0) of a C matrix is a columns nest: the kept axis, contiguous, runs along XBLOCK; with
    few columns the blocks narrow to 16 (two sectors of each row) so that more programs run, and
    each step of the loop reads 8192 elements (R0_BLOCK rows). (1009 rows, a prime, cannot be
    cut into equal slices: the reduction is not split across programs, ``split.py``.)"""
    b = build(x=np.ones((1009, 256), np.float32))
    artifact = generate(cuda_program(b, b("sum", b.inputs["x"], axis=(0,), keepdims=False,
                                          dtype="float32")), target=triton_target())
    (kernel,) = artifact.kernels
    assert kernel.nest.kind == "columns"
    assert kernel.launch.constants == {"XBLOCK": 16, "R0_BLOCK": 512}
    assert "for r0_offset in range(0, 1009, R0_BLOCK):" in artifact.triton_source
    assert "tl.load(x_ptr + (256 * r0 + x0)" in artifact.triton_source


def test_a_float_is_negated_by_a_multiplication(build):
    """Triton 3.6 lowers ``-x`` to ``0 - x``, which is +0.0 for +0.0 (measured on an H200; its
    interpreter and Triton 3.9 negate): the emitter writes ``x * -1``, exact with every sign in
    every version."""
    b = build(x=np.ones(8, np.float32), i=np.ones(8, np.int32))
    source = generate(cuda_program(b, b("neg", b.inputs["x"]), b("neg", b.inputs["i"])),
                      target=triton_target()).triton_source
    assert "tmp0 * tl.full([], -1.0, tl.float32)" in source
    assert "tl.full([], 0, tl.int32) - " in source
