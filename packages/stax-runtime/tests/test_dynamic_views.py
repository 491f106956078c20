"""Dynamic shapes through views and shape-changing calls (issue 15): slices, integer and new-axis
indexing, reshapes, joins, scans, ``*_like`` creation and products are written in size symbols,
so a stream of sizes compiles one generic version; the bounds a slice compares with a size are
shape guards, so a size where a bound decides otherwise (``x[:3]`` of two rows) takes another
version — never a wrong result."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import stax.runtime as st

RNG = np.random.default_rng(1521)

PROGRAMS = {
    "differences": lambda x: x[:, 1:] - x[:, :-1],
    "stencil": lambda x: x[1:-1] * 2 + x[2:] + x[:-2],
    "pairwise": lambda x: x[:, None, :] * x[:, :, None],
    "head": lambda x: x[:3] * 2,
    "tail": lambda x: x[-2:].sum(0) + x[0],
    "reversed": lambda x: x[::-1] - x,
    "every_other": lambda x: x[::2] + 1,
    "every_other_reversed": lambda x: x[-1::-3] * x[-1],
    "columns": lambda x: x[..., ::2] + x[:, 0:1],
    "column": lambda x: x[:, 0] * x[:, 1],
    "flat": lambda x: x.reshape(-1) * 2,
    "regrouped": lambda x: x.reshape(-1, 4).sum(1),
    "ravel": lambda x: np.ravel(x[::-1]) + 1,
    "rows_joined": lambda x: np.concatenate([x, x * 2], axis=0),
    "columns_joined": lambda x: np.concatenate([x, -x], axis=1).max(1),
    "stacked": lambda x: np.stack([x, -x], axis=1).sum(2),
    "cumsum": lambda x: np.cumsum(x, axis=0) - x,
    "flat_cumsum": lambda x: np.cumsum(x),
    "zeros_like": lambda x: np.zeros_like(x) + x * 3,
    "diff": lambda x: np.diff(x, axis=0) * 2,
    "outer": lambda x: np.outer(x[:, 0], x[0]),
    "matrix_vector": lambda x: x.dot(np.arange(8.0)),
    "vector_matrix": lambda x: x[:, 0] @ x,
    "transposed_product": lambda x: x.T @ x[:, ::-1],
    "expand_dims": lambda x: np.expand_dims(x, 1) * x[:, None],
    "squeeze": lambda x: np.squeeze(x[:, :1], 1) + 1,
    "swapaxes": lambda x: x.swapaxes(0, 1) + 1,
    "flip": lambda x: np.flip(x, 0) - x,
    "broadcast_to": lambda x: np.broadcast_to(x[:, :1], x.shape) + x,
    "norm": lambda x: np.linalg.norm(x, axis=1),
    "gather": lambda x: x[np.arange(x.shape[0])[::-1]] * 2,
    "take_columns": lambda x: np.take(x, [0, 2], axis=1).sum(1),
    "sort": lambda x: np.sort(x, axis=1),
    "tile": lambda x: np.tile(x, (1, 2)),
    "pad": lambda x: np.pad(x, ((1, 1), (0, 0))),
    "vstack": lambda x: np.vstack([x, x[:1]]),
    "hstack": lambda x: np.hstack([x, x]),
    "covariance": lambda x: (x - x.mean(0)).T @ (x - x.mean(0)) / (x.shape[0] - 1),
    "clip": lambda x: np.clip(x, -0.5, 0.5),
    "einsum_rows": lambda x: np.einsum("ij,ij->i", x, x[::-1]),
    "einsum_product": lambda x: np.einsum("ij,jk->ik", x, x[:8].T),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_stream_of_sizes_through_views_matches_numpy(name):
    fn = PROGRAMS[name]
    f = st.compile(fn, strict_native=True)
    for rows in (7, 13, 2, 29, 3, 50, 4, 13):
        x = RNG.standard_normal((rows, 8))
        x[0, :3] = [np.nan, np.inf, -0.0]
        want = fn(x)
        got = f(x)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        assert got.shape == want.shape and got.dtype == want.dtype
    generic = [v for v in f.versions() if v.generic is not None]
    assert generic, f"{name}: no generic version"
    # the first size, the generic version, and for bounds decided by a size (x[:3] of two
    # rows, x[2:] of three) at most two more versions
    assert f.cache_info().compiles <= 4


def test_slice_bounds_are_shape_guards_that_explain_prints(caplog, monkeypatch):
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    caplog.set_level(logging.INFO, logger="stax")

    def head(x):
        return x[:3] * 2

    f = st.compile(head)
    for rows in (5, 9, 12):
        x = RNG.standard_normal((rows, 4))
        np.testing.assert_array_equal(f(x), head(x))
    assert f.cache_info().compiles == 2
    x = RNG.standard_normal((2, 4))  # the bound 3 is past the end: another result shape
    np.testing.assert_array_equal(f(x), head(x))
    assert f(x).shape == (2, 4)
    # the guard, where it was decided, and what the short array gave
    assert "shape guards: s0 - 3 >= 0 (view_sizes.py:" in caplog.text
    assert "shape guard s0 - 3 >= 0 where s0 = inputs[0].shape[0]" in caplog.text
    assert "(got -1)" in caplog.text
    report = f.explain(x)
    assert any("s0 - 3 >= 0" in failure.condition for failure in report[1].failures)


def test_a_reshape_that_needs_divisibility_guards_it():
    def pairs(x):
        return x.reshape(-1, 2).sum(1)

    f = st.compile(pairs)
    for n in (8, 10, 14, 22):
        x = RNG.standard_normal(n)
        np.testing.assert_allclose(f(x), pairs(x), rtol=1e-12)
    assert f.cache_info().compiles == 2
    with pytest.raises(ValueError, match="cannot reshape"):
        f(RNG.standard_normal(7))  # NumPy's own error: the guard sends it to a new capture


def test_a_view_at_a_size_dependent_offset_reads_the_right_elements():
    """``x[-2:]`` starts at ``(n - 2) * stride``: an offset in the size symbol."""
    def last_rows(x):
        return x[-2:] + x[-1]

    f = st.compile(last_rows, strict_native=True)
    for rows in (4, 9, 5, 30):
        x = np.arange(rows * 3.0).reshape(rows, 3)
        np.testing.assert_array_equal(f(x), last_rows(x))
        xt = np.asfortranarray(x)
        np.testing.assert_array_equal(f(xt), last_rows(xt))


def _filled(x):
    n = x.shape[0]
    out = np.zeros((n, 3))
    out[:, 0] = x[:, 0]
    out[:, 1] = x.sum(1)
    out[n - 1, 2] = 1.0
    return out


SHAPE_READS = {
    "reshape": lambda x: x.reshape(x.shape[0], 4, -1).sum(-1),
    "column_mean": lambda x: x.sum(0) / x.shape[0],
    "mean_by_size": lambda x: x.sum() / x.size,
    "halves": lambda x: x[: x.shape[0] // 2] + x[x.shape[0] // 2:][: x.shape[0] // 2],
    "filled": _filled,
    "arange": lambda x: x * np.arange(x.shape[1]) + np.arange(x.shape[0])[:, None],
    "last_row": lambda x: x[x.shape[0] - 1] * 2,
    "flattened": lambda x: (x - x.mean(0)).reshape(x.shape[0] * x.shape[1]),
    # ``len`` called by the user's code is ``x.shape[0]`` (stax.trace.traced_len)
    "len": lambda x: x / len(x),
    "len_of_a_row": lambda x: x[: len(x) // 2] * len(x[0]),
    "compared_with_a_size": lambda x: (x * 4 < x.shape[0]) * x,
}


@pytest.mark.parametrize("name", sorted(SHAPE_READS))
def test_sizes_the_function_reads_from_shapes_are_generic(name):
    """``x.shape[0]`` in a reshape, a slice bound, a creation or an arithmetic operand stays
    a size of the generic version (torch.compile's SymInt), not a constant of the code."""
    fn = SHAPE_READS[name]
    f = st.compile(fn, strict_native=True)
    for rows in (6, 10, 14, 22, 10, 30):
        x = RNG.standard_normal((rows, 8))
        np.testing.assert_allclose(f(x), fn(x), rtol=1e-12, atol=1e-12)
        assert f(x).shape == fn(x).shape
    assert f.cache_info().compiles == 2
    assert f.versions()[1].generic is not None


@pytest.mark.parametrize("fn", [
    lambda x: x * 2 if x.shape[0] > 8 else x - 1,
    lambda x: sum(x[i] for i in range(x.shape[0])),
    lambda x: sum(x[i] for i in range(len(x))),
    lambda x: x * sum(map(len, [x, x])),
    lambda x: x * (1.0 / x.shape[0]),
    lambda x: x[: max(2, x.shape[0] - 8)],
], ids=["compared", "range", "range_len", "len_mapped", "float", "builtin_max"])
def test_a_size_python_decides_from_keeps_exact_versions(fn, caplog, monkeypatch):
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    caplog.set_level(logging.INFO, logger="stax")
    f = st.compile(fn)
    for rows in (6, 10, 14):
        x = RNG.standard_normal((rows, 3))
        np.testing.assert_allclose(f(x), fn(x), rtol=1e-12, atol=1e-12)
    assert f.cache_info().compiles == 3
    assert "reads its shape in Python" in caplog.text


@pytest.mark.parametrize("fn", [lambda x: x - x[0], lambda x: x * x[-1],
                                lambda x: x[x.shape[0] - 1] + x, lambda x: x[-2] - x[1]],
                         ids=["first", "last", "read_size", "two"])
def test_an_element_of_a_dynamic_vector_is_generic(fn):
    """``x[0]`` of a 1-D array is a NumPy scalar, no view: an element read whose position is
    in bounds at every size the version serves (a probe found it exact at every size)."""
    f = st.compile(fn, strict_native=True)
    for n in (5, 7, 9, 12, 400):
        x = RNG.standard_normal(n)
        np.testing.assert_array_equal(f(x), fn(x))
    assert f.cache_info().compiles == 2


def test_a_generic_compile_refused_at_a_small_size_is_tried_again_larger():
    """``x[1:-1]`` of two rows is empty (no view to write in sizes): the generic version is
    tried again at a larger size instead of the key being refused for good (a probe's stream
    1, 2, 3, ... compiled a version per size up to the limit)."""
    def inner(x):
        return x[1:-1] * 2

    f = st.compile(inner)
    for n in (1, 2, 3, 4, 5, 7, 13, 64, 1000, 2, 3):
        x = np.arange(n, dtype=float)
        np.testing.assert_array_equal(f(x), inner(x))
    assert f.cache_info().compiles == 3
    assert [v.generic is not None for v in f.versions()] == [False, False, True]


def _attention(q, k, v):
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])  # a fixed dimension read: no bar
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(-1, keepdims=True)) @ v


def _cross_entropy(logits, labels):
    m = logits.max(1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(1)) + m[:, 0]
    return (lse - logits[np.arange(logits.shape[0]), labels]).mean()


def test_model_programs_are_generic_in_their_batch():
    """Attention reading its head width (a fixed dimension) in Python, and a cross-entropy
    picking each row's label with two index arrays: one generic version each."""
    for fn, make in ((_attention, lambda n: tuple(RNG.standard_normal((2, n, 8))
                                                  for _ in range(3))),
                     (_cross_entropy, lambda n: (RNG.standard_normal((n, 10)),
                                                 RNG.integers(0, 10, n)))):
        f = st.compile(fn, strict_native=True)
        for n in (7, 13, 29, 50, 13):
            args = make(n)
            np.testing.assert_allclose(f(*args), fn(*args), rtol=1e-12, atol=1e-12)
        assert f.cache_info().compiles == 2, fn.__name__
