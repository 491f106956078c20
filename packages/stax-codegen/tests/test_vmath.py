"""Vectorized exp/log/tanh: measured ulp bounds against a long-double reference, exact specials."""

import numpy as np
import pytest

from stax.codegen import Executable, ExternResultMismatch, generate
from stax.codegen.cpu.vmath.trig32 import TRIG32_LIMIT
from stax.loop import lower_opgraph
from stax.loop.options import TRIG_REDUCTION_LIMIT, FloatLimits, LoopOptions

BOUNDS = {("exp", "float64"): 1.0, ("exp", "float32"): 2.0, ("log", "float64"): 1.0,
          ("log", "float32"): 2.0, ("tanh", "float32"): 2.0, ("tanh", "float64"): 3.0,
          ("sin", "float32"): 1.0,
          ("cos", "float32"): 1.0}


def inputs(op, dtype):
    rng = np.random.default_rng(7)
    if op == "exp":
        limit = 88.0 if dtype == "float32" else 709.0
        x = np.concatenate([rng.uniform(-limit * 1.15, limit, 100_000), rng.uniform(-3, 3, 50_000)])
    elif op == "log":
        x = np.concatenate([np.exp(rng.uniform(-700, 700, 100_000)), rng.uniform(0.5, 2, 50_000),
                            [5e-324, 2.2e-308, 1.0]])
    elif op in ("sin", "cos"):  # every magnitude, and the float32 values nearest k pi/2
        x = np.concatenate([rng.uniform(-10, 10, 50_000), rng.uniform(-1e5, 1e5, 50_000),
                            np.exp(rng.uniform(-100, 88, 50_000)) * rng.choice([-1, 1], 50_000),
                            np.arange(1, 50_000) * np.pi / 2, [105414350.0, 3.4e38]])
    else:
        x = np.concatenate([rng.uniform(-25, 25, 100_000), rng.uniform(-1e-3, 1e-3, 10_000)])
    with np.errstate(all="ignore"):
        return x.astype(dtype)


SPECIALS = {  # values whose results are exact: NaN, infinities, zeros, saturation
    "exp": [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 1000.0, -1000.0],
    "log": [np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 1.0],
    "tanh": [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 30.0, -30.0],
    "sin": [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-30, -1e-30],
    "cos": [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-30],
}


def _worst_ulps(op, dtype, x, got):
    reference = getattr(np, op)(x.astype(np.longdouble))
    finite = np.isfinite(reference) & (np.abs(reference) > np.finfo(dtype).tiny)
    with np.errstate(all="ignore"):
        spacing = np.spacing(np.abs(reference[finite]).astype(dtype)).astype(np.longdouble)
    return (np.abs(got[finite].astype(np.longdouble) - reference[finite]) / spacing).max()


@pytest.mark.parametrize("op, dtype", sorted(BOUNDS))
def test_ulp_bound(op, dtype, build, run):
    x = inputs(op, dtype)
    if dtype == "float32" and op in ("sin", "cos"):  # the short reduction's range, checked
        x = x[np.abs(x) < TRIG32_LIMIT]
    b = build(x=x)
    out = b(op, b.inputs["x"])
    (got,), artifact = run(b, out)
    assert not artifact.externs  # computed in the kernel, not by NumPy
    ulps = _worst_ulps(op, dtype, x, got)
    assert ulps <= BOUNDS[(op, dtype)], ulps


@pytest.mark.parametrize("low, high", [(0.5, 0.6), (8.9, 9.3), (1e-5, 2e-5)])
def test_float32_tanh_every_float_at_its_seams(low, high, build, run):
    """Every float32 where float32 tanh's forms meet: the switch from the series to
    1 - 2 / (e^(2a) + 1) at 0.55 (its worst, 1.6 ulp, at 0.5511), the clamp at 9.1 past which
    it rounds to 1 (exactly 1 there: saturation is exact), and a stretch of the series where
    the result must round as x does. Over every float32: 1.6 ulp (``lanes32.tanh32``)."""
    bits = np.arange(np.float32(low).view(np.uint32), np.float32(high).view(np.uint32),
                     dtype=np.uint32)
    x = np.concatenate([bits.view(np.float32), -bits.view(np.float32)])
    b = build(x=x)
    (got,), _ = run(b, b("tanh", b.inputs["x"]))
    assert _worst_ulps("tanh", "float32", x, got) <= 1.65
    assert np.array_equal(got[: len(bits)], -got[len(bits):])  # odd, to the bit
    assert np.all(np.abs(got[x >= 9.0110]) == 1.0)


def test_float32_tanh_of_an_element_does_not_depend_on_the_array(build, run):
    """A loop's zmm body, its ymm epilogue (another reciprocal estimate: ``vrcpps``' 12 bits) and
    its scalar remainder give one element the same result: tanh of the first n values, for
    lengths that leave every kind of remainder, is the first n of tanh of them all."""
    x = np.random.default_rng(3).uniform(0.5, 0.7, 4099).astype(np.float32)

    def tanh(values):
        b = build(x=values)
        return run(b, b("tanh", b.inputs["x"]))[0][0]

    whole = tanh(x)
    for n in [*range(1, 20), 23, 31, 47, 63, 64, 65, 79, 100, 129]:
        assert np.array_equal(tanh(x[:n].copy()), whole[:n]), n


@pytest.mark.parametrize("op", ["sin", "cos", "tan"])
@pytest.mark.parametrize("checked", [True, False])
def test_float32_trig_reductions(op, checked, build):
    """float32 sin/cos/tan reduce arguments short (two FMAs) where the program checks them below
    TRIG32_LIMIT (a call beyond runs as NumPy), by Payne–Hanek over the whole range where it
    does not (lowered without the float32 limit, as every loop-IR document before 1.5)."""
    x = inputs("sin", "float32")
    if checked:
        x = x[np.abs(x) < TRIG32_LIMIT]
    else:
        x = np.concatenate([x, np.float32([1e30, -3e38, 8.6e37, 16367173.0 * 2.0 ** 72])])
    b = build(x=x)
    program = b.program(b(op, b.inputs["x"]))
    options = LoopOptions() if checked else LoopOptions(
        trig_reduction_limit=FloatLimits(float64=TRIG_REDUCTION_LIMIT))
    loop = lower_opgraph(program, options=options)
    assert ("float32" in loop.trig_limits) == checked
    artifact = generate(loop)
    assert ("llvm.floor.f64" in artifact.llvm_ir) != checked  # Payne–Hanek's mod 4
    with np.errstate(all="ignore"):
        (got,) = Executable(artifact)(x)
    assert _worst_ulps(op, "float32", x, got) <= 1.0
    if checked:
        x[7] = 2e7
        with pytest.raises(ExternResultMismatch, match="sin/cos/tan argument"):
            Executable(artifact)(x)


@pytest.mark.parametrize("op, dtype", sorted(BOUNDS))
def test_special_values_match_numpy(op, dtype, build, run):
    x = np.array(SPECIALS[op]).astype(dtype)
    b = build(x=x)
    out = b(op, b.inputs["x"])
    (got,), _ = run(b, out)
    with np.errstate(all="ignore"):
        want = getattr(np, op)(x)
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers])


def test_the_loop_stays_vectorized(build, run):
    x = np.linspace(-5, 5, 1024).astype(np.float32)
    b = build(x=x)
    out = b("exp", b.inputs["x"])
    _, artifact = run(b, out)
    from stax.codegen import Executable

    optimized = Executable(artifact).module.optimized_ir
    assert "x float>" in optimized and "@exp" not in optimized  # no libm call per element
