import re
from dataclasses import replace

import numpy as np
import pytest

from stax.codegen import Executable, generate, load_artifact
from stax.loop import load_loopir

FLOATS = [np.float32, np.float64]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def reference(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def example(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * 10).astype(dtype) for _ in range(2)]


def test_example_1_1_is_one_kernel_without_intermediates(loopir_doc_path):
    artifact = generate(load_loopir(loopir_doc_path))
    assert len(artifact.kernels) == 1
    assert artifact.intermediates == []
    assert [b.role for b in artifact.buffers] == ["input", "input", "output", "events"]
    (kernel,) = artifact.kernels
    assert kernel.bytes_read == 2 * 64 * 128 * 4 and kernel.bytes_written == 64 * 4
    x, w = example((64, 128))
    (out,) = Executable(artifact)(x, w)
    np.testing.assert_allclose(out, reference(x, w), rtol=1e-5, atol=1e-4)


def test_only_reassoc_on_the_accumulation(loopir_doc_path):
    artifact = generate(load_loopir(loopir_doc_path))
    flags = re.findall(r"= f(?:add|sub|mul|div) ((?:[a-z]+ )*)float", artifact.llvm_ir)
    # the user's add and mul (and finiteness tests' v - v where the CPU's flags are not read,
    # ``fpevents``): no flags; the accumulation: reassoc
    assert sorted(set(f.strip() for f in flags)) == ["", "reassoc"]
    assert [f.strip() for f in flags].count("reassoc") == 1
    assert not re.search(r"\b(fast|nnan|ninf|nsz)\b", artifact.llvm_ir)


def test_inner_loop_is_vectorized(loopir_doc_path):
    executable = Executable(generate(load_loopir(loopir_doc_path)))
    assert re.search(r"<\d+ x float>", executable.module.optimized_ir)


def test_precise_kernels_are_vectorized_too(loopir_doc_path):
    """The kernels with exact floating-point checks (``cpu/fpevents.py``) run whenever a call
    meets a non-finite value; their sum stays a reduction LLVM widens."""
    artifact = generate(load_loopir(loopir_doc_path))
    precise = replace(artifact, llvm_ir=artifact.precise_ir, precise_ir=None)
    assert re.search(r"fadd reassoc <\d+ x float>", Executable(precise).module.optimized_ir)


def test_artifact_round_trip_and_reload(loopir_doc_path):
    artifact = generate(load_loopir(loopir_doc_path))
    doc = artifact.to_json()
    assert doc["schema"] == "stax.kernels/1.4"
    again = load_artifact(doc)
    assert again.to_json() == doc
    x, w = example((64, 128), seed=3)
    np.testing.assert_array_equal(Executable(again)(x, w)[0], Executable(artifact)(x, w)[0])


@pytest.mark.parametrize("shape", [(1, 1), (1, 128), (7, 3), (17, 1023), (64, 129), (3, 4097)])
@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.uint8, np.int64])
def test_example_1_1_shapes_and_dtypes(shape, dtype, build, run):
    x, w = example(shape, dtype)
    b = build(x=x, w=w)
    out = b("sum", b("mul", b("maximum", b("add", b.inputs["x"], b.inputs["w"]), 0), 2),
            axis=(1,), keepdims=False, dtype=np.dtype(dtype).name if dtype in FLOATS else "int64")
    (got,), _ = run(b, out)
    want = b.expected(out)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype in FLOATS:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(x).sum() / x.shape[0])
    else:
        np.testing.assert_array_equal(got, want)


SPECIALS = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-40, 3e38])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "maximum", "minimum"])
def test_pointwise_specials_bit_exact(dtype, op, build, run):
    x = np.repeat(SPECIALS, SPECIALS.size).astype(dtype)
    w = np.tile(SPECIALS, SPECIALS.size).astype(dtype)
    b = build(x=x, w=w)
    with np.errstate(all="ignore"):
        out = b(op, b.inputs["x"], b.inputs["w"])
        (got,), _ = run(b, out)
    want = b.expected(out)[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok].view(np.uint8), want[ok].view(np.uint8))


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "minimum"])
def test_integer_wraparound_exact(dtype, op, build, run):
    info = np.iinfo(dtype)
    edge = np.array([info.min, info.max, 0, 1, info.max // 2 + 1, info.min + 1], dtype=dtype)
    x, w = np.repeat(edge, edge.size), np.tile(edge, edge.size)
    b = build(x=x, w=w)
    with np.errstate(all="ignore"):
        out = b(op, b.inputs["x"], b.inputs["w"])
    (got,), _ = run(b, out)
    np.testing.assert_array_equal(got, b.expected(out)[0])


def test_mixed_dtypes_cast_like_numpy(build, run):
    x = np.arange(-6, 6, dtype=np.int16).reshape(3, 4)
    w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    b = build(x=x, w=w)
    outs = [b("add", b.inputs["x"], b.inputs["w"]), b("truediv", b.inputs["x"], 3),
            b("neg", b.inputs["x"]), b("mul", b.inputs["w"], 2.5)]
    got, _ = run(b, *outs)
    for g, want in zip(got, b.expected(*outs)):
        assert g.dtype == want.dtype
        np.testing.assert_array_equal(g, want)


def test_bool_arithmetic_is_logical(build, run):
    x = np.array([True, True, False, False])
    w = np.array([True, False, True, False])
    b = build(x=x, w=w)
    outs = [b("add", b.inputs["x"], b.inputs["w"]), b("mul", b.inputs["x"], b.inputs["w"]),
            b("sum", b.inputs["x"], axis=(0,), keepdims=False, dtype="int64")]
    got, _ = run(b, *outs)
    for g, want in zip(got, b.expected(*outs)):
        np.testing.assert_array_equal(g, want)
        assert g.dtype == want.dtype


@pytest.mark.parametrize("layout", ["transposed", "reversed", "strided", "broadcast", "fortran"])
def test_layouts(layout, build, run):
    rng = np.random.default_rng(5)
    base = rng.standard_normal((33, 70)).astype(np.float32)
    x = {"transposed": np.ascontiguousarray(base.T).T, "reversed": base[::-1, ::-1],
         "strided": np.ascontiguousarray(np.repeat(base, 2, 1))[:, ::2],
         "broadcast": np.broadcast_to(base[:1], base.shape), "fortran": np.asfortranarray(base)}[layout]
    w = rng.standard_normal((70,)).astype(np.float32)
    b = build(x=x, w=w)
    y = b("mul", b("add", b.inputs["x"], b.inputs["w"]), 2)
    outs = [y, b("sum", y, axis=(0,), keepdims=True, dtype="float32"),
            b("sum", y, axis=(0, 1), keepdims=False, dtype="float32")]
    got, _ = run(b, *outs)
    want = b.expected(*outs)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[0].strides == want[0].strides  # NumPy's output layout is kept
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-4)
    assert type(got[2]) is type(want[2]) and got[2].dtype == want[2].dtype
    np.testing.assert_allclose(got[2], want[2], rtol=1e-4)


def test_large_reduction_runs_in_parallel_and_matches(build, run):
    x, w = example((2048, 512))
    b = build(x=x, w=w)
    out = b("sum", b("mul", b("maximum", b("add", b.inputs["x"], b.inputs["w"]), 0), 2),
            axis=(1,), keepdims=False, dtype="float32")
    (got,), artifact = run(b, out)
    assert artifact.kernels[0].parallel
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=1e-5, atol=1e-3)


def test_zero_size_and_zero_dim(build, run):
    x = np.zeros((0, 5), np.float32)
    b = build(x=x)
    outs = [b("add", b.inputs["x"], 1), b("sum", b.inputs["x"], axis=(0,), keepdims=False,
                                          dtype="float32")]
    got, _ = run(b, *outs)
    for g, want in zip(got, b.expected(*outs)):
        assert g.shape == want.shape
        np.testing.assert_array_equal(g, want)
    s = np.array(3.5, np.float64)
    b = build(s=s)
    out = b("mul", b.inputs["s"], 2)
    (got,), _ = run(b, out)
    assert got.shape == () and got == 7.0


@pytest.mark.parametrize("dtype", [*FLOATS, np.int8, np.uint32, np.int64, np.bool_])
@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge", "eq", "ne"])
def test_comparisons_exact(dtype, op, build, run):
    if np.dtype(dtype).kind == "f":
        x = np.repeat(SPECIALS, SPECIALS.size).astype(dtype)
        w = np.tile(SPECIALS, SPECIALS.size).astype(dtype)
    elif dtype is np.bool_:
        x, w = np.array([True, True, False, False]), np.array([True, False, True, False])
    else:
        info = np.iinfo(dtype)
        edge = np.array([info.min, info.max, 0, 1], dtype=dtype)
        x, w = np.repeat(edge, edge.size), np.tile(edge, edge.size)
    b = build(x=x, w=w)
    outs = [b(op, b.inputs["x"], b.inputs["w"]), b(op, b.inputs["x"], 1)]
    got, _ = run(b, *outs)
    for g, want in zip(got, b.expected(*outs)):
        assert g.dtype == np.bool_
        np.testing.assert_array_equal(g, want)


def test_comparison_of_mixed_dtypes(build, run):
    x = np.arange(-3, 3, dtype=np.int16)
    w = np.linspace(-3, 3, 6, dtype=np.float32)
    b = build(x=x, w=w)
    outs = [b("lt", b.inputs["x"], b.inputs["w"]), b("eq", b.inputs["w"], 0.6)]
    got, _ = run(b, *outs)
    for g, want in zip(got, b.expected(*outs)):
        np.testing.assert_array_equal(g, want)


def test_loop_ir_of_schema_1_0_still_compiles(loopir_doc_path):
    old = load_loopir(loopir_doc_path.with_name("example_1_1.loopir.schema-1.0.json"))
    x, w = example((64, 128), seed=4)
    np.testing.assert_allclose(Executable(generate(old))(x, w)[0], reference(x, w), rtol=1e-5,
                               atol=1e-4)
