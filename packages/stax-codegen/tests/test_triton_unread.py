"""Buffers a Triton kernel computes that nothing after it reads (no other step, no output, no
check) are not stored (``TritonKernelSpec.unread``, ``source.drop_unread``): a row's mean and
variance in layer norm stay in registers (their two 4-byte stores a row were 2% of its time on an
H200, benchmarks/results/gpu-notes.md run 5). A kernel that reads such a buffer back from memory
keeps its stores, and a buffer another kernel reads is stored. Kernels run in Triton's
interpreter on torch CPU tensors and are checked against NumPy."""

import ast
import os

os.environ["TRITON_INTERPRET"] = "1"  # before Triton reads it: kernels run as NumPy code

import numpy as np
import pytest

triton = pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from stax.codegen import TritonExecutable, generate_triton, triton_target  # noqa: E402
from stax.codegen.triton.launch import LaunchPolicy  # noqa: E402
from stax.codegen.triton.source import UNREAD, drop_unread  # noqa: E402
from stax.ir.passes import decompose_to_basis  # noqa: E402
from stax.loop import lower_opgraph  # noqa: E402

#: blocks small enough that every reduction and row phase here is looped
LOOPED = LaunchPolicy(block_elements=64, max_persistent=8, looped_r0_block=8, columns_xblock=4)
POLICIES = pytest.mark.parametrize("policy", [None, LOOPED], ids=["persistent", "looped"])


def run_cuda(builder, *outputs, policy=None):
    target = triton_target()
    program = builder.program(*outputs)
    decompose_to_basis(program.graph, basis=target.basis)
    loop = lower_opgraph(program, materialize=target.materialize, options=target.loop_options)
    artifact = generate_triton(loop, target, policy=policy)
    got = TritonExecutable(artifact)(*[torch.from_numpy(a.copy()) for a in builder.arrays.values()])
    return [g.numpy() for g in got], artifact


def kernel_sources(artifact):
    """Each kernel's name -> its function's source text."""
    tree = ast.parse(artifact.triton_source)
    return {f.name: ast.get_source_segment(artifact.triton_source, f)
            for f in tree.body if isinstance(f, ast.FunctionDef)}


def layer_norm(b, n):
    """The benchmark's layer norm in the op set: mean, centred values, variance, scaled."""
    x = b.inputs["x"]
    mean = b("truediv", b("sum", x, axis=(1,), keepdims=True, dtype="float32"), float(n))
    d = b("sub", x, mean)
    var = b("truediv", b("sum", b("mul", d, d), axis=(1,), keepdims=True, dtype="float32"), float(n))
    scaled = b("truediv", d, b("sqrt", b("add", var, 1e-5)))
    return b("add", b("mul", scaled, b.inputs["w"]), b.inputs["bias"])


@POLICIES
def test_layer_norm_keeps_its_row_statistics_in_registers(build, policy):
    """One rows kernel; its intermediate buffers (the sums) are stored only where the kernel
    reads them back, never in the persistent form; the bytes it writes are its output's."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((9, 24)).astype(np.float32) * 3 + 1
    w, bias = rng.standard_normal(24).astype(np.float32), rng.standard_normal(24).astype(np.float32)
    b = build(x=x, w=w, bias=bias)
    out = layer_norm(b, 24)
    (got,), artifact = run_cuda(b, out, policy=policy)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=2e-5, atol=2e-6)
    (kernel,) = artifact.kernels
    assert kernel.nest.kind == "rows"
    roles = {buf.name: buf.role for buf in artifact.buffers}
    statistics = [name for name in kernel.computes if roles[name] == "intermediate"]
    assert len(statistics) == 2
    source = kernel_sources(artifact)[kernel.name]
    for name in statistics:
        stored = f"tl.store({name}_ptr" in source
        assert stored == (f"tl.load({name}_ptr" in source), (name, source)
        if policy is None:
            assert not stored, source
    if policy is None:
        assert kernel.bytes_written == got.nbytes


def test_a_buffer_another_kernel_reads_is_stored(build):
    """Row sums a rows kernel divides by, also summed over the rows by a second kernel: stored."""
    x = np.random.default_rng(6).standard_normal((12, 20)).astype(np.float32) + 3
    b = build(x=x)
    sums = b("sum", b.inputs["x"], axis=(1,), keepdims=True, dtype="float32")
    shares = b("truediv", b.inputs["x"], sums)
    total = b("sum", sums, axis=(0,), keepdims=False, dtype="float32")
    (got_shares, got_total), artifact = run_cuda(b, shares, total)
    want_shares, want_total = b.expected(shares, total)
    np.testing.assert_allclose(got_shares, want_shares, rtol=1e-6)
    np.testing.assert_allclose(got_total, want_total, rtol=1e-5)
    sources = kernel_sources(artifact)
    roles = {buf.name: buf.role for buf in artifact.buffers}
    crossing = [(name, k) for k in artifact.kernels for name in k.computes
                if roles.get(name) == "intermediate"
                and any(name in other.args for other in artifact.kernels if other is not k)]
    assert crossing, [(k.name, k.args, k.computes) for k in artifact.kernels]
    for name, k in crossing:
        assert f"tl.store({name}_ptr" in sources[k.name], sources[k.name]


def test_drop_unread_leaves_out_marked_stores_and_keeps_blocks_whole():
    store = f"{UNREAD}buf3{UNREAD}tl.store(buf3_ptr + x0, tmp1, xmask)"
    lines = ["    for r0_offset in range(0, 64, R0_BLOCK):",
             "        # compute buf3 per row",
             f"        {store}",
             "    tmp2 = tmp1 + 1",
             f"    {store}"]
    dropped = "\n".join(drop_unread(lines, set()))
    assert "tl.store" not in dropped and UNREAD not in dropped
    assert "        pass" in dropped  # the loop's only statement was the store
    ast.parse("def k():\n" + dropped)
    kept = drop_unread(lines, {"buf3"})
    assert kept[2] == "        tl.store(buf3_ptr + x0, tmp1, xmask)" and kept[4].endswith("xmask)")
    assert all(UNREAD not in line for line in kept) and "pass" not in "\n".join(kept)
