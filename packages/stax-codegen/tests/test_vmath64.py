"""float64 transcendental kernels (``stax.codegen.cpu.vmath64``): NumPy's own accuracy data at
NumPy's own thresholds, a 1-ulp bound against the exact result on wide random inputs, C99's
special values as NumPy, the exact-product fallback without FMA, and the sin/cos/tan range
check. float32 kernels run on the same NumPy data."""

from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np
import pytest

from stax.codegen.cpu import vmath64
from stax.codegen.cpu.vmath64 import dd
from stax.codegen.executable import ExternResultMismatch
from stax.ir import approximate_ops, get_op

VALIDATION = Path(np.__file__).parent / "_core" / "tests" / "data"
#: the ops declared within an ulp bound (``Accuracy.ULP``): NumPy ships validation data for each
#: unary one
VALIDATED = sorted(op for op in approximate_ops() if get_op(op).arity == 1)
#: the double-double ones (tanh64 is a double computation, its bound in test_vmath.py)
UNARY = [op for op in VALIDATED if op != "tanh"]
BINARY = sorted(op for op in approximate_ops() if get_op(op).arity == 2)
#: those whose exact result a long double gives (logaddexp's cancels: a decimal reference)
BINARY_LONG_DOUBLE = [op for op in BINARY if not op.startswith("logaddexp")]
EXTENDED = np.finfo(np.longdouble).nmant >= 63  # x87 long double: an exact-enough reference


def validation_set(name: str, dtype: str) -> tuple[np.ndarray, np.ndarray, int]:
    path = VALIDATION / f"umath-validation-set-{name}.csv"
    if not path.exists():
        pytest.skip("this NumPy was installed without its test data")
    rows = [line.strip().split(",") for line in path.read_text().splitlines()
            if line.startswith(f"np.{dtype},")]
    bits = np.uint32 if dtype == "float32" else np.uint64
    x = np.array([int(r[1], 16) for r in rows], dtype=bits).view(dtype)
    want = np.array([int(r[2], 16) for r in rows], dtype=bits).view(dtype)
    return x, want, max(int(r[3]) for r in rows)


def compute(build, run, op, *arrays):
    names = ["x", "y"][:len(arrays)]
    b = build(**dict(zip(names, arrays, strict=True)))
    with np.errstate(all="ignore"):
        out = b(op, *(b.inputs[n] for n in names))
        (got,), artifact = run(b, out)
    assert not artifact.externs, artifact.externs
    return got


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", VALIDATED)
def test_numpy_validation_data(build, run, name, dtype):
    """NumPy's own promise: every result within its threshold (1 ulp for float64, 2 for cbrt
    and tanh; 2-4 for float32) of the correctly rounded value."""
    x, want, max_ulp = validation_set(name, dtype)
    if name in ("sin", "cos", "tan"):  # float32's limit is float64's (TRIG32_LIMIT)
        large = np.abs(x) >= vmath64.TRIG_LIMIT
        large &= np.isfinite(x)
        assert large.any() or dtype == "float32"  # NumPy's float32 sin/cos data stay below
        if large.any():
            with pytest.raises(ExternResultMismatch, match="fast reduction's range"):
                compute(build, run, name, x)
            x, want = x[~large], want[~large]
    got = compute(build, run, name, x)
    np.testing.assert_array_max_ulp(got, want, max_ulp)


def ulp_error(got: np.ndarray, exact: np.ndarray) -> float:
    exact = np.asarray(exact, np.longdouble)
    keep = np.isfinite(exact) & (np.abs(exact) > np.finfo(np.float64).tiny) & \
        (np.abs(exact) < np.finfo(np.float64).max)
    spacing = np.spacing(np.abs(exact[keep]).astype(np.float64)).astype(np.longdouble)
    return float((np.abs(got[keep].astype(np.longdouble) - exact[keep]) / spacing).max())


def wide(op: str, rng: np.random.Generator) -> np.ndarray:
    x = np.concatenate([rng.uniform(-5, 5, 20_000), rng.uniform(-1e-6, 1e-6, 2_000),
                        np.exp(rng.uniform(-700, 700, 20_000)) * rng.choice([-1, 1], 20_000),
                        rng.uniform(-1, 1, 10_000), 1 + rng.uniform(-1e-3, 1e-3, 5_000)])
    if op in ("sin", "cos", "tan"):  # within the fast reduction, and near multiples of pi/2
        x = np.concatenate([x[np.abs(x) < 1e6], rng.uniform(-1e7, 1e7, 10_000),
                            np.arange(1, 5_000) * (np.pi / 2)])
    if op == "arccosh":
        x = np.abs(x) + 1
    return x


@pytest.mark.skipif(not EXTENDED, reason="needs an 80-bit long double as the reference")
@pytest.mark.parametrize("op", UNARY)
def test_unary_within_one_ulp_of_exact(build, run, op):
    """Measured 0.50-0.82 ulp (sin/cos/tan the largest); NumPy's promise is 1 ulp of the
    correctly rounded result, which any error below 1.5 ulp of the exact one keeps."""
    x = wide(op, np.random.default_rng(7))
    got = compute(build, run, op, x)
    with np.errstate(all="ignore"):
        exact = getattr(np, op)(x.astype(np.longdouble))
    assert ulp_error(got, exact) < 1.0


@pytest.mark.skipif(not EXTENDED, reason="needs an 80-bit long double as the reference")
@pytest.mark.parametrize("op", BINARY_LONG_DOUBLE)
def test_binary_within_one_ulp_of_exact(build, run, op):
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.uniform(-4, 4, 20_000), np.exp(rng.uniform(-30, 30, 20_000))])
    y = np.concatenate([rng.uniform(-6, 6, 20_000), rng.uniform(-20, 20, 20_000)])
    if op == "pow":
        x = np.abs(x)
    if op == "hypot":  # over the whole range: the scaling must keep squares finite
        x = np.exp(rng.uniform(-700, 700, x.size))
        y = x * np.exp(rng.uniform(-40, 40, x.size))
    got = compute(build, run, op, x, y)
    reference = {"pow": np.power, "hypot": np.hypot, "arctan2": np.arctan2}[op]
    with np.errstate(all="ignore"):
        exact = reference(x.astype(np.longdouble), y.astype(np.longdouble))
    assert ulp_error(got, exact) < 1.0


@pytest.mark.parametrize("op", sorted(set(BINARY) - set(BINARY_LONG_DOUBLE)))
def test_logaddexp_within_one_ulp_where_the_sum_cancels(build, run, op):
    """log(e^x + e^y) near 0 cancels; NumPy's own loop loses hundreds of ulps there (it rounds
    x - y), and so would a long-double reference: the reference is 50-digit decimal."""
    rng = np.random.default_rng(9)
    x = np.concatenate([rng.uniform(-1, 0, 600), rng.uniform(-30, 30, 400)])
    y = np.concatenate([rng.uniform(-10, -1, 600), rng.uniform(-30, 30, 400)])
    got = compute(build, run, op, x, y)
    with localcontext() as ctx:
        ctx.prec = 50
        base = Decimal(2) if op == "logaddexp2" else Decimal(1).exp()
        exact = [float((base ** Decimal(a) + base ** Decimal(c)).ln() / base.ln())
                 for a, c in zip(x.tolist(), y.tolist(), strict=True)]
    np.testing.assert_array_max_ulp(got, np.array(exact), 1)


@pytest.mark.skipif(not EXTENDED, reason="needs an 80-bit long double as the reference")
def test_exp_and_log_within_one_ulp_over_their_whole_range(build, run):
    """exp over its finite range (subnormal results and the overflow edge included) and log over
    every binade, subnormals included: measured 0.55 and 0.54 ulp (FMA or Dekker's products)."""
    rng = np.random.default_rng(12)
    x = np.concatenate([rng.uniform(-745.2, 709.79, 100_000), rng.uniform(-1, 1, 10_000)])
    with np.errstate(all="ignore"):
        assert ulp_error(compute(build, run, "exp", x), np.exp(x.astype(np.longdouble))) < 0.6
    x = np.concatenate([np.exp(rng.uniform(-745, 709.7, 100_000)), 1 + rng.uniform(-0.3, 0.4, 10_000),
                        rng.uniform(0, 2.2250738585072014e-308, 1_000)])
    assert ulp_error(compute(build, run, "log", x), np.log(x.astype(np.longdouble))) < 0.6


def test_exp_and_log_kernels_gather_nothing(build, run):
    """No table lookups: each would be a vector gather, which costs more than the dozen
    instructions a table saves (Zen 5: one gather of 8 doubles about as much as ten FMAs)."""
    from stax.codegen.cpu.jit import _optimized_module, _target_machine

    for op in ("exp", "log"):
        b = build(x=np.linspace(0.5, 5.0, 64))
        _, artifact = run(b, b(op, b.inputs["x"]))
        asm = _target_machine().emit_assembly(_optimized_module(artifact.llvm_ir)).lower()
        assert "gather" not in asm, op


def test_exp_without_scalef_rounds_as_with_it(build, run, monkeypatch):
    """Hosts without AVX-512 scale by two multiplications instead of ``vscalefpd``: the same
    single rounding, so the same bits, subnormal results and the overflow edge included."""
    rng = np.random.default_rng(13)
    x = np.concatenate([rng.uniform(-750, 712, 20_000), SPECIAL, [-745.1332191019411, -708.4,
                        709.782712893384, 709.7827128933841, -1000.5, 1000.5]])
    with_scalef = compute(build, run, "exp", x)
    monkeypatch.setattr(dd, "has_scalef", lambda: False)
    without = compute(build, run, "exp", x)
    np.testing.assert_array_equal(without.view(np.int64), with_scalef.view(np.int64))


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 5e-324,
                    -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308,
                    710.0, -710.0, 745.0, -745.2, 1e-20, -1e-20])


@pytest.mark.parametrize("op", UNARY)
def test_unary_special_values_as_numpy(build, run, op):
    x = SPECIAL[~(np.abs(SPECIAL) >= 1e300)] if op in ("sin", "cos", "tan") else SPECIAL
    got = compute(build, run, op, x)
    with np.errstate(all="ignore"):
        want = getattr(np, op)(x)
    exact_case = ~np.isfinite(want) | (want == 0) | (np.abs(want) == 1)
    np.testing.assert_array_equal(got[exact_case], want[exact_case])
    signed = exact_case & ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))
    np.testing.assert_array_max_ulp(got[~exact_case], want[~exact_case], 1)


PAIRS_X = np.array([0.0, -0.0, 0.0, -0.0, np.inf, -np.inf, -np.inf, np.nan, 1.0, -1.0, -1.0, 2.0,
                    0.5, -2.0, -8.0, -8.0, np.nan, 0.0, -0.0, -np.inf, 3.0, 1e300, 1e-300, np.inf,
                    -np.inf, 5.0, -0.0, 10.0, 2.0, 1e-310])
PAIRS_Y = np.array([-1.0, -1.0, 3.0, 3.0, -2.0, 3.0, -3.0, 0.0, np.nan, np.inf, -np.inf, np.inf,
                    -np.inf, 0.5, 1.0 / 3, 3.0, np.nan, 0.0, -2.0, 0.5, np.inf, 2.0, 3.0, np.nan,
                    np.inf, -np.inf, 0.0, 3.0, -1074.0, 0.5])


@pytest.mark.parametrize("op", BINARY)
def test_binary_special_values_as_numpy(build, run, op):
    got = compute(build, run, op, PAIRS_X, PAIRS_Y)
    reference = {"pow": np.power}.get(op) or getattr(np, op)
    with np.errstate(all="ignore"):
        want = reference(PAIRS_X, PAIRS_Y)
    np.testing.assert_array_max_ulp(got, want, 1)
    exact_case = ~np.isfinite(want) | (want == 0)
    np.testing.assert_array_equal(got[exact_case], want[exact_case])
    signed = exact_case & ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))


def test_exact_results_stay_exact(build, run):
    """Integer powers, powers of two and of ten come out exactly (their results are doubles)."""
    x = np.array([2.0, 10.0, 3.0, 0.5, 7.0, 1.5])
    y = np.array([10.0, 3.0, 4.0, -3.0, 2.0, 2.0])
    np.testing.assert_array_equal(compute(build, run, "pow", x, y), np.power(x, y))
    n = np.arange(-1074.0, 1024.0)
    np.testing.assert_array_equal(compute(build, run, "exp2", n), np.exp2(n))
    np.testing.assert_array_equal(compute(build, run, "log2", np.exp2(n)), n)
    tens = 10.0 ** np.arange(0, 23)
    np.testing.assert_array_equal(compute(build, run, "log10", tens), np.arange(0.0, 23.0))


def test_ldexp_exact_as_numpy(build, run):
    rng = np.random.default_rng(10)
    x = np.concatenate([rng.standard_normal(3000) * np.exp(rng.uniform(-700, 700, 3000)),
                        SPECIAL, [1.5, 1.5, 1.5, 3.0, 1.0]])
    n = np.concatenate([rng.integers(-2200, 2200, 3000), rng.integers(-60, 60, SPECIAL.size),
                        [-1075, -1076, -1074, 10 ** 12, -(10 ** 12)]]).astype(np.int64)
    got = compute(build, run, "ldexp", x, n)
    want = np.ldexp(x, n)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.skipif(not EXTENDED, reason="needs an 80-bit long double as the reference")
def test_without_fma_dekker_products_keep_the_bound(build, run, monkeypatch):
    """Hosts without FMA get Dekker's exact products; the bound is the same."""
    monkeypatch.setattr(dd, "has_fma", lambda: False)
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-5, 5, 5000), np.exp(rng.uniform(-700, 700, 5000))])
    for op in ("log", "sin", "tan", "cbrt", "arcsinh"):
        arg = x[:5000] if op in ("sin", "tan") else x
        got = compute(build, run, op, arg)
        with np.errstate(all="ignore"):
            assert ulp_error(got, getattr(np, op)(arg.astype(np.longdouble))) < 1.0, op
    for op in ("hypot", "arctan2"):  # huge operands: the products must not overflow
        a, c = x * rng.choice([-1, 1], x.size), x[::-1] * 1e-5
        got = compute(build, run, op, a, c)
        with np.errstate(all="ignore"):
            exact = getattr(np, op)(a.astype(np.longdouble), c.astype(np.longdouble))
        assert ulp_error(got, exact) < 1.0, op
    y = rng.uniform(-6, 6, x.size)
    got = compute(build, run, "pow", np.abs(x), y)
    with np.errstate(all="ignore"):
        exact = np.power(np.abs(x).astype(np.longdouble), y.astype(np.longdouble))
    assert ulp_error(got, exact) < 1.0
