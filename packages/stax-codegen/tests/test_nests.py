"""Loop nests are chosen by the scheduler (``nesting.py``), recorded in the ``stax.kernels/1.4``
document, and obeyed by the CPU emitter: a document edited to another legal nest builds other
code computing the same values; older documents (no nest) still load and run."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from stax.codegen import Executable, generate, load_artifact
from stax.codegen.nesting import NestPlan, legal_kinds
from stax.loop import load_loopir, lower_opgraph

FIXTURES = Path(__file__).parent / "fixtures"


def rng_array(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def column_sum(b):
    return b("sum", b.inputs["x"], axis=(0,), keepdims=False, dtype="float32")


def transposed_add(b):
    x = b.inputs["x"]  # (64, 48), read as its transpose (48, 64)
    return b("add", b("view", x, offset=0, strides=(1, 48), shape=(48, 64)), b.inputs["y"])


def softmax_rows(b):
    x = b.inputs["x"]
    e = b("exp", b("sub", x, b("max", x, axis=(1,), keepdims=True)))
    return b("truediv", e, b("sum", e, axis=(1,), keepdims=True, dtype="float32"))


def cumsum_columns(b):
    return b("cumsum", b.inputs["x"], axis=0, dtype="float32")


def cumsum_rows(b):
    return b("cumsum", b.inputs["x"], axis=1, dtype="float32")


def plain_add(b):
    return b("add", b("mul", b.inputs["x"], 2.0), 1.0)


def row_sum(b):
    return b("sum", b.inputs["x"], axis=(1,), keepdims=False, dtype="float32")


PROGRAMS = {  # name: (build the output, the nest kind of its one kernel)
    "column sum": (column_sum, "columns"),
    "transposed add": (transposed_add, "tiled"),
    "softmax rows": (softmax_rows, "rows"),
    "cumsum along columns": (cumsum_columns, "columns"),
    "cumsum along rows": (cumsum_rows, "scan"),
    "plain add": (plain_add, "plain"),
    "row sum": (row_sum, "plain"),
}


def built(build, program):
    b = build(x=rng_array((64, 48)), y=rng_array((48, 64), seed=1))
    return b, PROGRAMS[program][0](b)


def run_values(artifact, b):
    with np.errstate(all="ignore"):
        return Executable(artifact)(*b.arrays.values())


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_document_records_the_nest_kind(build, program):
    b, out = built(build, program)
    doc = json.loads(json.dumps(generate(lower_opgraph(b.program(out))).to_json()))
    assert doc["schema"] == "stax.kernels/1.4"
    (kernel,) = doc["kernels"]
    assert kernel["nest"]["kind"] == PROGRAMS[program][1]
    assert load_artifact(doc).to_json() == doc


def test_softmax_rows_record_their_phases_and_shared_exp(build):
    b, out = built(build, "softmax rows")
    (kernel,) = generate(lower_opgraph(b.program(out))).kernels
    top, total, result = kernel.computes
    assert kernel.nest.phases == ((top,), (total,), (result,))
    assert kernel.nest.shares == ((total, result),)  # the sum's exp stored where the division reads
    assert kernel.nest.to_json() == {"kind": "rows", "phases": [[top], [total], [result]],
                                     "shares": [{"reduction": total, "buffer": result}]}


def edited(artifact, **fields):
    """The artifact's document with its one kernel's nest changed, as the kernels' nests."""
    doc = artifact.to_json()
    doc["kernels"][0]["nest"] = {**doc["kernels"][0]["nest"], **fields}
    return load_artifact(doc).nests


def loops(ir):
    """The loop labels of a kernel, in the order the emitter opened them."""
    return re.findall(r'^"?(\w+_loop(?:\.\d+)?)"?:', ir, re.M)


def exps(ir):
    """One per float32 exp evaluated: its ``llvm.rint``, or on AVX-512 its shifter 1.5 2^23
    (``test_rowshare.rounded_exponents``)."""
    return ir.count('call float @"llvm.rint.f32"') + ir.count(", float 0x4168000000000000)")


TILES = ["x0_block_loop", "x1_block_loop", "x0_loop", "x1_loop"]
# columns (one block of them): their accumulators set, the rows added, the results stored
COLUMNS = ["x0_loop", "r0_loop", "x0_loop.1", "x0_loop.2"]
# program, the nest written into its document instead of the scheduler's, the code before and after
EDITS = [
    ("transposed add", {"kind": "plain"}, loops, TILES, ["x0_loop", "x1_loop"]),
    # a plain nest of contiguous operands is one loop over all of it (``nests._merged_extent``)
    ("plain add", {"kind": "tiled", "tile": 5}, loops, ["x1_loop"], TILES),
    ("column sum", {"kind": "plain"}, loops, COLUMNS, ["x0_loop", "r0_loop"]),
    ("row sum", {"kind": "columns"}, loops, ["x0_loop", "r0_loop"], COLUMNS),
    ("cumsum along columns", {"kind": "scan"}, loops, ["r0_loop", "x0_loop"],
     ["x0_loop", "r0_loop"]),
    ("cumsum along rows", {"kind": "columns"}, loops, ["x0_loop", "r0_loop"],
     ["r0_loop", "x0_loop"]),
    ("softmax rows", {"shares": []}, exps, 1, 2),
]


@pytest.mark.parametrize("program, nest, code, before, after", EDITS, ids=[e[0] for e in EDITS])
def test_an_edited_nest_is_obeyed_and_computes_the_same(build, program, nest, code, before, after):
    b, out = built(build, program)
    loop = lower_opgraph(b.program(out))
    chosen = generate(loop)
    assert code(chosen.llvm_ir) == before
    requested = edited(chosen, **nest)
    again = generate(loop, nests=requested)
    assert again.nests == requested != chosen.nests
    assert code(again.llvm_ir) == after
    want, got = run_values(chosen, b)[0], run_values(again, b)[0]
    if program in ("column sum", "row sum", "softmax rows"):  # another order of the same sum
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=4e-6)  # float32 sums
    else:
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("program, nest, message", [
    ("row sum", {"kind": "tiled"}, "cannot compute"),
    ("plain add", {"kind": "rows"}, "cannot compute"),
    ("softmax rows", {"kind": "plain"}, "cannot compute"),
    ("cumsum along rows", {"kind": "plain"}, "cannot compute"),
    ("softmax rows", {"phases": [["buf0", "buf1"], ["buf2"]]}, "phases"),
    ("softmax rows", {"shares": [{"reduction": "buf0", "buffer": "buf2"}]}, "share"),
    ("transposed add", {"tile": 0}, "tile"),
])
def test_an_illegal_nest_is_refused(build, program, nest, message):
    b, out = built(build, program)
    loop = lower_opgraph(b.program(out))
    chosen = generate(loop)
    with pytest.raises(ValueError, match=message):
        generate(loop, nests=edited(chosen, **nest))


def nests(a, b, c, d, e):
    """tools/make_fixtures.py's program: one kernel of every nest kind."""
    top = d.max(1, keepdims=True)
    soft = np.exp(d - top) / np.exp(d - top).sum(1, keepdims=True)
    return a.sum(0), np.cumsum(a, axis=0), b.T + c, soft, np.cumsum(e, axis=1), e * 2 + 1


def nest_inputs():
    rng = np.random.default_rng(5)
    return (rng.standard_normal((64, 48), dtype=np.float32),
            rng.standard_normal((48, 64), dtype=np.float32),
            rng.standard_normal((64, 48), dtype=np.float32),
            rng.standard_normal((40, 70), dtype=np.float32),
            rng.standard_normal((20, 30), dtype=np.float64))


def check_nests_outputs(artifact):
    args = nest_inputs()
    for got, want in zip(Executable(artifact)(*args), nests(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_1_4_document_records_every_kind_and_replays():
    artifact = load_artifact(FIXTURES / "nests.kernels.schema-1.4.json")
    assert sorted(k.nest.kind for k in artifact.kernels) == \
        ["columns", "columns", "plain", "rows", "scan", "tiled"]
    check_nests_outputs(artifact)
    program = load_loopir(FIXTURES / "nests.loopir.schema-1.3.json")
    again = generate(program, nests=artifact.nests)
    assert again.nests == artifact.nests
    nodes = {n.name: n for n in program.buffers}
    first = {computes: NestPlan(legal_kinds([nodes[c] for c in computes])[0], nest.phases)
             for computes, nest in artifact.nests.items()}  # plain, scan (or rows: as before)
    simple = generate(program, nests=first)
    assert sorted(k.nest.kind for k in simple.kernels) == ["plain", "plain", "plain", "rows",
                                                            "scan", "scan"]
    assert simple.llvm_ir != artifact.llvm_ir
    check_nests_outputs(simple)


def test_a_1_3_document_loads_without_nests_and_runs():
    """Made by the release before nests were recorded: the kernels carry no nest (a kernels
    document holds no loop IR to tell it from), run as before, and replay as the scheduler's."""
    old = load_artifact(FIXTURES / "nests.kernels.schema-1.3.json")
    assert json.loads((FIXTURES / "nests.kernels.schema-1.3.json").read_text())["schema"] == \
        "stax.kernels/1.3"
    assert all(k.nest is None for k in old.kernels) and old.nests == {}
    assert not re.search(r"; \w+ nest", str(old))
    check_nests_outputs(old)
    program = load_loopir(FIXTURES / "nests.loopir.schema-1.3.json")
    assert generate(program, nests=old.nests).llvm_ir == generate(program).llvm_ir


@pytest.mark.parametrize("columns, prefetched", [(1024, True), (64, False)])
def test_a_row_nest_asks_for_the_next_rows_input_after_its_first_phase(build, columns, prefetched):
    """``row_prefetch``: one ``prefetcht2`` per cache line of the next row of what the first
    phase streams, emitted after that phase's loop and before the next phase's (rows of 4 KiB);
    rows under ``MIN_ROW_BYTES`` are left to the hardware. The values are the same either way,
    the last row's prefetch (past the array) included."""
    x = rng_array((6, columns))
    b = build(x=x)
    artifact = generate(lower_opgraph(b.program(softmax_rows(b))))
    text = artifact.llvm_ir
    calls = re.findall(r'call void @"?llvm\.prefetch\.p0i8"?\(i8\* [^,]+, i32 0, i32 (\d), i32 1\)',
                       text)
    assert calls == (["1"] if prefetched else [])
    if prefetched:
        loops = re.findall(r'^"?(\w+?)_loop"?:', text, re.M)
        assert loops.index("prefetch_line") == loops.index("r0") + 1, loops
    e = np.exp(x - x.max(1, keepdims=True))
    (got,) = run_values(artifact, b)
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=2e-6)
