"""PointwiseFusionHint (spec §4.7)."""

import numpy as np

from stax.ir.passes import regions, run_pipeline


def test_pointwise_regions_of_example_1_1(capture):
    x = np.ones((64, 128), np.float32)
    b = capture(x=x, w=x)
    add = b("operator.add", b.inputs["x"], b.inputs["w"])
    relu = b("stax.nn.relu", add)
    mul = b("operator.mul", relu, 2)
    s = b("sum", mul, -1, method=True)
    graph = b.output(s)
    run_pipeline(graph)
    assert regions(graph) == [("add", "pointwise", 0), ("relu", "pointwise", 0),
                              ("mul", "pointwise", 0), ("sum_0", None, None)]
