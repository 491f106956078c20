"""ConstFold (spec §4.3)."""

import numpy as np

from stax.ir.passes import run_pipeline


def test_constfold_folds_python_scalars_only(capture):
    b = capture(x=np.ones(3))
    folded = b.graph.call_function("operator.mul", (3, 4))  # as another pass might leave it
    node = b.graph.call_function("operator.add", (b.inputs["x"], folded),
                                 meta=dict(b.inputs["x"].meta))
    graph = b.output(node)
    run_pipeline(graph, "constfold", verify=True)
    assert node.args == (b.inputs["x"], 12)
