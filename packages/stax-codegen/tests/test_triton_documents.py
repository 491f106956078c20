"""CUDA kernels documents (``stax.kernels/1.5``): the golden fixture ``tools/make_fixtures.py
--cuda`` wrote (a kernel of each kind the Triton backend emits) reads back, validates, round-trips
byte for byte and runs in Triton's interpreter on torch CPU tensors with NumPy's result; readers'
rules for other schemas; and the trust rule: a document's Triton source runs only when it has the
generator's form (``triton/verify.py``), so tampered source is refused before any of it runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from stax.codegen import Executable, ExternResultMismatch, KernelArtifact, generate, load_artifact
from stax.codegen.artifact import KERNELS_SCHEMA, TRITON_KERNELS_SCHEMA
from stax.codegen.triton import verify
from stax.codegen.triton.verify import UntrustedSourceError, check_source
from stax.ir import SchemaError, write_json
from stax.loop import load_loopir

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from stax.codegen import TritonExecutable, target_for  # noqa: E402
from stax.codegen.triton.executable import check_plan, load_source  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE = FIXTURES / "cuda_kernels.kernels.schema-1.5.json"
LOOPIR = FIXTURES / "cuda_kernels.loopir.schema-1.3.json"
interpreting = pytest.mark.skipif(not triton.knobs.runtime.interpret,
                                  reason="Triton was imported before TRITON_INTERPRET=1 was set")


def cuda_kernels(a, b, i):
    """tools/make_fixtures.py's program (kept in step with it)."""
    top = a.max(1, keepdims=True)
    soft = np.exp(a - top) / np.exp(a - top).sum(1, keepdims=True)
    return (a * 2 + 1, a.sum(1), b.sum(1), a.sum(0), soft, np.cumsum(a, axis=1),
            np.concatenate([a, a[:3] * 3], axis=0), a[i] - 1)


def cuda_inputs(seed=1):
    rng = np.random.default_rng(seed)
    return (rng.integers(-8, 8, (8, 12)).astype(np.float32),
            rng.integers(-8, 8, (3, 5000)).astype(np.float32),
            np.array([0, 7, -1, 3], dtype=np.int64))


def run_document(artifact, arrays, **kw):
    with np.errstate(all="ignore"):
        outputs = TritonExecutable(artifact, **kw)(*[torch.from_numpy(a.copy()) for a in arrays])
    return [o.numpy() if isinstance(o, torch.Tensor) else o for o in outputs]


def check_outputs(got, arrays):
    want = cuda_kernels(*arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)  # softmax: libdevice exp, 1 ulp


def test_the_fixture_holds_a_kernel_of_each_kind_with_its_launch():
    doc = json.loads(FIXTURE.read_text())
    assert doc["schema"] == TRITON_KERNELS_SCHEMA == "stax.kernels/1.5"
    artifact = KernelArtifact.from_json(doc)
    assert artifact.target["device"] == "cuda" and artifact.llvm_ir == ""
    assert all(k.launch is not None and k.nest is not None for k in artifact.kernels)
    assert {k.nest.kind for k in artifact.kernels} == {"plain", "columns", "scan", "rows"}
    source = artifact.triton_source
    assert source.count("@triton.jit") == len(artifact.kernels)
    for kind in ("(persistent)", "(looped)", "running sum", "tl.cumsum", "tl.math.div_rn",
                 "libdevice.exp"):
        assert kind in source, kind
    assert re.search(r"tl\.load\(a_ptr \+ \(\w+\), xmask\)", source) is None
    assert re.search(r"tl\.load\(a_ptr \+ \([^)]*\), xmask & tmp\d+", source)  # guarded loads
    assert re.search(r"tl\.load\(a_ptr \+ \(tmp\d+\)", source)  # the gather's indirect load
    assert artifact.checks  # the gather's bounds check
    rows = next(k for k in artifact.kernels if k.nest.kind == "rows")
    assert len(rows.nest.phases) == 5 and rows.launch.blocks == (("XBLOCK", 8), ("R0_BLOCK", 16))


def test_the_fixture_round_trips_byte_identically(tmp_path):
    artifact = load_artifact(FIXTURE)
    write_json(tmp_path / "again.json", artifact.to_json())
    assert (tmp_path / "again.json").read_bytes() == FIXTURE.read_bytes()
    assert load_artifact(tmp_path / "again.json").to_json() == artifact.to_json()


def test_the_fixture_source_has_the_generators_form_and_matches_its_plan():
    artifact = load_artifact(FIXTURE)
    signatures = check_source(artifact.triton_source)  # raises otherwise
    assert sorted(signatures) == sorted(k.name for k in artifact.kernels)
    check_plan(artifact)


def test_readers_rules_for_cuda_documents(tmp_path):
    """Any 1.x loads (a later minor's unknown fields ignored), 2.0 is refused naming both; a CPU
    document still declares 1.4; the CPU executable refuses a CUDA document with an error naming
    TritonExecutable, also when the reader dropped the Triton source (as a 1.4 reader does)."""
    doc = json.loads(FIXTURE.read_text())
    later = {**doc, "schema": "stax.kernels/1.9", "a_field_of_1_9": [1, 2]}
    assert load_artifact(later).to_json() == load_artifact(doc).to_json()
    with pytest.raises(SchemaError, match=r"stax\.kernels/2\.0.*stax\.kernels/1"):
        load_artifact({**doc, "schema": "stax.kernels/2.0"})
    cpu = generate(load_loopir(LOOPIR))
    assert cpu.to_json()["schema"] == KERNELS_SCHEMA == "stax.kernels/1.4"
    assert "triton_source" not in cpu.to_json()
    with pytest.raises(ValueError, match="TritonExecutable"):
        Executable(load_artifact(doc))
    as_1_4 = {k: v for k, v in doc.items() if k != "triton_source"}
    as_1_4["kernels"] = [{k: v for k, v in kernel.items() if k != "launch"} for kernel in doc["kernels"]]
    with pytest.raises(ValueError, match="TritonExecutable"):
        Executable(load_artifact({**as_1_4, "schema": "stax.kernels/1.4"}))
    with pytest.raises(ValueError, match="holds no Triton source"):
        TritonExecutable(load_artifact(cpu.to_json()))


@interpreting
def test_the_fixture_runs_in_the_interpreter_with_numpys_result():
    arrays = cuda_inputs()
    check_outputs(run_document(load_artifact(FIXTURE), arrays), arrays)


@interpreting
def test_the_fixture_refuses_an_index_out_of_bounds():
    a, b, _ = cuda_inputs()
    with pytest.raises(ExternResultMismatch, match="check failed"):
        run_document(load_artifact(FIXTURE), (a, b, np.array([0, 8, 1, 2], dtype=np.int64)))


@interpreting
def test_the_fixture_regenerates_from_its_loop_ir():
    """The loop IR document beside it, generated for the CUDA target with the recorded nests,
    gives a document of the same kernels (their source may differ as the emitters improve)
    that computes the same values."""
    artifact = load_artifact(FIXTURE)
    again = generate(load_loopir(LOOPIR), target=target_for("cuda"), nests=artifact.nests)
    assert again.nests == artifact.nests and again.triton_source is not None
    arrays = cuda_inputs(seed=2)
    check_outputs(run_document(again, arrays), arrays)


MARKER = "stax_tampered_marker"
# (what is injected, where): each would touch the marker file if any of it ran
TAMPERINGS = {
    "module import": lambda s, m: s.replace("import triton\n", f"import os; os.system('touch {m}')"
                                            "\nimport triton\n", 1),
    "module statement": lambda s, m: s + f"\nopen('{m}', 'w').write('x')\n",
    "header import swapped": lambda s, m: s.replace("import triton.language as tl",
                                                    "import os as tl", 1),
    "kernel body": lambda s, m: s.replace("    xnumel = ", f"    __import__('os').system('touch {m}')"
                                          "\n    xnumel = ", 1),
    "import in a kernel": lambda s, m: s.replace("    xnumel = ", "    import os\n    xnumel = ", 1),
    "dunder attribute": lambda s, m: s.replace("    xnumel = ", "    k = tl.__dict__\n    xnumel = ", 1),
    "module through tl": lambda s, m: s.replace("    xnumel = ", "    k = tl.core.os\n    xnumel = ", 1),
    "method of a value": lambda s, m: s.replace("    xnumel = ", "    k = xoffset.__class__\n"
                                                "    xnumel = ", 1),
    "builtin": lambda s, m: s.replace("    xnumel = ", f"    k = open('{m}', 'w')\n    xnumel = ", 1),
    "lambda": lambda s, m: s.replace("    xnumel = ", "    k = (lambda: 0)()\n    xnumel = ", 1),
    "decorator": lambda s, m: s.replace("@triton.jit\ndef kernel_0", "@print\ndef kernel_0", 1),
    "default argument": lambda s, m: s.replace("XBLOCK: tl.constexpr", "XBLOCK: tl.constexpr = "
                                               f"open('{m}', 'w')", 1),
    "annotation": lambda s, m: s.replace("XBLOCK: tl.constexpr", f"XBLOCK: open('{m}', 'w')", 1),
    "class": lambda s, m: s + "\nclass K:\n    pass\n",
    "rebinding tl": lambda s, m: s.replace("    xnumel = ", "    tl = xoffset\n    xnumel = ", 1),
    "not Python": lambda s, m: s + "\ndef (:\n",
    "starred call": lambda s, m: s.replace("tl.program_id(0)", "tl.program_id(*[0])", 1),
    "private keyword": lambda s, m: s.replace("tl.program_id(0)", "tl.program_id(0, _semantic=0)", 1),
    # the import decodes this as UTF-7, where +AAo- is a line break and +ACI- a quote: a module
    # statement the parser of the text never sees (every "+" written "+-", UTF-7's own plus)
    "coding cookie": lambda s, m: "# coding: utf-7\n" + s.replace("+", "+-").replace(
        "import triton\n", f"import triton  #+AAo-__import__(+ACI-os+ACI-).system(+ACI-touch {m}+ACI-)\n", 1),
    "unknown coding": lambda s, m: "# coding: no-such-codec\n" + s,
    "line separator": lambda s, m: s.replace("    xnumel = ", f"    # \u2028open('{m}', 'w')\n"
                                             "    xnumel = ", 1),
    "form feed": lambda s, m: s.replace("    xnumel = ", "    \x0c\n    xnumel = ", 1),
}


@pytest.mark.parametrize("how", sorted(TAMPERINGS))
def test_tampered_source_is_refused_and_never_runs(how, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / MARKER
    doc = json.loads(FIXTURE.read_text())
    doc["triton_source"] = TAMPERINGS[how](doc["triton_source"], marker)
    assert doc["triton_source"] != json.loads(FIXTURE.read_text())["triton_source"]
    artifact = load_artifact(doc)  # loading the document is data only
    source_dir = tmp_path / "modules"
    with pytest.raises(UntrustedSourceError, match="Triton source"):
        TritonExecutable(artifact, source_dir=source_dir)
    with pytest.raises(UntrustedSourceError):
        load_source(artifact.triton_source, source_dir)
    assert not marker.exists() and not source_dir.exists()  # nothing written, nothing ran


def test_the_untampered_source_loads_where_the_tampered_one_did_not(tmp_path):
    """The control of the test above: the same calls with the fixture's own source."""
    source_dir = tmp_path / "modules"
    module = load_source(load_artifact(FIXTURE).triton_source, source_dir)
    assert hasattr(module, "kernel_0") and len(list(source_dir.glob("stax_triton_*.py"))) == 1


def test_every_name_the_emitters_write_is_allowed():
    """Each ``tl.X`` and ``libdevice.X`` the Triton package's modules write into kernels is in
    the allow-list: an emitter that starts using another gets this failure, not a refused
    kernel at run time."""
    package = Path(verify.__file__).parent
    tl, dev = set(), set()
    for path in package.glob("*.py"):
        if path.name in ("verify.py", "interpret.py", "executable.py", "arrays.py", "aot.py"):
            continue  # the checker itself; the interpreter's and the runner's own use of Triton
        text = path.read_text()
        tl |= set(re.findall(r"\btl\.(\w+)", text))
        dev |= set(re.findall(r"\blibdevice\.(\w+)", text))
    assert tl and dev
    assert tl - verify.TL_NAMES == set()
    assert dev - verify.LIBDEVICE_NAMES == set()
    from stax.codegen.triton.functions import BINARY_FUNCTIONS, UNARY_FUNCTIONS
    assert set(UNARY_FUNCTIONS.values()) | set(BINARY_FUNCTIONS.values()) <= verify.LIBDEVICE_NAMES
    assert {"load", "store", "where", "reduce", "cumsum"} <= tl


def _without_launch(doc):
    doc["kernels"][1].pop("launch")


def _renamed(doc):
    doc["kernels"][1]["name"] = "kernel_9"
    doc["steps"] = ["kernel_9" if s == "kernel_1" else s for s in doc["steps"]]


def _buffer_dropped(doc):
    doc["kernels"][1]["args"] = doc["kernels"][1]["args"][:-1]


def _block_renamed(doc):
    doc["kernels"][1]["launch"]["blocks"] = {"YBLOCK": 1, "R0_BLOCK": 1024}


def _unknown_step(doc):
    doc["steps"] = [*doc["steps"], "buf99"]


@pytest.mark.parametrize("edit, message", [
    (_without_launch, "kernel_1 has no launch"),
    (_renamed, r"kernel_9 of the plan .* does not match its Triton source \(no such function\)"),
    (_buffer_dropped, r"kernel_1 of the plan \(buffers b; blocks R0_BLOCK, XBLOCK\) does not match"
                      r" its Triton source \(def kernel_1\(b_ptr, buf3_ptr, XBLOCK, R0_BLOCK\)\)"),
    (_block_renamed, r"kernel_1 of the plan .*blocks R0_BLOCK, YBLOCK\) does not match"),
    (_unknown_step, "step 'buf99' is neither a kernel nor a NumPy step"),
])
def test_a_plan_its_source_does_not_match_is_refused_before_loading(edit, message, tmp_path):
    doc = json.loads(FIXTURE.read_text())
    edit(doc)
    with pytest.raises(ValueError, match=message):
        TritonExecutable(load_artifact(doc), source_dir=tmp_path / "modules")
    assert not (tmp_path / "modules").exists()


def test_damaged_source_is_admitted_or_refused_never_a_crash():
    """300 random damages of the fixture's source (characters deleted, doubled or replaced by
    ones Python gives meaning to): the check admits the text or raises UntrustedSourceError."""
    source = load_artifact(FIXTURE).triton_source
    rng = np.random.default_rng(7)
    alphabet = list("()[]{}:.,=+-*/#'\"\\\n _aZ9@") + ["\u2028", "\x00", "lambda", "import "]
    outcomes = {"admitted": 0, "refused": 0}
    for _ in range(300):
        text = source
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(0, len(text)))
            how = rng.integers(0, 3)
            piece = alphabet[int(rng.integers(0, len(alphabet)))]
            text = text[:at] + ("" if how == 0 else text[at] * 2 if how == 1 else piece) + text[at + 1:]
        try:
            check_source(text)
            outcomes["admitted"] += 1
        except UntrustedSourceError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 100 and sum(outcomes.values()) == 300
