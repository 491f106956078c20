"""NormalizeOperators: spec example 4.1 and every row of table 4.1."""

import numpy as np
import pytest

from stax.ir import run_program, verify_graph
from stax.ir.passes import run_pipeline


def test_example_4_1(capture):
    b = capture(x=np.linspace(-1, 1, 5))
    mul = b("operator.mul", 2, b.inputs["x"])
    add = b("operator.add", mul, 0)
    exp = b("numpy.exp", add)
    graph = b.output(exp)
    run_pipeline(graph, "normalize", verify=True)
    assert [(n.target, n.args) for n in graph.nodes][1:3] == [
        ("operator.mul", (b.inputs["x"], 2)), ("numpy.exp", (mul,))]


@pytest.mark.parametrize("target, constant, removed", [
    ("operator.mul", 1, True), ("operator.truediv", 1, True), ("operator.sub", 0, True),
    ("operator.sub", 0.0, True), ("operator.sub", -0.0, False),   # x - (-0) = x + 0: not exact
    ("operator.add", -0.0, True), ("operator.add", 0, False),     # -0.0 + 0 is +0.0
    ("operator.mul", 0, False), ("operator.mul", 0.0, False),     # x * 0 never (NaN, Inf, -0)
    ("operator.mul", 2, False),
])
def test_identities_of_table_4_1(capture, target, constant, removed):
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5])
    b = capture(x=x)
    node = b(target, b.inputs["x"], constant)
    out = b("operator.mul", node, 3)  # not an output itself: no aliasing question
    graph = b.output(out)
    program = b.program()
    before = run_program(program, (x,), {})
    run_pipeline(graph, "normalize", verify=True)
    assert (node not in graph.nodes) == removed
    after = run_program(program, (x,), {})
    if target == "operator.add" and constant == 0:
        np.testing.assert_array_equal(after, before)  # equal; only a zero's sign may differ
    else:
        np.testing.assert_array_equal(after.view(np.uint64), before.view(np.uint64))


def test_double_negation(capture):
    b = capture(x=np.array([-0.0, 1.0, np.nan]))
    inner = b("operator.neg", b.inputs["x"])
    outer = b("operator.neg", inner)
    graph = b.output(b("operator.add", outer, 1.0))
    run_pipeline(graph, "normalize,dce", verify=True)
    assert [n.target for n in graph.nodes] == ["x", "operator.add", "output"]


def test_integer_plus_float_zero_keeps_the_promotion(capture):
    b = capture(x=np.arange(3))
    node = b("operator.add", b.inputs["x"], 0.0)  # int + 0.0 is float64: not x
    graph = b.output(b("operator.mul", node, 2))
    run_pipeline(graph, "normalize")
    assert node in graph.nodes


def test_broadcasting_zero_keeps_the_shape(capture):
    b = capture(x=np.ones(4), z=np.zeros((4, 1)))
    node = b("operator.add", b.inputs["x"], b.inputs["z"])
    graph = b.output(b("operator.mul", node, 2))
    run_pipeline(graph, "normalize")
    assert node in graph.nodes and node.tensor.shape == (4, 4)


def test_an_output_never_becomes_an_alias_of_an_input(capture):
    b = capture(x=np.ones(3))
    node = b("operator.mul", b.inputs["x"], 1)
    graph = b.output(node)
    run_pipeline(graph, "normalize")
    assert node in graph.nodes  # y = x * 1 is a new array in NumPy; returning x would alias it


def test_missing_metadata_means_no_rewrite(capture):
    b = capture(x=np.ones(3))
    node = b("operator.mul", b.inputs["x"], 1)
    graph = b.output(b("operator.add", node, 2))
    del node.meta["tensor"]
    run_pipeline(graph, "normalize")
    assert node in graph.nodes


def test_constants_move_right_only_for_commutative_operators(capture):
    b = capture(x=np.array([-0.0, 0.0]))
    add = b("operator.add", 2.0, b.inputs["x"])
    sub = b("operator.sub", 2.0, b.inputs["x"])
    mx = b("numpy.maximum", 0.0, b.inputs["x"])  # max(0, -0) is -0, max(-0, 0) is 0: keep order
    graph = b.output(add, sub, mx)
    run_pipeline(graph, "normalize")
    assert add.args == (b.inputs["x"], 2.0)
    assert sub.args == (2.0, b.inputs["x"]) and mx.args == (0.0, b.inputs["x"])
    verify_graph(graph)


@pytest.mark.parametrize("target, constant, moved", [
    ("operator.and_", 6, True), ("numpy.bitwise_or", 6, True), ("operator.xor", 6, True),
    ("numpy.logical_and", True, True), ("operator.eq", 3, True), ("numpy.not_equal", 3, True),
    ("operator.sub", 6, False), ("operator.lt", 3, False), ("numpy.maximum", 3, False),
    ("operator.lshift", 1, False),
])
def test_constants_move_right_of_every_op_declared_commutative(capture, target, constant, moved):
    """The passes' commutative set is the capture targets of the ops declared commutative
    (``stax.ir.commutative_ops``); maximum is not (a tie returns its second operand)."""
    x = np.array([0, 1, 2, 3, 7])
    b = capture(x=x)
    node = b(target, constant, b.inputs["x"])
    graph = b.output(b("operator.add", node, 1))
    program = b.program()
    before = run_program(program, (x,), {})
    run_pipeline(graph, "normalize", verify=True)
    assert (node.args == (b.inputs["x"], constant)) == moved
    np.testing.assert_array_equal(run_program(program, (x,), {}), before)


def test_op_graph_nodes_are_read_as_their_declared_capture_target(capture):
    """On an op graph the passes read an op as its first declared capture target: ``exp`` is
    ``numpy.exp``, element-wise, as on the capture graph."""
    from stax.ir import lower_capture
    from stax.ir.passes.base import canonical_target, is_elementwise

    b = capture(x=np.linspace(0.5, 1, 4))
    b.output(b("numpy.exp", b("operator.neg", b.inputs["x"])))
    graph = lower_capture(b.program()).graph
    by_target = {n.target: n for n in graph.nodes}
    assert canonical_target(by_target["neg"]) == "operator.neg"
    assert canonical_target(by_target["exp"]) == "numpy.exp"
    assert is_elementwise(by_target["exp"])


@pytest.mark.parametrize("reader, removed", [("numpy.exp", True), ("numpy.cos", True),
                                             ("numpy.sqrt", False), ("numpy.negative", False)])
def test_plus_an_integer_zero_goes_only_where_no_one_reads_the_sign(capture, reader, removed):
    """Spec §4.2 accepts ``x + 0 -> x`` because the sign of a zero is rarely seen; a user's
    ``acc = 0; acc = acc + v`` returns it, so only sign-blind readers take the rewrite."""
    x = np.array([-0.0, 1.0, -2.0])
    b = capture(x=x)
    node = b("operator.add", b("operator.mul", b.inputs["x"], 2), 0)
    graph = b.output(b(reader, node))
    program = b.program()
    before = run_program(program, (x,), {})
    run_pipeline(graph, "normalize", verify=True)
    assert (node not in graph.nodes) == removed
    np.testing.assert_array_equal(run_program(program, (x,), {}).view(np.uint64),
                                  before.view(np.uint64))
