"""Bit operations, logic, float predicates and sign functions compiled natively: bit for bit
NumPy's results (shift counts outside the width included), NaN/Inf/-0.0 included."""

import numpy as np
import pytest

import stax.runtime as stax

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
INT_PROGRAMS = {
    "and/or/xor": lambda a, b: (a & b) | (a ^ b),
    "shifts": lambda a, b: (a << b) ^ (a >> b),
    "invert": lambda a, b: ~a,
    "logical": lambda a, b: np.logical_and(a, b) ^ np.logical_or(a, b) | np.logical_not(b),
    "sign, positive": lambda a, b: np.sign(a) + (+b),
    "predicates": lambda a, b: np.isnan(a) | np.isinf(b) | ~np.isfinite(a) | np.signbit(a),
    "numpy names": lambda a, b: np.bitwise_xor(np.left_shift(a, b), np.right_shift(b, a)),
}
FLOAT_PROGRAMS = {
    "isnan/isinf/isfinite": lambda x, y: np.isnan(x) ^ np.isinf(y) | np.isfinite(x),
    "signbit": lambda x, y: np.signbit(x),
    "sign": lambda x, y: np.sign(x),
    "copysign": lambda x, y: np.copysign(x, y),
    "fmax/fmin": lambda x, y: np.fmax(x, y) - np.fmin(y, x),
    "heaviside": lambda x, y: np.heaviside(x, y) + np.heaviside(y, 0.5),
    "reciprocal, positive": lambda x, y: np.reciprocal(x) + (+y),
    "logical on floats": lambda x, y: np.logical_and(x, y) | np.logical_not(x),
}


def native(fn, *args):
    compiled = stax.compile(fn, strict_native=True)
    with np.errstate(all="ignore"):
        first = compiled(*args)  # the compiling call
        got, want = compiled(*args), fn(*args)  # the cached version's (its machine-code entry)
    for a, b in zip(first if isinstance(first, tuple) else (first,),
                    got if isinstance(got, tuple) else (got,), strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    assert not compiled.versions()[0].artifact.externs  # computed in the kernel
    return got, want


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", list(INT_PROGRAMS))
def test_integer_bits_match_numpy(dtype, name):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(2)
    a = rng.integers(info.min, info.max, 1025, dtype=dtype, endpoint=True)
    b = rng.integers(0, 2 * info.bits, 1025).astype(dtype)
    b[:4] = [0, info.bits - 1, info.bits, info.max]  # counts at and past the width
    got, want = native(INT_PROGRAMS[name], a, b)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


def test_bool_bits_are_logical():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 2, (2, 33)).astype(bool)
    fn = lambda a, b: (a & b) ^ (a | ~b) ^ np.logical_xor(a, b)  # noqa: E731
    got, want = native(fn, a, b)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(FLOAT_PROGRAMS))
def test_float_predicates_and_signs_match_numpy(dtype, name):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(300) * 3).astype(dtype)
    y = rng.standard_normal(300).astype(dtype)
    x[:8] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -0.0, 0.0]
    y[:8] = [1.0, 0.0, -0.0, np.nan, 2.0, np.nan, -0.0, 0.0]
    got, want = native(FLOAT_PROGRAMS[name], x, y)
    np.testing.assert_array_equal(got, want)
    if got.dtype.kind == "f":
        numbers = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers])


@pytest.mark.parametrize("dtype", INTS)
def test_bitwise_count_counts_magnitude_bits(dtype):
    info = np.iinfo(dtype)
    x = np.random.default_rng(5).integers(info.min, info.max, 513, dtype=dtype, endpoint=True)
    x[:3] = [info.min, info.max, 0]
    got, want = native(np.bitwise_count, x)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


def test_ldexp_float32_is_exact_then_rounded_once():
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.standard_normal(1000), [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40,
                                                    3e38]]).astype(np.float32)
    n = rng.integers(-300, 300, x.size).astype(np.int32)
    for fn in (lambda x, n: np.ldexp(x, n), lambda x, n: np.ldexp(x, 3),
               lambda x, n: np.ldexp(x, n.astype(np.int64))):
        got, want = native(fn, x, n)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_bits_nextafter_spacing_frexp_exactly_numpys(dtype):
    """Read from the float's bits (the loop IR's ``bitcast``): every magnitude, subnormals,
    both zeros, infinities, NaN, the largest float."""
    rng = np.random.default_rng(7)
    info = np.finfo(dtype)
    edges = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, info.max, -info.max,
                      info.smallest_subnormal, -info.smallest_subnormal, info.tiny, -info.tiny,
                      0.5, 3.0], dtype=dtype)
    with np.errstate(all="ignore"):
        x = np.concatenate([edges, (rng.standard_normal(2000) * np.exp(
            rng.uniform(-745, 709, 2000))).astype(dtype)])
        y = np.concatenate([rng.choice(edges, edges.size), rng.standard_normal(2000).astype(dtype)])

    def fn(x, y):
        mantissa, exponent = np.frexp(x)
        return np.nextafter(x, y), np.nextafter(x, 0.0), np.spacing(x), mantissa, exponent

    got, want = native(fn, x, y)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
        if w.dtype.kind == "f":
            numbers = ~np.isnan(w)
            np.testing.assert_array_equal(np.signbit(g)[numbers], np.signbit(w)[numbers])


def _neg_of_product(x):
    return -(x * 3)


def _plus_negated(x, y):
    return x + -y


def _negate_in_place(x):
    np.multiply(x, 3, out=x)
    np.negative(x, out=x)


@pytest.mark.parametrize("dtype, uint", [(np.float32, np.uint32), (np.float64, np.uint64)])
def test_negation_flips_the_sign_bit_of_a_nan(dtype, uint):
    """NumPy's negative flips a NaN's sign bit; LLVM folded ``fneg(x * 3)`` into ``x * -3``
    (and ``x + -y`` into ``x - y``), which keeps it: 0x7fc00000 where NumPy gives 0xffc00000
    (found by a probe). Bit patterns compared, NaN payloads and signs included."""
    nans = np.array([np.nan, -np.nan, 1.5, -0.0, np.inf], dtype)
    for fn, args in ((_neg_of_product, (nans,)), (_plus_negated, (np.ones(5, dtype), nans))):
        compiled, want = stax.compile(fn), fn(*args)
        for _ in range(2):  # the compiling call, then the cached version's
            got = compiled(*args)
            np.testing.assert_array_equal(got.view(uint), want.view(uint))
    want = nans.copy()
    _negate_in_place(want)
    cf = stax.compile(_negate_in_place)
    for _ in range(2):
        got = nans.copy()
        cf(got)
        np.testing.assert_array_equal(got.view(uint), want.view(uint))


@pytest.mark.parametrize("dtype, uint", [(np.float32, np.uint32), (np.float64, np.uint64)])
@pytest.mark.parametrize("op", ["mod", "floordiv", "divmod"])
def test_remainders_make_numpys_nans(op, dtype, uint):
    """C's fmod (under NumPy's % and //) returns the first NaN operand, else the CPU's own NaN
    (x86's has its sign bit set): ``inf % 2`` is 0xfff8... in float64, where Stax gave +NaN."""
    fn = {"mod": lambda a, c: a % c, "floordiv": lambda a, c: a // c,
          "divmod": lambda a, c: np.divmod(a, c)}[op]
    a = np.array([np.inf, -np.inf, 5.0, np.nan, -np.nan, 1.0, np.nan, 3.0, -7.5], dtype)
    c = np.array([2.0, 3.0, 0.0, 2.0, 2.0, -np.nan, -np.nan, np.inf, 2.0], dtype)
    with np.errstate(all="ignore"):
        compiled, want = stax.compile(fn), fn(a, c)
        calls = [compiled(a, c) for _ in range(2)]  # the compiling call, then the cached one's
    for got in calls:
        for w, g in zip(want if op == "divmod" else [want], got if op == "divmod" else [got]):
            np.testing.assert_array_equal(g.view(uint), w.view(uint))
