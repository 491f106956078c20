"""``python -m stax.codegen run KERNELS.json INPUTS.npz OUTPUTS.npz``: a CPU document runs its LLVM
kernels, a CUDA document its Triton kernels on torch tensors (CPU tensors in Triton's interpreter
here, conftest.py sets TRITON_INTERPRET=1), inputs laid out as planned whatever the .npz holds;
every mistake is one line and status 2, refused Triton source included."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stax.codegen import generate, load_artifact
from stax.codegen.__main__ import main
from stax.ir import write_json
from stax.ir.passes import decompose_to_basis
from stax.loop import load_loopir, lower_opgraph

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from stax.codegen import target_for  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
CUDA = FIXTURES / "cuda_kernels.kernels.schema-1.5.json"
LOOPIR = FIXTURES / "cuda_kernels.loopir.schema-1.3.json"
interpreting = pytest.mark.skipif(not triton.knobs.runtime.interpret,
                                  reason="Triton was imported before TRITON_INTERPRET=1 was set")


def cuda_kernels(a, b, i):
    """tools/make_fixtures.py's program (kept in step with it)."""
    top = a.max(1, keepdims=True)
    soft = np.exp(a - top) / np.exp(a - top).sum(1, keepdims=True)
    return (a * 2 + 1, a.sum(1), b.sum(1), a.sum(0), soft, np.cumsum(a, axis=1),
            np.concatenate([a, a[:3] * 3], axis=0), a[i] - 1)


def inputs():
    rng = np.random.default_rng(11)
    return (rng.integers(-8, 8, (8, 12)).astype(np.float32),
            rng.integers(-8, 8, (3, 5000)).astype(np.float32), np.array([1, -2, 6, 0]))


def outputs_of(path):
    with np.load(path) as npz:
        return [npz[f"out{i}"] for i in range(len(npz.files))]


def check(path, arrays):
    got, want = outputs_of(path), cuda_kernels(*arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)


@interpreting
def test_a_cuda_document_replays_by_name_and_by_position(tmp_path):
    a, b, i = arrays = inputs()
    np.savez(tmp_path / "named.npz", i=i, a=a, b=b)
    np.savez(tmp_path / "ordered.npz", a, b, i)
    for name in ("named", "ordered"):
        assert main(["run", str(CUDA), str(tmp_path / f"{name}.npz"), str(tmp_path / "out.npz")]) == 0
        check(tmp_path / "out.npz", arrays)


def test_a_cpu_document_replays(tmp_path):
    write_json(tmp_path / "cpu.json", generate(load_loopir(LOOPIR)).to_json())
    arrays = inputs()
    np.savez(tmp_path / "in.npz", *arrays)
    assert main(["run", str(tmp_path / "cpu.json"), str(tmp_path / "in.npz"),
                 str(tmp_path / "out.npz")]) == 0
    check(tmp_path / "out.npz", arrays)


def laid_out_document(build, device, tmp_path, reversed_v=True):
    """x * 2 + v for a transposed x and a reversed (or plain) v, written as a document for
    ``device``."""
    x = np.arange(12.0).reshape(3, 4).T            # strides (1, 4)
    v = np.arange(3.0)[::-1] if reversed_v else np.arange(3.0)  # strides (-1,) or (1,)
    b = build(x=x, v=v)
    out = b("add", b("mul", b.inputs["x"], 2.0), b.inputs["v"])
    target = target_for(device)
    program = b.program(out)
    decompose_to_basis(program.graph, basis=target.basis)
    artifact = generate(lower_opgraph(program, materialize=target.materialize,
                                      options=target.loop_options), target=target)
    planned = {p.name: p.strides for p in artifact.buffers if p.role == "input"}
    assert planned == {"x": (1, 4), "v": (-1,) if reversed_v else (1,)}
    write_json(tmp_path / "k.json", artifact.to_json())
    np.savez(tmp_path / "in.npz", x=np.ascontiguousarray(x), v=np.ascontiguousarray(v))
    return x * 2 + v


def test_inputs_are_laid_out_as_planned(tmp_path, build):
    """A document planned for a transposed and a reversed input gets its values in that layout
    from a plain .npz."""
    want = laid_out_document(build, "cpu", tmp_path)
    assert main(["run", str(tmp_path / "k.json"), str(tmp_path / "in.npz"),
                 str(tmp_path / "out.npz")]) == 0
    np.testing.assert_array_equal(outputs_of(tmp_path / "out.npz")[0], want)


@interpreting
def test_cuda_inputs_are_laid_out_as_planned_or_refused(tmp_path, build, capsys):
    """On torch tensors a transposed input is laid out as planned; negative strides (planned
    for CuPy arrays) cannot be, which is said in one line."""
    laid_out_document(build, "cuda", tmp_path)
    assert main(["run", str(tmp_path / "k.json"), str(tmp_path / "in.npz"),
                 str(tmp_path / "out.npz")]) == 2
    assert "the input 'v' is planned with negative strides (-1,)" in capsys.readouterr().err
    want = laid_out_document(build, "cuda", tmp_path, reversed_v=False)
    assert main(["run", str(tmp_path / "k.json"), str(tmp_path / "in.npz"),
                 str(tmp_path / "out.npz")]) == 0
    np.testing.assert_array_equal(outputs_of(tmp_path / "out.npz")[0], want)


def _tampered(tmp_path):
    doc = json.loads(CUDA.read_text())
    doc["triton_source"] = "import os\n" + doc["triton_source"]
    write_json(tmp_path / "k.json", doc)
    return tmp_path / "k.json"


@pytest.mark.parametrize("make_doc, make_inputs, expected", [
    (lambda t: t / "missing.json", None, "cannot read"),
    (lambda t: (t / "k.json").write_text("{bad") and t / "k.json", None, "is not JSON"),
    (lambda t: (t / "k.json").write_text('{"schema": "stax.loopir/1.3"}') and t / "k.json", None,
     "is not a stax.kernels document"),
    (lambda t: (t / "k.json").write_text('{"schema": "stax.kernels/2.0"}') and t / "k.json", None,
     "stax.kernels/2.0"),
    (lambda t: (t / "k.json").write_text('{"schema": "stax.kernels/1.5"}') and t / "k.json", None,
     "missing field"),
    (lambda t: CUDA, lambda t: np.savez(t / "in.npz", a=inputs()[0]), "lacks the input 'b'"),
    (lambda t: CUDA, lambda t: np.savez(t / "in.npz", inputs()[0].T, *inputs()[1:]),
     "the input 'a' is float32[12, 8]; the document plans float32[8, 12]"),
    (lambda t: CUDA, lambda t: np.savez(t / "in.npz", np.array([object()], dtype=object)),
     "not an .npz of plain arrays"),
    (lambda t: CUDA, lambda t: (t / "in.npz").write_text("not a zip"), "not an .npz"),
    (_tampered, None, "UntrustedSourceError"),
    (lambda t: CUDA, lambda t: np.savez(t / "in.npz", *inputs()[:2], np.array([0, 8, 0, 0])),
     "ExternResultMismatch: a check failed: an index is out of bounds"),
])
def test_a_mistake_is_one_line_and_status_2(tmp_path, capsys, make_doc, make_inputs, expected):
    doc = make_doc(tmp_path)
    if make_inputs is None:
        np.savez(tmp_path / "in.npz", *inputs())
    else:
        make_inputs(tmp_path)
    assert main(["run", str(doc), str(tmp_path / "in.npz"), str(tmp_path / "out.npz")]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("python -m stax.codegen: error: ")
    assert not (tmp_path / "out.npz").exists()


def test_the_module_exits_2_without_a_traceback(tmp_path):
    done = subprocess.run([sys.executable, "-m", "stax.codegen", "run", str(tmp_path / "no.json"),
                           str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "cannot read" in done.stderr and "Traceback" not in done.stderr
    assert load_artifact(CUDA).triton_source is not None
