"""An element-wise buffer that a split reduction reads whole (a result returned and summed, an
argument's new value reduced) iterates over the reduction's (chunks, chunk) loops, so the
scheduler can run both as phases of one row kernel (``split_producers.py``). Only the loops
change: the values, the layout and every other reader are as before."""

import numpy as np

from stax.loop import ComputedBuffer, Pointwise, Reduction
from stax.loop.index import Affine
from stax.loop.ir import xvar

KEEP = lambda reuse: True  # noqa: E731  # results others read stay in memory (the CPU's policy)


def _stored_and_summed(build, x, with_index=False):
    b = build(x=x)
    y = b("mul", b("sqrt", b("abs", b.inputs["x"])), 2.0)
    if with_index:  # x[0] = 0 on the result: a select on the loop index
        y = b("setitem", y, key=(("int", 0),), scalar=0.0)
    return b, y, b("sum", y, axis=(0,), keepdims=False, dtype="float32")


def _buffers(result):
    return [b for b in result.loop.buffers if isinstance(b, ComputedBuffer)]


def test_the_buffer_takes_the_reductions_loops(build, lowered):
    x = np.random.default_rng(0).standard_normal(200_000).astype(np.float32)
    b, y, total = _stored_and_summed(build, x)
    result = lowered(b, y, total, materialize=KEEP)
    (stored,) = [n for n in _buffers(result) if isinstance(n.data, Pointwise)]
    partial = next(n for n in _buffers(result) if isinstance(n.data, Reduction) and
                   n.ranges != ())
    chunks, (chunk,) = partial.ranges[0], partial.reduction_ranges
    assert stored.ranges == (chunks, chunk) and chunks * chunk == 200_000
    assert stored.store_index == Affine.var(xvar(0)) * chunk + Affine.var(xvar(1))
    assert stored.shape == (200_000,) and stored.strides == (1,)
    np.testing.assert_array_equal(result.run.outputs[0], result.expected[0])
    np.testing.assert_allclose(result.run.outputs[1], result.expected[1], rtol=1e-5)


def test_an_index_in_the_body_moves_with_the_loops(build, lowered):
    x = np.random.default_rng(1).standard_normal(96_000).astype(np.float32) + 5
    b, y, total = _stored_and_summed(build, x, with_index=True)
    result = lowered(b, y, total, materialize=KEEP)
    got = result.run.outputs[0]
    assert got[0] == 0.0
    np.testing.assert_array_equal(got, result.expected[0])


def test_other_readings_keep_the_buffers_loops(build, lowered):
    """A short reduction is not split; a 2-D one splits by rows (the buffer's rows already)."""
    x = np.random.default_rng(2).standard_normal(100).astype(np.float32)
    b, y, total = _stored_and_summed(build, x)
    result = lowered(b, y, total, materialize=KEEP)
    (stored,) = [n for n in _buffers(result) if isinstance(n.data, Pointwise)]
    assert stored.ranges == (100,)
    m = np.random.default_rng(3).standard_normal((300, 400)).astype(np.float32)
    b, y, total = _stored_and_summed(build, m)
    result = lowered(b, y, total, materialize=KEEP)
    (stored,) = [n for n in _buffers(result) if isinstance(n.data, Pointwise)]
    assert stored.ranges == (300, 400)


def test_chunks_are_whole_vectors_where_a_divisor_allows(build, lowered):
    """200,000 elements split as 50 chunks of 4000 (a multiple of ``split_align``), not 64 of
    3125, whose every chunk ends in a scalar tail; 66,666 keeps the most chunks that divide it
    (41; no aligned count does)."""
    for n, want in ((200_000, (50, 4000)), (262_144, (64, 4096)), (66_666, (41, 1626))):
        x = np.random.default_rng(4).standard_normal(n).astype(np.float32)
        b = build(x=x)
        total = b("sum", b("abs", b.inputs["x"]), axis=(0,), keepdims=False, dtype="float32")
        result = lowered(b, total)
        partial = next(n for n in _buffers(result) if isinstance(n.data, Reduction) and
                       n.ranges != ())
        assert (partial.ranges[0], *partial.reduction_ranges) == want
        np.testing.assert_allclose(result.run.outputs[0], result.expected[0], rtol=1e-5)


def test_a_sibling_reading_the_same_elements_takes_the_reductions_loops(build, lowered):
    """An element-wise buffer reading, element by element, what a split reduction reads (a
    float-to-int cast beside its range check; ``x * 2`` returned beside ``x.sum()``) iterates
    over the reduction's loops too; one reading another buffer keeps its own."""
    x = np.random.default_rng(5).standard_normal(200_000).astype(np.float32)
    w = np.random.default_rng(6).standard_normal(200_000).astype(np.float32)
    b = build(x=x, w=w)
    doubled = b("mul", b.inputs["x"], 2.0)
    other = b("mul", b.inputs["w"], 3.0)
    total = b("sum", b("abs", b.inputs["x"]), axis=(0,), keepdims=False, dtype="float32")
    result = lowered(b, doubled, other, total, materialize=KEEP)
    partial = next(n for n in _buffers(result) if isinstance(n.data, Reduction) and
                   n.ranges != ())
    split = (partial.ranges[0], *partial.reduction_ranges)
    by_input = {n.data.body.children()[0].buffer if n.data.body.children() else None: n
                for n in _buffers(result) if isinstance(n.data, Pointwise)}
    assert by_input["x"].ranges == split and by_input["x"].shape == (200_000,)
    assert by_input["w"].ranges == (200_000,)
    for got, want in zip(result.run.outputs[:2], result.expected[:2]):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(result.run.outputs[2], result.expected[2], rtol=1e-5)
