"""The CUDA path end to end without a GPU: op graphs lowered for the Triton target, emitted as
Triton source, run by Triton's interpreter (``TRITON_INTERPRET=1``) on torch CPU tensors, and
checked against NumPy: element-wise operators (bit for bit where NumPy's result is exact),
reductions persistent and looped with NumPy's NaN and first-index rules, row kernels
(softmax, layer norm), layouts (transposed, sliced, broadcast), dtypes, NumPy steps between
kernels. Under the interpreter libdevice's functions are NumPy's (``triton/interpret.py``): these
tests check the kernels' structure, not libdevice's accuracy."""

import os
import re

os.environ["TRITON_INTERPRET"] = "1"  # before Triton reads it: kernels run as NumPy code

import numpy as np
import pytest

triton = pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from stax.codegen import InputMismatch, TritonExecutable, generate_triton, triton_target  # noqa: E402
from stax.codegen.triton.launch import LaunchPolicy  # noqa: E402
from stax.ir.passes import decompose_to_basis  # noqa: E402
from stax.loop import lower_opgraph  # noqa: E402

#: blocks small enough that every reduction and row phase of a small test is looped
LOOPED = LaunchPolicy(block_elements=64, max_persistent=8, looped_r0_block=8, columns_xblock=4)


def as_tensor(a):
    """A torch CPU tensor with ``a``'s values and its strides (zero strides included)."""
    a = np.asarray(a)
    steps = [s // a.itemsize for s in a.strides]
    span = 1 + sum((n - 1) * s for n, s in zip(a.shape, steps)) if a.size else 1
    flat = np.zeros(span, a.dtype)
    np.lib.stride_tricks.as_strided(flat, a.shape, a.strides)[...] = a
    return torch.from_numpy(flat).as_strided(a.shape, steps)


def cuda_artifact(builder, *outputs, policy=None):
    """The pipeline of the CUDA target: its basis, its materialization policy and loop options,
    then the Triton emitter."""
    target = triton_target()
    program = builder.program(*outputs)
    decompose_to_basis(program.graph, basis=target.basis)
    loop = lower_opgraph(program, materialize=target.materialize, options=target.loop_options)
    return generate_triton(loop, target, policy=policy)


def run_cuda(builder, *outputs, policy=None):
    artifact = cuda_artifact(builder, *outputs, policy=policy)
    got = TritonExecutable(artifact)(*[as_tensor(a) for a in builder.arrays.values()])
    return [g.numpy() if isinstance(g, torch.Tensor) else g for g in got], artifact


def same_bits(got, want):
    """Equal values and dtypes; NaN where NumPy has NaN (a NaN's sign and payload aside);
    -0.0 where NumPy has -0.0."""
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok].view(f"u{want.itemsize}"),
                                      want[ok].view(f"u{want.itemsize}"))
    else:
        np.testing.assert_array_equal(got, want)


SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.5, 1e-40, 3e38, 7.25])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_arithmetic_is_numpys_bit_for_bit(build, dtype):
    """Every pair of special values through + - * / maximum minimum copysign, one kernel."""
    x = np.repeat(SPECIALS, SPECIALS.size).astype(dtype)
    y = np.tile(SPECIALS, SPECIALS.size).astype(dtype)
    b = build(x=x, y=y)
    ops = ["add", "sub", "mul", "truediv", "maximum", "minimum", "copysign"]
    with np.errstate(all="ignore"):
        outs = [b(op, b.inputs["x"], b.inputs["y"]) for op in ops]
        got, artifact = run_cuda(b, *outs)
    assert len(artifact.kernels) == 1
    assert "tl.math.div_rn" in artifact.triton_source or dtype == np.float64
    for g, want in zip(got, b.expected(*outs)):
        same_bits(g, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_functions_and_rounding(build, dtype):
    x = np.concatenate([SPECIALS, np.linspace(-3, 3, 22)]).astype(dtype)
    y = np.concatenate([SPECIALS[::-1], np.linspace(0.5, 2, 22)]).astype(dtype)
    b = build(x=x, y=y)
    unary = ["sqrt", "floor", "ceil", "trunc", "rint", "abs", "neg", "exp", "log", "tanh", "sin",
             "arctan", "log1p", "expm1", "cbrt", "signbit"]
    binary = ["arctan2", "hypot", "pow", "logaddexp", "logaddexp2"]
    with np.errstate(all="ignore"):
        outs = [b(op, b.inputs["x"]) for op in unary] + \
               [b(op, b.inputs["x"], b.inputs["y"]) for op in binary]
        got, artifact = run_cuda(b, *outs)
    source = artifact.triton_source
    assert "libdevice.exp(" in source and "libdevice.atan2(" in source
    assert ("tl.sqrt_rn(" if dtype == np.float32 else "tl.sqrt(") in source
    for op, g, want in zip(unary + binary, got, b.expected(*outs)):
        if op in ("sqrt", "floor", "ceil", "trunc", "rint", "abs", "neg", "signbit"):
            same_bits(g, want)
        else:  # the interpreter's libdevice is NumPy's; a GPU's is within its ulp bounds
            np.testing.assert_allclose(g, want, rtol=4 * np.finfo(dtype).eps, err_msg=op)


INTEGERS = [np.int8, np.int32, np.int64, np.uint8, np.uint32]


@pytest.mark.parametrize("dtype", INTEGERS)
def test_integer_operators_as_numpy(build, dtype):
    """Floor division and remainder with zero and -1 divisors and MIN, shifts past the width,
    wrapping negation and absolute value, bit operators, comparisons."""
    info = np.iinfo(dtype)
    edges = [0, 1, 2, 3, 7, info.max, info.min, info.max - 1] + \
            ([-1, -2, -7, info.min + 1] if info.min else [5, 9, 200 % (info.max + 1), 64])
    x = np.array(np.repeat(edges, len(edges)), dtype)
    y = np.array(np.tile(edges, len(edges)), dtype)
    b = build(x=x, y=y)
    ops2 = ["floordiv", "mod", "left_shift", "right_shift", "bitwise_and", "bitwise_or",
            "bitwise_xor", "maximum", "minimum", "add", "sub", "mul", "lt", "ge", "eq", "ne"]
    ops1 = ["neg", "abs"]
    with np.errstate(all="ignore"):
        outs = [b(op, b.inputs["x"], b.inputs["y"]) for op in ops2] + \
               [b(op, b.inputs["x"]) for op in ops1] + \
               [b(op, b.inputs["x"], k) for op in ("floordiv", "mod") for k in (1, 3, 64)]
        got, artifact = run_cuda(b, *outs)
    # only the two divisions by y guard their divisor (signed); a positive constant needs none
    assert len(re.findall(r"unsafe\d+ = ", artifact.triton_source)) == (2 if info.min else 0)
    for g, want in zip(got, b.expected(*outs)):
        same_bits(g, np.asarray(want))


def test_casts_bool_and_where(build):
    x = np.array([np.nan, -0.0, 0.0, 2.5, -3.75, 1e10, 255.0, -1.0], np.float64)
    m = np.array([True, False, True, True, False, False, True, False])
    i = np.arange(-4, 4, dtype=np.int32)
    b = build(x=x, m=m, i=i)
    outs = [b("cast", b.inputs["x"], dtype="bool"), b("cast", b.inputs["x"], dtype="float32"),
            b("cast", b.inputs["m"], dtype="float64"), b("cast", b.inputs["m"], dtype="int32"),
            b("cast", b.inputs["i"], dtype="float32"), b("cast", b.inputs["i"], dtype="uint8"),
            b("where", b.inputs["m"], b.inputs["x"], b("cast", b.inputs["i"], dtype="float64")),
            b("logical_and", b.inputs["m"], b("gt", b.inputs["i"], 0)),
            b("isnan", b.inputs["x"]), b("logical_not", b.inputs["m"])]
    got, _ = run_cuda(b, *outs)
    for g, want in zip(got, b.expected(*outs)):
        same_bits(g, np.asarray(want))


@pytest.mark.parametrize("layout", ["transposed", "sliced", "broadcast"])
def test_layouts_of_inputs(build, layout):
    """Strides come from the plan's affine indices: a transposed, a sliced (every other column)
    and a broadcast (stride 0) operand, element-wise and reduced."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal((24, 40)).astype(np.float32)
    x = {"transposed": base.T, "sliced": base[::2, ::2],
         "broadcast": np.broadcast_to(base[:1, :20], (12, 20))}[layout]
    w = rng.standard_normal(x.shape).astype(np.float32)
    b = build(x=x, w=w)
    s = b("add", b("mul", b.inputs["x"], 3.0), b.inputs["w"])
    total = b("sum", s, axis=(1,), keepdims=False, dtype="float32")
    got, _ = run_cuda(b, s, total)
    want = b.expected(s, total)
    same_bits(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(64, 48), (70, 33)])
def test_a_tiled_nest_runs_in_2d_tiles(build, shape):
    """x.T + y: the plan chooses a tiled nest; each program computes one tile of XBLOCK rows by
    R0_BLOCK columns (masked on a ragged shape), bit for bit NumPy's."""
    rng = np.random.default_rng(9)
    rows, cols = shape
    x = rng.standard_normal((cols, rows)).astype(np.float32)
    y = rng.standard_normal((rows, cols)).astype(np.float32)
    b = build(x=x, y=y)
    out = b("add", b("view", b.inputs["x"], offset=0, strides=(1, rows), shape=(rows, cols)),
            b.inputs["y"])
    (got,), artifact = run_cuda(b, out, policy=LaunchPolicy(tile=16, tile_elements=256))
    (kernel,) = artifact.kernels
    assert kernel.nest.kind == "tiled" and kernel.launch.constants == {"XBLOCK": 16, "R0_BLOCK": 16}
    assert kernel.launch.grid == (-(-rows // 16) * -(-cols // 16),)
    assert "r0_index = r0_tile * R0_BLOCK + r0_base" in artifact.triton_source
    assert f"tl.load(x_ptr + (x0 + {rows} * x1)" in artifact.triton_source
    same_bits(got, b.expected(out)[0])


def example_1_1(b, dtype):
    acc = "float32" if dtype == np.float32 else "float64" if dtype == np.float64 else "int64"
    return b("sum", b("mul", b("maximum", b("add", b.inputs["x"], b.inputs["w"]), 0), 2),
             axis=(1,), keepdims=False, dtype=acc)


@pytest.mark.parametrize("shape", [(64, 128), (7, 3), (1, 1), (5, 4097)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_example_1_1_is_one_kernel(build, shape, dtype):
    """Spec example 1.1: one reduction kernel, persistent when a row fits one block (listing
    1.2), looped over blocks of the row otherwise (a 4097-element row)."""
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    w = (rng.standard_normal(shape) * 50).astype(dtype)
    b = build(x=x, w=w)
    out = example_1_1(b, dtype)
    (got,), artifact = run_cuda(b, out)
    want = b.expected(out)[0]
    assert len(artifact.kernels) == 1 and not artifact.externs
    looped = "for r0_offset in range(" in artifact.triton_source
    assert looped == (shape[1] > 4096)
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype == np.int32:
        np.testing.assert_array_equal(got, want)
    else:
        bound = 4 * shape[1] * np.finfo(dtype).eps * np.abs(np.maximum(x + w, 0) * 2).sum(-1)
        assert np.all(np.abs(got - want) <= bound + 1e-30)


REDUCTIONS = ["sum", "prod", "max", "min", "argmax", "argmin"]


def reduce(b, op, x, axis):
    if op in ("sum", "prod"):
        dtype = np.result_type(b.values[x].dtype, np.int64 if b.values[x].dtype.kind in "biu"
                               else b.values[x].dtype)
        dtype = "int64" if b.values[x].dtype.kind in "biu" else dtype.name
        return b(op, x, axis=axis, keepdims=False, dtype=dtype)
    return b(op, x, axis=axis, keepdims=False)


def reduction_input(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.3
    if np.dtype(dtype).kind == "f":
        x = rng.choice([-2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0], size=shape).astype(dtype)
        x.flat[::7] = np.nan if seed % 2 else x.flat[::7]  # NaN in some rows of odd seeds
        x.flat[3::11] = -np.inf
        return x
    return rng.integers(-3, 4, size=shape).astype(dtype)


@pytest.mark.parametrize("policy", [None, LOOPED], ids=["persistent", "looped"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("axis", [(1,), (0,), (0, 1)])
def test_reductions_with_numpys_nan_and_first_index_rules(build, policy, dtype, axis):
    """Ties everywhere (few distinct values): argmax/argmin must give the first index; a NaN
    makes max/min NaN and is the arg of the first NaN. axis=(0,) is a ``columns`` nest."""
    x = reduction_input(dtype, (6, 21), seed=len(axis) + (dtype == np.float64))
    b = build(x=x)
    ops = [op for op in REDUCTIONS if not (dtype == np.bool_ and op == "prod")]
    with np.errstate(all="ignore"):
        outs = [reduce(b, op, b.inputs["x"], axis) for op in ops]
        got, _ = run_cuda(b, *outs, policy=policy)
    for op, g, want in zip(ops, got, b.expected(*outs)):
        want = np.asarray(want)
        if op in ("sum", "prod") and want.dtype.kind == "f":
            np.testing.assert_allclose(g, want, rtol=1e-6, err_msg=op)
            np.testing.assert_array_equal(np.isnan(g), np.isnan(want))
        elif want.dtype.kind == "f":  # max/min: NaN wins; only a zero's sign may differ
            np.testing.assert_array_equal(np.isnan(g), np.isnan(want), err_msg=op)
            np.testing.assert_array_equal(g[~np.isnan(g)], want[~np.isnan(want)], err_msg=op)
        else:
            np.testing.assert_array_equal(g, want, err_msg=op)


@pytest.mark.parametrize("policy", [None, LOOPED], ids=["persistent", "looped"])
def test_softmax_is_one_row_kernel(build, policy):
    """Max, exp and sum, division: one rows kernel. Persistent: each row read once, the exp
    values kept in registers (never stored and read back); looped: phases over blocks of the
    row, a barrier before a phase reads what an earlier one stored."""
    x = np.random.default_rng(1).standard_normal((9, 30)).astype(np.float32) * 4
    x[2, 5] = np.nan
    x[4] = -np.inf
    b = build(x=x)
    with np.errstate(all="ignore"):
        top = b("max", b.inputs["x"], axis=(1,), keepdims=True)
        e = b("exp", b("sub", b.inputs["x"], top))
        out = b("truediv", e, b("sum", e, axis=(1,), keepdims=True, dtype="float32"))
        (got,), artifact = run_cuda(b, out, policy=policy)
        want = b.expected(out)[0]
    assert [k.nest.kind for k in artifact.kernels] == ["rows"]
    source = artifact.triton_source
    assert source.count("libdevice.exp(") == 1
    if policy is None:
        assert source.count("tl.load(x_ptr") == 1 and "tl.debug_barrier()" not in source
    else:
        assert "tl.debug_barrier()" in source
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=3e-6, atol=1e-7)


@pytest.mark.parametrize("policy", [None, LOOPED], ids=["persistent", "looped"])
def test_layer_norm_with_weight_and_bias(build, policy):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 24)).astype(np.float32)
    w, bias = rng.standard_normal(24).astype(np.float32), rng.standard_normal(24).astype(np.float32)
    b = build(x=x, w=w, bias=bias)
    out = b("layer_norm", b.inputs["x"], b.inputs["w"], b.inputs["bias"], normalized_ndim=1,
            eps=1e-5)
    (got,), artifact = run_cuda(b, out, policy=policy)
    assert not artifact.externs
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=2e-5, atol=2e-5)


def test_numpy_steps_run_between_kernels(build):
    """np.gcd has no Triton emitter: a NumPy step of the plan (through the host for now),
    between the kernels before and after it."""
    x = np.arange(1, 25, dtype=np.int64).reshape(4, 6)
    b = build(x=x)
    doubled = b("mul", b.inputs["x"], 2)
    out = b("add", b("cumsum", doubled, axis=1, dtype="int64"), b("gcd", b.inputs["x"], 6))
    (got,), artifact = run_cuda(b, out)
    assert [e.target for e in artifact.externs] == ["numpy.gcd"]
    assert len(artifact.kernels) >= 2
    np.testing.assert_array_equal(got, b.expected(out)[0])


@pytest.mark.parametrize("policy", [None, LOOPED], ids=["persistent", "looped"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64])
def test_scans_along_rows_and_columns(build, policy, dtype):
    """cumsum and cumprod along the last axis (a scan nest) and the first (a columns nest):
    integers exact (int8 wraps as NumPy's), floats within a sum's rounding bound, and the first
    element the value itself (-0.0 stays -0.0)."""
    rng = np.random.default_rng(10)
    x = (rng.integers(-3, 4, (7, 21)) if np.dtype(dtype).kind == "i"
         else rng.standard_normal((7, 21)) * 2).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[:, 0] = -0.0
        x[3, 7] = np.inf
    b = build(x=x)
    acc = np.dtype(dtype).name
    with np.errstate(all="ignore"):
        outs = [b(op, b.inputs["x"], axis=axis, dtype=acc)
                for op in ("cumsum", "cumprod") for axis in (1, 0)]
        got, artifact = run_cuda(b, *outs, policy=policy)
        wants = b.expected(*outs)
    assert sorted(k.nest.kind for k in artifact.kernels) == ["columns", "columns", "scan", "scan"]
    for g, want in zip(got, wants):
        if np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(g, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
            np.testing.assert_array_equal(np.signbit(g[:, 0]), np.signbit(want[:, 0]))
        else:
            np.testing.assert_array_equal(g, want)


def test_empty_arrays_launch_nothing(build):
    x = np.zeros((0, 5), np.float32)
    b = build(x=x)
    out = b("add", b.inputs["x"], 1.0)
    total = b("sum", b.inputs["x"], axis=(0,), keepdims=False, dtype="float32")
    got, _ = run_cuda(b, out, total)
    assert got[0].shape == (0, 5)
    np.testing.assert_array_equal(got[1], np.zeros(5, np.float32))


def test_inputs_other_than_planned_are_refused(build):
    x = np.ones((4, 8), np.float32)
    b = build(x=x)
    artifact = cuda_artifact(b, b("exp", b.inputs["x"]))
    run = TritonExecutable(artifact)
    with pytest.raises(InputMismatch, match=r"expected float32\[4, 8\], got float64"):
        run(torch.ones((4, 8), dtype=torch.float64))
    with pytest.raises(InputMismatch, match="strides"):
        run(torch.ones((8, 4), dtype=torch.float32).T)
    with pytest.raises(InputMismatch, match="torch tensor"):
        run(x)


def captured(fn, *arrays):
    """``fn`` captured from NumPy code by ``stax.trace`` (when installed: this package does not
    depend on it), through the default passes and the CUDA target's pipeline."""
    trace = pytest.importorskip("stax.trace").trace
    from stax.ir import lower_capture
    from stax.ir.passes import DEFAULT_PIPELINE, run_pipeline

    capture = trace(fn, arrays)
    run_pipeline(capture.graph, DEFAULT_PIPELINE)
    opgraph = lower_capture(capture)
    target = triton_target()
    decompose_to_basis(opgraph.graph, basis=target.basis)
    loop = lower_opgraph(opgraph, materialize=target.materialize, options=target.loop_options)
    artifact = generate_triton(loop, target)
    inputs = [as_tensor(arrays[i]) for i, slot in enumerate(artifact.input_slots) if slot]
    return [g.numpy() for g in TritonExecutable(artifact)(*inputs)], artifact


def test_captured_example_1_1_and_softmax():
    """Spec example 1.1 and a row softmax written in NumPy: one kernel each (a persistent
    reduction; a rows kernel), NumPy's results."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((64, 128), dtype=np.float32)
    w = rng.standard_normal((64, 128), dtype=np.float32)
    (got,), artifact = captured(lambda x, w: (np.maximum(x + w, 0) * 2).sum(-1), x, w)
    want = (np.maximum(x + w, 0) * 2).sum(-1)
    assert [k.nest.kind for k in artifact.kernels] == ["plain"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    (got,), artifact = captured(softmax, x)
    assert [k.nest.kind for k in artifact.kernels] == ["rows"]
    np.testing.assert_allclose(got, softmax(x), rtol=3e-6, atol=1e-7)


def test_building_arrays_guarded_and_computed_reads(build):
    """Guarded reads (concatenate, pad: a piece read only where its guard holds), index values
    (arange, eye, tril), a rolled read, and reads at a computed offset (a reshape of a
    transposed array, a gather by indices)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    y = rng.standard_normal((5, 3)).astype(np.float32)
    idx = np.array([4, 0, -1, 2, 2], np.int64)
    b = build(x=x, y=y, idx=idx)
    xs = b.inputs["x"]
    outs = [b("concatenate", xs, b.inputs["y"], axis=1),
            b("stack", xs, b("mul", xs, 2.0), axis=0),
            b("pad", xs, pad_width=((1, 2), (0, 3)), value=-1.5),
            b("roll", xs, shift=2, axis=1),
            b("tril", xs, k=1),
            b("arange", start=3, step=2, n=7, dtype="int64"),
            b("eye", n=4, m=5, k=1, dtype="float64"),
            b("reshape", b("view", xs, offset=0, strides=(1, 6), shape=(6, 5)), shape=(3, 10)),
            b("take", xs, b.inputs["idx"], axis=0)]
    got, artifact = run_cuda(b, *outs)
    assert not artifact.externs
    for g, want in zip(got, b.expected(*outs)):
        same_bits(g, np.asarray(want))


def test_an_index_out_of_bounds_declines_the_call(build):
    """np.take's out-of-bounds index is NumPy's IndexError: the plan's check buffer comes out
    True and the executable declines (the runtime then runs the call eagerly)."""
    from stax.codegen import ExternResultMismatch

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    b = build(x=x, idx=np.array([1, 3], np.int64))
    artifact = cuda_artifact(b, b("take", b.inputs["x"], b.inputs["idx"], axis=0))
    assert artifact.checks
    run = TritonExecutable(artifact)
    np.testing.assert_array_equal(run(as_tensor(x), as_tensor(np.array([3, -4])))[0].numpy(),
                                  x[[3, -4]])
    with pytest.raises(ExternResultMismatch, match="out of bounds"):
        run(as_tensor(x), as_tensor(np.array([1, 4])))
