"""Effectful nodes (``Node.effectful``): a random draw advances its generator, so no pass removes,
merges, folds or rewrites it, and lowering to the op graph keeps it (a dead one too) as a draw."""

import dataclasses

import numpy as np
import pytest

from stax.ir import Graph, Opcode, TensorMeta, lower_capture, verify_graph
from stax.ir.ops import OPS
from stax.ir.passes import DEFAULT_PIPELINE, run_pipeline
from stax.ir.passes.rewrite import substitute


def with_generator(capture):
    """A capture builder over ``x`` with a generator placeholder ``rng`` (as the tracer makes)."""
    b = capture(x=np.arange(1.0, 4.0))
    rng = b.graph.placeholder("rng", {"object": "numpy.random.Generator"})
    b.values[rng] = np.random.default_rng(0)
    return b, rng


def draw(b, rng, method="standard_normal", *args):
    node = b(method, rng, *args, method=True)
    node.meta["random"] = True
    return node


def marked(node):
    node.meta["random"] = True
    return node


def test_a_draw_is_effectful_and_cannot_be_erased_or_substituted(capture):
    b, rng = with_generator(capture)
    d = draw(b, rng, "standard_normal", 3)
    plain = b("numpy.exp", b.inputs["x"])
    graph = b.output(plain)
    assert d.effectful and not plain.effectful
    with pytest.raises(ValueError, match="side effect"):
        graph.erase_node(d)
    with pytest.raises(ValueError, match="side effect"):
        substitute(graph, d, plain)
    assert d in graph.nodes and not d.users


def test_an_op_declared_random_makes_its_nodes_effectful(monkeypatch):
    graph = Graph("op")
    x = graph.placeholder("x", {"tensor": TensorMeta.of(np.ones(3))})
    node = graph.call_function("exp", (x,), {}, meta={"tensor": TensorMeta.of(np.ones(3))})
    graph.output((node,))
    assert not node.effectful
    monkeypatch.setitem(OPS, "exp", dataclasses.replace(OPS["exp"], random=True))
    assert node.effectful
    with pytest.raises(ValueError, match="side effect"):
        graph.erase_node(node) if not node.users else substitute(graph, node, x)


def test_no_pass_of_the_pipeline_touches_a_draw(capture):
    """Each draw is one a pass would rewrite if it were a pure call: dead (DCE), the same call
    twice (CSE), an identity (NormalizeOperators: x * 1 is x), constant operands (ConstFold), a
    composite (DecomposePass: square)."""
    b, rng = with_generator(capture)
    x = b.inputs["x"]
    draws = [draw(b, rng, "standard_normal", 3), draw(b, rng, "standard_normal", 3),
             marked(b("operator.mul", x, 1)), b.graph.call_function("operator.add", (2, 3), meta={"random": True}),
             marked(b("numpy.square", x)), marked(b("operator.mul", 2, x))]
    graph = b.output(b("operator.add", x, 1))
    before = [(n.target, n.args) for n in draws]
    log = run_pipeline(graph, DEFAULT_PIPELINE, verify=True)
    assert [(n.target, n.args) for n in graph.nodes if n.effectful] == before, str(log)


def test_lowering_keeps_a_dead_draw_as_a_random_extern(capture):
    b, rng = with_generator(capture)
    dead = draw(b, rng, "standard_normal", 3)
    live = draw(b, rng, "random", (2, 2))
    exp = marked(b("numpy.exp", b.inputs["x"]))   # a draw with a native rule stays NumPy's call
    graph = b.output(b("operator.add", b.inputs["x"], 1), live)
    opgraph = lower_capture(b.program()).graph
    verify_graph(opgraph)
    draws = [n for n in opgraph.nodes if n.effectful]
    assert [(n.target, n.kwargs["fn"], n.kwargs["method"]) for n in draws] == [
        ("extern", "standard_normal", True), ("extern", "random", True),
        ("extern", "numpy.exp", False)]
    assert [n.meta["tensor"].shape for n in draws] == [(3,), (2, 2), (3,)]
    assert draws[0].args[0].op is Opcode.PLACEHOLDER and not draws[0].users
    assert all(n.meta.get("random") for n in draws)
    assert dead in graph.nodes and exp in graph.nodes  # the capture graph is not changed
    order = [n.name for n in opgraph.nodes]
    assert order.index(draws[0].name) < order.index(draws[1].name) < order.index(draws[2].name)
