"""Explicit vectors against LLVM's vectorizer (issue 5: "measure explicit vectors vs LLVM's
vectorizer"), on example 1.1's row reduction, (4096, 4096) float32, one thread:

- ``stax``: the kernel Stax generates — scalar IR, the accumulation marked ``reassoc``, widened and
  interleaved by LLVM's loop vectorizer;
- ``explicit``: the same loop written by hand with <16 x float> vectors and four accumulators,
  reduced horizontally at the end of each row.

Both are compiled by the same pipeline and called on the same arrays; the summary prints the
ratio. Stax keeps the vectorizer while this ratio stays near 1."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen import Executable
from stax.codegen.cpu.jit import CompiledModule, kernel_function

N = 4096
EXPERIMENT = "explicit vectors vs LLVM's vectorizer (example 1.1 4096^2, one thread)"
EXPLICIT = """
define void @row_sums(float* %x, float* %w, float* %out, i64 %rows, i64 %cols) {
entry:
  br label %row
row:
  %i = phi i64 [0, %entry], [%i1, %row_end]
  %base = mul i64 %i, %cols
  br label %body
body:
  %j = phi i64 [0, %row], [%j1, %body]
  %a0 = phi <16 x float> [zeroinitializer, %row], [%n0, %body]
  %a1 = phi <16 x float> [zeroinitializer, %row], [%n1, %body]
  %a2 = phi <16 x float> [zeroinitializer, %row], [%n2, %body]
  %a3 = phi <16 x float> [zeroinitializer, %row], [%n3, %body]
  %n0 = call <16 x float> @step(float* %x, float* %w, i64 %base, i64 %j, i64 0, <16 x float> %a0)
  %n1 = call <16 x float> @step(float* %x, float* %w, i64 %base, i64 %j, i64 16, <16 x float> %a1)
  %n2 = call <16 x float> @step(float* %x, float* %w, i64 %base, i64 %j, i64 32, <16 x float> %a2)
  %n3 = call <16 x float> @step(float* %x, float* %w, i64 %base, i64 %j, i64 48, <16 x float> %a3)
  %j1 = add i64 %j, 64
  %more = icmp slt i64 %j1, %cols
  br i1 %more, label %body, label %row_end
row_end:
  %s01 = fadd reassoc <16 x float> %n0, %n1
  %s23 = fadd reassoc <16 x float> %n2, %n3
  %s = fadd reassoc <16 x float> %s01, %s23
  %total = call reassoc float @llvm.vector.reduce.fadd.v16f32(float 0.0, <16 x float> %s)
  %o = getelementptr float, float* %out, i64 %i
  store float %total, float* %o
  %i1 = add i64 %i, 1
  %again = icmp slt i64 %i1, %rows
  br i1 %again, label %row, label %done
done:
  ret void
}

define internal <16 x float> @step(float* %x, float* %w, i64 %base, i64 %j, i64 %k,
                                   <16 x float> %acc) alwaysinline {
  %at = add i64 %base, %j
  %at2 = add i64 %at, %k
  %px = getelementptr float, float* %x, i64 %at2
  %pw = getelementptr float, float* %w, i64 %at2
  %vx = bitcast float* %px to <16 x float>*
  %vw = bitcast float* %pw to <16 x float>*
  %lx = load <16 x float>, <16 x float>* %vx, align 4
  %lw = load <16 x float>, <16 x float>* %vw, align 4
  %sum = fadd <16 x float> %lx, %lw
  %pos = fcmp ogt <16 x float> %sum, zeroinitializer
  %nan = fcmp uno <16 x float> %sum, %sum
  %keep = or <16 x i1> %pos, %nan
  %relu = select <16 x i1> %keep, <16 x float> %sum, <16 x float> zeroinitializer
  %two = fmul <16 x float> %relu, <float 2.0, float 2.0, float 2.0, float 2.0, float 2.0,
      float 2.0, float 2.0, float 2.0, float 2.0, float 2.0, float 2.0, float 2.0, float 2.0,
      float 2.0, float 2.0, float 2.0>
  %next = fadd reassoc <16 x float> %acc, %two
  ret <16 x float> %next
}

declare float @llvm.vector.reduce.fadd.v16f32(float, <16 x float>)
"""


@pytest.fixture(scope="module")
def arrays():
    rng = np.random.default_rng(0)
    return rng.standard_normal((N, N), dtype=np.float32), rng.standard_normal((N, N),
                                                                             dtype=np.float32)


def f(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


@pytest.mark.parametrize("impl", ["stax", "explicit"])
def test_explicit_vectors_vs_the_vectorizer(benchmark, record, arrays, impl):
    x, w = arrays
    out = np.empty(N, np.float32)
    if impl == "stax":
        compiled = stax.compile(f, strict_native=True)
        compiled(x, w)
        # the generated kernel alone, on one thread: the conditions of the explicit kernel
        artifact = compiled.versions()[0].artifact
        module = Executable(artifact).module
        # the kernel's own arguments: the inputs, the result and (where the kernel reads the
        # CPU's floating-point flags) the events buffer — a call with fewer crashed
        (plan,) = artifact.kernels
        extra = {"$events": np.zeros(1, np.int32)}
        args = [*(x, w, out), *(extra[a] for a in plan.args[3:])]
        fn = kernel_function(module, "kernel_0", len(args))
        run = lambda: fn(*args, 0, N)  # noqa: E731
    else:
        module = CompiledModule(EXPLICIT)
        fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 3), ctypes.c_int64, ctypes.c_int64)(
            module.address("row_sums"))
        run = lambda: fn(x.ctypes.data, w.ctypes.data, out.ctypes.data, N, N)  # noqa: E731
    run()
    np.testing.assert_allclose(out, f(x, w), rtol=1e-4, atol=1e-2)
    benchmark.group = "explicit vectors vs LLVM's vectorizer (example 1.1, one thread)"
    benchmark(run)
    record(EXPERIMENT, impl, benchmark)
