"""The kernel shapes and launches that make the CUDA path fast (issue 12 items 2 and 4), without a
GPU: scans across programs (decoupled look-back) and column reductions split across programs run
in Triton's interpreter against NumPy (integers exact, ragged sizes, sizes over one block), the
look-back's walk over windows of flags checked on flags set by hand (the interpreter runs programs
one after another, so a scan never waits there), 32- and 64-bit index choice, the launch
heuristics, autotuning with its disk cache, in-kernel CSE, and every new kernel compiled ahead of
time for sm_90 (PTX: vector loads, atomics, no local memory)."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

triton = pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from stax.codegen import TritonExecutable, generate_triton, triton_target  # noqa: E402
from stax.codegen.triton import autotune  # noqa: E402
from stax.codegen.triton.executable import load_source  # noqa: E402
from stax.codegen.triton.launch import (  # noqa: E402
    Blocks,
    LaunchPolicy,
    candidates,
    choose_blocks,
    column_split,
    lookback_blocks,
)
from stax.codegen.triton.scans import HELPERS  # noqa: E402
from stax.codegen.triton.source import HEADER  # noqa: E402
from stax.ir import tree_flatten  # noqa: E402
from stax.ir.passes import decompose_to_basis  # noqa: E402
from stax.loop import (  # noqa: E402
    Affine,
    ComputedBuffer,
    InputBuffer,
    Load,
    LoopProgram,
    OutputRef,
    Reduction,
    Scan,
    lower_opgraph,
)

#: look-back scans of a few blocks of 16 elements; column reductions split on a GPU of 4
SMALL = LaunchPolicy(max_persistent=16, lookback_block=16, lookback_rows=8, processors=4,
                     split_programs=16, split_rows=8, columns_xblock=16)


def loop_program(builder, *outputs):
    target = triton_target()
    program = builder.program(*outputs)
    decompose_to_basis(program.graph, basis=target.basis)
    return lower_opgraph(program, materialize=target.materialize, options=target.loop_options)


def run(builder, *outputs, policy=SMALL):
    artifact = generate_triton(loop_program(builder, *outputs), policy=policy)
    got = TritonExecutable(artifact).run(*[torch.from_numpy(np.ascontiguousarray(a))
                                           for a in builder.arrays.values()])
    return [g.numpy() for g in got], artifact


# -- scans across programs --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "float32", "float64"])
@pytest.mark.parametrize("n", [17, 32, 16 * 7 + 5, 300])
def test_lookback_scans_match_numpy(build, dtype, n):
    """np.cumsum of one long row (ragged and whole numbers of blocks) and of three rows, and
    np.cumprod: integers bit for bit (wrapping as NumPy does), floats within a sum's rounding
    bound, -0.0 as the first element kept."""
    rng = np.random.default_rng(n)
    if dtype.startswith(("int", "uint")):
        x = rng.integers(0 if dtype[0] == "u" else -(2 ** 30), 2 ** 30, n).astype(dtype)
        x[::7] = np.iinfo(dtype).max  # sums wrap
        small = rng.integers(-2, 3, (3, n)).astype(dtype)
    else:
        x = rng.standard_normal(n).astype(dtype)
        x[0] = -0.0
        small = rng.standard_normal((3, n)).astype(dtype) / 2 + 1
    b = build(x=x, m=small)
    with np.errstate(all="ignore"):
        outs = [b("cumsum", b.inputs["x"], axis=0, dtype=dtype),
                b("cumsum", b.inputs["m"], axis=1, dtype=dtype),
                b("cumprod", b.inputs["m"], axis=1, dtype=dtype)]
        got, artifact = run(b, *outs)
        wants = b.expected(*outs)
    names = [k.name for k in artifact.kernels]
    assert names.count("kernel_0_clear") == 1 and len(names) == 6  # a clear before each scan
    blocks = -(-n // 16)
    assert [k.launch.grid[0] for k in artifact.kernels if not k.name.endswith("clear")] == \
        [blocks, 3 * blocks, 3 * blocks]
    assert "decoupled look-back" in artifact.triton_source
    for g, want in zip(got, wants):
        assert g.dtype == want.dtype
        if dtype.startswith("float"):
            bound = n * np.finfo(dtype).eps * np.cumsum(np.abs(want), axis=-1)
            assert np.all(np.abs(g - want) <= bound + np.finfo(dtype).tiny)
        else:
            np.testing.assert_array_equal(g, want)
    assert np.signbit(got[0][0]) if dtype.startswith("float") else True


def test_a_short_or_many_row_scan_stays_per_row(build):
    """A row that fits one block, or as many rows as fill the GPU: no look-back."""
    assert lookback_blocks(1, 16, SMALL) is None and lookback_blocks(1, 17, SMALL) == Blocks(1, 16, 1)
    assert lookback_blocks(8, 1000, SMALL) is None
    assert lookback_blocks(1, 64 << 20, LaunchPolicy()) == Blocks(1, 8192, 4)
    b = build(x=np.ones((9, 100), np.int64))
    _, artifact = run(b, b("cumsum", b.inputs["x"], axis=1, dtype="int64"))
    assert [k.name for k in artifact.kernels] == ["kernel_0"]
    assert "decoupled" not in artifact.triton_source


def _probe_module(words_per_block):
    bits = "32" if words_per_block == 1 else "64"
    helper = "_lookback_" + bits
    dtype = "tl.int32" if words_per_block == 1 else "tl.float64"
    source = "\n\n".join([HEADER, HELPERS[helper], HELPERS["_publish_" + bits],
                          "@triton.jit\ndef _product(a, b):\n    return a * b\n",
                          textwrap.dedent(f"""\
        @triton.jit
        def probe(flags, out, total, block, WINDOW: tl.constexpr):
            first = tl.full([], 0, {dtype})
            _publish_{bits}(flags, tl.full([], total, {dtype}), block)
            tl.store(out, {helper}(flags, tl.full([], total, {dtype}), block, first, False, WINDOW))
        """)])
    return load_source(source)


@pytest.mark.parametrize("inclusive_at", [None, 6])
def test_the_look_back_walks_windows_of_flags(inclusive_at):
    """Block 11 with blocks 1..10 having published only their totals (and block 0, or block 6,
    an inclusive prefix): the walk reads windows of 4 flags, adds every total down to the first
    inclusive prefix, and publishes its own inclusive prefix (flag 2)."""
    values = np.arange(1, 12, dtype=np.int64) * 10
    flags = np.zeros(16, np.uint64)
    for i, v in enumerate(values):
        flags[i] = np.uint64((int(v) << 32) | (2 if i == 0 else 1))
    want = int(values.sum())
    if inclusive_at is not None:
        inclusive = int(values[:inclusive_at + 1].sum())
        flags[inclusive_at] = np.uint64((inclusive << 32) | 2)
    module = _probe_module(1)
    f, out = torch.from_numpy(flags.view(np.int64).copy()).view(torch.uint64), torch.zeros(1, dtype=torch.int32)
    module.probe[(1,)](f, out, 5, 11, WINDOW=4)
    assert int(out[0]) == want
    published = int(f.view(torch.int64)[11])
    assert published & 3 == 2 and published >> 32 == want + 5


def test_the_64_bit_look_back_reads_values_beside_flags():
    """Three words a block (flag, total, inclusive prefix): a float64 walk over two windows."""
    values = np.linspace(0.5, 5.5, 11)
    words = np.zeros(3 * 16, np.float64)
    flags = words.view(np.uint64)
    for i, v in enumerate(values):
        flags[3 * i] = 2 if i == 0 else 1
        words[3 * i + (2 if i == 0 else 1)] = v
    module = _probe_module(3)
    f, out = torch.from_numpy(flags.copy().view(np.int64)).view(torch.uint64), torch.zeros(1, dtype=torch.float64)
    module.probe[(1,)](f, out, 0.25, 11, WINDOW=4)
    assert float(out[0]) == pytest.approx(values.sum(), rel=1e-15)
    assert int(f.view(torch.int64)[33]) == 2
    assert f.view(torch.float64)[35].item() == pytest.approx(values.sum() + 0.25, rel=1e-15)


# -- column reductions split across programs -------------------------------------------------------

@pytest.mark.parametrize("op,dtype", [("sum", "float32"), ("sum", "int64"), ("max", "float64"),
                                      ("min", "int32"), ("prod", "float64"), ("sum", "bool")])
def test_column_reductions_are_split_across_programs(build, op, dtype):
    """x.<op>(0) of (256, 40): the partial results of 8 slices of 32 rows each (a (8, 40)
    buffer), then the same reduction over the slices; integers exact, a NaN anywhere a NaN."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((256, 40)) * (0.01 if op == "prod" else 3) + (1 if op == "prod" else 0)
    x = (x > 0) if dtype == "bool" else x.astype(dtype)
    if dtype == "float64" and op == "max":
        x[100, 7] = np.nan
    b = build(x=x)
    acc = "int64" if dtype == "bool" else dtype
    out = b(op, b.inputs["x"], axis=(0,), keepdims=False, **({"dtype": acc} if op in ("sum", "prod") else {}))
    (got,), artifact = run(b, out)
    (want,) = b.expected(out)
    assert column_split(40, 256, SMALL) == 8
    assert [k.nest.kind for k in artifact.kernels] == ["columns", "columns"]
    part = next(p for p in artifact.buffers if p.name.endswith("_part"))
    assert part.shape == (8, 40) and part.role == "intermediate"
    assert got.dtype == want.dtype
    if np.dtype(acc).kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-13)
        assert np.isnan(got[7]) == np.isnan(want[7])
    else:
        np.testing.assert_array_equal(got, want)


def test_what_is_not_split(build):
    """A prime number of rows (no equal slices), many columns (the blocks fill the GPU), argmax
    (partial results would need their positions): one kernel."""
    assert column_split(40, 257, SMALL) == 1 and column_split(16 * 40, 256, SMALL) == 1
    x = np.random.default_rng(4).standard_normal((256, 40)).astype(np.float32)
    b = build(x=x)
    out = b("argmax", b.inputs["x"], axis=(0,), keepdims=False)
    (got,), artifact = run(b, out)
    np.testing.assert_array_equal(got, b.expected(out)[0])
    assert len(artifact.kernels) == 1


def test_the_h200_column_sum_is_split_into_wide_rows():
    """x.sum(0) of (16384, 4096): 128 slices of 128 rows, each program 1024 columns by 8 rows a
    step (4 KiB of each row), 512 programs; then 256 programs over the (128, 4096) partials."""
    assert column_split(4096, 16384, LaunchPolicy()) == 128
    assert choose_blocks(128 * 4096, 128, True, LaunchPolicy()) == Blocks(1024, 8, 8)
    assert choose_blocks(4096, 128, True, LaunchPolicy()) == Blocks(16, 128, 8)


def test_a_transposed_3d_operand_runs_in_tiles(build):
    """np.swapaxes(x, 1, 2) + y over (3, 40, 36): tiles of the flattened leading axes by the
    last, ragged at both ends; bit for bit NumPy's."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 36, 40)).astype(np.float32)
    y = rng.standard_normal((3, 40, 36)).astype(np.float32)
    b = build(x=x, y=y)
    swapped = b("view", b.inputs["x"], offset=0, strides=(1440, 1, 40), shape=(3, 40, 36))
    out = b("mul", swapped, b.inputs["y"])
    (got,), artifact = run(b, out, policy=LaunchPolicy(tile=32, tile_elements=1024))
    (kernel,) = artifact.kernels
    assert kernel.nest.kind == "tiled" and kernel.launch.grid == (4 * 2,)
    np.testing.assert_array_equal(got, b.expected(out)[0])


# -- indices, launches, CSE --------------------------------------------------------------------------

def _reduction_program(rows, cols):
    x = InputBuffer("x", (rows, cols), "float32", (cols, 1))
    body = Load("x", Affine.var("x0") * cols + Affine.var("r0"), "float32")
    out = ComputedBuffer("y", (rows,), "float32", (1,), Affine.var("x0"),
                         Reduction((rows,), (cols,), "sum", body))
    return LoopProgram("rows", [x], ["x"], tree_flatten(((0,), {}))[1], [out], [OutputRef("y")],
                       tree_flatten((0,))[1])


def _scan_program(n):
    x = InputBuffer("x", (n,), "float32", (1,))
    out = ComputedBuffer("y", (n,), "float32", (1,), Affine.var("r0"),
                         Scan((), n, "sum", Load("x", Affine.var("r0"), "float32")))
    return LoopProgram("scan", [x], ["x"], tree_flatten(((0,), {}))[1], [out], [OutputRef("y")],
                       tree_flatten((0,))[1])


def test_index_width_follows_the_index_range():
    """A row reduction whose element indices pass 2**31 (65536 x 65536) indexes in int64 from the
    program id and the lane offsets on; 32768 x 65536 stays int32; so does a scan across
    programs of 2**30 elements, and one of 2**31 + 5 does not."""
    big = generate_triton(_reduction_program(65536, 65536))
    assert big.kernels[0].index_bits == 64
    assert "tl.program_id(0).to(tl.int64)" in big.triton_source
    assert "tl.arange(0, R0_BLOCK)[None, :].to(tl.int64)" in big.triton_source
    small = generate_triton(_reduction_program(32768, 65536))
    assert small.kernels[0].index_bits == 32 and "tl.int64" not in small.triton_source
    assert generate_triton(_scan_program(1 << 30)).kernels[1].index_bits == 32
    wide = generate_triton(_scan_program((1 << 31) + 5))
    assert wide.kernels[1].index_bits == 64 and "block = tl.program_id(0).to(tl.int64)" in wide.triton_source


def test_launch_heuristics_by_size():
    policy = LaunchPolicy()
    assert choose_blocks(1 << 28, None, False, policy) == Blocks(512, 0, 4)  # 4 float32 a thread
    assert choose_blocks(1 << 26, None, False, policy, itemsize=8) == Blocks(256, 0, 4)
    assert choose_blocks(100, None, False, policy) == Blocks(128, 0, 1)
    assert choose_blocks(32768, 1024, False, policy) == Blocks(1, 1024, 4)  # a row a program
    assert choose_blocks(16384, 4096, False, policy) == Blocks(1, 4096, 8)
    assert choose_blocks(64, 128, False, policy) == Blocks(32, 128, 8)
    assert choose_blocks(8, 100000, False, policy) == Blocks(1, 1024, 4)  # looped
    found = candidates(32768, 1024, "rows", policy)
    assert found[0] == Blocks(1, 1024, 4) and len(found) == len(set(found)) <= 8
    assert all(b.r0_block == 1024 for b in found)
    assert candidates(1, 1 << 26, "lookback", policy)[0] == Blocks(1, 8192, 4)


def test_common_subexpressions_are_computed_once(build):
    """Layer norm's (x - m) * (x - m): the loop IR's trees repeat x - m; the kernel computes it
    once in each phase that needs it."""
    x = np.random.default_rng(5).standard_normal((8, 64)).astype(np.float32)
    b = build(x=x)
    m = b("truediv", b("sum", b.inputs["x"], axis=(1,), keepdims=True, dtype="float32"), 64.0)
    d = b("sub", b.inputs["x"], m)
    v = b("truediv", b("sum", b("mul", d, d), axis=(1,), keepdims=True, dtype="float32"), 64.0)
    out = b("truediv", d, b("sqrt", b("add", v, 1e-5)))
    (got,), artifact = run(b, out, policy=LaunchPolicy())
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=1e-5)
    source = artifact.triton_source
    assert "tmp4 * tmp4" in source  # (x - m) * (x - m)
    for phase in re.split(r"# (?:reduce|compute) ", source)[1:]:
        lines = [ln.split(" = ", 1)[1] for ln in phase.splitlines() if " = " in ln and "tmp" in ln]
        assert len(lines) == len(set(lines)), phase


# -- autotuning ----------------------------------------------------------------------------------------

def test_autotune_times_candidates_and_caches_the_winner(build, tmp_path):
    """Each candidate is generated, run and timed (a fake timer here: the third is fastest); the
    winner's launch is in the artifact, written under <cache>/autotune and read back by the next
    search without timing anything; a damaged entry is a miss."""
    x = np.random.default_rng(6).standard_normal((64, 256)).astype(np.float32)
    b = build(x=x)
    out = b("sum", b("exp", b.inputs["x"]), axis=(1,), keepdims=False, dtype="float32")
    program = loop_program(b, out)
    tensors = [torch.from_numpy(x)]
    options = candidates(64, 256, "rows", LaunchPolicy())
    calls, lines = [], []

    def timer(run):
        calls.append(run())
        return [3.0, 2.0, 1.0, 4.0, 5.0, 6.0, 7.0, 8.0][len(calls) - 1]
    artifact = autotune.tune(program, tensors, cache_dir=tmp_path, timer=timer, progress=lines.append)
    assert len(calls) == len(options) >= 3
    assert artifact.kernels[0].launch.constants == {"XBLOCK": options[2].xblock, "R0_BLOCK": 256}
    assert artifact.kernels[0].launch.num_warps == options[2].num_warps
    np.testing.assert_allclose(TritonExecutable(artifact).run(*tensors)[0].numpy(),
                               b.expected(out)[0], rtol=1e-5)
    assert f"{len(options)} configs, best {options[2].label()}" in lines[-1]
    (entry,) = (tmp_path / "autotune").iterdir()
    assert json.loads(entry.read_text())["xblock"] == options[2].xblock

    def no_timing(run):
        raise AssertionError("timed although cached")
    again = autotune.tune(program, tensors, cache_dir=tmp_path, timer=no_timing, progress=lines.append)
    assert again.triton_source == artifact.triton_source and "(disk cache)" in lines[-1]
    entry.write_text("{not json")
    calls.clear()
    autotune.tune(program, tensors, cache_dir=tmp_path, timer=timer, progress=lines.append)
    assert len(calls) == len(options)


def test_variants_vary_one_kernel_at_a_time(build):
    x = np.ones((256, 40), np.float32)
    b = build(x=x)
    program = loop_program(b, b("sum", b.inputs["x"], axis=(0,), keepdims=False, dtype="float32"))
    found = autotune.variants(program, SMALL)
    assert {label.split(":")[0] for label, _ in found} == {"kernel_0", "kernel_1"}
    assert all(len(configs) == 1 for _, configs in found)


# -- ahead of time, for an H200 -------------------------------------------------------------------

AOT = textwrap.dedent("""
    import json, os, re, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    from conftest import OpBuilder
    os.environ.pop("TRITON_INTERPRET", None)  # conftest sets it for the in-process tests
    from stax.codegen import generate_triton, triton_target
    from stax.codegen.triton.aot import compile_ahead
    from stax.codegen.triton.launch import LaunchPolicy
    from stax.ir.passes import decompose_to_basis
    from stax.loop import lower_opgraph

    def artifact(builder, *outputs, policy=None):
        target = triton_target()
        program = builder.program(*outputs)
        decompose_to_basis(program.graph, basis=target.basis)
        loop = lower_opgraph(program, materialize=target.materialize, options=target.loop_options)
        return generate_triton(loop, target, policy=policy)

    report = {}
    for dtype in ("float32", "int32", "float64"):
        b = OpBuilder(x=np.ones(1 << 16, dtype))
        a = artifact(b, b("cumsum", b.inputs["x"], axis=0, dtype=dtype),
                     policy=LaunchPolicy(lookback_block=4096))
        for name, asm in compile_ahead(a).items():
            report[f"scan_{dtype}_{name}"] = asm["ptx"]
    b = OpBuilder(x=np.ones((4096, 1024), np.float32))
    a = artifact(b, b("sum", b.inputs["x"], axis=(0,), keepdims=False, dtype="float32"))
    for name, asm in compile_ahead(a).items():
        report[f"columns_{name}"] = asm["ptx"]
    b = OpBuilder(x=np.ones((512, 256), np.float32), y=np.ones((256, 512), np.float32))
    a = artifact(b, b("add", b("view", b.inputs["x"], offset=0, strides=(1, 256), shape=(256, 512)),
                      b.inputs["y"]))
    for name, asm in compile_ahead(a).items():
        report[f"tiled_{name}"] = asm["ptx"]
    from test_triton_performance import _scan_program  # 2**31 + 5 elements: int64 indices
    for name, asm in compile_ahead(generate_triton(_scan_program((1 << 31) + 5))).items():
        report[f"wide_scan_{name}"] = asm["ptx"]
    print("REPORT" + json.dumps(report))
""")


@pytest.mark.slow
def test_new_kernel_shapes_compile_for_sm90():
    """Look-back scans (32- and 64-bit values), split column sums and a transposed tile compile
    for an H100/H200: vector loads and stores (the tile's transposed operand too, its values
    moved through shared memory), the look-back's atomics (acquire/release for 64-bit values),
    no local memory."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", AOT, str(Path(__file__).parent)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("REPORT"))
    ptx = json.loads(line[len("REPORT"):])
    assert len(ptx) == 11
    for name, text in ptx.items():
        assert ".local" not in text, name
        if not name.endswith("_clear") and not name.startswith("wide"):  # (ragged: scalar loads)
            assert "ld.global.v4" in text or "ld.global.v2" in text, name
    for dtype in ("float32", "int32", "float64"):
        text = ptx[f"scan_{dtype}_kernel_0"]
        assert "atom.global" in text and "st.global.v" in text, dtype
    assert "atom.acquire" in ptx["scan_float64_kernel_0"] or "acquire" in ptx["scan_float64_kernel_0"]
    assert "st.global" in ptx["scan_float32_kernel_0_clear"]
    assert "atom.global" in ptx["wide_scan_kernel_0"]  # 64-bit block numbers compile too
    tiled = ptx["tiled_kernel_0"]  # both operands' loads 16 bytes wide, one through shared memory
    assert len(re.findall(r"ld\.global[^\n]*\.v4", tiled)) >= 2 and "st.shared" in tiled
