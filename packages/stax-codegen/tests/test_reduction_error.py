"""Reordered float sums stay inside the rounding-error bound (spec §6.5, §13)."""

import numpy as np
import pytest


@pytest.mark.parametrize("n", [1_000, 65_537, 1_000_003])
@pytest.mark.parametrize("kind", ["positive", "mixed"])
def test_float32_sum_error_within_the_worst_case_bound(n, kind, build, run):
    rng = np.random.default_rng(n)
    x = rng.random(n) if kind == "positive" else rng.standard_normal(n)
    x = x.astype(np.float32)
    b = build(x=x)
    out = b("sum", b.inputs["x"], axis=(0,), keepdims=False, dtype="float32")
    (got,), _ = run(b, out)
    exact = np.sum(x.astype(np.float64))
    u = np.finfo(np.float32).eps / 2
    worst = n * u * np.abs(x.astype(np.float64)).sum()  # gamma_n * sum|x|, first order
    error = abs(float(got) - exact)
    assert error <= worst
    # the statistical model of §13 predicts far smaller errors than the worst case on random data
    assert error <= 0.01 * worst


@pytest.mark.parametrize("shape", [(1 << 22,), (2048, 2048)])
def test_long_reductions_are_split_across_threads_and_round_better(shape, build, run):
    x = np.random.default_rng(1).random(shape).astype(np.float32)
    b = build(x=x)
    out = b("sum", b.inputs["x"], axis=tuple(range(len(shape))), keepdims=False, dtype="float32")
    (got,), artifact = run(b, out)
    assert len(artifact.kernels) == 2 and artifact.kernels[0].parallel  # partials, then total
    exact = np.sum(x.astype(np.float64))
    u = np.finfo(np.float32).eps / 2
    assert abs(float(got) - exact) <= 1e-3 * x.size * u * exact  # far inside the worst case
