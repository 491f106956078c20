"""Hypothesis-generated element-wise programs (with an optional final sum) against eager NumPy."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import stax.runtime as stax

BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "max": np.maximum, "min": np.minimum,
}
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8]
SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0]


@st.composite
def programs(draw):
    n_ops = draw(st.integers(1, 6))
    steps = []
    for i in range(n_ops):
        op = draw(st.sampled_from(sorted(BINARY)))
        a = draw(st.integers(0, 1 + i))  # an input or an earlier value
        b = draw(st.one_of(st.tuples(st.just("value"), st.integers(0, 1 + i)),
                           st.tuples(st.just("const"), st.sampled_from([2, -1, 0.5, 3.0]))))
        steps.append((op, a, b))
    reduce_axis = draw(st.sampled_from([None, -1, 0, "all"]))
    return steps, reduce_axis


def build(steps, reduce_axis):
    def fn(x, w):
        values = [x, w]
        for op, a, (kind, b) in steps:
            values.append(BINARY[op](values[a], values[b] if kind == "value" else b))
        out = values[-1]
        if reduce_axis == "all":
            return out.sum()
        if reduce_axis is not None:
            return out.sum(reduce_axis)
        return out
    return fn


@settings(max_examples=60, deadline=None)
@given(programs(), st.sampled_from(DTYPES), st.sampled_from([(5, 7), (1, 33), (16, 1)]),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_random_programs_match_eager(program, dtype, shape, transposed, seed):
    steps, reduce_axis = program
    fn = build(steps, reduce_axis)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape[::-1] if transposed else shape) * 8).astype(dtype)
    x = x.T if transposed else x
    w = (rng.standard_normal(shape) * 8).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x.flat[: len(SPECIAL)] = SPECIAL[: x.size]
    with np.errstate(all="ignore"):
        try:
            want = fn(x, w)
        except Exception as exc:  # NumPy refuses the program: Stax must raise the same error
            want = exc
        cf = stax.compile(fn, strict_native=True)
        if isinstance(want, Exception):
            try:
                cf(x, w)
            except type(want):
                return
            raise AssertionError(f"expected {type(want).__name__}")
        calls = [cf(x, w) for _ in range(2)]  # the compiling call, then the cached version's
    for got in calls:
        assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
        if reduce_axis is None or np.dtype(got.dtype).kind != "f":
            np.testing.assert_array_equal(got, want)
            if np.dtype(got.dtype).kind == "f":  # signed zeros too: element-wise work is exact
                # (except a NaN's sign and payload, which IEEE 754 leaves unspecified: LLVM may
                # turn x / -1 into -x, which flips a NaN's sign bit where the division would not)
                numbers = ~np.isnan(want)
                np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers])
        else:
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * max(1.0, float(
                np.nanmax(np.abs(np.where(np.isinf(want), 0, want))))), equal_nan=True)
