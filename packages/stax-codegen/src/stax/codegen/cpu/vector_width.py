"""The vector width the host's kernels are tuned for, chosen by measurement (issue 14).

LLVM tunes some AVX-512 CPUs for 256-bit vectors (its ``prefer-256-bit`` tuning: Intel's
Ice Lake to Emerald Rapids, named ``rocketlake`` and the like, where 512-bit code once lowered
the clock). Stax's kernels are mostly vector math and streaming loops, which run about twice as
fast on 512-bit registers where the clock does not drop: a softmax ran at 2.07x its
minimal-traffic time on ymm registers on such a host, 1.24x on a Zen 5 with zmm. So the width is
measured, once per process, where it is in question:

- ``STAX_VECTOR_WIDTH=256`` or ``512`` decides it;
- a host without AVX-512 has one width; a host LLVM already tunes for 512 keeps it (the
  tuning is seen by compiling a small loop and looking for zmm registers);
- otherwise ``PROBES`` (streaming float32, float32 and float64 polynomial and division work,
  a float32 sum) are compiled at both widths and timed alternately; 256 wins only when it is
  at least ``MARGIN`` faster, so a near tie never flips between processes (a reduction's
  rounding depends on the width).

A decision is recorded in the cache directory under the machine it was made on (llvmlite's
version, the triple, CPU name and features): a new process reads it back (a warm start compiles
no probe). ``STAX_VECTOR_WIDTH`` is never recorded, and always wins.

The choice becomes part of the host's feature string (``+prefer-256-bit`` or
``-prefer-256-bit``), so it reaches every target machine, the artifacts' ``target`` and every
disk-cache key; ``STAX_LOGS=kernels`` prints it in each plan's header.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .host_records import remembered

#: 256-bit vectors are kept only when their probes run at least this much faster
MARGIN = 0.10
#: what a feature string says of the tuning (LLVM's x86 tuning feature)
PREFER_256 = "prefer-256-bit"
ENVIRONMENT = "STAX_VECTOR_WIDTH"
PROBE_ELEMENTS = 8192  # a few L2-resident arrays: the probes time the core, not memory
ROUNDS = 7

_LOOP = """
define void @{name}({ty}* noalias %a, {ty}* noalias %b, {ty}* noalias %c, i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %pa = getelementptr {ty}, {ty}* %a, i64 %i
  %pb = getelementptr {ty}, {ty}* %b, i64 %i
  %x = load {ty}, {ty}* %pa
  %y = load {ty}, {ty}* %pb
{body}
  %pc = getelementptr {ty}, {ty}* %c, i64 %i
  store {ty} %r, {ty}* %pc
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %exit
exit:
  ret void
}}
"""

_SUM = """
define {ty} @{name}({ty}* noalias %a, {ty}* noalias %b, {ty}* noalias %c, i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %acc = phi {ty} [0.0, %entry], [%total, %loop]
  %pa = getelementptr {ty}, {ty}* %a, i64 %i
  %x = load {ty}, {ty}* %pa
  %total = fadd reassoc {ty} %acc, %x
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %exit
exit:
  ret {ty} %total
}}
"""


def horner(ty: str, degree: int) -> list[str]:
    """LLVM IR lines of a polynomial of ``%x`` in Horner's form (1/16 x, then ``degree`` times
    times x plus one), its value ``%h<degree>``: probe work shaped as the vector math is."""
    lines = [f"  %h0 = fmul {ty} %x, 0x3FB0000000000000"]
    for k in range(1, degree + 1):
        lines.append(f"  %m{k} = fmul {ty} %h{k - 1}, %x")
        lines.append(f"  %h{k} = fadd {ty} %m{k}, 0x3FF0000000000000")
    return lines


def _polynomial(ty: str) -> str:
    """A degree-8 polynomial in Horner's form, divided by ``1 + y*y``: the shape of the vector
    math kernels (exp, tanh, log: a reduction, a polynomial, a division or a scaling)."""
    return "\n".join([*horner(ty, 8), f"  %yy = fmul {ty} %y, %y",
                      f"  %d = fadd {ty} %yy, 0x3FF0000000000000", f"  %r = fdiv {ty} %h8, %d"])


#: (name, LLVM type, body or None for the sum): what is timed at each width
PROBES: tuple[tuple[str, str, str | None], ...] = (
    ("triad32", "float", "  %p = fmul float %x, %y\n  %r = fadd float %p, %x"),
    ("poly32", "float", _polynomial("float")),
    ("poly64", "double", _polynomial("double")),
    ("sum32", "float", None),
)


def _probe_ir() -> str:
    parts = []
    for name, ty, body in PROBES:
        template = _SUM if body is None else _LOOP
        parts.append(template.format(name=name, ty=ty, body=body or ""))
    return "\n".join(parts)


def with_width(features: str, bits: int) -> str:
    """``features`` tuned for ``bits``-wide vectors."""
    kept = [f for f in features.split(",") if f and f.lstrip("+-") != PREFER_256]
    return ",".join([*kept, f"{'+' if bits == 256 else '-'}{PREFER_256}"])


#: part of a record's key: records of an older decision procedure are never read
RECORD_FORMAT = "stax.vector-width/1"


def recorded(llvm: Any, triple: str, cpu: str, features: str, directory: Path | None
             ) -> tuple[int, str]:
    """``choose``'s answer, read from the record of an earlier process on this machine in
    ``directory`` (None: no records) or decided and recorded (``host_records.remembered``)."""
    if os.environ.get(ENVIRONMENT, "").strip() in ("256", "512"):
        return choose(llvm, triple, cpu, features)

    def decide() -> tuple[dict[str, Any], bool]:
        bits, why = choose(llvm, triple, cpu, features)
        return {"bits": bits, "why": why}, True

    def valid(record: dict[str, Any]) -> bool:
        return record.get("bits") in (0, 256, 512) and isinstance(record.get("why"), str)

    key = (features, RECORD_FORMAT, triple, cpu,
           *(f"{name}:{ty}:{body}" for name, ty, body in PROBES), str(MARGIN))
    record, read = remembered(directory, key, decide, valid)
    return int(record["bits"]), record["why"] + (" (recorded)" if read else "")


def choose(llvm: Any, triple: str, cpu: str, features: str) -> tuple[int, str]:
    """(bits, why): the width for this host's kernels (``llvm``: llvmlite's binding, the
    native target initialized)."""
    asked = os.environ.get(ENVIRONMENT, "").strip()
    if asked in ("256", "512"):
        return int(asked), f"{ENVIRONMENT}={asked}"
    if "+avx512f" not in features.split(","):
        return 0, "no AVX-512"
    machine = _machine_factory(llvm, triple, cpu)
    tuning = machine(features)
    probe = _LOOP.format(name="tuning", ty="float", body="  %r = fmul float %x, %y")
    if "zmm" in tuning.emit_assembly(_optimized(llvm, tuning, probe)):
        return 512, "LLVM's tuning for this CPU"
    times = _time_probes(llvm, {bits: machine(with_width(features, bits)) for bits in (256, 512)})
    detail = ", ".join(f"{name} {times[512][name] * 1e6:.1f}/{times[256][name] * 1e6:.1f} us"
                       for name, _, _ in PROBES)
    return decide(times), f"measured (512/256-bit: {detail})"


def decide(times: dict[int, dict[str, float]]) -> int:
    """256 when its probes take at least ``MARGIN`` less time in all than 512's, else 512."""
    t256, t512 = (sum(times[bits].values()) for bits in (256, 512))
    return 256 if t256 < (1 - MARGIN) * t512 else 512


def _machine_factory(llvm: Any, triple: str, cpu: str) -> Callable[[str], Any]:
    target = llvm.Target.from_triple(triple)
    return lambda features: target.create_target_machine(cpu=cpu, features=features, opt=3)


def _optimized(llvm: Any, machine: Any, text: str) -> Any:
    module = llvm.parse_assembly(text)
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = True
    options.loop_interleaving = True
    builder = llvm.create_pass_builder(machine, options)
    passes = builder.getModulePassManager()
    passes.run(module, builder)
    return module


def _time_probes(llvm: Any, machines: dict[int, Any]) -> dict[int, dict[str, float]]:
    """The best time of each probe at each width (seconds), the widths taking turns round
    after round (a clock that changes under load changes for both)."""
    engines = {}
    for bits, machine in machines.items():
        engines[bits] = llvm.create_mcjit_compiler(_optimized(llvm, machine, _probe_ir()), machine)
        engines[bits].finalize_object()
    rng = np.random.default_rng(0)
    best: dict[int, dict[str, float]] = {bits: {} for bits in machines}
    for name, ty, _ in PROBES:
        dtype = np.float32 if ty == "float" else np.float64
        a, b = (rng.random(PROBE_ELEMENTS).astype(dtype) for _ in range(2))
        c = np.empty_like(a)
        proto = ctypes.CFUNCTYPE(ctypes.c_float if ty == "float" else ctypes.c_double,
                                 ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
        args = (a.ctypes.data, b.ctypes.data, c.ctypes.data, PROBE_ELEMENTS)
        functions = {bits: proto(engine.get_function_address(name))
                     for bits, engine in engines.items()}
        for _ in range(ROUNDS):
            for bits, fn in functions.items():
                fn(*args)
                start = time.perf_counter()
                for _ in range(8):
                    fn(*args)
                elapsed = (time.perf_counter() - start) / 8
                best[bits][name] = min(best[bits].get(name, elapsed), elapsed)
    for engine in engines.values():
        engine.close()
    return best
