"""DCE (spec §4.6)."""

import numpy as np

from stax.ir.passes import run_pipeline


def test_dce_keeps_inputs_and_draws(capture):
    b = capture(x=np.ones(3), unused=np.ones(2))
    dead = b("numpy.exp", b.inputs["x"])
    draw = b("numpy.exp", b.inputs["x"])
    draw.meta["random"] = True
    graph = b.output(b("operator.add", b.inputs["x"], 1))
    run_pipeline(graph, "dce", verify=True)
    assert dead not in graph.nodes and draw in graph.nodes and b.inputs["unused"] in graph.nodes
