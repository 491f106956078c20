"""cumsum/cumprod compiled natively as scans: in NumPy's order, so bit for bit NumPy's results
(-0.0, NaN/Inf, integer wrap-around, NumPy's accumulation dtypes), on every axis and layout."""

import numpy as np
import pytest

import stax.runtime as stax

DTYPES = [np.float32, np.float64, np.int8, np.int32, np.int64, np.uint16, np.bool_]
CASES = [((1000,), None), ((4097,), 0), ((7, 17), 1), ((7, 17), 0), ((33, 64), 0), ((33, 64), -1),
         ((5, 6, 9), 0), ((5, 6, 9), 1), ((5, 6, 9), 2), ((0, 3), 0), ((1, 1), 1)]
PROGRAMS = {
    "np.cumsum": lambda x, axis: np.cumsum(x, axis=axis),
    "x.cumprod": lambda x, axis: x.cumprod(axis=axis),
    "fused producer and consumer": lambda x, axis: np.cumsum(x * 3, axis=axis) - 1,
    "np.maximum.accumulate": lambda x, axis: np.maximum.accumulate(x, axis=axis),
    "np.minimum.accumulate of a product": lambda x, axis: np.minimum.accumulate(x * 3, axis=axis),
}


def data(shape, dtype):
    rng = np.random.default_rng(9)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    if x.size > 5 and np.issubdtype(dtype, np.floating):
        x.flat[0], x.flat[2], x.flat[4] = -0.0, -0.0, np.nan
    return x


def check(fn, *args):
    compiled = stax.compile(fn, strict_native=True)
    compiled(*args)  # the capture's own call: eager's result
    got, want = compiled(*args), fn(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    return compiled


# (bool * 3 is an integer program: the integer dtypes cover the fused case; a running extreme
# of booleans is NumPy's logical or/and, run as its call)
COMBINATIONS = [(d, n) for d in DTYPES for n in PROGRAMS
                if not (d is np.bool_ and n != "np.cumsum" and n != "x.cumprod")]


@pytest.mark.parametrize("dtype, name", COMBINATIONS)
@pytest.mark.parametrize("shape, axis", CASES)
def test_scans_are_bit_exact(dtype, shape, axis, name):
    program = PROGRAMS[name]
    compiled = check(lambda x: program(x, axis), data(shape, dtype))
    assert not compiled.versions()[0].artifact.externs  # the scan runs in a kernel


@pytest.mark.parametrize("layout", ["F", "transposed", "sliced", "reversed"])
def test_layouts(layout):
    base = data((40, 30), np.float64)
    x = {"F": np.asfortranarray(base), "transposed": base.T, "sliced": base[::3, 1::2],
         "reversed": base[::-1]}[layout]
    for axis in (0, 1):
        check(lambda x: np.cumsum(x, axis=axis), x)


def test_integer_wraparound_and_dtype_argument():
    x = np.full(300, 100, np.int8)
    check(lambda x: np.cumsum(x, dtype=np.int8), x)     # wraps in int8, as NumPy
    check(lambda x: np.cumsum(x), x)                    # accumulates in int64, as NumPy


def test_flattening_scan_of_a_matrix_runs_as_numpy():
    x = data((4, 5), np.float64)
    compiled = check(lambda x: np.cumsum(x), x)          # axis=None of 2-D: NumPy's flattening
    assert compiled.versions()[0].artifact.externs


@pytest.mark.parametrize("axis", [0, 1])
def test_a_math_routine_is_computed_before_the_scan(axis):
    """``np.log1p(r).cumsum()``: the routine vectorized in a pointwise kernel of its own, the
    scan reading its result (inlined, the sequential loop ran it one element at a time); the
    values are NumPy's scan of the routine's (its own 1-ulp bound), the sums in NumPy's order."""
    def returns(r, axis):
        return np.log1p(r).cumsum(axis=axis), np.cumprod(1 + r, axis=axis)

    r = np.random.default_rng(4).standard_normal((40, 50)) * 0.01
    compiled = stax.compile(returns, strict_native=True)
    compiled(r, axis)
    got, want = compiled(r, axis), returns(r, axis)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(got[1], want[1])
    artifact = compiled.versions()[0].artifact
    assert len(artifact.kernels) == 3  # log1p, then its scan; the product's scan
