"""Logs, dumps and replay of CUDA versions (issue 12 item 2), without a GPU: functions called with
torch CPU tensors take the CUDA path under ``TRITON_INTERPRET=1`` (conftest.py). ``STAX_LOGS=kernels``
prints the plan and the Triton source; ``STAX_DUMP_DIR`` writes the four documents of the CUDA
version (its kernels document ``stax.kernels/1.5`` with ``triton_source``), which replay: the
kernels document through ``TritonExecutable`` on tensors, the op graph and loop IR through the
CUDA target to the same source; the golden CUDA kernels document runs with NumPy's result."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import stax.runtime as stax  # noqa: E402
from stax.codegen import Executable, TritonExecutable, generate, load_artifact, target_for  # noqa: E402
from stax.codegen.triton.verify import UntrustedSourceError  # noqa: E402
from stax.ir import load_capture, load_opgraph  # noqa: E402
from stax.loop import load_loopir, lower_opgraph  # noqa: E402

pytestmark = pytest.mark.skipif(not triton.knobs.runtime.interpret,
                                reason="Triton was imported before TRITON_INTERPRET=1 was set")

FIXTURE = Path(__file__).parent / "fixtures" / "cuda_kernels.kernels.schema-1.5.json"
RNG = np.random.default_rng(3)
X = RNG.standard_normal((6, 10))
W = RNG.standard_normal(10)


def softmax_plus(x, w):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) + w, np.cumsum(x, axis=1)


def tensors(*arrays):
    return [torch.from_numpy(np.array(a)) for a in arrays]


def check(got, want):
    for g, w in zip(got, want):
        assert isinstance(g, torch.Tensor)
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-15)


def test_kernels_log_shows_the_cuda_plan_and_its_triton_source(monkeypatch, caplog):
    monkeypatch.setenv("STAX_LOGS", "kernels")
    cf = stax.compile(softmax_plus, device="cuda")
    with caplog.at_level(logging.INFO, logger="stax"):
        check(cf(*tensors(X, W)), softmax_plus(X, W))
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == "stax.kernels")
    assert "# stax.kernels/1.5 softmax_plus for cuda (Triton)" in text
    assert "rows nest" in text and "scan nest" in text and "XBLOCK=" in text
    plan, source = text.split("triton source:\n")
    assert "launch kernel_0(" in plan
    assert "    @triton.jit\n    def kernel_0(x_ptr" in source and "tl.cumsum" in source
    assert source.count("@triton.jit") == len(cf.versions()[0].artifact.kernels)


def test_dump_dir_writes_the_four_documents_of_each_device(monkeypatch, tmp_path):
    """A NumPy call makes version 0 (CPU), a tensor call version 1 (CUDA): each writes capture,
    op graph, loop IR and kernels; the CUDA kernels document is 1.5 with the Triton source and
    each kernel's launch, the CPU one 1.4 with LLVM IR."""
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    cf = stax.compile(softmax_plus)
    cf(X, W)
    cf(*tensors(X, W))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"softmax_plus.v{n}.{stage}.json" for n in (0, 1)
                     for stage in ("capture", "kernels", "loopir", "opgraph")]
    cpu, gpu = (json.loads((tmp_path / f"softmax_plus.v{n}.kernels.json").read_text())
                for n in (0, 1))
    assert cpu["schema"] == "stax.kernels/1.4" and "triton_source" not in cpu and cpu["llvm_ir"]
    assert gpu["schema"] == "stax.kernels/1.5" and gpu["target"]["device"] == "cuda"
    assert gpu["llvm_ir"] == "" and gpu["triton_source"].count("@triton.jit") == len(gpu["kernels"])
    assert all("launch" in k and "nest" in k for k in gpu["kernels"])
    assert gpu["triton_source"] == cf.versions()[1].artifact.triton_source
    for n in (0, 1):
        load_capture(tmp_path / f"softmax_plus.v{n}.capture.json")
        load_opgraph(tmp_path / f"softmax_plus.v{n}.opgraph.json")
        load_loopir(tmp_path / f"softmax_plus.v{n}.loopir.json")


def test_a_dumped_cuda_version_replays_on_tensors(monkeypatch, tmp_path):
    """The kernels document runs through TritonExecutable on tensors (the CPU Executable refuses
    it, naming TritonExecutable); the loop IR and the op graph, generated for the CUDA target,
    give the same Triton source."""
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    cf = stax.compile(softmax_plus, device="cuda")
    cf(*tensors(X, W))
    stem = tmp_path / "softmax_plus.v0"
    artifact = load_artifact(f"{stem}.kernels.json")
    x2, w2 = RNG.standard_normal((6, 10)), RNG.standard_normal(10)
    check(TritonExecutable(artifact)(*tensors(x2, w2)), softmax_plus(x2, w2))
    with pytest.raises(ValueError, match="TritonExecutable"):
        Executable(artifact)
    target = target_for("cuda")
    from_loop = generate(load_loopir(f"{stem}.loopir.json"), target=target)
    assert from_loop.triton_source == artifact.triton_source
    loop = lower_opgraph(load_opgraph(f"{stem}.opgraph.json"), materialize=target.materialize,
                         options=target.loop_options)
    assert generate(loop, target=target).triton_source == artifact.triton_source


def test_a_tampered_dump_is_refused_on_replay(monkeypatch, tmp_path):
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    stax.compile(softmax_plus, device="cuda")(*tensors(X, W))
    path = tmp_path / "softmax_plus.v0.kernels.json"
    doc = json.loads(path.read_text())
    marker = tmp_path / "ran"
    doc["triton_source"] = doc["triton_source"].replace(
        "    xnumel = ", f"    __import__('os').system('touch {marker}')\n    xnumel = ", 1)
    path.write_text(json.dumps(doc))
    with pytest.raises(UntrustedSourceError, match=r"line \d+: .*__import__"):
        TritonExecutable(load_artifact(path))
    assert not marker.exists()


def cuda_kernels(a, b, i):
    """tools/make_fixtures.py's program (kept in step with it)."""
    top = a.max(1, keepdims=True)
    soft = np.exp(a - top) / np.exp(a - top).sum(1, keepdims=True)
    return (a * 2 + 1, a.sum(1), b.sum(1), a.sum(0), soft, np.cumsum(a, axis=1),
            np.concatenate([a, a[:3] * 3], axis=0), a[i] - 1)


def test_the_golden_cuda_document_runs_on_tensors():
    """The CUDA kernels document the released stax-codegen wrote (``make_fixtures.py --cuda``)."""
    rng = np.random.default_rng(4)
    arrays = (rng.integers(-8, 8, (8, 12)).astype(np.float32),
              rng.integers(-8, 8, (3, 5000)).astype(np.float32), np.array([2, -8, 7, 0]))
    with np.errstate(all="ignore"):
        got = TritonExecutable(load_artifact(FIXTURE))(*tensors(*arrays))
    want = cuda_kernels(*arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == getattr(torch, str(w.dtype)) and tuple(g.shape) == w.shape
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-6, atol=0)


def test_a_tampered_plan_in_the_disk_cache_is_a_miss_and_never_runs(monkeypatch, tmp_path, caplog):
    """A CUDA plan rewritten in the cache (a valid entry: whoever can write the directory can
    make one) with Python in its Triton source is refused when loaded, reported, and made
    again from the capture; nothing of it runs."""
    from stax.codegen import DiskCache

    cache = tmp_path / "cache"
    monkeypatch.setenv("STAX_CACHE_DIR", str(cache))
    check(stax.compile(softmax_plus, device="cuda")(*tensors(X, W)), softmax_plus(X, W))
    [entry] = list((cache / "plans").glob("*/*.json"))
    plans = DiskCache(cache / "plans", suffix=".json", root=cache)
    doc = json.loads(plans.load(entry.stem))
    marker = tmp_path / "ran"
    doc["triton_source"] = doc["triton_source"].replace(
        "    xnumel = ", f"    __import__('os').system('touch {marker}')\n    xnumel = ", 1)
    plans.store(entry.stem, json.dumps(doc).encode())
    with caplog.at_level(logging.WARNING, logger="stax"):
        check(stax.compile(softmax_plus, device="cuda")(*tensors(X, W)), softmax_plus(X, W))
    assert not marker.exists()
    assert any("UntrustedSourceError" in r.getMessage() and entry.name in r.getMessage()
               for r in caplog.records)
    assert "__import__" not in json.loads(plans.load(entry.stem))["triton_source"]  # made again


def test_a_dumped_cuda_version_replays_from_the_command_line(monkeypatch, tmp_path):
    """``python -m stax.codegen run`` on the dumped kernels document and an .npz of the inputs
    (called in process: TRITON_INTERPRET=1 is set for this process)."""
    from stax.codegen.__main__ import main

    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    stax.compile(softmax_plus, device="cuda")(*tensors(X, W))
    x2, w2 = RNG.standard_normal((6, 10)), RNG.standard_normal(10)
    np.savez(tmp_path / "in.npz", x=x2, w=w2)
    assert main(["run", str(tmp_path / "softmax_plus.v0.kernels.json"), str(tmp_path / "in.npz"),
                 str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as out:
        for i, want in enumerate(softmax_plus(x2, w2)):
            np.testing.assert_allclose(out[f"out{i}"], want, rtol=1e-12, atol=1e-15)
