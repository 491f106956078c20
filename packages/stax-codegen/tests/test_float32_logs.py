"""float32 log, log2, log10 and log1p in float32 lanes (``cpu/vmath/lanes32.py``) over every
float32 of the ranges where their reductions are tightest: log, log2 and log10 over [0.5, 2)
(e = -1 and 0: m from the whole of [sqrt(1/2), sqrt(2)), the polynomial's whole interval), log1p
over [0.25, 1) and [-0.5, -0.125) (e = 1 and -1 after 1 + x, where log m meets e ln2 with the
opposite sign). Every float32 bit pattern was checked once (4.3e9 values, a few minutes): log
0.94 ulp at 1.5700244, log1p 0.85 ulp at 0.4054828, NaN, infinities, zeros and subnormal results
as NumPy's, signs too; log2 and log10 over every positive float32 (2.1e9 values, against
float64's): 0.92 ulp at 1.412878 and 0.81 ulp at 1.3215055, both in [0.5, 2), log2(2^k) = k."""

import numpy as np
import pytest

from stax.codegen import Executable, generate
from stax.loop import lower_opgraph

CHUNK = 1 << 22


def every_float32(low: float, high: float) -> np.ndarray:
    """Every float32 from |low| to |high| in magnitude (the smaller one included), with their
    sign."""
    a, b = sorted(np.abs(np.float32([low, high])).view(np.uint32))
    bits = np.arange(a, b, dtype=np.uint32)
    values = bits.view(np.float32)
    return -values if low < 0 else values


def worst_ulps(op: str, executable: Executable, x: np.ndarray) -> float:
    worst = 0.0
    for start in range(0, len(x), CHUNK):
        chunk = np.zeros(CHUNK, np.float32) + np.float32(0.75)
        part = x[start:start + CHUNK]
        chunk[:len(part)] = part
        (got,) = executable(chunk)
        exact = getattr(np, op)(chunk.astype(np.float64))
        spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
        worst = max(worst, float((np.abs(got - exact) / spacing).max()))
    return worst


@pytest.mark.parametrize("op, low, high, bound", [
    ("log", 0.5, 2.0, 2.0),
    ("log1p", 0.25, 1.0, 1.0),
    ("log1p", -0.5, -0.125, 1.0),
    ("log2", 0.5, 2.0, 1.0),
    ("log10", 0.5, 2.0, 1.0),
])
def test_every_float32_of_a_range_within_the_bound(build, op, low, high, bound):
    b = build(x=np.full(CHUNK, 0.75, np.float32))
    artifact = generate(lower_opgraph(b.program(b(op, b.inputs["x"]))))
    assert not artifact.externs
    x = every_float32(low, high)
    assert worst_ulps(op, Executable(artifact), x) <= bound


@pytest.mark.parametrize("op", ["log2", "log10"])
def test_log2_and_log10_near_sqrt2_within_an_ulp(build, op):
    """1.4128582 (e = 0, f near sqrt(2) - 1, the f^2 term at its largest against the result) was
    log2's 1.07 ulp when f^2 was rounded before the polynomial's product."""
    b = build(x=np.full(CHUNK, 0.75, np.float32))
    artifact = generate(lower_opgraph(b.program(b(op, b.inputs["x"]))))
    x = np.float32([1.4128582, 1.412878, 1.3215055, 1.3290119])
    assert worst_ulps(op, Executable(artifact), x) <= 1.0
