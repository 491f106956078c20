"""Dynamic shapes (issue 15): a stream of 50 batch sizes (1..4096, random order, one seed)
through example 1.1, softmax, layer norm and a 2-layer MLP, in Stax (automatic dynamic, the
default), jax.jit and torch.compile (automatic dynamic, where torch==2.13.0 is installed), side by
side in this process: compiles, the stream's total time (compiles included) and the steady-state
time per call (the stream again, every size seen). Then the size-generic kernel against the
exact-size one on the same inputs, at a bench size and under 64 rows (bars 1.15x and 1.3x)."""

from __future__ import annotations

import statistics
import time

import numpy as np
import peers

import stax.runtime as stax

WIDTH, HIDDEN = 256, 512
SIZES = [int(n) for n in np.random.default_rng(15).permutation(np.arange(1, 4097))[:49]] + [1]
RNG = np.random.default_rng(0)
W = RNG.standard_normal(WIDTH).astype(np.float32)
B = RNG.standard_normal(WIDTH).astype(np.float32)
W1 = (RNG.standard_normal((WIDTH, HIDDEN)) / 16).astype(np.float32)
W2 = (RNG.standard_normal((HIDDEN, WIDTH)) / 16).astype(np.float32)
PROGRAMS = {
    "example_1_1": (peers.example_1_1, lambda x: (x, x[::-1].copy())),
    "softmax": (peers.softmax, lambda x: (x,)),
    "layer_norm": (peers.layer_norm, lambda x: (x, W, B)),
    "mlp": (peers.mlp, lambda x: (x, W1, W2)),
}
INPUTS = {n: RNG.standard_normal((n, WIDTH)).astype(np.float32) for n in SIZES}


def _stream(call, items=SIZES) -> tuple[float, float]:
    """(the stream's total seconds, the steady-state seconds per call on a second pass)."""
    start = time.perf_counter()
    for n in items:
        call(n)
    total = time.perf_counter() - start
    per_call = []
    for n in items:
        t = time.perf_counter()
        call(n)
        per_call.append(time.perf_counter() - t)
    return total, statistics.mean(per_call)


def _stax(name: str) -> tuple[int, float, float]:  # STAX_CACHE_DIR=off for a cold compile
    fn, make = PROGRAMS[name]
    compiled = stax.compile(fn)
    args = {n: make(INPUTS[n]) for n in SIZES}
    for n in SIZES[:3]:
        np.testing.assert_allclose(compiled(*args[n]), fn(*args[n]), rtol=1e-4, atol=1e-4)
    compiled = stax.compile(fn)  # the checks above compiled: a fresh function for the stream
    total, steady = _stream(lambda n: compiled(*args[n]))
    return compiled.cache_info().compiles, total, steady


def _jax(name: str) -> tuple[int, float, float] | None:
    if peers.jax is None or name not in peers._jax_programs():
        return None
    jitted = peers.jax.jit(peers._jax_programs()[name])
    args = {n: [peers.jax.device_put(a) for a in PROGRAMS[name][1](INPUTS[n])] for n in SIZES}
    total, steady = _stream(lambda n: jitted(*args[n]).block_until_ready())
    return jitted._cache_size(), total, steady


def _torch(name: str) -> tuple[int, float, float] | None:
    torch = peers.torch
    if torch is None:
        return None
    programs = {
        "example_1_1": lambda x, w: (torch.clamp_min(x + w, 0) * 2).sum(-1),
        "softmax": lambda x: torch.softmax(x, -1),
        "layer_norm": lambda x, w, b: torch.nn.functional.layer_norm(x, (WIDTH,), w, b, 1e-5),
        "mlp": lambda x, w1, w2: torch.clamp_min(x @ w1, 0) @ w2,
    }
    import torch._inductor.config as inductor
    from torch._dynamo.utils import counters

    inductor.force_disable_caches = True  # a cold compile, as Stax's (no disk cache here)
    torch._dynamo.reset()
    before = counters["stats"]["unique_graphs"]
    compiled = torch.compile(programs[name])
    args = {n: [torch.from_numpy(a) for a in PROGRAMS[name][1](INPUTS[n])] for n in SIZES}
    with torch.no_grad():
        total, steady = _stream(lambda n: compiled(*args[n]))
    return counters["stats"]["unique_graphs"] - before, total, steady


def _generic_against_exact(name: str, rows: int) -> float:
    """The generic version's time per call over the exact-size version's, same inputs."""
    fn, make = PROGRAMS[name]
    generic, exact = stax.compile(fn), stax.compile(fn, dynamic=False)
    for n in (rows + 1, rows + 2):  # an exact version, then the generic one
        generic(*make(RNG.standard_normal((n, WIDTH)).astype(np.float32)))
    args = make(RNG.standard_normal((rows, WIDTH)).astype(np.float32))
    assert generic.versions()[-1].native and generic.cache_info().compiles == 2
    times = {}
    for label, f in (("generic", generic), ("exact", exact)):
        f(*args)
        runs = []
        for _ in range(30):
            t = time.perf_counter()
            f(*args)
            runs.append(time.perf_counter() - t)
        times[label] = statistics.median(runs)
    return times["generic"] / times["exact"]


def test_a_stream_of_batch_sizes(benchmark, note):
    for name in PROGRAMS:
        cells = []
        for impl, run in (("stax", _stax), ("jax.jit", _jax), ("torch.compile", _torch)):
            result = run(name)
            if result is None:
                cells.append(f"{impl} not installed")
                continue
            compiles, total, steady = result
            cells.append(f"{impl} {compiles} compiles, total {total * 1e3:.0f} ms, steady "
                         f"{steady * 1e6:.0f} us/call")
        note(f"dynamic stream of {len(SIZES)} batch sizes, {name} (width {WIDTH}): "
             + "; ".join(cells))
    for name in ("example_1_1", "softmax", "layer_norm", "mlp"):
        big, small = _generic_against_exact(name, 4096), _generic_against_exact(name, 37)
        note(f"generic / exact kernel time, {name}: 4096 rows {big:.2f}x (bar 1.15x), 37 rows "
             f"{small:.2f}x (bar 1.3x)")
    benchmark.pedantic(lambda: None, rounds=1)


SCALARS = [float(k) for k in np.random.default_rng(21).uniform(0.1, 4.0, 50)]
X_SCALED = RNG.standard_normal((1024, WIDTH)).astype(np.float32)


def _scaled(x, k):  # spec example 2.1's g(x, k), with a shift
    return x * k + 1.0


def test_a_stream_of_scalar_values(benchmark, note):
    """Example 2.1: 50 values of a Python float argument. Stax makes it a run-time input after
    the first change; jax.jit traces Python scalars as values; torch.compile specializes floats
    (its default) and recompiles per value up to its limit."""
    cells = []
    compiled = stax.compile(_scaled)
    np.testing.assert_array_equal(compiled(X_SCALED, 0.5), _scaled(X_SCALED, 0.5))
    compiled = stax.compile(_scaled)
    total, steady = _stream(lambda k: compiled(X_SCALED, k), SCALARS)
    cells.append(f"stax {compiled.cache_info().compiles} compiles, total {total * 1e3:.0f} ms, "
                 f"steady {steady * 1e6:.0f} us/call")
    if peers.jax is not None:
        jitted = peers.jax.jit(lambda x, k: x * k + 1.0)
        x = peers.jax.device_put(X_SCALED)
        total, steady = _stream(lambda k: jitted(x, k).block_until_ready(), SCALARS)
        cells.append(f"jax.jit {jitted._cache_size()} compiles, total {total * 1e3:.0f} ms, "
                     f"steady {steady * 1e6:.0f} us/call")
    torch = peers.torch
    if torch is not None:
        import torch._inductor.config as inductor
        from torch._dynamo.utils import counters

        inductor.force_disable_caches = True
        torch._dynamo.reset()
        before = counters["stats"]["unique_graphs"]
        fn = torch.compile(lambda x, k: x * k + 1.0)
        x = torch.from_numpy(X_SCALED)
        with torch.no_grad():
            total, steady = _stream(lambda k: fn(x, k), SCALARS)
        cells.append(f"torch.compile {counters['stats']['unique_graphs'] - before} compiles, "
                     f"total {total * 1e3:.0f} ms, steady {steady * 1e6:.0f} us/call")
    _, eager_steady = _stream(lambda k: _scaled(X_SCALED, k), SCALARS)
    cells.append(f"numpy steady {eager_steady * 1e6:.0f} us/call")
    note(f"stream of {len(SCALARS)} float values of k, x * k + 1 on (1024, {WIDTH}) float32: "
         + "; ".join(cells))
    benchmark.pedantic(lambda: None, rounds=1)
