"""Reductions over a strided axis with the contiguous axis kept (x.sum(0) of a C matrix): the
loops are interchanged and the result buffer accumulates row after row. Same answers as NumPy on
every kind, dtype, NaN/Inf/-0.0, and layout; other layouts keep the usual loop order."""

import numpy as np
import pytest

from stax.codegen.nesting import columnwise
from stax.loop import lower_opgraph


def data(shape, dtype, special=False):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 5).astype(dtype)
    if special and np.issubdtype(dtype, np.floating):
        flat = x.reshape(-1)
        flat[3], flat[-2], flat[len(flat) // 2] = np.nan, np.inf, -0.0
    return x


REDUCTIONS = [("sum", {"dtype": None}), ("prod", {"dtype": None}), ("max", {}), ("min", {})]


@pytest.mark.parametrize("shape, axis", [((7, 17), (0,)), ((1023, 33), (0,)), ((5, 6, 9), (0,)),
                                         ((5, 6, 9), (0, 1)), ((4, 3, 8), (1,)), ((2, 4097), (0,))])
@pytest.mark.parametrize("kind, attrs", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_column_reductions_match_numpy(build, run, shape, axis, kind, attrs, dtype):
    x = data(shape, dtype, special=True)
    if kind == "prod" and np.issubdtype(dtype, np.floating):
        x = (x / 5).astype(dtype)  # keep products finite
    b = build(x=x)
    extra = {k: (None if np.issubdtype(dtype, np.integer) else x.dtype.name) for k in attrs}
    out = b(kind, b.inputs["x"], axis=axis, keepdims=False, **extra)
    (got,), _ = run(b, out)
    want = b.expected(out)[0]
    if np.issubdtype(dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    else:
        np.testing.assert_array_equal(got, want)


def test_keepdims_and_a_fused_body(build, run):
    x = data((300, 40), np.float32)
    b = build(x=x)
    out = b("sum", b("mul", b("exp", b.inputs["x"]), 2), axis=(0,), keepdims=True,
            dtype="float32")
    (got,), _ = run(b, out)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=2e-5)


@pytest.mark.parametrize("layout", ["C", "F", "transposed view"])
def test_layouts(build, run, layout):
    base = data((64, 48), np.float64)
    x = {"C": base, "F": np.asfortranarray(base), "transposed view": base.T}[layout]
    b = build(x=x)
    out = b("sum", b.inputs["x"], axis=(0,), keepdims=False, dtype=None)
    (got,), _ = run(b, out)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=1e-12)


def test_large_column_sum_runs_split_across_threads(build, run):
    x = data((2048, 4096), np.float32)
    b = build(x=x)
    out = b("sum", b.inputs["x"], axis=(0,), keepdims=False, dtype="float32")
    (got,), _ = run(b, out)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("layout, expected", [("C", True), ("F", False)])
def test_the_interchange_is_chosen_by_layout(build, layout, expected):
    x = data((64, 48), np.float64)
    b = build(x=x if layout == "C" else np.asfortranarray(x))
    out = b("sum", b.inputs["x"], axis=(0,), keepdims=False, dtype=None)
    program = lower_opgraph(b.program(out))
    (node,) = [n for n in program.buffers if n.name == program.outputs[0].buffer]
    assert columnwise([node]) is expected


@pytest.mark.parametrize("columns, expected", [(1, False), (2, True), (3, True)])
def test_two_columns_are_interchanged_already(build, run, columns, expected):
    """``A.T @ y`` with A (n, 3), or ``x.sum(0)`` of (n, 2): a plain nest reduced each column
    on its own thread, reading every row again at stride 3 (304 us against 99 interchanged for
    100000 rows); a single column has no row to read along."""
    x = data((5000, columns), np.float64)
    b = build(x=x)
    out = b("sum", b.inputs["x"], axis=(0,), keepdims=False, dtype=None)
    program = lower_opgraph(b.program(out))
    (node,) = [n for n in program.buffers if n.name == program.outputs[0].buffer]
    assert columnwise([node]) is expected
    (got,), _ = run(b, out)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=1e-12)
