"""Op-level decomposition against the backend basis: spec §4.8, example 4.3, proposition 4.3."""

import dataclasses

import numpy as np

from stax.ir import OPS, lower_capture, run_program, verify_graph
from stax.ir.passes import decompose_to_basis

BASIS = {"add", "sub", "mul", "truediv", "maximum", "minimum", "neg", "sum", "mean",
         "layer_norm", "extern"}


def example_4_3(capture):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y = rng.standard_normal((4, 8)).astype(np.float32)
    w, b = np.ones(8, np.float32), np.zeros(8, np.float32)
    ln = capture(x=x, w=w, b=b)
    ln.output(ln("stax.nn.layer_norm", ln.inputs["x"], (8,), ln.inputs["w"], ln.inputs["b"]))
    mse = capture(x=x, y=y)
    mse.output(mse("stax.nn.mse_loss", mse.inputs["x"], mse.inputs["y"]))
    return lower_capture(ln.program()), lower_capture(mse.program()), (x, y, w, b)


def ops_of(program):
    return [n.target for n in program.graph.nodes if n.op.value == "call_function"]


def test_example_4_3(capture):
    layer_norm, mse_loss, (x, y, _, _) = example_4_3(capture)
    want = run_program(mse_loss, (x, y), {})
    assert decompose_to_basis(layer_norm.graph, BASIS) == []
    assert ops_of(layer_norm) == ["layer_norm"]  # in the basis: kept whole
    assert decompose_to_basis(mse_loss.graph, BASIS) == ["mse_loss"]
    assert ops_of(mse_loss) == ["sub", "mul", "mean"]
    verify_graph(mse_loss.graph)
    assert run_program(mse_loss, (x, y), {}) == want  # the rule is the reference


def test_ops_without_rule_or_implementation_stay_as_fallback_kernels(capture):
    layer_norm, _, _ = example_4_3(capture)
    assert decompose_to_basis(layer_norm.graph, BASIS - {"layer_norm"}) == []
    assert ops_of(layer_norm) == ["layer_norm"]


def test_random_ops_are_never_decomposed(capture, monkeypatch):
    _, mse_loss, _ = example_4_3(capture)
    monkeypatch.setitem(OPS, "mse_loss", dataclasses.replace(OPS["mse_loss"], random=True))
    assert decompose_to_basis(mse_loss.graph, BASIS) == []


def test_expansion_reaches_the_basis_recursively(capture):
    _, mse_loss, _ = example_4_3(capture)
    decompose_to_basis(mse_loss.graph, BASIS)
    assert all(op in BASIS or OPS[op].decompose is None for op in ops_of(mse_loss))
