"""float32 functions within 1 ulp: log2, log10 and log1p (float32 lanes), and those computed in
double and rounded once (expm1, exp2, sinh, cosh, cbrt, hypot, pow, arctan, arcsin, arccos, arcsinh,
arccosh, arctanh, arctan2; tan from the sin/cos reduction): within 1 ulp of the exact result (measured 0.5; NumPy's own float32 loops
measure 0.5 to 3.0), the IEEE and C99 special values exactly as NumPy, no NumPy call in the plan."""

import numpy as np
import pytest

from stax.codegen.cpu.vmath.trig32 import TRIG32_LIMIT
from stax.ir import approximate_ops, get_op

#: float32 functions computed in float32 lanes, with bounds of their own (test_vmath.py)
IN_FLOAT32 = {"exp", "log", "tanh", "sin", "cos"}
#: the ops declared within an ulp bound (``Accuracy.ULP``), but those
UNARY = sorted(op for op in approximate_ops() if get_op(op).arity == 1 and op not in IN_FLOAT32)
BINARY = sorted(op for op in approximate_ops() if get_op(op).arity == 2)
SPECIALS = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-45, -1e-45, 2.0, -2.0, 0.5,
                       -0.5, 3.4e38, -3.4e38])


def ulps(got, exact):
    keep = np.isfinite(exact) & (np.abs(exact) > np.finfo(np.float32).tiny) & \
        (np.abs(exact) < np.finfo(np.float32).max)
    spacing = np.spacing(np.abs(exact[keep]).astype(np.float32)).astype(np.longdouble)
    return float((np.abs(got[keep].astype(np.longdouble) - exact[keep]) / spacing).max())


def wide_inputs(op):
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-5, 5, 30_000), rng.uniform(-1e-6, 1e-6, 3_000),
                        np.exp(rng.uniform(-85, 85, 30_000)) * rng.choice([-1, 1], 30_000)])
    if op in ("expm1", "exp2", "sinh", "cosh"):
        x = np.clip(x, -160, 160)
    if op in ("arcsin", "arccos", "arctanh"):
        x = np.concatenate([rng.uniform(-1, 1, 30_000), x[:3_000]])
    if op == "arccosh":
        x = np.concatenate([rng.uniform(1, 3, 30_000), np.abs(x)])
    return x.astype(np.float32)


@pytest.mark.parametrize("op", UNARY)
def test_unary_ulp_bound_and_specials(build, run, op):
    inputs, specials = wide_inputs(op), SPECIALS
    if op == "tan":  # beyond the checked range a call runs as NumPy (test_vmath: both reductions)
        inputs = inputs[np.abs(inputs) < TRIG32_LIMIT]
        specials = specials[~(np.abs(specials) >= TRIG32_LIMIT)]
    x = np.concatenate([inputs, specials])
    b = build(x=x)
    out = b(op, b.inputs["x"])
    (got,), artifact = run(b, out)
    assert not artifact.externs
    with np.errstate(all="ignore"):
        exact = getattr(np, op)(x.astype(np.longdouble))
        want = getattr(np, op)(x)
    assert ulps(got, exact) <= 1.0
    tail = slice(-len(specials), None)
    specials_want = want[tail]
    exact_special = ~np.isfinite(specials_want) | (specials_want == 0)
    np.testing.assert_array_equal(got[tail][exact_special], specials_want[exact_special])
    signed = exact_special & ~np.isnan(specials_want)  # a NaN's sign bit is unspecified (IEEE)
    np.testing.assert_array_equal(np.signbit(got[tail][signed]), np.signbit(specials_want[signed]))


C99_X = np.float32([0.0, -0.0, 0.0, -0.0, np.inf, -np.inf, -np.inf, np.nan, 1.0, -1.0, -1.0, 2.0,
                    0.5, -2.0, -8.0, -8.0, np.nan, 0.0, -0.0, -np.inf, 3.0, 1e30, 1e-30])
C99_Y = np.float32([-1.0, -1.0, 3.0, 3.0, -2.0, 3.0, -3.0, 0.0, np.nan, np.inf, -np.inf, np.inf,
                    -np.inf, 0.5, 1.0 / 3, 3.0, np.nan, 0.0, -2.0, 0.5, np.inf, 2.0, 3.0])


@pytest.mark.parametrize("op", BINARY)
def test_binary_ulp_bound_and_c99_specials(build, run, op):
    rng = np.random.default_rng(12)
    x = np.concatenate([rng.uniform(-4, 4, 20_000), C99_X]).astype(np.float32)
    y = np.concatenate([rng.uniform(-6, 6, 20_000), C99_Y]).astype(np.float32)
    if op == "pow":
        x[:10_000] = np.abs(x[:10_000])  # real powers of positive bases, and integer-free NaNs
    b = build(x=x, y=y)
    out = b(op, b.inputs["x"], b.inputs["y"])
    (got,), artifact = run(b, out)
    assert not artifact.externs
    reference = {"pow": np.power, "hypot": np.hypot, "arctan2": np.arctan2,
                 "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2}[op]
    with np.errstate(all="ignore"):
        exact = reference(x.astype(np.longdouble), y.astype(np.longdouble))
        want = reference(x, y)
    assert ulps(got[:20_000], exact[:20_000]) <= 1.0
    table, wanted = got[20_000:], want[20_000:]
    if op in ("arctan2", "logaddexp", "logaddexp2"):
        # the special cases (C99 for arctan2; infinities, NaN for logaddexp); ordinary pairs of
        # the table are covered by the bound
        angles = np.float32([0, np.pi / 4, np.pi / 2, 3 * np.pi / 4, np.pi])
        special = ~np.isfinite(wanted) | (np.isin(np.abs(wanted), angles) if op == "arctan2"
                                           else np.zeros_like(wanted, dtype=bool))
        table, wanted = table[special], wanted[special]
    np.testing.assert_array_equal(table, wanted)  # the C99 table: exact, signs too
    numbers = ~np.isnan(wanted)
    np.testing.assert_array_equal(np.signbit(table)[numbers], np.signbit(wanted)[numbers])


@pytest.mark.parametrize("op, base, powers", [("log2", 2.0, range(-149, 128)),
                                              ("log10", 10.0, range(0, 11))])
def test_log_of_an_exact_power_of_the_base_is_its_exponent(build, run, op, base, powers):
    """log2(2^k) = k for every float32 power of two (subnormals included), log10(10^k) = k for the
    powers of ten float32 holds exactly (NumPy's own float32 log10 gives 2.0000002 for 100)."""
    k = np.array(list(powers), dtype=np.float32)
    x = np.array([base ** int(p) for p in powers], dtype=np.float32)
    b = build(x=x)
    (got,), _ = run(b, b(op, b.inputs["x"]))
    np.testing.assert_array_equal(got, k)


@pytest.mark.parametrize("n", [3, 4])
def test_small_constant_powers(build, run, n):
    """float32 ``x ** 3`` and ``x ** 4`` (``stax.loop.elementwise.small_power32``: an exact
    square split by an FMA, one rounding): within 0.5 ulp (+2^-23) where the power is at least
    2^-100, within 1 ulp near and below the underflow threshold, infinities with the power's sign where it overflows (also
    where the square's error term alone would overflow), special values as NumPy's."""
    rng = np.random.default_rng(12)
    x = np.concatenate([wide_inputs("pow"), rng.uniform(-1e13, 1e13, 3_000),
                        rng.uniform(-1e-12, 1e-12, 3_000), [1e19, -1e19, 2e19, -7e12, 5.4e15],
                        SPECIALS]).astype(np.float32)
    # around where the square is clamped (|x| = 2^50, 2^32), where the square overflows (2^64)
    # and where the power does
    edges = np.array([2.0 ** 50, 2.0 ** 32, 2.0 ** 64, 2.0 ** 63.5, 2.0 ** (128 / 3),
                      2.0 ** 32.5, 2.0 ** 42], np.float32)
    near = np.concatenate([np.nextafter(edges, np.float32(0)), edges,
                           np.nextafter(edges, np.float32(np.inf))])
    x = np.concatenate([x, near, -near])
    b = build(x=x)
    out = b("pow", b.inputs["x"], np.float32(n))
    (got,), artifact = run(b, out)
    assert not artifact.externs and "llvm.trunc" not in artifact.llvm_ir  # not pow's routine
    with np.errstate(all="ignore"):
        exact = x.astype(np.longdouble) ** n
        want = x ** np.float32(n)
        rounded = exact.astype(np.float32)
    assert ulps(got, exact) <= 1.0
    large = np.abs(exact) >= 2.0 ** -100
    assert ulps(got[large], exact[large]) <= 0.5 + 2.0 ** -20
    tiny = np.isfinite(rounded) & (np.abs(exact) <= np.finfo(np.float32).tiny)
    subnormal_ulp = np.float32(2.0 ** -149)
    assert np.all(np.abs(got[tiny].astype(np.longdouble) - exact[tiny]) <= subnormal_ulp)
    overflow = ~np.isfinite(rounded) & ~np.isnan(x)
    np.testing.assert_array_equal(got[overflow], want[overflow])  # signed infinities
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(want[keep]))
