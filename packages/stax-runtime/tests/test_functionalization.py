"""Functionalization (spec §4.9): example 4.4 in NumPy form, the NumPy in-place forms, views."""

import numpy as np
import pytest

import stax.runtime as stax
from stax.ir import CAPTURE_SCHEMA, GraphProgram
from stax.ir.passes import run_pipeline
from stax.trace import trace


def example_4_4(x, y):
    x *= 2
    y[0] += 1
    return x + y


def test_example_4_4_graph():
    x, y = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    capture = trace(example_4_4, (x, y))
    program = GraphProgram.from_json(capture.to_json(), CAPTURE_SCHEMA)
    run_pipeline(program.graph, verify=True)
    calls = [(n.target, n.args) for n in program.graph.nodes if n.op.value == "call_function"]
    names = {n.name: n for n in program.graph.nodes}
    assert calls == [
        ("operator.mul", (names["x"], 2)),                                   # mul
        ("operator.getitem", (names["y"], 0)),                               # select
        ("operator.add", (names["getitem"], 1)),                             # add
        ("stax.functional.setitem", (names["y"], 0, names["add"])),          # select_scatter
        ("operator.add", (names["mul"], names["setitem"])),                  # add_0
    ]
    assert program.writeback == ["x", "y"]
    assert str(program).splitlines()[-2:] == [
        "copy_(x, %mul)  # written back to the caller",
        "copy_(y, %setitem)  # written back to the caller"]


@pytest.mark.parametrize("form", ["imul", "out", "index_iadd", "mask", "slice", "copyto",
                                  "clip_out", "method_out", "sum_out", "round_out"])
def test_in_place_forms_leave_eager_side_effects(form):
    def f(x, y, m):
        if form == "imul":
            x *= 2
        elif form == "out":
            np.add(x, 1, out=x)
        elif form == "index_iadd":
            y[0] += 1
        elif form == "mask":
            x[m] = 0
        elif form == "slice":
            x[1:3] = y[0, :2]
        elif form == "clip_out":
            np.clip(x, -0.5, 0.5, out=x)
        elif form == "method_out":
            y.clip(0, None, out=y)
        elif form == "sum_out":
            np.sum(y, axis=0, out=x)
        elif form == "round_out":
            np.round(x * 3, 1, out=x)
        else:
            np.copyto(x, y[1])
        return x * 2 + y.sum()

    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(4), rng.standard_normal((2, 4))
    m = x > 0
    cf = stax.compile(f, strict_native=True)
    for _ in range(2):
        xe, ye = x.copy(), y.copy()
        want = f(xe, ye, m)
        got = cf(x, y, m)
        np.testing.assert_allclose(got, want, rtol=1e-12)  # y.sum() is a reordered reduction
        np.testing.assert_array_equal(x, xe)
        np.testing.assert_array_equal(y, ye)


def test_views_of_inputs_stay_views():
    cf = stax.compile(lambda x: (x[1:], x.T, x * 2), strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        x = np.arange(6.0).reshape(2, 3)
        tail, t, doubled = cf(x)
        assert np.shares_memory(tail, x) and np.shares_memory(t, x)
        assert not np.shares_memory(doubled, x)
        np.testing.assert_array_equal(doubled, x * 2)
        x[1, 0] = 100.0  # eager semantics: the views see it
        assert tail[0, 0] == 100.0 and t[0, 1] == 100.0


def test_out_of_a_function_casts_and_fails_as_numpy():
    """``np.clip(..., out=o)`` writes the result cast into ``o`` as NumPy does (same_kind): an
    int ``o`` for a float result is NumPy's casting error, raised at the call."""
    def f(x, o):
        np.clip(x, -1.0, 1.0, out=o)
        return o * 2

    x = np.linspace(-3, 3, 7)
    cf = stax.compile(f, strict_native=True)
    o, oe = np.zeros(7, np.float32), np.zeros(7, np.float32)
    np.testing.assert_array_equal(cf(x, o), f(x, oe))
    np.testing.assert_array_equal(o, oe)
    with pytest.raises(TypeError, match="Cannot cast"):
        cf(x, np.zeros(7, np.int64))


def _columns_bumped(x, idx):
    x[:, idx] += 1  # idx repeats a column: NumPy's buffered update adds once
    return x


def _rows_lowered(x, idx, v):
    x[1:, idx] -= v
    return x.sum()


@pytest.mark.parametrize("fn, extra", [(_columns_bumped, ()), (_rows_lowered, (0.5,))],
                         ids=["columns", "rows_and_columns"])
def test_an_augmented_assignment_through_fancy_indices_compiles(fn, extra):
    """``x[:, idx] += 1``: NumPy's ``x[:, idx]`` is a transposed view of a fresh array, which
    nothing else sees; the update of it was refused as "a view of another array" while the
    spelled-out ``x[:, idx] = x[:, idx] + 1`` compiled (found by a probe)."""
    idx = np.array([0, 2, 2])
    compiled = stax.compile(fn, strict_native=True)
    for seed in range(2):
        want_x = np.random.default_rng(seed).random((4, 5))
        got_x = want_x.copy()
        np.testing.assert_allclose(compiled(got_x, idx, *extra), fn(want_x, idx, *extra),
                                   rtol=1e-12)
        np.testing.assert_array_equal(got_x, want_x)
