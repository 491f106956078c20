"""The loop lowerings of bits, logic, predicates and signs (``stax.loop.bits``) through the loop
interpreter: computed in loops (no NumPy call), bit for bit NumPy's results on every integer
dtype, shift counts at and past the width, NaN, infinities, both zeros and subnormals; the forms
the rules leave to NumPy become NumPy calls."""

import numpy as np
import pytest

from stax.loop import ComputedBuffer
from stax.loop.bits import fmax_operands

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float32", "float64"]


def ints(dtype, seed=2, n=257):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    a[:3] = [info.min, info.max, 0]
    return a


def counts(dtype, n=257):
    """Shift counts, at and past the width included."""
    info = np.iinfo(dtype)
    b = np.random.default_rng(3).integers(0, 2 * info.bits, n).astype(dtype)
    b[:4] = [0, info.bits - 1, info.bits, info.max]
    return b


def floats(dtype, seed=4, n=300):
    rng = np.random.default_rng(seed)
    info = np.finfo(dtype)
    x = (rng.standard_normal(n) * 3).astype(dtype)
    x[:12] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, info.max, -info.max,
              info.smallest_subnormal, -info.tiny, 0.5]
    return x


def native(build, lowered, op, *arrays):
    """``op`` of the arrays, lowered and interpreted."""
    b = build(**{f"a{k}": a for k, a in enumerate(arrays)})
    return lowered(b, b(op, *b.inputs.values()))


INT_BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
              "logical_and", "logical_or", "logical_xor"]
INT_UNARY = ["invert", "logical_not", "sign", "positive", "isnan", "isinf", "isfinite", "signbit",
             "bitwise_count"]


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", INT_BINARY)
def test_integer_binary_bits_are_numpys(build, lowered, dtype, op):
    result = native(build, lowered, op, ints(dtype), counts(dtype))
    assert result.native
    result.assert_numpys()


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", INT_UNARY)
def test_integer_unary_bits_predicates_and_signs_are_numpys(build, lowered, dtype, op):
    result = native(build, lowered, op, ints(dtype))
    assert result.native
    result.assert_numpys()


def test_integer_predicates_need_no_data(build, lowered):
    """isnan/isinf are False and isfinite True for integers, whatever the value: a constant."""
    result = native(build, lowered, "isfinite", ints("int32"))
    assert "load" not in str(result.loop) and "const True" in str(result.loop)
    result.assert_numpys()


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "logical_and",
                                "logical_or", "logical_xor", "invert", "logical_not"])
def test_bool_bits_are_logical(build, lowered, op):
    a, b = np.random.default_rng(5).integers(0, 2, (2, 33)).astype(bool)
    arrays = (a,) if op in ("invert", "logical_not") else (a, b)
    result = native(build, lowered, op, *arrays)
    assert result.native
    result.assert_numpys()


FLOAT_BINARY = ["copysign", "heaviside", "logical_and", "logical_or", "logical_xor", "nextafter"]
FLOAT_UNARY = ["isnan", "isinf", "isfinite", "signbit", "sign", "positive", "reciprocal",
               "logical_not", "spacing", "frexp_mantissa", "frexp_exponent"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", FLOAT_BINARY)
def test_float_binary_bits_are_numpys(build, lowered, dtype, op):
    x, y = floats(dtype), floats(dtype, seed=5)
    y[:12] = [1.0, 0.0, -0.0, np.nan, 2.0, np.nan, -0.0, 0.0, np.inf, -np.inf, 3.0, 0.5]
    result = native(build, lowered, op, x, y)
    assert result.native
    result.assert_numpys()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", FLOAT_UNARY)
def test_float_predicates_signs_and_bits_are_numpys(build, lowered, dtype, op):
    with np.errstate(all="ignore"):  # magnitudes from the smallest subnormal to the largest float
        x = np.concatenate([floats(dtype), (np.random.default_rng(6).standard_normal(500) * np.exp(
            np.random.default_rng(7).uniform(-745, 709, 500))).astype(dtype)])
    result = native(build, lowered, op, x)
    assert result.native
    result.assert_numpys()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["fmax", "fmin"])
def test_fmax_fmin_ignore_nan_and_mark_their_ties(build, lowered, dtype, op):
    """Native and exact where no two operands tie with different bits. A tie of 0.0 and -0.0
    (or of two different NaNs) has no rule in NumPy (its answer depends on the element's place in
    its loops): the loop IR gives y and leaves the tie to the kernels, which find the select by
    its form (``fmax_operands``) and report it, so the call runs as NumPy."""
    x = np.array([1.0, np.nan, 2.0, -1.0, np.nan, 3.0, 0.5], dtype)
    y = np.array([2.0, 1.0, np.nan, -1.0, np.nan, 3.0, -0.5], dtype)
    result = native(build, lowered, op, x, y)
    assert result.native
    result.assert_numpys()
    (computed,) = [b for b in result.loop.buffers if isinstance(b, ComputedBuffer)]
    assert fmax_operands(computed.data.body) is not None


@pytest.mark.parametrize("dtype", FLOATS)
def test_ldexp_is_exact_then_rounded_once(build, lowered, dtype):
    x = np.concatenate([floats(dtype), [1e-40, 3e38]]).astype(dtype)
    for exponents in (np.random.default_rng(8).integers(-300, 300, x.size).astype(np.int32),
                      np.random.default_rng(9).integers(-1100, 1100, x.size)):
        result = native(build, lowered, "ldexp", x, exponents)
        assert result.native
        result.assert_numpys()
    b = build(x=x)
    result = lowered(b, b("ldexp", b.inputs["x"], 3))
    assert result.native
    result.assert_numpys()


@pytest.mark.parametrize("op, arrays, scalars", [
    ("reciprocal", (np.arange(1, 9, dtype=np.int32),), ()),  # NumPy's integer loop: C division
    ("ldexp", (np.ones(4, np.float32),), (True,)),  # an exponent that is a bool
    ("sign", (np.array([1.5, -0.0], np.float16),), ()),  # float16: not a kernel dtype
])
def test_other_forms_run_as_numpy(build, lowered, op, arrays, scalars):
    b = build(**{f"a{k}": a for k, a in enumerate(arrays)})
    result = lowered(b, b(op, *b.inputs.values(), *scalars))
    assert not result.native
    result.assert_numpys()
