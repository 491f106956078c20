"""Example 1.1, compiled vs eager NumPy, at the issue's two sizes (float32)."""

import numpy as np
import pytest

import stax.runtime as stax


def f(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


SHAPES = {"example_1_1(64,128)": (64, 128), "example_1_1(4096,4096)": (4096, 4096)}


@pytest.fixture(scope="module")
def compiled():
    return stax.compile(f, strict_native=True)


@pytest.mark.parametrize("case", list(SHAPES))
@pytest.mark.parametrize("impl", ["numpy", "stax"])
def test_example_1_1(benchmark, record, compiled, case, impl):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPES[case], dtype=np.float32)
    w = rng.standard_normal(SHAPES[case], dtype=np.float32)
    fn = f if impl == "numpy" else compiled
    result = fn(x, w)  # compile outside the timing
    np.testing.assert_allclose(result, f(x, w), rtol=1e-4, atol=1e-2)
    benchmark.group = case
    benchmark(fn, x, w)
    record(case, impl, benchmark)
