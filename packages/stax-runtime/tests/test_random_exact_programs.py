"""Hypothesis-generated programs over the operations Stax computes bit for bit: integer floor
division, remainder, bits and shifts; float copysign/fmax/fmin/heaviside/sign; then a scan, a
roll, a triangle, a concatenation or a gather — against eager NumPy, exactly."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import stax.runtime as stax

INT_OPS = {
    "floordiv": np.floor_divide, "mod": np.remainder, "and": np.bitwise_and,
    "or": np.bitwise_or, "xor": np.bitwise_xor, "shl": np.left_shift, "shr": np.right_shift,
    "add": np.add, "mul": np.multiply,
}
def _unsigned_nan(op):
    """``op`` with a NaN result's sign cleared: the sign of a NaN that ``+`` or ``*`` of two NaNs
    makes is IEEE's to leave unspecified (the user guide says so; an LLVM kernel may take the
    other operand's NaN, which ``copysign`` then shows: ``(-x) + x`` of a NaN ``x``)."""
    return lambda a, b: (lambda r: np.where(r != r, np.abs(r), r))(op(a, b))


FLOAT_OPS = {
    "copysign": np.copysign, "fmax": np.fmax, "fmin": np.fmin, "heaviside": np.heaviside,
    "add": _unsigned_nan(np.add), "mul": _unsigned_nan(np.multiply), "maximum": np.maximum,
}
UNARY = {"sign": np.sign, "neg": np.negative, "abs": np.abs, "pos": np.positive}
FINISH = {
    "none": lambda v, w: v,
    "cumsum0": lambda v, w: np.cumsum(v, axis=0),
    "cumsum1": lambda v, w: v.cumsum(axis=1),
    "roll": lambda v, w: np.roll(v, 2, axis=1),
    "tril": lambda v, w: np.tril(v, -1),
    "concatenate": lambda v, w: np.concatenate([v, v[::-1]], axis=0),
    "stack": lambda v, w: np.stack([v, v * 2], axis=-1),
    "gather": lambda v, w: v[(w[:, 0] > 0).astype(np.int64) - 1],  # rows -1 and 0
    "pad": lambda v, w: np.pad(v, ((1, 0), (2, 1))),
}


@st.composite
def programs(draw, floating):
    ops = FLOAT_OPS if floating else INT_OPS
    steps = []
    for i in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            steps.append(("unary", draw(st.sampled_from(sorted(UNARY))), draw(st.integers(0, 1 + i))))
        else:
            steps.append(("binary", draw(st.sampled_from(sorted(ops))), draw(st.integers(0, 1 + i)),
                          draw(st.integers(0, 1 + i))))
    return steps, draw(st.sampled_from(sorted(FINISH)))


def build(steps, finish, floating):
    ops = FLOAT_OPS if floating else INT_OPS

    def fn(x, w):
        values = [x, w]
        for step in steps:
            if step[0] == "unary":
                values.append(UNARY[step[1]](values[step[2]]))
            else:
                values.append(ops[step[1]](values[step[2]], values[step[3]]))
        return FINISH[finish](values[-1], w)
    return fn


def run(fn, x, w):
    compiled = stax.compile(fn, strict_native=True)
    with np.errstate(all="ignore"):
        want = fn(x, w)
        calls = [compiled(x, w) for _ in range(2)]  # the compiling call, then the cached one's
    for got in calls:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        if got.dtype.kind == "f":
            numbers = ~np.isnan(want)
            np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers])


@settings(max_examples=40, deadline=None)
@given(programs(floating=False), st.sampled_from([np.int8, np.int32, np.int64, np.uint16]),
       st.integers(0, 2**31 - 1))
def test_random_integer_programs_are_exact(program, dtype, seed):
    steps, finish = program
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (5, 7), dtype=dtype, endpoint=True)
    w = rng.integers(max(info.min, -9), 9, (5, 7)).astype(dtype)
    w.flat[:2] = [0, 1]  # division by zero, and a shift by one
    run(build(steps, finish, False), x, w)


@settings(max_examples=40, deadline=None)
@given(programs(floating=True), st.sampled_from([np.float32, np.float64]), st.booleans(),
       st.integers(0, 2**31 - 1))
def test_random_float_programs_are_exact(program, dtype, transposed, seed):
    steps, finish = program
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((7, 5) if transposed else (5, 7)) * 4).astype(dtype)
    x = x.T if transposed else x
    w = (rng.standard_normal((5, 7)) * 4).astype(dtype)
    x.flat[:5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    w.flat[3:6] = [0.0, -0.0, np.nan]
    run(build(steps, finish, True), x, w)


def test_heaviside_of_a_nan_is_numpys_own_nan():
    """NumPy's heaviside gives its positive NaN at any NaN (``NPY_NAN``), which copysign shows;
    the kernels gave the operand's (a negated NaN: negative). Found by the test above."""
    steps = [("unary", "neg", 1), ("binary", "heaviside", 2, 0), ("unary", "abs", 0),
             ("binary", "copysign", 0, 3)]
    for dtype in (np.float32, np.float64):
        x = np.array([[np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, 5.0]], dtype)
        w = np.array([[1.0, -2.0, -0.5, 0.0, -0.0, np.nan, 6.0]], dtype)
        run(build(steps, "concatenate", True), x, w)
        with np.errstate(all="ignore"):
            got = stax.compile(lambda a, h: np.heaviside(a, h))(-w, x)
        assert got.view(np.uint8).tobytes() == np.heaviside(-w, x).view(np.uint8).tobytes()
