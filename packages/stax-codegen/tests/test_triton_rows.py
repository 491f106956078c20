"""``rows`` kernels whose phases keep more than the first axis (``triton/rows.py``), run in Triton's
interpreter on torch CPU tensors and checked against NumPy; and compiled ahead of time for sm_90.

- A row is an index of every leading axis the phases keep alike: a pairwise reduction with an
  epilogue (``(x[:, None] - x[None]).sum(-1) ** 2``) is one reduction per (x0, x1), a softmax
  over the last axis of a 4-D array one per (x0, x1, x2), flattened into ``xindex``.
- An axis joins the row only while every read of an earlier phase stays in the row: a softmax
  over the middle axis of a (3, 6, 6) array (the max's kept axes match the division's first two
  by extent only) keeps rows of x0.
- A reduction keeping axes beyond the row (``y.sum(1)`` beside ``y.sum(2)``) loops over them.

Ragged extents (no block is whole), NaN (a max with NaN is NaN), integer and float dtypes,
persistent and looped phases, 32- and 64-bit indices."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"  # before Triton reads it: kernels run as NumPy code

import numpy as np
import pytest

triton = pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from stax.codegen import TritonExecutable, generate_triton, triton_target  # noqa: E402
from stax.codegen.triton import generate as triton_generate  # noqa: E402
from stax.codegen.triton.launch import LaunchPolicy, candidates  # noqa: E402
from stax.codegen.triton.verify import check_source  # noqa: E402
from stax.ir.passes import decompose_to_basis  # noqa: E402
from stax.loop import lower_opgraph  # noqa: E402

#: blocks small enough that every reduction and row phase here is looped
LOOPED = LaunchPolicy(block_elements=64, max_persistent=8, looped_r0_block=8, columns_xblock=4)
POLICIES = pytest.mark.parametrize("policy", [None, LOOPED], ids=["persistent", "looped"])


def as_tensor(a):
    """A torch CPU tensor with ``a``'s values and strides."""
    a = np.asarray(a)
    steps = [s // a.itemsize for s in a.strides]
    flat = np.zeros(1 + sum((n - 1) * s for n, s in zip(a.shape, steps)), a.dtype)
    np.lib.stride_tricks.as_strided(flat, a.shape, a.strides)[...] = a
    return torch.from_numpy(flat).as_strided(a.shape, steps)


def run_cuda(builder, *outputs, policy=None):
    """The CUDA target's pipeline, then the kernels in the interpreter: results, artifact."""
    target = triton_target()
    program = builder.program(*outputs)
    decompose_to_basis(program.graph, basis=target.basis)
    loop = lower_opgraph(program, materialize=target.materialize, options=target.loop_options)
    artifact = generate_triton(loop, target, policy=policy)
    got = TritonExecutable(artifact)(*[as_tensor(a) for a in builder.arrays.values()])
    return [g.numpy() for g in got], artifact


def pairwise(b, x, n, d):
    """``x[:, None, :]`` and ``x[None, :, :]`` of an (n, d) C-ordered input."""
    return (b("view", x, offset=0, strides=(d, 0, 1), shape=(n, n, d)),
            b("view", x, offset=0, strides=(0, d, 1), shape=(n, n, d)))


def sample(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(shape).astype(dtype)
        x.flat[7::23] = np.nan
        return x
    return rng.integers(-9, 10, size=shape).astype(dtype)


def check(got, want, exact):
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want)) if want.dtype.kind == "f" else None
    if exact or want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=2e-6 if want.dtype == np.float32 else 1e-13,
                                   atol=1e-6)


def one_rows_kernel(artifact, xnumel):
    """One kernel, a ``rows`` nest over ``xnumel`` rows; its source passes the allow-list."""
    check_source(artifact.triton_source)
    assert [k.nest.kind for k in artifact.kernels] == ["rows"]
    assert artifact.kernels[0].outer_range == xnumel
    assert f"xnumel = {xnumel}\n" in artifact.triton_source
    return artifact.triton_source


@POLICIES
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_pairwise_reductions_with_an_epilogue_are_rows_of_two_axes(build, policy, dtype):
    """``(x[:, None] - x[None]).sum(-1) ** 2`` and ``(x[:, None] * x[None]).max(-1) + 1`` of a
    (7, 11) array: 49 rows of 11, the epilogue on the reduction's register (never reloaded)."""
    n, d = 7, 11
    x = sample(dtype, (n, d), seed=1)
    b = build(x=x)
    a, c = pairwise(b, b.inputs["x"], n, d)
    acc = "int64" if np.dtype(dtype).kind == "i" else np.dtype(dtype).name
    with np.errstate(all="ignore"):
        s = b("sum", b("sub", a, c), axis=(2,), keepdims=False, dtype=acc)
        square = b("mul", s, s)
        top = b("add", b("max", b("mul", a, c), axis=(2,), keepdims=False), 1)
        got, artifact = run_cuda(b, square, top, policy=policy)
        want = b.expected(square, top)
    source = one_rows_kernel(artifact, n * n)
    assert "x1 = xindex % 7" in source and "x_kept" not in source
    assert ("for r0_offset" in source) == (policy is LOOPED)
    assert "tl.debug_barrier()" not in source  # the epilogues read registers
    if np.dtype(dtype).kind == "f":
        assert np.isnan(want[1]).any() and np.isfinite(want[1]).any()
    check(got[0], want[0], exact=False)
    check(got[1], want[1], exact=True)


@POLICIES
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_softmax_over_the_last_axis_of_4d_is_rows_of_three_axes(build, policy, dtype):
    """Max, exp, sum, division over the last axis of a (3, 4, 5, 13) array: 60 rows."""
    x = sample(dtype, (3, 4, 5, 13), seed=2) * 3
    x[1, 2, 3] = -np.inf
    b = build(x=x)
    with np.errstate(all="ignore"):
        top = b("max", b.inputs["x"], axis=(3,), keepdims=True)
        e = b("exp", b("sub", b.inputs["x"], top))
        out = b("truediv", e, b("sum", e, axis=(3,), keepdims=True, dtype=np.dtype(dtype).name))
        (got,), artifact = run_cuda(b, out, policy=policy)
        want = b.expected(out)[0]
    source = one_rows_kernel(artifact, 60)
    assert "x1 = (xindex // 5) % 4" in source and "x2 = xindex % 5" in source
    assert "x_kept" not in source
    assert np.isnan(want).any() and np.isfinite(want).any()
    check(got, want, exact=False)


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_a_max_over_the_last_axis_of_4d_with_an_epilogue(build, dtype):
    x = sample(dtype, (2, 3, 5, 9), seed=3)
    b = build(x=x)
    with np.errstate(all="ignore"):
        top = b("max", b.inputs["x"], axis=(3,), keepdims=False)
        out = b("sub", b("mul", top, top), top)
        (got,), artifact = run_cuda(b, out)
        want = b.expected(out)[0]
    one_rows_kernel(artifact, 30)
    check(got, want, exact=True)


@POLICIES
def test_a_softmax_over_a_middle_axis_keeps_rows_of_the_first(build, policy):
    """The max over axis 1 of a (3, 6, 6) array keeps (x0, x2); the division reads it at (x0, x2)
    from (x0, x1, x2): the second axes agree in extent, not in meaning, so rows are x0 alone
    (else a program would read maxima another computed) and the max loops over its kept x2."""
    x = sample(np.float64, (3, 6, 6), seed=4)
    b = build(x=x)
    with np.errstate(all="ignore"):
        top = b("max", b.inputs["x"], axis=(1,), keepdims=True)
        e = b("exp", b("sub", b.inputs["x"], top))
        out = b("truediv", e, b("sum", e, axis=(1,), keepdims=True, dtype="float64"))
        (got,), artifact = run_cuda(b, out, policy=policy)
        want = b.expected(out)[0]
    source = one_rows_kernel(artifact, 3)
    assert "for x_kept in range(0, 6):" in source
    check(got, want, exact=False)


@POLICIES
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_rows_of_two_axes_with_a_kept_loop_then_a_reduction_of_it(build, policy, dtype):
    """``s = x.sum(-1)`` and ``s.max(-1)`` of a (3, 4, 5, 6) array: rows of (x0, x1), the sum
    looping over its kept x2, the max reading the row's sums back after a barrier."""
    x = sample(dtype, (3, 4, 5, 6), seed=6)
    if np.dtype(dtype).kind == "f":  # one NaN: one row's max
        x[np.isnan(x)] = 0.5
        x[1, 2, 3, 4] = np.nan
    b = build(x=x)
    acc = "int64" if np.dtype(dtype).kind == "i" else np.dtype(dtype).name
    with np.errstate(all="ignore"):
        s = b("sum", b.inputs["x"], axis=(3,), keepdims=False, dtype=acc)
        top = b("max", s, axis=(2,), keepdims=False)
        got, artifact = run_cuda(b, s, top, policy=policy)
        want = b.expected(s, top)
    source = one_rows_kernel(artifact, 12)
    assert "for x_kept in range(0, 5):" in source and "tl.debug_barrier()" in source
    if np.dtype(dtype).kind == "f":
        assert np.isnan(want[1]).any() and np.isfinite(want[1]).any()
    check(got[0], want[0], exact=False)
    check(got[1], want[1], exact=np.dtype(dtype).kind != "f")


@POLICIES
def test_layer_norm_over_the_last_axis_of_3d(build, policy):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 5, 22)).astype(np.float32)
    w, bias = rng.standard_normal(22).astype(np.float32), rng.standard_normal(22).astype(np.float32)
    b = build(x=x, w=w, bias=bias)
    out = b("layer_norm", b.inputs["x"], b.inputs["w"], b.inputs["bias"], normalized_ndim=1,
            eps=1e-5)
    (got,), artifact = run_cuda(b, out, policy=policy)
    one_rows_kernel(artifact, 15)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=1e-5, atol=1e-5)


def exp_then_product(b):
    """``e = exp(x)`` (5, 6) stored, then ``(e[:, :, None] * w[None]).sum(1)`` (a reduction
    keeping w's axis, 4, beyond the row, reading e's row from registers) and ``e + 1``."""
    e = b("exp", b.inputs["x"])
    product = b("mul", b("view", e, offset=0, strides=(6, 1, 0), shape=(5, 6, 4)),
                b("view", b.inputs["w"], offset=0, strides=(0, 4, 1), shape=(5, 6, 4)))
    return b("sum", product, axis=(1,), keepdims=False, dtype="float64"), b("add", e, 1.0)


@POLICIES
def test_a_kept_loop_after_an_element_wise_phase(build, policy):
    """The element-wise phase defines x1 as a block; the loop's kept index is spelled apart
    (``x1_kept``): a loop may not reassign a block to a scalar (Triton's compiler refuses a
    carried variable whose type changes; the AOT test compiles this case)."""
    rng = np.random.default_rng(8)
    b = build(x=rng.standard_normal((5, 6)), w=rng.standard_normal((6, 4)))
    outs = exp_then_product(b)
    got, artifact = run_cuda(b, *outs, policy=policy)
    source = one_rows_kernel(artifact, 5)
    assert "x1_kept = x_kept" in source and "    x1 = r0_index" in source
    for g, w in zip(got, b.expected(*outs)):
        check(g, w, exact=False)


def permuted_sums(build, dtype, policy, shape=(4, 5, 7)):
    """``y.sum(1)``, ``y.sum(2)`` and ``y.max(1)`` of ``y = x.transpose(2, 0, 1)``: rows of x0
    (x's last, contiguous axis), each reduction looping over the axis it keeps."""
    y = sample(dtype, shape, seed=5).transpose(2, 0, 1)
    b = build(y=y)
    acc = "int64" if np.dtype(dtype).kind == "i" else np.dtype(dtype).name
    with np.errstate(all="ignore"):
        outs = [b("sum", b.inputs["y"], axis=(1,), keepdims=False, dtype=acc),
                b("sum", b.inputs["y"], axis=(2,), keepdims=False, dtype=acc),
                b("max", b.inputs["y"], axis=(1,), keepdims=False)]
        got, artifact = run_cuda(b, *outs, policy=policy)
        want = b.expected(*outs)
    return got, want, artifact


@POLICIES
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_reductions_keeping_axes_beyond_the_row_loop_over_them(build, policy, dtype):
    got, want, artifact = permuted_sums(build, dtype, policy)
    check_source(artifact.triton_source)
    rows = [k for k in artifact.kernels if k.nest.kind == "rows"]
    assert rows and all(k.outer_range == 7 for k in rows)
    assert "for x_kept in range(0, 5):" in artifact.triton_source
    if np.dtype(dtype).kind == "f":
        assert np.isnan(want[2]).any() and np.isfinite(want[2]).any()
    for g, w, exact in zip(got, want, (False, False, True)):
        check(g, w, exact)


def test_a_kept_loop_spreads_its_rows_over_programs(build):
    """Its rows are serial work each (the loop over kept axes): fewer rows a program until the
    programs would cover the GPU twice, so 7 rows are 7 programs; the autotuner's first
    candidate is the same launch (``kept`` kind)."""
    got, want, artifact = permuted_sums(build, np.float64, None)
    launch = artifact.kernels[0].launch
    assert launch.grid == (7,) and launch.constants["XBLOCK"] == 1
    for g, w, exact in zip(got, want, (False, False, True)):
        check(g, w, exact)
    y = sample(np.float64, (4, 5, 7), seed=5).transpose(2, 0, 1)
    b = build(y=y)
    out = b("sum", b.inputs["y"], axis=(1,), keepdims=False, dtype="float64")
    top = b("max", b.inputs["y"], axis=(2,), keepdims=False)
    target = triton_target()
    program = b.program(out, top)
    decompose_to_basis(program.graph, basis=target.basis)
    loop = lower_opgraph(program, materialize=target.materialize, options=target.loop_options)
    ((_, xnumel, inner, kind, itemsize),) = triton_generate.kernel_shapes(loop)
    assert (xnumel, kind) == (7, "kept")
    first = candidates(xnumel, inner, kind, LaunchPolicy(), itemsize=itemsize)[0]
    assert (first.xblock, first.r0_block) == (1, 8)
    assert candidates(xnumel, inner, "rows", LaunchPolicy(), itemsize=itemsize)[0].xblock == 8
    _, artifact = run_cuda(b, out, top)
    assert artifact.kernels[0].launch.constants == {"XBLOCK": 1, "R0_BLOCK": 8}
    # rows without kept loops keep the heuristic's block (49 rows of 11: 32 a program)
    x = sample(np.float32, (7, 11), seed=1)
    b = build(x=x)
    a, c = pairwise(b, b.inputs["x"], 7, 11)
    s = b("sum", b("mul", a, c), axis=(2,), keepdims=False, dtype="float32")
    _, artifact = run_cuda(b, b("mul", s, s))
    assert artifact.kernels[0].launch.constants == {"XBLOCK": 64, "R0_BLOCK": 16}


def test_64_bit_indices_of_a_kept_loop(build, monkeypatch):
    """Where indices need 64 bits, the kept loop's counter (``range``: 32 bits) is widened
    before it is scaled."""
    monkeypatch.setattr(triton_generate, "index_width", lambda node: 64)
    got, want, artifact = permuted_sums(build, np.float64, LOOPED)
    assert "xk0 = tl.cast(x_kept, tl.int64)" in artifact.triton_source
    assert "tl.program_id(0).to(tl.int64)" in artifact.triton_source
    for g, w, exact in zip(got, want, (False, False, True)):
        check(g, w, exact)


AOT = textwrap.dedent("""
    import json, re, sys
    sys.path.insert(0, sys.argv[1])
    import os
    import numpy as np
    from conftest import OpBuilder
    os.environ.pop("TRITON_INTERPRET", None)  # conftest sets it for the in-process tests
    from stax.codegen import generate_triton, triton_target
    from stax.codegen.triton import generate as triton_generate
    from stax.codegen.triton.aot import compile_ahead
    from stax.codegen.triton.launch import LaunchPolicy
    from stax.ir.passes import decompose_to_basis
    from stax.loop import lower_opgraph

    def artifact(b, *outputs, policy=None):
        target = triton_target()
        program = b.program(*outputs)
        decompose_to_basis(program.graph, basis=target.basis)
        loop = lower_opgraph(program, materialize=target.materialize, options=target.loop_options)
        return generate_triton(loop, target, policy=policy)

    looped = LaunchPolicy(block_elements=64, max_persistent=8, looped_r0_block=8, columns_xblock=4)
    cases = {}
    for name, policy in (("persistent", None), ("looped", looped)):
        for dtype in ("float32", "int32"):
            b = OpBuilder(x=np.ones((7, 11), dtype))
            x = b.inputs["x"]
            a = b("view", x, offset=0, strides=(11, 0, 1), shape=(7, 7, 11))
            c = b("view", x, offset=0, strides=(0, 11, 1), shape=(7, 7, 11))
            s = b("sum", b("sub", a, c), axis=(2,), keepdims=False,
                  dtype="int64" if dtype == "int32" else dtype)
            top = b("max", b("mul", a, c), axis=(2,), keepdims=False)
            cases[f"pairwise_{dtype}_{name}"] = artifact(b, b("mul", s, s), b("add", top, 1),
                                                          policy=policy)
        b = OpBuilder(x=np.ones((3, 4, 5, 13), np.float32))
        top = b("max", b.inputs["x"], axis=(3,), keepdims=True)
        e = b("exp", b("sub", b.inputs["x"], top))
        cases[f"softmax4d_{name}"] = artifact(b, b("truediv", e, b("sum", e, axis=(3,),
                                              keepdims=True, dtype="float32")), policy=policy)
        b = OpBuilder(x=np.ones((3, 4, 5, 6), np.float32))
        s = b("sum", b.inputs["x"], axis=(3,), keepdims=False, dtype="float32")
        cases[f"rows2_kept_{name}"] = artifact(b, s, b("max", s, axis=(2,), keepdims=False),
                                               policy=policy)
        b = OpBuilder(x=np.ones((3, 5, 22), np.float32), w=np.ones(22, np.float32),
                      bias=np.ones(22, np.float32))
        cases[f"layer_norm3d_{name}"] = artifact(b, b("layer_norm", b.inputs["x"], b.inputs["w"],
                                                 b.inputs["bias"], normalized_ndim=1, eps=1e-5),
                                                 policy=policy)
        b = OpBuilder(x=np.ones((5, 6)), w=np.ones((6, 4)))
        e = b("exp", b.inputs["x"])
        product = b("mul", b("view", e, offset=0, strides=(6, 1, 0), shape=(5, 6, 4)),
                    b("view", b.inputs["w"], offset=0, strides=(0, 4, 1), shape=(5, 6, 4)))
        cases[f"exp_then_kept_{name}"] = artifact(b, b("sum", product, axis=(1,), keepdims=False,
                                                       dtype="float64"), b("add", e, 1.0),
                                                  policy=policy)
        for bits in (32, 64):
            width = triton_generate.index_width
            if bits == 64:
                triton_generate.index_width = lambda node: 64
            b = OpBuilder(y=np.ones((4, 5, 7)).transpose(2, 0, 1))
            y = b.inputs["y"]
            cases[f"kept_loop_{bits}_{name}"] = artifact(
                b, b("sum", y, axis=(1,), keepdims=False, dtype="float64"),
                b("sum", y, axis=(2,), keepdims=False, dtype="float64"),
                b("max", y, axis=(1,), keepdims=False), policy=policy)
            triton_generate.index_width = width
    report = {}
    for name, a in cases.items():
        for kernel, asm in compile_ahead(a).items():
            report[f"{name}.{kernel}"] = {
                "cubin": len(asm.get("cubin", b"")),
                "target": re.findall(r"\\.target (\\w+)", asm["ptx"]),
                "kept": "x_kept" in a.triton_source, "wide": "tl.cast(x_kept" in a.triton_source,
                "bits": a.kernels[-1].index_bits}
    print(json.dumps(report))
""")


@pytest.mark.slow
def test_rows_of_several_axes_and_kept_loops_compile_for_sm90():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", AOT, str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for policy in ("persistent", "looped"):
        assert {f"pairwise_float32_{policy}.kernel_0", f"pairwise_int32_{policy}.kernel_0",
                f"softmax4d_{policy}.kernel_0", f"kept_loop_32_{policy}.kernel_0",
                f"kept_loop_64_{policy}.kernel_0", f"rows2_kept_{policy}.kernel_0",
                f"layer_norm3d_{policy}.kernel_0", f"exp_then_kept_{policy}.kernel_0"} <= set(report)
        assert report[f"rows2_kept_{policy}.kernel_0"]["kept"]
        assert report[f"kept_loop_32_{policy}.kernel_0"]["kept"]
        assert report[f"kept_loop_64_{policy}.kernel_0"]["wide"]
        assert not report[f"kept_loop_32_{policy}.kernel_0"]["wide"]
        assert report[f"pairwise_float32_{policy}.kernel_0"]["bits"] == 32
    for name, found in report.items():
        assert found["cubin"] > 0 and found["target"] == ["sm_90a"], name
