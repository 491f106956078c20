"""Gathers compiled natively: x[indices], x[:, indices] and np.take(x, indices, axis) read x at
computed offsets (negative indices count from the end); an index out of bounds is never read —
it fails a check buffer and the call runs eagerly, so the caller gets NumPy's own IndexError."""

import json

import numpy as np
import pytest

import stax.runtime as stax
from stax.loop import LoopProgram

RNG = np.random.default_rng(12)

PROGRAMS = {
    "x[i]": lambda x, i: x[i] * 2,
    "np.take axis 1": lambda x, i: np.take(x, i % 8, axis=1) + 1,
    "x.T[i]": lambda x, i: x.T[i % 8],
    "of a computed value": lambda x, i: np.exp(x)[i[0]],
    "of a column view": lambda x, i: x[:, 3][i],
    "x[:, i]": lambda x, i: x[:, i % 8] - 1,
    "x.T[:, i] of a slice": lambda x, i: x[::2].T[:, i % 25],
}


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.float64])
def test_gathers_match_numpy(name, dtype):
    fn = PROGRAMS[name]
    x = (RNG.standard_normal((50, 8)) * 9).astype(dtype)
    i = RNG.integers(-50, 50, (6, 3))
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        got, want = compiled(x, i), fn(x, i)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert not compiled.versions()[0].artifact.externs


@pytest.mark.parametrize("strict", [False, True])
def test_an_index_out_of_bounds_raises_numpys_error(strict):
    x = RNG.standard_normal((5, 3))
    compiled = stax.compile(lambda x, i: x[i] + 1, strict_native=strict)
    np.testing.assert_array_equal(compiled(x, np.array([0, -5, 4])), x[[0, -5, 4]] + 1)
    for bad in ([0, 5], [-6, 1]):
        with pytest.raises(IndexError, match="out of bounds"):
            compiled(x, np.array(bad))
    np.testing.assert_array_equal(compiled(x, np.array([1, 2, 3])), x[[1, 2, 3]] + 1)


def test_the_check_is_in_the_documents(tmp_path, monkeypatch):
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    x, i = RNG.standard_normal((5, 3)), np.array([[0, 1], [2, 4]])
    stax.compile(lambda x, i: x[i], strict_native=True)(x, i)
    (loopir,) = tmp_path.glob("*.loopir.json")
    program = LoopProgram.from_json(json.loads(loopir.read_text()))
    assert program.checks and "check not" in str(program)


def test_embedding_lookup():
    table = RNG.standard_normal((1000, 64)).astype(np.float32)
    ids = RNG.integers(0, 1000, (32, 7))
    fn = lambda t, i: t[i].sum(1)  # noqa: E731
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_allclose(compiled(table, ids), fn(table, ids), rtol=1e-5)


def test_constant_index_lists():
    x = RNG.standard_normal((5, 4))
    for fn in (lambda x: x[[0, 2, -1]] * 2, lambda x: x[[3]] + 1, lambda x: np.exp(x)[[1, 1, 0]]):
        compiled = stax.compile(fn, strict_native=True)
        for _ in range(2):  # the compiling call, then the cached version's
            np.testing.assert_allclose(compiled(x), fn(x), rtol=1e-15)
        assert not compiled.versions()[0].artifact.externs
    with pytest.raises(IndexError):
        stax.compile(lambda x: x[[0, 7]])(x)  # out of bounds: NumPy's error, from the eager run


def test_a_clamped_gather_has_no_check_and_an_unclamped_one_keeps_it():
    """Positions clamped by construction (``stax.loop.intervals``): no bounds check."""
    def clipped(x, i):
        return x[np.clip(i, 0, x.shape[0] - 1)] * 2

    def unclipped(x, i):
        return x[i] * 2

    rng = np.random.default_rng(0)
    x, i = rng.standard_normal(50), rng.integers(-100, 100, 30)
    f = stax.compile(clipped, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(f(x, i), clipped(x, i))
    assert not f.versions()[0].artifact.checks
    g = stax.compile(unclipped, strict_native=True)
    for _ in range(2):
        np.testing.assert_array_equal(g(x, i % 50), unclipped(x, i % 50))
    assert g.versions()[0].artifact.checks  # out-of-bounds positions: NumPy's IndexError
