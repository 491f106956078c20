"""Column statistics: reductions down the columns of a C matrix where a later reduction reads an
earlier one's result (the mean, then the squared deviations from it). The CPU runs the group as a
columns nest of several phases over blocks of columns, accumulating on the kernel's stack; the
sums are NumPy's own (row after row), so the results are NumPy's bit for bit. A target without
``phased_columns`` (Triton's) keeps the row nest. The golden stax.kernels/1.7 document
(tools/make_fixtures.py --phased-columns) reads back and runs."""

import json
from pathlib import Path

import numpy as np
import pytest

from stax.codegen import Executable, load_artifact
from stax.codegen.cpu.nests import COLUMN_BLOCK_BYTES
from stax.codegen.nesting import NestPlan
from stax.codegen.program_plan import plan_program
from stax.loop import lower_opgraph

FIXTURE = Path(__file__).parent / "fixtures" / "colstats.kernels.schema-1.7.json"


def data(shape, dtype, special=False, layout="C"):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    if special:
        flat = x.reshape(-1)
        flat[5], flat[-3], flat[len(flat) // 2] = np.nan, np.inf, -0.0
    if layout == "sliced":
        return np.ascontiguousarray(np.concatenate([x, x], axis=1))[:, ::2]
    return x


def standardize(b, x, n):
    """(x - mean) / std down the columns, and the std: NumPy's formulas, op by op."""
    dtype = np.dtype(b.values[x].dtype).name
    total = b("sum", x, axis=(0,), keepdims=True, dtype=dtype)
    mean = b("truediv", total, n)
    deviation = b("sub", x, mean)
    variance = b("truediv", b("sum", b("mul", deviation, deviation), axis=(0,), keepdims=False,
                              dtype=dtype), n)
    std = b("sqrt", variance)
    return b("truediv", deviation, std), std


def kernel_nests(artifact):
    return [k.nest for k in artifact.kernels if k.nest is not None]


@pytest.mark.parametrize("shape", [(7, 5), (300, 40), (64, 1500), (9, 4097), (2000, 300)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("special", [False, True])
def test_column_statistics_are_numpys_bits(build, run, shape, dtype, special):
    x = data(shape, dtype, special)
    b = build(x=x)
    out, std = standardize(b, b.inputs["x"], float(shape[0]))
    (got, got_std), artifact = run(b, out, std)
    want, want_std = b.expected(out, std)
    np.testing.assert_array_equal(got_std, want_std)
    np.testing.assert_array_equal(got, want)
    if shape[1] >= 4:
        phased = [n for n in kernel_nests(artifact) if len(n.phases) > 1]
        assert [n.kind for n in phased] == ["columns"], kernel_nests(artifact)


@pytest.mark.parametrize("layout", ["C", "sliced"])
def test_layouts_and_an_outer_axis(build, run, layout):
    x = data((300, 70), np.float64, layout=layout)
    b = build(x=x)
    out, std = standardize(b, b.inputs["x"], 300.0)
    (got, got_std), _ = run(b, out, std)
    np.testing.assert_allclose(got_std, b.expected(std)[0], rtol=1e-13)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=1e-13, atol=1e-13)

    # a kept outer axis: (4, 50, 33), reduced over axis 1, each outer index its own columns
    y = data((4, 50, 33), np.float32)
    b = build(y=y)
    total = b("sum", b.inputs["y"], axis=(1,), keepdims=True, dtype="float32")
    centred = b("sub", b.inputs["y"], b("truediv", total, 50.0))
    spread = b("sum", b("mul", centred, centred), axis=(1,), keepdims=False, dtype="float32")
    (got,), artifact = run(b, spread)
    # NumPy's order over a middle axis is not row after row: equal within rounding
    np.testing.assert_allclose(got, b.expected(spread)[0], rtol=1e-6)
    assert [n.kind for n in kernel_nests(artifact) if len(n.phases) > 1] == ["columns"]


def test_blocks_split_across_threads(build, run):
    """More columns than one block holds: the threads' split counts blocks (a launch over
    ``outer`` blocks), the last block ragged."""
    columns = COLUMN_BLOCK_BYTES // 8 * 3 + 17
    x = data((400, columns), np.float64)
    b = build(x=x)
    out, std = standardize(b, b.inputs["x"], 400.0)
    (got, got_std), artifact = run(b, out, std)
    np.testing.assert_array_equal(got_std, b.expected(std)[0])
    np.testing.assert_array_equal(got, b.expected(out)[0])
    (kernel,) = [k for k in artifact.kernels if k.nest is not None and k.nest.kind == "columns"]
    assert kernel.outer_range == 4 and kernel.parallel


def test_a_target_without_phased_columns_keeps_the_row_nest(build):
    x = data((300, 40), np.float32)
    b = build(x=x)
    out, std = standardize(b, b.inputs["x"], 300.0)
    program = lower_opgraph(b.program(out, std))
    kinds = {len(g.nest.phases): g.nest.kind for g in plan_program(program).groups if g.nest}
    assert kinds.get(3) == "rows"
    kinds = {len(g.nest.phases): g.nest.kind
             for g in plan_program(program, phased_columns=True).groups if g.nest}
    assert kinds.get(3) == "columns"


def test_nest_plan_round_trip():
    plan = NestPlan("columns", (("buf0", "buf1"), ("buf2",), ("buf3",)))
    doc = plan.to_json()
    assert doc == {"kind": "columns", "phases": [["buf0", "buf1"], ["buf2"], ["buf3"]]}
    assert NestPlan.from_json(doc, ("buf0", "buf1", "buf2", "buf3")) == plan
    single = NestPlan("columns", (("buf0",),))
    assert single.to_json() == {"kind": "columns"}


def test_the_1_7_document_reads_back_and_runs():
    assert json.loads(FIXTURE.read_text())["schema"] == "stax.kernels/1.7"
    artifact = load_artifact(FIXTURE)
    (nest,) = [n for n in kernel_nests(artifact) if len(n.phases) > 1]
    assert nest.kind == "columns"
    assert artifact.to_json()["schema"] == "stax.kernels/1.7"
    x = np.linspace(-2, 3, 24 * 40, dtype=np.float32).reshape(24, 40) ** 2
    x = x[::-1].copy()  # other data than the document was made from
    got, got_std = Executable(artifact)(x)
    mu = x.mean(axis=0)
    np.testing.assert_array_equal(got_std, x.std(axis=0))
    np.testing.assert_array_equal(got, (x - mu) / x.std(axis=0))
