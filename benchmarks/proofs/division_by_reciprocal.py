"""Exhaustive check, on a CUDA GPU, that float32 ``a / b`` equals the reciprocal-and-correction
sequence the CPU code generator emits for a divisor invariant in the vectorized loop
(``stax.codegen.cpu.arithmetic``):

    y  = RN(1 / b)                 (once per divisor)
    q0 = RN(a * y)
    r  = fma(-q0, b, a)            (exact: a - q0 b is a float when q0 is faithful)
    q1 = fma(r, y, q0)

for every pair of significands (a, b in [1, 2): 2^23 x 2^23 pairs). Scaling a or b by a power of
two scales q0, r and q1 exactly while every value stays normal, which the emitter's range check
guarantees before it takes this path, so these pairs are every case. The reference is CUDA's
correctly rounded ``__fdiv_rn``. Also counts pairs where q0 alone is not correctly rounded (the
correction is needed) and where a second correction would be.

Run on a machine with CuPy: ``python benchmarks/proofs/division_by_reciprocal.py``; prints the
failure count (0 proves the identity on the normal range) and a few examples if any.
"""

from __future__ import annotations

import sys
import time

import cupy as cp

SOURCE = r"""
extern "C" __global__ void check(unsigned int b_first, unsigned int b_count,
                                 unsigned long long *counts, unsigned int *examples) {
    unsigned int bi = b_first + blockIdx.y;
    if (blockIdx.y >= b_count) return;
    float b = __uint_as_float(0x3f800000u | bi);
    float y = __frcp_rn(b);
    unsigned long long bad = 0, needed = 0;
    for (unsigned int ai = blockIdx.x * blockDim.x + threadIdx.x; ai < (1u << 23);
         ai += gridDim.x * blockDim.x) {
        float a = __uint_as_float(0x3f800000u | ai);
        float q0 = __fmul_rn(a, y);
        float r = __fmaf_rn(-q0, b, a);
        float q1 = __fmaf_rn(r, y, q0);
        float ref = __fdiv_rn(a, b);
        if (__float_as_uint(q0) != __float_as_uint(ref)) needed++;
        if (__float_as_uint(q1) != __float_as_uint(ref)) {
            if (bad == 0) {
                unsigned int slot = atomicAdd(examples, 1u);
                if (slot < 16) { examples[1 + 2 * slot] = ai; examples[2 + 2 * slot] = bi; }
            }
            bad++;
        }
    }
    if (bad) atomicAdd(&counts[0], bad);
    if (needed) atomicAdd(&counts[1], needed);
}
"""


def main() -> int:
    kernel = cp.RawKernel(SOURCE, "check")
    counts = cp.zeros(2, dtype=cp.uint64)
    examples = cp.zeros(33, dtype=cp.uint32)
    total = 1 << 23
    per_launch = 1 << 14 if len(sys.argv) < 2 else int(sys.argv[1])
    start = time.perf_counter()
    for first in range(0, total, per_launch):
        kernel((64, per_launch), (256,), (cp.uint32(first), cp.uint32(per_launch), counts, examples))
        if (first // per_launch) % 64 == 63:
            cp.cuda.runtime.deviceSynchronize()
            print(f"  {first + per_launch} divisors, {time.perf_counter() - start:.1f} s, "
                  f"failures so far {int(counts.get()[0])}", flush=True)
    cp.cuda.runtime.deviceSynchronize()
    elapsed = time.perf_counter() - start
    bad, needed = (int(v) for v in counts.get())
    ex = examples.get()
    print(f"pairs checked: {total * total} in {elapsed:.1f} s")
    print(f"q1 != a/b: {bad}   (q0 alone wrong: {needed})")
    for k in range(min(int(ex[0]), 16)):
        a = 1 + int(ex[1 + 2 * k]) / 2**23
        b = 1 + int(ex[2 + 2 * k]) / 2**23
        print(f"  example a={a!r} b={b!r}")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
