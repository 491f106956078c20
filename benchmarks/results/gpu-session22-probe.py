"""Issue 15 on the GPU (session 22): scalar inputs, ``len(x)``, and the generic call's host path.

1. Correctness on the device: spec example 2.1's ``g(x, k)`` with a stream of Python scalars
   (float32 tensors, results bit-equal to NumPy's), sizes and scalars changing together, and
   ``x / len(x)`` over a stream of batch sizes; compiles and which versions are generic.
2. Column reductions over a dynamic row count (ragged slices): kernel time of the generic
   version against the exact one and torch at 65536, 4096 and 37 rows.
3. Host path: per-call wall time at 37 rows (host-bound: the kernels take microseconds) of the
   generic version, the exact one (``dynamic=False``), torch eager and torch.compile, as the mean
   of 2000 calls between two synchronizations; a profile of the generic call (cProfile, top
   functions by own time) to say where its host time goes.

    PYTHONPATH=packages/stax-ir/src:... STAX_CACHE_DIR=off \
        python benchmarks/results/gpu-session22-probe.py OUTDIR
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import torch
import triton

import stax.runtime as stax

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
WIDTH = 1024
RNG = np.random.default_rng(22)
W = RNG.standard_normal(WIDTH).astype(np.float32)
LINES: list[str] = []
RESULTS: dict = {"device": torch.cuda.get_device_name(), "triton": triton.__version__,
                 "torch": torch.__version__}


def say(text: str) -> None:
    LINES.append(text)
    print(text, flush=True)


def device(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def g(x, k):
    return np.maximum(x * k, 0.5) + k


def per_len(x):
    return x / len(x) + x.sum(0)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def example_1_1(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def correctness() -> None:
    x = RNG.standard_normal((37, WIDTH)).astype(np.float32)
    x[0, :3] = [np.nan, np.inf, -0.0]
    f = stax.compile(g, device="cuda", strict_native=True)
    for k in (3.0, 4.0, 5.5, -2.25, 0.1, 7.75):
        got = f(device(x), k).cpu().numpy()
        with np.errstate(all="ignore"):
            assert np.array_equal(got, g(x, k), equal_nan=True), k
    generic = [v.generic is not None for v in f.versions()]
    say(f"correct scalars g(x, k): 6 values bit-equal, compiles {f.cache_info().compiles}, "
        f"generic {generic}")
    h = stax.compile(g, device="cuda", strict_native=True)
    for rows, k in ((5, 2.0), (9, 3.5), (33, -1.0), (4096, 0.25), (9, 8.0), (1, 1.5)):
        x = RNG.standard_normal((rows, WIDTH)).astype(np.float32)
        assert np.array_equal(h(device(x), k).cpu().numpy(), g(x, k)), rows
    say(f"correct sizes and scalars together: 6 calls bit-equal, compiles "
        f"{h.cache_info().compiles}")
    p = stax.compile(per_len, device="cuda", strict_native=True)
    worst = 0.0
    for rows in (5, 9, 33, 4096, 1, 9):
        x = RNG.standard_normal((rows, WIDTH)).astype(np.float32)
        got, want = p(device(x)).cpu().numpy(), per_len(x.astype(np.float64))
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
    say(f"correct x / len(x): 6 sizes, compiles {p.cache_info().compiles}, "
        f"worst relative error {worst:.1e}")
    RESULTS["correctness"] = {"scalars": f.cache_info().compiles,
                              "sizes_and_scalars": h.cache_info().compiles,
                              "len": p.cache_info().compiles, "len_worst": worst}


def host_time(fn, args, calls=2000) -> float:
    for _ in range(20):
        fn(*args)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def host_path() -> None:
    rows = 37
    cases = {"softmax": (softmax, (), lambda x: torch.softmax(x, -1)),
             "example_1_1": (example_1_1, (W,), lambda x, w: (torch.clamp_min(x + w, 0) * 2)
                             .sum(-1))}
    for name, (fn, extra, eager) in cases.items():
        generic = stax.compile(fn, device="cuda")
        exact = stax.compile(fn, device="cuda", dynamic=False)
        extra_d = [device(e) for e in extra]
        for n in (rows + 1, rows + 2):
            generic(device(RNG.standard_normal((n, WIDTH)).astype(np.float32)), *extra_d)
        args = (device(RNG.standard_normal((rows, WIDTH)).astype(np.float32)), *extra_d)
        generic(*args)
        assert generic.versions()[-1].generic is not None
        compiled = torch.compile(eager, dynamic=True)
        times = {label: host_time(f, args) for label, f in (
            ("generic", generic), ("exact", exact), ("torch", eager),
            ("torch.compile", compiled))}
        RESULTS.setdefault("host", {})[name] = times
        say(f"host per call {name} ({rows}, {WIDTH}): " + ", ".join(
            f"{k} {v:.1f} us" for k, v in times.items()) +
            f"; generic/exact {times['generic'] / times['exact']:.2f}x")
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(2000):
            generic(*args)
        profile.disable()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(18)
        (OUT / f"profile-generic-{name}.txt").write_text(text.getvalue())
    scalar = stax.compile(g, device="cuda")
    x = device(RNG.standard_normal((rows, WIDTH)).astype(np.float32))
    for k in (1.0, 2.0, 3.0):
        scalar(x, k)
    fixed = stax.compile(g, device="cuda", dynamic=False)
    values = iter(np.linspace(0.5, 2.0, 100000).tolist())
    times = {"generic, a new k per call": host_time(lambda x: scalar(x, next(values)), (x,)),
             "exact, one k": host_time(lambda x: fixed(x, 2.0), (x,)),
             "torch eager": host_time(lambda x: torch.clamp_min(x * 2.0, 0.5) + 2.0, (x,))}
    RESULTS.setdefault("host", {})["scalars"] = times
    say("host per call g(x, k) (37, 1024): " + ", ".join(f"{k} {v:.1f} us"
                                                       for k, v in times.items()))


def columns() -> None:
    """Column reductions over a dynamic row count: the generic version splits in ragged
    slices of 128 rows, the exact one in a divisor of its rows; kernel time (do_bench)."""
    from triton.testing import do_bench

    fns = {"column_sum": (lambda x: x.sum(0), lambda x: x.sum(0)),
           "column_max": (lambda x: x.max(0), lambda x: x.amax(0))}
    for name, (fn, eager) in fns.items():
        generic = stax.compile(fn, device="cuda", strict_native=True)
        exact = stax.compile(fn, device="cuda", dynamic=False, strict_native=True)
        for n in (40, 41):
            generic(device(RNG.standard_normal((n, WIDTH)).astype(np.float32)))
        for rows in (65536, 4096, 37):
            host = RNG.standard_normal((rows, WIDTH)).astype(np.float32)
            x = device(host)
            got = generic(x).cpu().numpy()
            assert np.allclose(got, fn(host.astype(np.float64)), rtol=1e-5, atol=1e-5 * rows ** .5)
            assert generic.versions()[-1].generic is not None
            exact(x)
            times = {label: do_bench(lambda f=f: f(x), warmup=25, rep=200, return_mode="median")
                     for label, f in (("generic", generic), ("exact", exact), ("torch", eager))}
            RESULTS.setdefault("columns", {})[f"{name}@{rows}"] = times
            say(f"speed {name} ({rows}, {WIDTH}): " + ", ".join(
                f"{k} {v * 1e3:.1f} us" for k, v in times.items()) +
                f"; generic/exact {times['generic'] / times['exact']:.2f}x")
    say(f"column compiles: {generic.cache_info().compiles} generic, "
        f"{exact.cache_info().compiles} exact")


OUT.mkdir(parents=True, exist_ok=True)
for part in (correctness, columns, host_path):
    try:
        part()
    except Exception:
        say(f"{part.__name__} failed:\n{traceback.format_exc()}")
(OUT / "gpu-session22.json").write_text(json.dumps(RESULTS, indent=1))
(OUT / "gpu-session22.txt").write_text("\n".join(LINES) + "\n")
