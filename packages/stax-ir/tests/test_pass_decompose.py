"""DecomposePass: table 4.2, each rule bit-exact against the composite on special values."""

import numpy as np
import pytest

from stax.ir import run_program
from stax.ir.passes import run_pipeline
from stax.ir.passes.decompose import DECOMPOSE, KEEP, RULES

SPECIALS = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 1e-300, 700.0, -3.5, 0.25])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("target, extra", [
    ("stax.nn.selu", ()), ("numpy.square", ()), ("numpy.clip", (0.0, 1.0)),
    ("numpy.clip", (-0.0, 0.0)), ("numpy.deg2rad", ()), ("numpy.radians", ()),
])
def test_rules_are_bit_exact(capture, target, extra, dtype):
    rng = np.random.default_rng(0)
    x = np.concatenate([SPECIALS, rng.standard_normal(500) * 50]).astype(dtype)
    b = capture(x=x)
    node = b(target, b.inputs["x"], *extra)
    graph = b.output(b("operator.mul", node, 1.5))
    program = b.program()
    with np.errstate(all="ignore"):
        want = run_program(program, (x,), {})
        run_pipeline(graph, "decompose,dce", verify=True)
        got = run_program(program, (x,), {})
    assert node not in graph.nodes
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers])


def test_table_4_2_lists():
    assert set(RULES) == set(DECOMPOSE)
    assert "numpy.log1p" in KEEP and "numpy.expm1" in KEEP  # numerically better whole
    assert "numpy.rad2deg" in KEEP  # NumPy's float32 loop rounds unlike x * (180/pi)


def test_kept_operators_stay(capture):
    b = capture(x=np.linspace(0, 1, 4))
    node = b("numpy.log1p", b.inputs["x"])
    graph = b.output(node)
    run_pipeline(graph)
    assert node in graph.nodes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("target", ["operator.matmul", "numpy.matmul", "numpy.dot"])
def test_identity_products_are_bit_exact(capture, target, side, dtype):
    """``np.eye(n) @ x`` (``x @ np.eye(n)``) without the product: NaN where another element of
    the column (row) is not finite, ``-0.0`` as ``+0.0``, the rest ``x`` itself."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 5)).astype(dtype)
    x[0, 0], x[2, 1], x[3, 1], x[4, 2], x[:, 3] = np.inf, np.nan, -0.0, -np.inf, -0.0
    n = x.shape[0] if side == "left" else x.shape[1]
    b = capture(x=x)
    eye = b("numpy.eye", n, n, 0, dtype)
    node = b(target, *((eye, b.inputs["x"]) if side == "left" else (b.inputs["x"], eye)))
    graph = b.output(node)
    program = b.program()
    with np.errstate(all="ignore"):
        want = run_program(program, (x,), {})
        run_pipeline(graph, "decompose,dce", verify=True)
        got = run_program(program, (x,), {})
    assert node not in graph.nodes and eye not in graph.nodes
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers])
    kept = [n for n in graph.nodes if n.events_only]  # x * 0.0: the products' 0 * inf
    assert len(kept) == 1 and kept[0].target == "operator.mul"


@pytest.mark.parametrize("eye_args, other", [
    ((4, 4, 1), (4, 3)),      # an off-diagonal: not an identity
    ((4, 4, 0, np.float32), (4, 3)),  # another dtype than x: NumPy converts first
    ((4, 4, 0), (4,)),        # a vector: NumPy's gemv
])
def test_products_that_are_not_identity_products_stay(capture, eye_args, other):
    b = capture(x=np.ones(other))
    node = b("operator.matmul", b("numpy.eye", *eye_args), b.inputs["x"])
    graph = b.output(node)
    run_pipeline(graph, "decompose,dce", verify=True)
    assert node in graph.nodes
