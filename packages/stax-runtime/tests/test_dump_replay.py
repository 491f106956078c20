"""STAX_DUMP_DIR: every compile writes its four documents, and each layer continues from them."""

import subprocess
import sys
import textwrap

import numpy as np

import stax.runtime as stax
from stax.codegen import Executable, generate, load_artifact
from stax.ir import load_capture, load_opgraph, lower_capture
from stax.loop import load_loopir, lower_opgraph

STAGES = ("capture", "opgraph", "loopir", "kernels")


def f(x, w):
    return (stax.nn.relu(x + w) * 2).sum(-1)


def compile_with_dumps(tmp_path, monkeypatch, x, w):
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    cf = stax.compile(f, strict_native=True)
    return cf(x, w)


def inputs():
    rng = np.random.default_rng(11)
    return (rng.standard_normal((64, 128), dtype=np.float32),
            rng.standard_normal((64, 128), dtype=np.float32))


def test_four_documents_per_version(tmp_path, monkeypatch):
    compile_with_dumps(tmp_path, monkeypatch, *inputs())
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(f"f.v0.{s}.json" for s in STAGES)


def test_each_layer_continues_from_the_previous_document(tmp_path, monkeypatch):
    x, w = inputs()
    expected = compile_with_dumps(tmp_path, monkeypatch, x, w)
    doc = {s: tmp_path / f"f.v0.{s}.json" for s in STAGES}
    # each hop, from the file the previous layer wrote
    assert lower_capture(load_capture(doc["capture"])).to_json() == load_opgraph(doc["opgraph"]).to_json()
    assert lower_opgraph(load_opgraph(doc["opgraph"])).to_json() == load_loopir(doc["loopir"]).to_json()
    regenerated = generate(load_loopir(doc["loopir"])).to_json()
    assert regenerated == load_artifact(doc["kernels"]).to_json()
    np.testing.assert_array_equal(Executable(load_artifact(doc["kernels"]))(x, w)[0], expected)


def test_replay_from_dumped_files_in_a_fresh_process(tmp_path, monkeypatch):
    x, w = inputs()
    expected = compile_with_dumps(tmp_path, monkeypatch, x, w)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    script = textwrap.dedent(f"""
        import numpy as np
        from stax.ir import load_capture, load_opgraph, lower_capture
        from stax.loop import load_loopir, lower_opgraph
        from stax.codegen import Executable, generate, load_artifact
        d = {str(tmp_path)!r}
        x, w = np.load(d + "/x.npy"), np.load(d + "/w.npy")
        run = lambda artifact: Executable(artifact)(x, w)[0]
        outs = [
            run(generate(lower_opgraph(lower_capture(load_capture(d + "/f.v0.capture.json"))))),
            run(generate(lower_opgraph(load_opgraph(d + "/f.v0.opgraph.json")))),
            run(generate(load_loopir(d + "/f.v0.loopir.json"))),
            run(load_artifact(d + "/f.v0.kernels.json")),
        ]
        np.save(d + "/out.npy", np.stack(outs))
    """)
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path)
    for replayed in np.load(tmp_path / "out.npy"):
        np.testing.assert_array_equal(replayed, expected)


def test_golden_kernels_document_of_release_0_1_0_still_runs(kernels_doc_path):
    x, w = inputs()
    (out,) = Executable(load_artifact(kernels_doc_path))(x, w)
    np.testing.assert_allclose(out, (np.maximum(x + w, 0) * 2).sum(-1), rtol=1e-5, atol=1e-4)


def test_kernels_document_of_schema_1_0_still_runs(kernels_doc_path):
    x, w = inputs()
    old = load_artifact(kernels_doc_path.with_name("example_1_1.kernels.schema-1.0.json"))
    np.testing.assert_allclose(Executable(old)(x, w)[0], (np.maximum(x + w, 0) * 2).sum(-1),
                               rtol=1e-5, atol=1e-4)
