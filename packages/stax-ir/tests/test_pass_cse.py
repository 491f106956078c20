"""CSE by value numbering (spec §4.5, proposition 4.2)."""

import numpy as np

from stax.ir.passes import run_pipeline


def test_cse_merges_same_calls_but_not_random_draws(capture):
    b = capture(x=np.ones(3))
    one = b("numpy.exp", b.inputs["x"])
    two = b("numpy.exp", b.inputs["x"])
    draw1 = b("numpy.exp", b.inputs["x"])
    draw1.meta["random"] = True
    graph = b.output(b("operator.add", one, two), draw1)
    run_pipeline(graph, "cse", verify=True)
    assert two not in graph.nodes and draw1 in graph.nodes


def test_cse_needs_normalized_operands(capture):
    b = capture(x=np.ones(3))
    one = b("operator.mul", 2, b.inputs["x"])
    two = b("operator.mul", b.inputs["x"], 2)
    graph = b.output(b("operator.add", one, two))
    run_pipeline(graph, "cse")
    assert one in graph.nodes and two in graph.nodes  # CSE does not know commutativity
    run_pipeline(graph, "normalize,cse")
    assert (one in graph.nodes) != (two in graph.nodes)
