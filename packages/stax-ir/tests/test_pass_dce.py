"""DCE (spec §4.6), and the unused steps it keeps for their floating-point events."""

import numpy as np

from stax.ir import lower_capture
from stax.ir.passes import run_pipeline


def test_dce_keeps_inputs_and_draws(capture):
    b = capture(x=np.ones(3), k=np.arange(3), unused=np.ones(2))
    dead = b("operator.add", b.inputs["k"], 1)  # integer arithmetic: no event to report
    draw = b("numpy.exp", b.inputs["x"])
    draw.meta["random"] = True
    graph = b.output(b("operator.add", b.inputs["x"], 1))
    run_pipeline(graph, "dce", verify=True)
    assert dead not in graph.nodes and draw in graph.nodes and b.inputs["unused"] in graph.nodes


def test_dce_keeps_unused_steps_that_may_raise_floating_point_events(capture):
    """NumPy computes ``_ = np.log(x)`` and warns for a zero in x: DCE keeps the step, marked
    ``events_only``, with what it reads; steps that cannot report (integer arithmetic,
    comparisons, views, copies) go."""
    b = capture(x=np.ones((2, 3)), k=np.arange(3))
    log = b("numpy.log", b("operator.mul", b.inputs["x"], 2.0))
    quotient = b("operator.floordiv", b.inputs["k"], 0)  # integer division by zero warns
    silent = [b("operator.add", b.inputs["k"], 1), b("operator.gt", b.inputs["x"], 0.0),
              b("numpy.transpose", b.inputs["x"]), b("numpy.maximum", b.inputs["x"], 0.0),
              b("numpy.flip", b.inputs["x"])]
    graph = b.output(b("operator.add", b.inputs["x"], 1))
    log_text = run_pipeline(graph, "dce", verify=True)
    assert log.events_only and quotient.events_only and log in graph.nodes
    assert log.args[0] in graph.nodes and not log.args[0].events_only  # used: an ordinary value
    assert not any(n in graph.nodes for n in silent)
    assert "kept for their floating-point events: %log, %floordiv" in str(log_text)


def test_used_again_the_mark_goes(capture):
    b = capture(x=np.ones(3))
    log = b("numpy.log", b.inputs["x"])
    graph = b.output(b("operator.add", b.inputs["x"], 1))
    run_pipeline(graph, "dce")
    assert log.events_only
    graph.output_node.set_args(((graph.output_node.args[0][0], log),))
    run_pipeline(graph, "dce")
    assert not log.events_only


def test_lowering_carries_the_mark_to_the_op_graph(capture):
    """The op node computing a kept step is marked too (for ``np.square``, the ``x * x`` it is
    decomposed into), and nothing else."""
    b = capture(x=np.ones(4))
    b("numpy.log", b.inputs["x"])
    b("numpy.square", b.inputs["x"])  # decomposed at capture level into x * x
    b("numpy.mean", b.inputs["x"])     # a sum and a division in the op graph
    graph = b.output(b("operator.add", b.inputs["x"], 1))
    run_pipeline(graph, verify=True)
    ops = lower_capture(b.program()).graph
    kept = {n.target for n in ops.nodes if n.events_only}
    assert kept == {"log", "mul", "mean"}, kept
    assert all(not n.users for n in ops.nodes if n.events_only)
