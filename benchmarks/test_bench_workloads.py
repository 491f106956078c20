"""The issue-5 workloads, measured in one run: eager NumPy, numexpr, Numba, JAX jit (CPU),
torch.compile (optional) and Stax, plus a copy and a triad that give the machine's bandwidth.
``nox -s bench`` runs each implementation in a process of its own (a peer's idle threads, Numba's
or XLA's, would otherwise disturb whatever runs after it); the processes share their records.

The summary (``conftest.py``) prints one table: each implementation's median, its ratio to eager
NumPy, Stax against the fastest peer, and the bandwidth each achieves on the case's minimal traffic
(bytes every implementation must read and write at least once) against the measured bandwidth."""

from __future__ import annotations

import numpy as np
import peers
import pytest

import stax.runtime as stax

RNG = np.random.default_rng(0)


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# case -> (program name, NumPy program, inputs, minimal traffic in bytes)
CASES = {
    "example_1_1(64,128)": ("example_1_1", lambda: (f32(64, 128), f32(64, 128))),
    "example_1_1(4096,4096)": ("example_1_1", lambda: (f32(4096, 4096), f32(4096, 4096))),
    "softmax(4096,4096)": ("softmax", lambda: (f32(4096, 4096),)),
    "softmax(64,1000)": ("softmax", lambda: (f32(64, 1000),)),
    "layer_norm(8192,1024)": ("layer_norm", lambda: (f32(8192, 1024), f32(1024), f32(1024))),
    "gelu(16M)": ("gelu", lambda: (f32(1 << 24),)),
    "gelu_pow(16M)": ("gelu_pow", lambda: (f32(1 << 24),)),
    "chain20(256)": ("chain20", lambda: (f32(256),)),
    "x+1(1)": ("plus_one", lambda: (f32(1),)),
    "mlp(512x1024x4096x1024)": ("mlp", lambda: (f32(512, 1024), f32(1024, 4096, scale=0.03),
                                                 f32(4096, 1024, scale=0.03))),
}
IMPLS = ["numpy", "numexpr", "numba", "jax", "torch", "stax"]
_inputs: dict = {}
_compiled: dict = {}


def inputs(case):
    """The case's arrays, the same in every process (each implementation may run in its own)."""
    global RNG
    if case not in _inputs:
        RNG = np.random.default_rng(1000 + list(CASES).index(case))
        _inputs[case] = CASES[case][1]()
    return _inputs[case]


def minimal_bytes(args, result) -> int:
    """Every input read once and the result written once."""
    return sum(a.nbytes for a in args) + np.asarray(result).nbytes


def runner(impl, name, args):
    """A zero-argument callable that runs ``name`` on ``args`` with ``impl``, or None."""
    fn = getattr(peers, name)
    if impl == "numpy":
        return lambda: fn(*args)
    if impl == "stax":
        compiled = _compiled.setdefault(name, stax.compile(fn))
        return lambda: compiled(*args)
    if impl == "numexpr":
        program = peers.numexpr_program(name)
        return program and (lambda: program(*args))
    if impl == "numba":
        program = peers.numba_program(name)
        return program and (lambda: program(*args))
    prepare = {"jax": peers.jax_program, "torch": peers.torch_program}[impl](name)
    return prepare and prepare(*args)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("impl", IMPLS)
def test_workload(benchmark, record, traffic, case, impl):
    name, _ = CASES[case]
    args = inputs(case)
    run = runner(impl, name, args)
    if run is None:
        pytest.skip(f"{impl} is not installed or has no program for {name}")
    expected = getattr(peers, name)(*args)
    result = run()  # compile (every peer) and check, outside the timing
    np.testing.assert_allclose(np.asarray(result), expected, rtol=2e-5, atol=2e-4)
    traffic(case, minimal_bytes(args, expected))
    benchmark.group = case
    benchmark(run)
    record(case, impl, benchmark)


BANDWIDTH_ELEMENTS = 1 << 25  # 128 MiB per float32 array: far beyond every cache


def test_bandwidth_copy(benchmark, bandwidth):
    a = np.ones(BANDWIDTH_ELEMENTS, np.float32)
    b = np.empty_like(a)
    benchmark.group = "bandwidth"
    benchmark(np.copyto, b, a)
    bandwidth("copy (NumPy)", 2 * a.nbytes, benchmark)


def test_bandwidth_triad(benchmark, bandwidth):
    triad = peers.numba_program("triad")
    if triad is None:
        pytest.skip("numba is not installed (the triad needs a fused parallel loop)")
    a, b, c = (np.full(BANDWIDTH_ELEMENTS, v, np.float32) for v in (0, 1, 2))
    triad(a, b, c, np.float32(3))
    benchmark.group = "bandwidth"
    benchmark(triad, a, b, c, np.float32(3))
    bandwidth("triad (Numba prange)", 3 * a.nbytes, benchmark)


def test_mlp_paired_with_numpy(benchmark, note):
    """The MLP is NumPy's two BLAS calls with Stax's fused kernel between them; its bar is "no
    slower than NumPy". Medians from different processes differ by the machine's drift (the
    same NumPy MLP measured 46 and 84 ms in two rounds), so this pairs the two: NumPy and Stax
    alternate call by call in one process, and the median of the per-pair ratios is reported."""
    import time

    case = "mlp(512x1024x4096x1024)"
    args = inputs(case)
    compiled = _compiled.setdefault("mlp", stax.compile(peers.mlp))
    np.testing.assert_allclose(compiled(*args), peers.mlp(*args), rtol=2e-5, atol=2e-4)
    ratios = []
    for _ in range(15):
        start = time.perf_counter()
        peers.mlp(*args)
        middle = time.perf_counter()
        compiled(*args)
        ratios.append((middle - start) / (time.perf_counter() - middle))
    benchmark.group = "mlp, paired"
    benchmark.pedantic(compiled, args=args, rounds=3)
    note(f"mlp, NumPy and Stax alternating in one process (15 pairs): NumPy / Stax median "
         f"{float(np.median(ratios)):.2f}x (bar: at least 1.0x), range "
         f"{min(ratios):.2f}-{max(ratios):.2f}")
