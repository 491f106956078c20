"""Write the golden documents each consuming package keeps under tests/fixtures/.

Each layer's tests read the documents the previous layer's released version wrote (ARCHITECTURE.md
§2), so a change that breaks reading an old document shows up as a failing test. Run this only when
releasing a new version of a producing layer, and keep the old fixtures beside the new ones.

    python tools/make_fixtures.py                # the released version's documents
    python tools/make_fixtures.py --schema-1.2   # documents using every schema-1.2 form
    python tools/make_fixtures.py --schema-1.4   # region updates, a scatter, complex parts
    python tools/make_fixtures.py --schema-1.5   # trig argument limits (float32 sin, cos, tan)
    python tools/make_fixtures.py --arena        # blocks sharing one arena (kernels 1.11)
    python tools/make_fixtures.py --late-reports # an in-place ufunc reporting after it wrote
                                                 # (loop IR 1.8, kernels 1.12)
    python tools/make_fixtures.py --event-reports  # events NumPy reports from the one
                                                 # operation that may raise them (loop IR
                                                 # 1.10, kernels 1.14)
    python tools/make_fixtures.py --copies       # stax.kernels/1.6: a kernel copying an input
    python tools/make_fixtures.py --phased-columns  # stax.kernels/1.7: column statistics
    python tools/make_fixtures.py --nests        # a kernel of every loop-nest kind (kernels 1.4)
    python tools/make_fixtures.py --cuda         # a CUDA document: Triton kernels (kernels 1.5)
    python tools/make_fixtures.py --sizes        # size-generic documents (capture 1.2, op graph
                                                 # 1.1, loop IR 1.7, kernels 1.9 and 1.10)

``--nests`` names its kernels document by the schema the installed stax-codegen writes, so run
with an older release's sources first on the path, it writes that release's document beside.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stax.codegen import generate
from stax.ir import lower_capture, write_json
from stax.loop import lower_opgraph
from stax.runtime import nn
from stax.trace import trace

ROOT = Path(__file__).resolve().parent.parent


def example_1_1(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return (nn.relu(x + w) * 2).sum(-1)


def features(x: np.ndarray, i: np.ndarray) -> np.ndarray:
    """Every loop-IR form schema 1.2 added: a scan, guarded loads (a concatenation), an index
    value (np.arange), an indirect load with its bounds check (a gather), a reshape copy."""
    joined = np.concatenate([x, x.T.reshape(6, 4) * 2], axis=0)
    return np.cumsum(joined, axis=1)[i] + np.arange(4)


def nests(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, e: np.ndarray) -> tuple:
    """One kernel of every loop-nest kind (kernels schema 1.4): a column sum and a cumsum along
    columns (interchanged loops), a transposed add (tiles), softmax rows (row phases sharing
    exp), a cumsum along rows (scan), an element-wise add (plain)."""
    top = d.max(1, keepdims=True)
    soft = np.exp(d - top) / np.exp(d - top).sum(1, keepdims=True)
    return a.sum(0), np.cumsum(a, axis=0), b.T + c, soft, np.cumsum(e, axis=1), e * 2 + 1


def nest_documents() -> None:
    """The loop IR of ``nests`` and its kernels document, named by the installed schemas."""
    from stax.codegen import KERNELS_SCHEMA
    from stax.loop import LOOPIR_SCHEMA

    rng = np.random.default_rng(0)
    args = (rng.standard_normal((64, 48), dtype=np.float32),
            rng.standard_normal((48, 64), dtype=np.float32),
            rng.standard_normal((64, 48), dtype=np.float32),
            rng.standard_normal((40, 70), dtype=np.float32),
            rng.standard_normal((20, 30), dtype=np.float64))
    capture = trace(nests, args, name="nests")
    for node in capture.graph.nodes:
        if node.source:
            node.meta["source"] = "nests.py:" + node.source.rsplit(":", 1)[1]
    loop = lower_opgraph(lower_capture(capture))
    folder = ROOT / "packages" / "stax-codegen" / "tests" / "fixtures"
    for name, doc in ((f"nests.loopir.schema-{LOOPIR_SCHEMA.split('/')[1]}.json", loop),
                      (f"nests.kernels.schema-{KERNELS_SCHEMA.split('/')[1]}.json", generate(loop))):
        write_json(folder / name, doc.to_json())
        print("wrote", folder / name)


def cuda_kernels(a: np.ndarray, b: np.ndarray, i: np.ndarray) -> tuple:
    """One kernel of each kind the Triton backend emits (kernels schema 1.5): element-wise
    (plain), a row sum that fits one block (persistent) and one that does not (looped), a column
    sum, softmax rows (max, exp and sum phases), a cumsum along rows (scan), a concatenation
    (guarded loads) and a gather (an indirect load with its bounds check)."""
    top = a.max(1, keepdims=True)
    soft = np.exp(a - top) / np.exp(a - top).sum(1, keepdims=True)
    return (a * 2 + 1, a.sum(1), b.sum(1), a.sum(0), soft, np.cumsum(a, axis=1),
            np.concatenate([a, a[:3] * 3], axis=0), a[i] - 1)


def cuda_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``cuda_kernels``' inputs: small integers in float32, so every sum is exact."""
    rng = np.random.default_rng(0)
    return (rng.integers(-8, 8, (8, 12)).astype(np.float32),
            rng.integers(-8, 8, (3, 5000)).astype(np.float32),
            np.array([0, 7, -1, 3], dtype=np.int64))


def cuda_documents() -> None:
    """The loop IR of ``cuda_kernels`` for the CUDA target and its kernels document (Triton
    source, each kernel's launch), named by the installed schemas; made as the runtime makes a
    CUDA version (``stax.runtime.backends``: the target's decomposition and loop options)."""
    from stax.codegen import target_for
    from stax.codegen.artifact import TRITON_KERNELS_SCHEMA
    from stax.ir.passes import DEFAULT_PIPELINE, decompose_to_basis, run_pipeline
    from stax.loop import LOOPIR_SCHEMA

    target = target_for("cuda")
    capture = trace(cuda_kernels, cuda_inputs(), name="cuda_kernels")
    for node in capture.graph.nodes:
        if node.source:
            node.meta["source"] = "cuda_kernels.py:" + node.source.rsplit(":", 1)[1]
    run_pipeline(capture.graph, DEFAULT_PIPELINE)
    opgraph = lower_capture(capture)
    decompose_to_basis(opgraph.graph, basis=target.basis)
    loop = lower_opgraph(opgraph, materialize=target.materialize, options=target.loop_options)
    artifact = generate(loop, target=target)
    kernels = f"cuda_kernels.kernels.schema-{TRITON_KERNELS_SCHEMA.split('/')[1]}.json"
    docs = [("stax-codegen", f"cuda_kernels.loopir.schema-{LOOPIR_SCHEMA.split('/')[1]}.json", loop),
            ("stax-codegen", kernels, artifact), ("stax-runtime", kernels, artifact)]
    for package, name, doc in docs:
        path = ROOT / "packages" / package / "tests" / "fixtures" / name
        write_json(path, doc.to_json())
        print("wrote", path)


def schema_1_2_documents() -> None:
    """The documents of the newest minor schemas, kept beside the older ones."""
    x = np.arange(24, dtype=np.float32).reshape(6, 4) / 8
    i = np.array([0, -1, 3], dtype=np.int64)
    capture = trace(features, (x, i), name="features")
    for node in capture.graph.nodes:
        if node.source:
            node.meta["source"] = "features.py:" + node.source.rsplit(":", 1)[1]
    loop = lower_opgraph(lower_capture(capture))
    docs = {"stax-codegen": ("features.loopir.schema-1.2.json", loop),
            "stax-runtime": ("features.kernels.schema-1.2.json", generate(loop))}
    for package, (name, doc) in docs.items():
        path = ROOT / "packages" / package / "tests" / "fixtures" / name
        write_json(path, doc.to_json())
        print("wrote", path)


def updates(x: np.ndarray, idx: np.ndarray, z: np.ndarray) -> tuple:
    """Every form loop IR 1.4 added: region updates in place (``updates``), a rerolled loop
    (``ordered``), a scatter (``store_offset``) and complex values as parts (``fma``)."""
    out = np.zeros((12, 6), dtype=np.float32)
    for i in range(12):
        out[i, :] = x[i] * 2.0 + i
    hist = np.zeros(4)
    np.add.at(hist, idx, 1.0)
    return out, hist, z * z + z


def updates_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.arange(72, dtype=np.float32).reshape(12, 6) / 8
    z = np.arange(5) + 1j * np.arange(5)[::-1]
    return x, np.array([0, 3, 1, 3]), z


def traced(fn, args: tuple, name: str, source_file: str):
    """``fn``'s capture on ``args``, its source lines pointing into ``source_file`` (stable and
    short in the fixtures)."""
    capture = trace(fn, args, name=name)
    for node in capture.graph.nodes:
        if node.source:
            node.meta["source"] = f"{source_file}:" + node.source.rsplit(":", 1)[1]
    for entry in capture.info.get("event_sources", {}).values():
        entry[2] = f"{source_file}:" + entry[2].rsplit(":", 1)[1]
    return capture


def write_codegen_fixture(name: str, document) -> None:
    path = ROOT / "packages" / "stax-codegen" / "tests" / "fixtures" / name
    write_json(path, document.to_json())
    print("wrote", path)


def schema_1_4_documents() -> None:
    capture = traced(updates, updates_inputs(), "updates", "updates.py")
    write_codegen_fixture("updates.loopir.schema-1.4.json", lower_opgraph(lower_capture(capture)))


def trig(x: np.ndarray, t: np.ndarray) -> tuple:
    """What loop IR 1.5 added: the limits the checks hold sin, cos and tan arguments below
    (``trig_limits``), float32 and float64."""
    return np.sin(x) * np.cos(x * 2) + np.tan(x / 4), np.sin(t)


def trig_inputs() -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(-40, 40, 37, dtype=np.float32)
    return x, np.linspace(-3, 3, 5)


def schema_1_5_documents() -> None:
    capture = traced(trig, trig_inputs(), "trig", "trig.py")
    write_codegen_fixture("trig.loopir.schema-1.5.json", lower_opgraph(lower_capture(capture)))


def copy_then_update(traj: np.ndarray, k: int) -> np.ndarray:
    out = traj.copy()
    out[k + 1] = out[k] + 0.5 * out[k] * (1.0 - out[k])
    return out


def copies_documents() -> None:
    """stax.kernels/1.6: a kernel that copies an input unchanged (``KernelPlan.copies``)."""
    traj = np.linspace(0.1, 0.3, 12).reshape(4, 3)
    capture = traced(copy_then_update, (traj, 1), "copy_then_update", "copies.py")
    write_codegen_fixture("copies.kernels.schema-1.6.json",
                          generate(lower_opgraph(lower_capture(capture))))


def column_statistics(x: np.ndarray) -> tuple:
    """A columns nest of several phases: the mean, the squared deviations from it, the standard
    deviation, then the standardized matrix."""
    mu = x.mean(axis=0)
    sd = x.std(axis=0)
    return (x - mu) / sd, sd


def phased_columns_documents() -> None:
    """stax.kernels/1.7: a columns nest of several phases (``NestPlan.phases`` of a columns nest)."""
    x = np.linspace(-2, 3, 24 * 40, dtype=np.float32).reshape(24, 40) ** 2
    capture = traced(column_statistics, (x,), "column_statistics", "colstats.py")
    write_codegen_fixture("colstats.kernels.schema-1.7.json",
                          generate(lower_opgraph(lower_capture(capture))))


def arena_chain(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Matrix products and the kernels between them: the first, larger product's block dies
    before the later, smaller ones are written, which take its bytes in the arena."""
    h = np.tanh(a @ w)
    g = np.tanh((h[:24] * 2.0 - 1.0) @ w)
    return np.exp(np.tanh(g @ w) + g).sum(axis=1)


def arena_documents() -> None:
    """stax.kernels/1.11: the storage's ``arena`` (blocks' byte offsets in one allocation)."""
    rng = np.random.default_rng(11)
    a, w = rng.standard_normal((48, 32)), rng.standard_normal((32, 32)) / 8
    capture = traced(arena_chain, (a, w), "arena_chain", "arena.py")
    write_codegen_fixture("arena_chain.kernels.schema-1.11.json",
                          generate(lower_opgraph(lower_capture(capture))))


def scale_in_place(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """One in-place ufunc on an argument: its late kernel reports the multiply's events after
    it wrote x, as NumPy does."""
    x *= s
    return x


def late_report_documents() -> None:
    """stax.loopir/1.8 and stax.kernels/1.12: ``late_reports``."""
    from stax.loop import LoopOptions
    x, s = np.linspace(-2, 2, 96, dtype=np.float32).reshape(8, 12), np.array(3.0, np.float32)
    capture = traced(scale_in_place, (x, s), "scale_in_place", "late.py")
    loop = lower_opgraph(lower_capture(capture), options=LoopOptions(late_reports=True))
    write_codegen_fixture("scale_in_place.loopir.schema-1.8.json", loop)
    write_codegen_fixture("scale_in_place.kernels.schema-1.12.json", generate(loop))


def safe_ratio(a: np.ndarray, d: np.ndarray) -> np.ndarray:
    """A division whose zero divisors NumPy reports, from the one operation that may."""
    return np.where(d != 0, a / d, 0.0)


def event_report_documents() -> None:
    """stax.loopir/1.10 and stax.kernels/1.14: ``event_reports``."""
    a, d = np.linspace(-2, 2, 96).reshape(8, 12), np.linspace(0.5, 3, 96).reshape(8, 12)
    capture = traced(safe_ratio, (a, d), "safe_ratio", "ratio.py")
    loop = lower_opgraph(lower_capture(capture))
    write_codegen_fixture("safe_ratio.loopir.schema-1.10.json", loop)
    write_codegen_fixture("safe_ratio.kernels.schema-1.14.json", generate(loop))


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 128), dtype=np.float32)
    w = rng.standard_normal((64, 128), dtype=np.float32)
    capture = trace(example_1_1, (x, w), name="example_1_1")
    # Source lines point into this script; keep them stable and short in the fixtures.
    for node in capture.graph.nodes:
        if node.source:
            node.meta["source"] = "example_1_1.py:" + node.source.rsplit(":", 1)[1]
    opgraph = lower_capture(capture)
    loop = lower_opgraph(opgraph)
    artifact = generate(loop)
    docs = {
        "stax-ir": ("example_1_1.capture.v0.1.0.json", capture),
        "stax-loop": ("example_1_1.opgraph.v0.1.0.json", opgraph),
        "stax-codegen": ("example_1_1.loopir.v0.1.0.json", loop),
        "stax-runtime": ("example_1_1.kernels.v0.1.0.json", artifact),
    }
    for package, (name, doc) in docs.items():
        folder = ROOT / "packages" / package / "tests" / "fixtures"
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / name, doc.to_json())
        print("wrote", folder / name)


def row_softmax(x: np.ndarray) -> np.ndarray:
    """What loop IR 1.7 and kernels 1.9 added: size symbols. Rows and columns dynamic."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_rows(x: np.ndarray, k: float) -> np.ndarray:
    """What capture 1.2 and op graph 1.1 added: a Python scalar operand (``scalar_args``) and
    sizes read in Python as arguments (``size_args``, ``info["size_symbols"]``)."""
    return x * k / x.shape[0] + x.shape[1]


def sizes_documents() -> None:
    """The size-generic documents of issue 15: capture 1.2, op graph 1.1, loop IR 1.7, kernels
    1.9 (CPU) and 1.10 (a CUDA plan, Triton kernels taking sizes), each made as the runtime
    makes a generic version (``stax.runtime.generic.compile_generic``)."""
    from stax.codegen import target_for
    from stax.ir import CAPTURE_SCHEMA, GraphProgram
    from stax.ir.passes import DEFAULT_PIPELINE, decompose_to_basis, run_pipeline
    from stax.ir.scalar_inputs import scalar_inputs
    from stax.ir.shape_env import ShapeEnv
    from stax.ir.sizes import shape_env
    from stax.ir.symbolic_shapes import symbolize

    x = np.linspace(-3, 3, 6 * 40, dtype=np.float32).reshape(6, 40)
    scaled = traced(scaled_rows, (x, 2.5), "scaled_rows", "scaled.py")
    write_package_fixture("stax-ir", "scaled_rows.capture.schema-1.2.json", scaled)
    with shape_env(ShapeEnv()) as env:
        assert symbolize(scaled, {0: [0, 1]}, env, frozenset(scaled.info.get("shape_read", ())),
                         scaled.info.get("size_symbols"), scaled.info.get("dims_read")) is None
        assert scalar_inputs(scaled, {1: "float"}) is None
        run_pipeline(scaled.graph, DEFAULT_PIPELINE)
        write_package_fixture("stax-loop", "scaled_rows.opgraph.schema-1.1.json",
                              lower_capture(scaled))

    capture = GraphProgram.from_json(traced(row_softmax, (x,), "row_softmax",
                                            "softmax.py").to_json(), CAPTURE_SCHEMA)
    with shape_env(ShapeEnv()) as env:
        assert symbolize(capture, {0: [0, 1]}, env) is None
        run_pipeline(capture.graph, DEFAULT_PIPELINE)
        loop = lower_opgraph(lower_capture(capture))
        artifact = generate(loop)
    write_codegen_fixture("row_softmax.loopir.schema-1.7.json", loop)
    write_codegen_fixture("row_softmax.kernels.schema-1.9.json", artifact)

    target = target_for("cuda")
    capture = traced(row_softmax, (x,), "row_softmax", "softmax.py")
    with shape_env(ShapeEnv()) as env:
        assert symbolize(capture, {0: [0]}, env) is None
        run_pipeline(capture.graph, DEFAULT_PIPELINE)
        opgraph = lower_capture(capture)
        decompose_to_basis(opgraph.graph, basis=target.basis)
        loop = lower_opgraph(opgraph, materialize=target.materialize, options=target.loop_options)
        artifact = generate(loop, target=target)
    for package in ("stax-codegen", "stax-runtime"):
        write_package_fixture(package, "row_softmax.cuda.kernels.schema-1.10.json", artifact)


def write_package_fixture(package: str, name: str, document) -> None:
    path = ROOT / "packages" / package / "tests" / "fixtures" / name
    write_json(path, document.to_json())
    print("wrote", path)


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--schema-1.2"]:
        schema_1_2_documents()
    elif sys.argv[1:] == ["--schema-1.4"]:
        schema_1_4_documents()
    elif sys.argv[1:] == ["--schema-1.5"]:
        schema_1_5_documents()
    elif sys.argv[1:] == ["--copies"]:
        copies_documents()
    elif sys.argv[1:] == ["--phased-columns"]:
        phased_columns_documents()
    elif sys.argv[1:] == ["--nests"]:
        nest_documents()
    elif sys.argv[1:] == ["--cuda"]:
        cuda_documents()
    elif sys.argv[1:] == ["--arena"]:
        arena_documents()
    elif sys.argv[1:] == ["--late-reports"]:
        late_report_documents()
    elif sys.argv[1:] == ["--event-reports"]:
        event_report_documents()
    elif sys.argv[1:] == ["--sizes"]:
        sizes_documents()
    else:
        main()
