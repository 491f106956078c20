"""Unused op-graph values kept for their floating-point events (``stax.loop.unused``): each gets
a buffer listed in ``LoopProgram.events_only``, unless no operation in it can report an event
NumPy reports, in which case it costs nothing."""

import numpy as np

from stax.ir import OPGRAPH_SCHEMA, Graph, GraphProgram, TensorMeta, tree_flatten
from stax.loop import load_loopir, lower_opgraph


def program(*unused):
    """x (float64[8]) and k (int64[8]) -> x + 1, with the ops ``unused`` names applied to their
    operand (``"x"`` or ``"k"``) as unused values kept for their events."""
    graph = Graph("op")
    x = graph.placeholder("x", {"tensor": TensorMeta((8,), "float64", (1,))})
    k = graph.placeholder("k", {"tensor": TensorMeta((8,), "int64", (1,))})
    for op, operand, kwargs, *divisor in unused:
        source = x if operand == "x" else k
        if op in ("sum", "max"):
            meta = TensorMeta((), source.tensor.dtype, (), scalar=True)
            kwargs = {"axis": (0,), "keepdims": False, **kwargs}
        else:
            meta = source.tensor
        args = (source, *divisor) if op == "floordiv" else (source,)
        graph.call_function(op, args, kwargs, meta={"tensor": meta, "events_only": True})
    out = graph.call_function("add", (x, 1.0), {}, meta={"tensor": x.tensor})
    graph.output((out,))
    _, tree = tree_flatten(((np.zeros(8), np.zeros(8, np.int64)), {}))
    return GraphProgram(OPGRAPH_SCHEMA, "f", graph, ["x", "k"], tree, tree_flatten(np.zeros(8))[1])


def test_an_unused_step_that_may_report_gets_a_buffer():
    loop = lower_opgraph(program(("log", "x", {})))
    (log, out) = loop.buffers
    assert loop.events_only == [log.name] and loop.outputs[0].buffer == out.name
    assert "log" in str(loop) and f"events only: {log.name}" in str(loop)
    again = load_loopir(loop.to_json())
    assert again.events_only == loop.events_only and again.to_json() == loop.to_json()


def test_steps_that_cannot_report_cost_nothing():
    """Exact float operations, integer arithmetic other than division (or by a constant other
    than 0 and -1), a float maximum, an integer sum: no buffer at all; a float sum and an integer
    division by zero stay."""
    silent = lower_opgraph(program(("neg", "x", {}), ("abs", "x", {}), ("max", "x", {}),
                                   ("neg", "k", {}), ("sum", "k", {"dtype": "int64"}),
                                   ("floordiv", "k", {}, 2)))
    assert [b.name for b in silent.buffers] == [silent.outputs[0].buffer] and not silent.events_only
    loud = lower_opgraph(program(("sum", "x", {"dtype": "float64"}), ("floordiv", "k", {}, 0)))
    assert len(loud.events_only) == 2 and len(loud.buffers) == 3
