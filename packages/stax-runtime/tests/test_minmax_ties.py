"""np.maximum/minimum/fmax/fmin bit for bit with eager NumPy, ties between 0.0 and -0.0 and
between two different NaNs included.

NumPy (2.4, x86-64) returns the second operand on a tie in np.maximum/np.minimum, in every inner
loop. np.fmax/np.fmin do too in their vector loops, but their scalar loops (the last elements
of a contiguous array, up to a vector's width; strided float64 too) call C's fmax, whose operands
the C compiler swapped in some unrolled copies: which zero (or which NaN) comes back depends on
the element's place in the array, the array's length and layout and the CPU's vector width. A
compiled fmax/fmin therefore checks for such a tie and runs that call as NumPy; every other call
stays native.
"""

import numpy as np
import pytest

import stax.runtime as stax

LENGTHS = [1, 2, 3, 4, 7, 9, 15, 17, 33, 70]  # around 4, 8 and 16 lanes (AVX2, AVX-512)
LAYOUTS = ["contiguous", "strided", "reversed", "array-scalar", "scalar-array", "array-float",
           "2-d", "transposed"]
OPS = {"maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin}


def _nan(dtype, negative: bool, payload: int):
    bits = np.dtype(dtype).itemsize * 8
    base = (0x7FF8 << 48) if bits == 64 else 0x7FC00000
    word = base | payload | ((1 << (bits - 1)) if negative else 0)
    return np.array([word], f"u{bits // 8}").view(dtype)[0]


def _operands(layout: str, x: np.ndarray, y: np.ndarray):
    """x and y (1-d, the same length) in one of the forms NumPy loops over differently."""
    n = len(x)
    if layout == "contiguous":
        return x.copy(), y.copy()
    if layout == "strided":
        return np.repeat(x, 2)[::2], np.repeat(y, 3)[::3]
    if layout == "reversed":
        return x[::-1].copy()[::-1], y[::-1].copy()[::-1]
    if layout == "array-scalar":
        return x.copy(), y[0]
    if layout == "scalar-array":
        return x[0], y.copy()
    if layout == "array-float":
        return x.copy(), float(y[0])
    if layout == "2-d":
        return np.tile(x, (3, 1)), np.tile(y, (3, 1))
    assert layout == "transposed"
    return np.tile(x, (2, 1)).T, np.tile(y, (2, 1)).T.copy()[:n]


def _bits(v) -> np.ndarray:
    v = np.asarray(v)
    return v.view(f"u{v.dtype.itemsize}")


def _run(op, a, b):
    fn = lambda a, b: op(a, b)  # noqa: E731
    compiled = stax.compile(fn)
    with np.errstate(all="ignore"):
        want = fn(a, b)
        calls = [compiled(a, b) for _ in range(2)]  # the compiling call, then the cached one's
    for got in calls:
        assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(_bits(got), _bits(want)), (got, want)
    return compiled


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_of_opposite_zeros_match_numpy(name):
    """The stress suite's case: eager NumPy keeps each element's first zero here."""
    fn = lambda a, b: getattr(np, name)(a, b)  # noqa: E731
    a0, b0 = np.array([0.0, -0.0]), np.array([-0.0, 0.0])
    compiled, want = stax.compile(fn), fn(a0, b0)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(np.signbit(compiled(a0, b0)), np.signbit(want))
    # and through arithmetic that shows the sign: 1 / fmax(...) is +inf or -inf
    g = lambda a, b: 1.0 / getattr(np, name)(a, b)  # noqa: E731
    compiled = stax.compile(g)
    with np.errstate(divide="ignore"):
        for _ in range(2):
            np.testing.assert_array_equal(compiled(a0, b0), g(a0, b0))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(OPS))
def test_ties_match_numpy_at_every_length_and_layout(name, dtype):
    """Zeros of both signs and NaNs of both signs and payloads against each other, at lengths
    around the vector widths (float32: 8 and 16 lanes; float64: 4 and 8) in every layout, each
    pair at every place in the array over the lengths. np.maximum/np.minimum stay native."""
    nans = [_nan(dtype, False, 1), _nan(dtype, True, 2)]
    pairs = [(0.0, -0.0), (-0.0, 0.0), (nans[0], nans[1]), (nans[1], nans[0]), (-0.0, -0.0),
             (nans[0], 1.0), (2.0, nans[1]), (1.0, 2.0), (3.0, -1.0)]
    op = OPS[name]

    def every_layout(*operands):
        return tuple(op(operands[k], operands[k + 1]) for k in range(0, len(operands), 2))
    for n in LENGTHS:
        x = np.array([pairs[(k + n) % len(pairs)][0] for k in range(n)], dtype)
        y = np.array([pairs[(k + n) % len(pairs)][1] for k in range(n)], dtype)
        operands = [v for layout in LAYOUTS for v in _operands(layout, x, y)]
        compiled = stax.compile(every_layout)
        with np.errstate(all="ignore"):
            want = every_layout(*operands)
            calls = [compiled(*operands) for _ in range(2)]  # compiling call, then cached one's
        for got in calls:
            for layout, g, w in zip(LAYOUTS, got, want):
                assert type(g) is type(w) and g.dtype == w.dtype and g.shape == w.shape
                assert np.array_equal(_bits(g), _bits(w)), (n, layout, g, w)
        # ties of different bits make each fmax/fmin call run as NumPy; np.maximum/np.minimum
        # take the second operand in every NumPy loop, as the kernel does
        assert compiled.cache_info().fallbacks == 2 * (name in ("fmax", "fmin") and n != 4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(OPS))
def test_calls_without_an_ambiguous_tie_stay_native(name, dtype):
    """One NaN (the other operand wins), equal values of equal bits, -0.0 against -0.0: native.
    np.maximum/np.minimum take the second operand of a tie in every NumPy loop, as the kernel
    does: native for 0.0 against -0.0 too."""
    x = np.array([np.nan, 1.0, -0.0, 0.0, 5.0, -2.0, np.inf, 3.0, np.nan] * 7, dtype)
    y = np.array([1.0, np.nan, -0.0, 0.0, 5.0, 7.0, -np.inf, -3.0, 2.0] * 7, dtype)
    if name in ("maximum", "minimum"):
        x[2::9], y[2::9] = 0.0, -0.0
    for n in (1, 5, 9, 17, 63):
        compiled = _run(OPS[name], x[:n], y[:n])
        assert compiled.cache_info().fallbacks == 0


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_a_tie_in_a_fused_kernel_runs_the_call_as_numpy(name):
    """The tie is inside a larger expression, and the next call without one is native again."""
    fn = lambda a, b: np.exp(getattr(np, name)(a * 2.0, -b) * 3.0) + a  # noqa: E731
    compiled = stax.compile(fn)
    a = np.array([1.0, 0.0, 2.0])
    b = np.array([0.5, 0.0, -1.0])  # a * 2 = 0.0 against -b = -0.0
    np.testing.assert_array_equal(compiled(a, b), fn(a, b))
    assert compiled.cache_info().fallbacks == 1
    b = np.array([0.5, 1.0, -1.0])
    np.testing.assert_array_equal(compiled(a, b), fn(a, b))
    assert compiled.cache_info().fallbacks == 1


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_zero_d_and_empty_operands(name):
    op = OPS[name]
    for a, b in ((np.array(0.0), np.array(-0.0)), (np.array(-0.0), np.array(0.0)),
                 (np.zeros(0), np.zeros(0)), (np.array(1.0), np.array(-0.0))):
        _run(op, a, b)
