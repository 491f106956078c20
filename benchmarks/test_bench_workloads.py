"""The issue-5 workloads, compiled vs eager NumPy (and numexpr where it applies and is installed),
measured in one run. Peers that are not installed are skipped, never faked."""

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime import nn

try:
    import numexpr
except ImportError:  # optional peer
    numexpr = None

RNG = np.random.default_rng(0)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def layer_norm(x, w, b):
    return nn.layer_norm(x, (x.shape[-1],), w, b)


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def chain20(x):
    for i in range(10):
        x = x * 1.0001 + 0.5 * i
    return x


def plus_one(x):
    return x + 1


def mlp(x, w1, w2):
    return np.maximum(x @ w1, 0) @ w2


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


CASES = {
    "softmax(4096,4096)": (softmax, lambda: (f32(4096, 4096),)),
    "softmax(64,1000)": (softmax, lambda: (f32(64, 1000),)),
    "layer_norm(8192,1024)": (layer_norm, lambda: (f32(8192, 1024), f32(1024), f32(1024))),
    "gelu(16M)": (gelu, lambda: (f32(1 << 24),)),
    "chain20(256)": (chain20, lambda: (f32(256),)),
    "x+1(1)": (plus_one, lambda: (f32(1),)),
    "mlp(512x1024x4096x1024)": (mlp, lambda: (f32(512, 1024), f32(1024, 4096) * 0.03,
                                               f32(4096, 1024) * 0.03)),
}
NUMEXPR = {
    "gelu(16M)": "0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))",
    "x+1(1)": "x + 1",
}
_compiled = {}
_inputs = {}


def inputs(case):
    if case not in _inputs:
        _inputs[case] = CASES[case][1]()
    return _inputs[case]


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("impl", ["numpy", "stax", "numexpr"])
def test_workload(benchmark, record, case, impl):
    fn, _ = CASES[case]
    args = inputs(case)
    if impl == "numexpr":
        if numexpr is None or case not in NUMEXPR:
            pytest.skip("numexpr not installed or not applicable")
        expr = NUMEXPR[case]
        run = lambda: numexpr.evaluate(expr, local_dict={"x": args[0]})  # noqa: E731
    elif impl == "stax":
        compiled = _compiled.setdefault(case, stax.compile(fn))
        run = lambda: compiled(*args)  # noqa: E731
    else:
        run = lambda: fn(*args)  # noqa: E731
    result = run()  # compile, and check, outside the timing
    np.testing.assert_allclose(result, fn(*args), rtol=2e-5, atol=2e-5)
    benchmark.group = case
    benchmark(run)
    record(case, impl, benchmark)
