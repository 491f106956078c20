import numpy as np
import pytest

from stax.ir import GraphProgram, load_opgraph
from stax.loop import Load, LoopProgram, Pointwise, Reduction, load_loopir, loads, lower_opgraph
from stax.loop.interpreter import run_loop_program


def reference(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def with_x_strides(program: GraphProgram, strides):
    """The fixture graph re-specialized to another layout of ``x`` (what a new key would trace)."""
    doc = program.to_json()
    for node in doc["graph"]["nodes"]:
        if node["name"] == "x":
            node["meta"]["tensor"]["strides"] = list(strides)
    return load_opgraph(doc)


def test_example_1_1_is_one_reduction_with_everything_inlined(opgraph_doc_path):
    loop = lower_opgraph(load_opgraph(opgraph_doc_path))
    assert len(loop.buffers) == 1
    (buf,) = loop.buffers
    assert isinstance(buf.data, Reduction)
    assert buf.data.ranges == (64,) and buf.data.reduction_ranges == (128,)
    assert sorted(ld.buffer for ld in loads(buf.data.body)) == ["w", "x"]
    assert str(loop).splitlines()[3:] == [
        "buf0: float32[64] strides=(1,) = Reduction(sum, ranges=[64], reduction_ranges=[128])",
        "    t0: float32 = load x[r0 + 128*x0]",
        "    t1: float32 = load w[r0 + 128*x0]",
        "    t2: float32 = add t0, t1",
        "    t3: float32 = const 0.0",
        "    t4: float32 = maximum t2, t3",
        "    t5: float32 = const 2.0",
        "    t6: float32 = mul t4, t5",
        "    store buf0[x0]",
        "return buf0",
    ]


def test_loopir_round_trip(opgraph_doc_path):
    loop = lower_opgraph(load_opgraph(opgraph_doc_path))
    doc = loop.to_json()
    assert doc["schema"] == "stax.loopir/1.5"
    again = load_loopir(doc)
    assert again.to_json() == doc and str(again) == str(loop)


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_views_are_affine_index_maps(opgraph_doc_path, layout):
    base = load_opgraph(opgraph_doc_path)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 128), dtype=np.float32)
    w = rng.standard_normal((64, 128), dtype=np.float32)
    if layout == "transposed":
        x = np.ascontiguousarray(x.T).T
        program = with_x_strides(base, (1, 64))
    else:
        program = base
    loop = lower_opgraph(program)
    load_x = next(ld for ld in loads(loop.buffers[0].data.body) if ld.buffer == "x")
    assert isinstance(load_x, Load)
    expected = "64*r0 + x0" if layout == "transposed" else "r0 + 128*x0"
    assert str(load_x.index) == expected
    (out,) = run_loop_program(loop, [x, w])
    np.testing.assert_allclose(out, reference(x, w), rtol=1e-5, atol=1e-4)


def test_float16_ops_run_as_numpy_externs(opgraph_doc_path):
    doc = load_opgraph(opgraph_doc_path).to_json()
    for node in doc["graph"]["nodes"]:
        if "meta" in node:
            node["meta"]["tensor"]["dtype"] = "float16"
        if node["target"] == "sum":
            node["kwargs"]["dict"] = [kv if kv[0] != "dtype" else ["dtype", "float16"]
                                      for kv in node["kwargs"]["dict"]]
    loop = lower_opgraph(load_opgraph(doc))
    assert [b.target for b in loop.buffers] == ["numpy.add", "numpy.maximum", "numpy.multiply",
                                               "numpy.sum"]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 128)).astype(np.float16)
    w = rng.standard_normal((64, 128)).astype(np.float16)
    (out,) = run_loop_program(loop, [x, w])
    np.testing.assert_array_equal(out, np.sum(np.maximum(x + w, 0) * 2, axis=1, dtype="float16"))


def test_program_type(opgraph_doc_path):
    assert isinstance(lower_opgraph(load_opgraph(opgraph_doc_path)), LoopProgram)


def test_op_graph_of_schema_1_0_still_lowers(opgraph_doc_path):
    old = load_opgraph(opgraph_doc_path.with_name("example_1_1.opgraph.schema-1.0.json"))
    assert str(lower_opgraph(old)) == str(lower_opgraph(load_opgraph(opgraph_doc_path)))


def test_deep_elementwise_chains_are_realized_every_max_depth_ops(build, lowered):
    """A 1,500-op chain (a Python loop of 750 steps, unrolled) was one expression tree whose
    recursive walks overflowed Python's stack; it is now cut into values of at most
    ``max_depth`` ops, each a buffer, with the same bits."""
    from stax.loop import LoopOptions

    b = build(x=np.linspace(-1, 1, 16, dtype=np.float32))
    v = b.inputs["x"]
    for _ in range(750):
        v = b("mul", b("add", v, np.float32(0.5)), np.float32(0.999))
    run = lowered(b, v, options=LoopOptions(max_depth=100))
    run.assert_numpys()
    assert len(run.loop.buffers) == 15  # 1,500 ops in values of 100
    assert all(isinstance(buf.data, Pointwise) for buf in run.loop.buffers)


def test_a_value_of_its_positions_alone_is_recomputed_in_a_broadcast_view(build, lowered):
    """``i = np.arange(n); i[:, None] == i[None, :]`` and ``np.zeros(n)[None, :]`` read their
    elements in every position of the view: recomputed there (an index, a constant), not
    written into a buffer of their own by a kernel of their own (Jacobi's ``np.diagflat``
    and its ``x = np.zeros_like(b)``: two kernels of five); a view that slices one keeps it."""
    n = 6
    b = build(x=np.random.default_rng(0).standard_normal((n, n)))
    i = b("arange", start=0, step=1, n=n, dtype="int64")
    rows = b("view", i, offset=0, strides=(1, 0), shape=(n, n))
    cols = b("view", i, offset=0, strides=(0, 1), shape=(n, n))
    zeros = b("full", shape=(n,), value=0.0, dtype="float64")
    spread = b("view", zeros, offset=0, strides=(0, 1), shape=(n, n))
    out = b("add", b("where", b("eq", rows, cols), b.inputs["x"], spread), spread)
    run = lowered(b, out)
    run.assert_numpys()
    assert len(run.loop.buffers) == 1
    shifted = b("view", i, offset=1, strides=(1,), shape=(n - 1,))  # a slice: not a broadcast
    run = lowered(b, b("mul", shifted, shifted))
    run.assert_numpys()
    assert len(run.loop.buffers) == 2


def test_an_expressions_kept_order_dies_with_it():
    """A review's finding: the order ``postorder`` keeps held its own expression, so no entry
    of the cache was ever freed (every compile's expressions, for the process's life)."""
    import gc

    from stax.loop import expr as expr_module
    from stax.loop.expr import Binary, Const, postorder

    before = len(expr_module._ORDERS)
    for k in range(200):
        e = Binary("add", Const(float(k), "float64"), Const(1.0, "float64"), "float64")
        assert [type(n).__name__ for n in postorder(e)] == ["Const", "Const", "Binary"]
        assert list(postorder(e))[-1] is e
    del e
    gc.collect()
    assert len(expr_module._ORDERS) <= before + 1
