"""Spec example 1.1 through every layer of Stax, on the CPU.

    f(x, w) = (np.maximum(x + w, 0) * 2).sum(-1)

Prints the capture graph, the op graph, the loop IR, the generated LLVM kernel, the kernel plan,
the result check against eager NumPy, the first-compile time and the call time against NumPy.
"""

from __future__ import annotations

import sys
import time
import timeit

import numpy as np

import stax.runtime as stax
from stax.ir import lower_capture
from stax.loop import lower_opgraph


def f(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def section(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 70 - len(title)))


def best_time(fn, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def main() -> int:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 128), dtype=np.float32)
    w = rng.standard_normal((64, 128), dtype=np.float32)

    cf = stax.compile(f, strict_native=True)
    start = time.perf_counter()
    y = cf(x, w)
    first_call = time.perf_counter() - start
    (version,) = cf.versions()
    artifact = version.artifact

    from stax.trace import trace
    capture = trace(f, (x, w))
    opgraph = lower_capture(capture)
    loop = lower_opgraph(opgraph)

    section("capture graph (stax.capture/1, spec listing 3.1)")
    print(capture.graph)
    section("op graph (stax.opgraph/1)")
    print(opgraph.graph)
    section("loop IR (stax.loopir/1): one Reduction, add/relu/mul inlined")
    print(loop)
    section("kernel plan (stax.kernels/1)")
    print(artifact)
    section("LLVM kernel (before optimization; LLVM vectorizes the inner loop)")
    print(artifact.llvm_ir.split("\n\n", 1)[-1].strip())

    section("result check against eager NumPy")
    want = f(x, w)
    err = float(np.abs(y - want).max())
    ok = np.allclose(y, want, rtol=1e-5, atol=1e-4)
    print(f"max |stax - numpy| = {err:.3g} ({'OK' if ok else 'MISMATCH'}; float sums reorder, spec §6.5)")

    section("time")
    print(f"first call (capture + lower + LLVM compile + run): {first_call * 1e3:.1f} ms")
    for shape, number in (((64, 128), 20000), ((4096, 4096), 10)):
        a = rng.standard_normal(shape, dtype=np.float32)
        b = rng.standard_normal(shape, dtype=np.float32)
        cf(a, b)
        t_stax = best_time(lambda: cf(a, b), number)
        t_numpy = best_time(lambda: f(a, b), number)
        print(f"{shape!s:>14}: numpy {t_numpy * 1e6:10.1f} us   stax {t_stax * 1e6:10.1f} us"
              f"   speedup {t_numpy / t_stax:5.2f}x")
    print(f"\ncache: {cf.cache_info()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
