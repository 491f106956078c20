"""The golden stax.kernels/1.11 document (tools/make_fixtures.py --arena): the plan's blocks
placed in one arena by their lives (the storage's ``arena``). It declares 1.11, reads back to
the same document, and runs to NumPy's result; so does a reader that ignores the arena and
allocates each block alone (what a 1.10 reader does); a document without an arena keeps its
older minor version."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from stax.codegen import Executable, load_artifact

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE = FIXTURES / "arena_chain.kernels.schema-1.11.json"


def arena_chain(a, w):
    h = np.tanh(a @ w)
    g = np.tanh((h[:24] * 2.0 - 1.0) @ w)
    return np.exp(np.tanh(g @ w) + g).sum(axis=1)


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((48, 32)), rng.standard_normal((32, 32)) / 8


def test_the_1_11_document_places_blocks_in_one_arena_and_runs():
    doc = json.loads(FIXTURE.read_text())
    assert doc["schema"] == "stax.kernels/1.11"
    artifact = load_artifact(FIXTURE)
    assert artifact.to_json() == doc
    storage = artifact.storage
    # the first product's block lends its bytes to a later, smaller one
    assert storage.arena_bytes < sum(storage.sizes[b] for b in storage.offsets)
    executable = Executable(artifact)
    for seed in range(3):
        a, w = _inputs(seed)
        (got,) = executable(a, w)
        np.testing.assert_allclose(got, arena_chain(a, w), rtol=1e-13)


def test_a_reader_that_ignores_the_arena_gets_the_same_result():
    artifact = load_artifact(FIXTURE)
    alone = replace(artifact, storage=replace(artifact.storage, offsets={}, arena_bytes=0))
    assert alone.schema != "stax.kernels/1.11"
    a, w = _inputs(7)
    (with_arena,) = Executable(artifact)(a, w)
    (blocks_alone,) = Executable(alone)(a, w)
    np.testing.assert_array_equal(with_arena, blocks_alone)


def test_a_document_without_an_arena_keeps_its_minor_version():
    for name, schema in (("copies.kernels.schema-1.6.json", "stax.kernels/1.6"),
                         ("colstats.kernels.schema-1.7.json", "stax.kernels/1.7")):
        artifact = load_artifact(FIXTURES / name)
        assert not artifact.storage or not artifact.storage.offsets
        assert artifact.to_json()["schema"] == schema
