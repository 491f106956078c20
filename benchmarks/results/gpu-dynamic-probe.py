"""Issue 15 on the GPU (session 21): size-generic Triton versions on an H200, one call.

1. Correctness: softmax, layer norm and example 1.1 (float32, width 1024) compiled with
   ``device="cuda"`` over a stream of batch sizes (1 .. 16384), each result against NumPy on the
   host; compiles and which versions are generic.
2. Speed: the generic version against the exact one (``dynamic=False``) and torch eager /
   torch.compile, per call (``triton.testing.do_bench`` medians), at 4096 and 37 rows.
3. A stream of 50 batch sizes: compiles and total time, Stax against torch.compile.

    PYTHONPATH=packages/stax-ir/src:... python benchmarks/results/gpu-dynamic-probe.py OUTDIR
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import torch
import triton
from triton.testing import do_bench

import stax.runtime as stax

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
WIDTH = 1024
RNG = np.random.default_rng(15)
W = RNG.standard_normal(WIDTH).astype(np.float32)
B = RNG.standard_normal(WIDTH).astype(np.float32)
LINES: list[str] = []
RESULTS: dict = {"device": torch.cuda.get_device_name(), "triton": triton.__version__,
                 "torch": torch.__version__}


def say(text: str) -> None:
    LINES.append(text)
    print(text, flush=True)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    v = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(v + 1e-5) * w + b


def example_1_1(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


TORCH = {"softmax": lambda x: torch.softmax(x, -1),
         "layer_norm": lambda x, w, b: torch.nn.functional.layer_norm(x, (WIDTH,), w, b, 1e-5),
         "example_1_1": lambda x, w: (torch.clamp_min(x + w, 0) * 2).sum(-1)}
PROGRAMS = {"softmax": (softmax, ()), "layer_norm": (layer_norm, (W, B)),
            "example_1_1": (example_1_1, (W,))}


def device(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def correctness() -> None:
    sizes = [5, 9, 1, 2, 3, 37, 100, 1000, 4096, 8191, 16384, 9]
    for name, (fn, extra) in PROGRAMS.items():
        f = stax.compile(fn, device="cuda")
        worst = 0.0
        for rows in sizes:
            x = RNG.standard_normal((rows, WIDTH)).astype(np.float32)
            x[0, :3] = [np.nan, np.inf, -0.0]
            got = f(device(x), *map(device, extra)).cpu().numpy()
            with np.errstate(all="ignore"):
                want = fn(x.astype(np.float64), *[e.astype(np.float64) for e in extra])
            ok = np.isfinite(want)
            assert (np.isnan(got) == np.isnan(want)).all(), (name, rows)
            if ok.any():
                err = float(np.abs(got[ok] - want[ok]).max() / max(np.abs(want[ok]).max(), 1e-30))
                worst = max(worst, err)
        info = f.cache_info()
        generic = [v.generic is not None for v in f.versions()]
        RESULTS.setdefault("correctness", {})[name] = {"compiles": info.compiles,
                                                      "generic": generic, "worst_rel": worst}
        say(f"correct {name}: {len(sizes)} sizes, compiles {info.compiles}, generic {generic}, "
            f"worst relative error {worst:.1e}")


def speed() -> None:
    for name, (fn, extra) in PROGRAMS.items():
        generic, exact = stax.compile(fn, device="cuda"), stax.compile(fn, device="cuda",
                                                                       dynamic=False)
        for rows in (65536, 4096, 37):
            for n in (rows + 1, rows + 2):  # an exact version, then the generic one
                generic(device(RNG.standard_normal((n, WIDTH)).astype(np.float32)),
                        *map(device, extra))
            x = device(RNG.standard_normal((rows, WIDTH)).astype(np.float32))
            args = (x, *map(device, extra))
            generic(*args)
            exact(*args)
            assert generic.versions()[-1].generic is not None
            eager = TORCH[name]
            compiled = torch.compile(eager)
            compiled(*args)
            times = {label: do_bench(lambda f=f: f(*args), warmup=25, rep=200,
                                     return_mode="median")
                     for label, f in (("generic", generic), ("exact", exact),
                                      ("torch", eager), ("torch.compile", compiled))}
            RESULTS.setdefault("speed", {})[f"{name}@{rows}"] = times
            say(f"speed {name} ({rows}, {WIDTH}): " + ", ".join(
                f"{k} {v * 1e3:.1f} us" for k, v in times.items()) +
                f"; generic/exact {times['generic'] / times['exact']:.2f}x")


def stream() -> None:
    sizes = [int(n) for n in RNG.permutation(np.arange(1, 4097))[:49]] + [1]
    inputs = {n: device(RNG.standard_normal((n, WIDTH)).astype(np.float32)) for n in sizes}
    for name, (fn, extra) in PROGRAMS.items():
        extra_d = [device(e) for e in extra]
        f = stax.compile(fn, device="cuda")
        torch.cuda.synchronize()
        start = time.perf_counter()
        for n in sizes:
            f(inputs[n], *extra_d)
        torch.cuda.synchronize()
        total = time.perf_counter() - start
        torch._dynamo.reset()
        tc = torch.compile(TORCH[name])
        start = time.perf_counter()
        for n in sizes:
            tc(inputs[n], *extra_d)
        torch.cuda.synchronize()
        tc_total = time.perf_counter() - start
        RESULTS.setdefault("stream", {})[name] = {"stax_compiles": f.cache_info().compiles,
                                                 "stax_total_s": total, "torch_compile_total_s":
                                                 tc_total}
        say(f"stream {name}: stax {f.cache_info().compiles} compiles, total {total * 1e3:.0f} ms; "
            f"torch.compile total {tc_total * 1e3:.0f} ms")


for part in (correctness, speed, stream):
    try:
        part()
    except Exception:
        say(f"{part.__name__} failed:\n{traceback.format_exc()}")
OUT.mkdir(parents=True, exist_ok=True)
(OUT / "gpu-dynamic.json").write_text(json.dumps(RESULTS, indent=1))
(OUT / "gpu-dynamic.txt").write_text("\n".join(LINES) + "\n")
print("\n".join(LINES[-20:]))
