"""Hypothesis: chains of row reductions feeding element-wise work (softmax-, layer-norm-like),
which the scheduler fuses into one kernel per row — against eager NumPy."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import stax.runtime as stax

ROW_OPS = {
    "center": lambda y: y - y.mean(-1, keepdims=True),
    "normalize": lambda y: y / (np.abs(y).max(-1, keepdims=True) + 1),
    "softmax": lambda y: np.exp(y - y.max(-1, keepdims=True)) /
    np.exp(y - y.max(-1, keepdims=True)).sum(-1, keepdims=True),
    "scale": lambda y: y * 1.5 + 0.25,
    "minshift": lambda y: y - y.min(-1, keepdims=True),
    "rowsum_add": lambda y: y + y.sum(-1, keepdims=True) * 0.01,
}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(sorted(ROW_OPS)), min_size=1, max_size=5),
       st.sampled_from([(1, 5), (7, 33), (64, 130)]), st.sampled_from(["C", "F", "T"]),
       st.booleans())
def test_row_chains_agree_with_eager(ops, shape, layout, reduce_at_end):
    def rows(x):
        y = x
        for op in ops:
            y = ROW_OPS[op](y)
        return y

    def fn(x):
        y = rows(x)
        return y.sum(-1) if reduce_at_end else y

    rng = np.random.default_rng(len(ops))
    x = rng.standard_normal(shape).astype(np.float32)
    x = {"C": x, "F": np.asfortranarray(x), "T": np.ascontiguousarray(x.T).T}[layout]
    cf = stax.compile(fn, strict_native=True)
    # reordered float32 sums: the error is relative to the magnitudes summed along the way (a
    # centered row sums to ~0, so its sum's error comes from the values before the centering)
    magnitude = 1.0
    if reduce_at_end:
        y = x
        for op in ops:
            magnitude = max(magnitude, float(np.abs(y).sum(-1).max()))
            y = ROW_OPS[op](y)
        magnitude = max(magnitude, float(np.abs(y).sum(-1).max()))
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_allclose(cf(x), fn(x), rtol=2e-5, atol=2e-5 * max(magnitude, 1.0))
