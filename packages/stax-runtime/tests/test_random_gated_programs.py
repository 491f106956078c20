"""Hypothesis-generated programs that mix data gates (if/int/float on array values) with ops;
one compiled function is called on many inputs and must always agree with eager NumPy."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import stax.runtime as stax

STEPS = st.lists(st.tuples(
    st.sampled_from(["add", "mul", "max", "branch", "int", "float", "index", "iadd", "setitem",
                     "slice_iadd", "view_imul"]),
    st.floats(-2, 2, allow_nan=False, width=32)), min_size=1, max_size=6)


def build(steps):
    def fn(x, w):
        y = x
        for kind, c in steps:
            if kind == "add":
                y = y + w * c
            elif kind == "mul":
                y = y * c
            elif kind == "max":
                y = np.maximum(y, c)
            elif kind == "branch":
                y = y - 1 if y.sum() > c else y + w
            elif kind == "int":
                y = y * int(abs(y[0]) > abs(c))
            elif kind == "float":
                y = y + float(w.max())
            elif kind == "iadd":  # in place: on the argument itself while y is x
                y += w * c
            elif kind == "setitem":
                y[0] = c
            elif kind == "slice_iadd":
                y[1:] += c
            elif kind == "view_imul":
                v = y[2:4]
                v *= c
            else:  # index gate: a slice bound read from the data
                y = y[: 1 + int(abs(x[0]) * 2) % y.shape[0]].sum() + y
        return y
    return fn


@settings(max_examples=40, deadline=None)
@given(STEPS, st.integers(0, 2**31 - 1))
def test_gated_programs_agree_with_eager_on_every_call(steps, seed):
    fn = build(steps)
    cf = stax.compile(fn)
    rng = np.random.default_rng(seed)
    for _ in range(4):
        x = rng.standard_normal(5)
        w = rng.standard_normal(5)
        x_eager = x.copy()
        np.testing.assert_allclose(cf(x, w), fn(x_eager, w), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(x, x_eager, rtol=1e-12, atol=1e-12)  # same side effects
    info = cf.cache_info()
    assert info.versions <= 4 and info.compiles == info.misses
