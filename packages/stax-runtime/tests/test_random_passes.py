"""Hypothesis: every pass sequence leaves eager results unchanged on programs full of identities
and composites, with NaN/Inf/-0.0 inputs (values equal; only x + 0 may flip a zero's sign, as
spec §4.2 accepts)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stax.ir import CAPTURE_SCHEMA, GraphProgram, run_program, verify_graph
from stax.ir.passes import PASSES, run_pipeline
from stax.runtime import nn
from stax.trace import trace

STEPS = ["times_one", "plus_zero", "zero_plus", "minus_zero", "div_one", "neg_neg", "square",
         "clip", "selu", "two_times", "repeat_exp", "deg2rad", "mul_zero"]


def build(steps):
    def fn(x, w):
        y = x
        for s in steps:
            if s == "times_one":
                y = y * 1
            elif s == "plus_zero":
                y = y + 0
            elif s == "zero_plus":
                y = 0.0 + y
            elif s == "minus_zero":
                y = y - 0.0
            elif s == "div_one":
                y = y / 1
            elif s == "neg_neg":
                y = -(-y)  # noqa: B002  (double negation, an identity of table 4.1)
            elif s == "square":
                y = np.square(y) + w
            elif s == "clip":
                y = np.clip(y, -1.0, 2.0)
            elif s == "selu":
                y = nn.selu(y) + nn.selu(y * 1)
            elif s == "two_times":
                y = 2 * y + w * 2
            elif s == "repeat_exp":
                y = np.exp(y) - np.exp(y)
            elif s == "deg2rad":
                y = np.deg2rad(y)
            else:
                y = y * 0
        return y
    return fn


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(STEPS), min_size=1, max_size=7),
       st.lists(st.sampled_from(sorted(PASSES)), min_size=1, max_size=8),
       st.sampled_from([np.float32, np.float64]))
def test_pass_sequences_preserve_eager_results(steps, passes, dtype):
    fn = build(steps)
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -2.5, 0.3], dtype)
    w = np.array([0.5, -0.0, 1.0, np.nan, 2.0, -1.0, 0.0, np.inf], dtype)
    with np.errstate(all="ignore"):
        capture = trace(fn, (x, w))
        want = run_program(capture, (x, w), {})
        copy = GraphProgram.from_json(capture.to_json(), CAPTURE_SCHEMA)
        run_pipeline(copy.graph, ",".join(passes), verify=True)
        verify_graph(copy.graph)
        got = run_program(copy, (x, w), {})
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # NaN positions and values (+0 == -0)
