"""The cost of a dynamic innermost extent (issue 15, docs/dynamic-shapes.md): one row kernel (sum
of squares, then a scale) compiled with its row length as a constant and as a run-time argument,
timed on this host. Run: ``python tools/dynamic_row_probe.py``."""

from __future__ import annotations

import ctypes
import time

import numpy as np

from stax.codegen.cpu import host
from stax.codegen.cpu.vector_width import _optimized

SHAPES = ((4096, 1000), (64, 1000), (8192, 1024), (256, 100), (16, 37))


def kernel_ir(m: int | None) -> str:
    """``y[i, :] = x[i, :] / sum(x[i, :]**2)`` over ``n`` rows of ``m`` (a constant, or the
    argument ``%m`` when None)."""
    length = str(m) if m else "%m"
    return f"""
define void @rows(float* noalias %x, float* noalias %y, i64 %n, i64 %m) {{
entry:
  br label %row
row:
  %i = phi i64 [0, %entry], [%inext, %rowend]
  %base = mul i64 %i, {length}
  br label %sum
sum:
  %j = phi i64 [0, %row], [%jn, %sum]
  %acc = phi float [0.0, %row], [%acc2, %sum]
  %k = add i64 %base, %j
  %px = getelementptr float, float* %x, i64 %k
  %v = load float, float* %px
  %e = fmul float %v, %v
  %acc2 = fadd reassoc float %acc, %e
  %jn = add i64 %j, 1
  %more = icmp slt i64 %jn, {length}
  br i1 %more, label %sum, label %scale0
scale0:
  %inv = fdiv float 1.0, %acc2
  br label %scale
scale:
  %j2 = phi i64 [0, %scale0], [%j2n, %scale]
  %k2 = add i64 %base, %j2
  %px2 = getelementptr float, float* %x, i64 %k2
  %v2 = load float, float* %px2
  %r = fmul float %v2, %inv
  %py = getelementptr float, float* %y, i64 %k2
  store float %r, float* %py
  %j2n = add i64 %j2, 1
  %more2 = icmp slt i64 %j2n, {length}
  br i1 %more2, label %scale, label %rowend
rowend:
  %inext = add i64 %i, 1
  %rmore = icmp slt i64 %inext, %n
  br i1 %rmore, label %row, label %exit
exit:
  ret void
}}"""


def build(m: int | None) -> tuple[object, object]:
    llvm, identity = host.llvm(), host.host_identity()

    def machine() -> object:
        target = llvm.Target.from_triple(identity.triple)
        return target.create_target_machine(cpu=identity.cpu, features=identity.features, opt=3)

    engine = llvm.create_mcjit_compiler(_optimized(llvm, machine(), kernel_ir(m)), machine())
    engine.finalize_object()
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
    return proto(engine.get_function_address("rows")), engine


def main() -> None:
    print(f"host {host.host_identity().cpu}, {host.vector_choice()[0]}-bit vectors")
    for n, m in SHAPES:
        x = np.random.default_rng(0).random((n, m), dtype=np.float32)
        y = np.empty_like(x)
        best = {}
        for label, length in (("constant", m), ("run-time", None)):
            fn, _engine = build(length)
            fn(x.ctypes.data, y.ctypes.data, n, m)
            reps = max(1, 2_000_000 // (n * m))
            for _ in range(7):
                start = time.perf_counter()
                for _ in range(reps):
                    fn(x.ctypes.data, y.ctypes.data, n, m)
                elapsed = (time.perf_counter() - start) / reps
                best[label] = min(best.get(label, elapsed), elapsed)
        print(f"({n}, {m}): constant {best['constant'] * 1e6:.1f} us, run-time "
              f"{best['run-time'] * 1e6:.1f} us, ratio {best['run-time'] / best['constant']:.3f}")


if __name__ == "__main__":
    main()
