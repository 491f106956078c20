"""The corpus of CUDA artifacts the tests run (``triton/corpus.py``): with STAX_TRITON_CORPUS set,
each executable made records its kernels document once, whole, readable back as the artifact it
was; ``tools/aot_corpus.py`` (run after the test session by ``nox -s tests``) compiles them."""

import json

import numpy as np
import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from stax.codegen import TritonExecutable, generate_triton, triton_target  # noqa: E402
from stax.codegen.triton import corpus  # noqa: E402
from stax.ir.passes import decompose_to_basis  # noqa: E402
from stax.loop import lower_opgraph  # noqa: E402


def artifact_of(build):
    x = np.arange(12.0).reshape(3, 4)
    b = build(x=x)
    out = b("sum", b("exp", b.inputs["x"]), axis=(1,), keepdims=False, dtype=None)
    target = triton_target()
    program = b.program(out)
    decompose_to_basis(program.graph, basis=target.basis)
    loop = lower_opgraph(program, materialize=target.materialize, options=target.loop_options)
    return generate_triton(loop, target)


def test_each_executable_records_its_document_once(build, tmp_path, monkeypatch):
    artifact = artifact_of(build)
    TritonExecutable(artifact)  # no corpus directory: nothing written anywhere
    assert not list(tmp_path.iterdir())
    monkeypatch.setenv(corpus.ENVIRONMENT, str(tmp_path / "corpus"))
    for _ in range(2):
        TritonExecutable(artifact)
    found = corpus.documents(tmp_path / "corpus")
    assert len(found) == 1
    _path, loaded = found[0]
    assert json.dumps(loaded.to_json(), sort_keys=True) == json.dumps(artifact.to_json(), sort_keys=True)
    assert loaded.triton_source == artifact.triton_source
    assert not list((tmp_path / "corpus").glob("*.tmp"))
