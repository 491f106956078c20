"""Vectorized exp/log/tanh: measured ulp bounds against a long-double reference, exact specials."""

import numpy as np
import pytest

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


@pytest.mark.parametrize("op, dtype", sorted(BOUNDS))
def test_ulp_bound(op, dtype, build, run):
    x = inputs(op, dtype)
    b = build(x=x)
    out = b(op, b.inputs["x"])
    (got,), artifact = run(b, out)
    assert not artifact.externs  # computed in the kernel, not by NumPy
    reference = getattr(np, op)(x.astype(np.longdouble))
    finite = np.isfinite(reference) & (np.abs(reference) > np.finfo(dtype).tiny)
    with np.errstate(all="ignore"):
        spacing = np.spacing(np.abs(reference[finite]).astype(dtype)).astype(np.longdouble)
    ulps = np.abs(got[finite].astype(np.longdouble) - reference[finite]) / spacing
    assert ulps.max() <= BOUNDS[(op, dtype)], ulps.max()


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
