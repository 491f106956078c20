"""A capture graph's shapes in size symbols (issue 15): NumPy's shape rules per call, checked
against the traced shapes, and the reasons a graph stays exact."""

from __future__ import annotations

import numpy as np

from stax.ir import CAPTURE_SCHEMA, GraphProgram, Opcode
from stax.ir.shape_env import ShapeEnv
from stax.ir.sizes import Size, shape_env
from stax.ir.symbolic_shapes import broadcast_shapes, symbolic_strides, symbolize
from stax.trace import trace


def _symbolized(fn, args, dynamic):
    program = trace(fn, args)
    copy = GraphProgram.from_json(program.to_json(), CAPTURE_SCHEMA)
    env = ShapeEnv()
    with shape_env(env):
        why = symbolize(copy, dynamic, env, frozenset(program.info.get("shape_read", ())))
    return copy, env, why


def _shapes(program):
    return {n.name: tuple(str(d) for d in n.tensor.shape) for n in program.graph.nodes
            if n.tensor is not None and n.op is not Opcode.PLACEHOLDER}


def test_rows_of_a_softmax_are_one_symbol():
    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    program, env, why = _symbolized(softmax, (np.ones((6, 5), np.float32),), {0: [0]})
    assert why is None
    assert set(_shapes(program).values()) == {("s0", "1"), ("s0", "5")}
    assert env.guards == [] and env.symbols["s0"].hint == 6
    assert env.symbols["s0"].origin == "inputs[0].shape[0]"


def test_reductions_matmul_and_broadcasting():
    def f(x, w, b):
        h = x @ w + b
        return h.sum(axis=0), h.mean(), np.maximum(h, 0).max(axis=1, keepdims=True)

    x, w, b = np.ones((7, 3)), np.ones((3, 4)), np.ones(4)
    program, _, why = _symbolized(f, (x, w, b), {0: [0], 1: [1], 2: [0]})
    assert why is None
    shapes = _shapes(program)
    assert shapes["matmul"] == ("s0", "s1")  # w's columns and b share a size: one symbol
    assert shapes["sum_0"] == ("s1",) and shapes["mean"] == ()
    assert shapes["max_0"] == ("s0", "1")


def test_what_keeps_a_graph_exact():
    def reads(x):
        return x * x.shape[0]

    assert "reads its shape in Python" in _symbolized(reads, (np.ones((4, 2)),), {0: [0]})[2]

    def sorts(x):
        return np.sort(x, axis=0)

    assert "no size rule for numpy.sort()" in _symbolized(sorts, (np.ones((4, 2)),), {0: [0]})[2]

    def flips(x):
        return np.flip(x, 0) + 1

    assert "returns a view without a size rule" in \
        _symbolized(flips, (np.ones((4, 2)),), {0: [0]})[2]


def _view_of(fn, x, target="operator.getitem"):
    program, env, why = _symbolized(fn, (x,), {0: [0]})
    assert why is None, why
    node = next(n for n in program.graph.nodes if n.target == target)
    view = node.meta["view"]
    return (tuple(map(str, node.tensor.shape)), str(view["offset"]),
            [str(s) for s in view["strides"]], [str(g) for g in env.guards])


def test_slices_are_views_written_in_sizes():
    x = np.ones((6, 3))
    # a batch of one gives an empty result: excluded (s0 may be 1 in a generic version)
    assert _view_of(lambda x: x[1:] + 1, x) == (("s0 - 1", "3"), "3", ["3", "1"], ["s0 - 1 > 0"])
    # from the end: an offset in the size; the bound's comparison with it is a guard
    shape, offset, strides, guards = _view_of(lambda x: x[-2:] + 1, x)
    assert (shape, offset, strides) == (("2", "3"), "3*s0 - 6", ["3", "1"])
    assert guards == ["s0 - 2 >= 0"]
    shape, offset, strides, guards = _view_of(lambda x: x[::-2, 1] + 1, x)
    assert (shape, offset, strides) == (("((s0 - 1)//2) + 1",), "3*s0 - 2", ["-6"])
    assert _view_of(lambda x: x[:, None] + 1, x)[:3] == (("s0", "1", "3"), "0", ["3", "0", "1"])


def test_a_reshape_is_a_view_written_in_sizes_with_its_divisibility_guarded():
    x = np.ones((6, 3))
    assert _view_of(lambda x: x.reshape(-1) + 1, x, "reshape")[:3] == (("3*s0",), "0", ["1"])
    shape, _, strides, guards = _view_of(lambda x: x.reshape(-1, 2) + 1, x, "reshape")
    assert shape == ("s0 + (s0//2)", "2") and strides == ["2", "1"]  # 3*s0 // 2
    assert guards == ["(s0%2) == 0"]


def test_a_transpose_is_a_view_written_in_sizes():
    def f(x):
        return x.T + 1

    program, _, why = _symbolized(f, (np.ones((4, 3)),), {0: [0]})
    assert why is None
    node = next(n for n in program.graph.nodes if n.target == "numpy.transpose")
    assert tuple(map(str, node.tensor.shape)) == ("3", "s0")
    assert [str(s) for s in node.meta["view"]["strides"]] == ["1", "3"]
    assert [str(s) for s in node.meta["view"]["base_strides"]] == ["3", "1"]


def test_broadcast_of_two_symbols_is_a_guard():
    env = ShapeEnv()
    with shape_env(env):
        a, b = env.new_symbol(5), env.new_symbol(5)
        assert broadcast_shapes([(a, 3), (1, 3), (b, 1)])[0].same(a)
    assert [str(g) for g in env.guards] == ["-s0 + s1 == 0"]


def test_strides_are_written_in_the_sizes():
    env = ShapeEnv()
    with shape_env(env):
        n, m = env.new_symbol(4), env.new_symbol(6)
        assert symbolic_strides((n, m), (4, 6), (6, 1)) == (m, 1)
        assert str(symbolic_strides((n, m), (4, 6), (1, 4))[1]) == "s0"  # F order
        assert symbolic_strides((n, m), (4, 6), (12, 2)) == (12, 2)  # a step: a number
    assert isinstance(symbolic_strides((n, m), (4, 6), (6, 1))[0], Size)
