"""The work below which a kernel runs on the calling thread alone, measured on this host
(issue 14: decided once per machine, recorded with the host's identity).

Splitting a kernel over the native pool costs a launch (publishing the task, finding the
workers, waiting for the last chunk: microseconds) and pays back only as far as the other
threads really run beside the caller. That differs between hosts more than any constant can
say: on one 2-vCPU VM two threads halved a 200k-element division, on another (whose vCPUs
share a core, or are throttled) they gave nothing at that size, and every split there was pure
cost. So the threshold is measured:

- ``STAX_PARALLEL_WORK=<units>`` decides it (``never`` or ``0``: no kernel is split; a unit is
  ``costs.UNIT_NS``, about 25 ps of one thread);
- with one thread nothing is split; without the native pool (``STAX_THREADS=python``, not
  Linux) it is a constant: the Python pool's launch (~40 us) is what a split must beat;
- on a machine busy with other work (its idle CPU time), or without a cache directory to
  record the measurement in (``STAX_CACHE_DIR=off``), it is ``DEFAULT_WORK``, unrecorded;
- otherwise a probe kernel (a polynomial over float32, vectorized like the element-wise
  kernels, compute-bound) runs over ``PROBE_SIZES`` elements on the calling thread and on the
  pool, taking turns; the threshold is the smallest probe work from which on the pool is at least
  ``MARGIN`` faster at every larger probe too, rounded to the nearest power of two. Where no
  probe is, no kernel is split below ``NEVER``.

The decision is recorded in the cache directory (``host_records.remembered``), so a new process
on the machine measures nothing; it is part of the CPU target's cache key (a kernel's split
is in its plan), and ``STAX_LOGS=kernels`` prints it with each plan.
"""

from __future__ import annotations

import ctypes
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from .costs import UNIT_NS, units
from .host_records import remembered
from .jit import CompiledModule, array_data_offset
from .native_pool import native_available, native_pool
from .vector_width import horner

ENVIRONMENT = "STAX_PARALLEL_WORK"
#: the threshold without the native pool: about 100 us of one thread, 2.5x the Python pool's
#: launch (~40 us)
PYTHON_POOL_WORK = 1 << 22
#: no probe gained from the pool: kernels are split only above this (~50 ms of one thread),
#: where even a pool that gives nothing costs under a percent
NEVER = 1 << 31
#: float32 elements of each probe: 4 KiB to 1 MiB an operand, in each core's cache: the probe
#: times compute split over threads (what the cost units count), not the memory bus. A
#: memory-bound probe misled: on a 2-vCPU Xeon VM a 1 MiB stream gained nothing from the
#: pool while sin of it ran 1.75x faster (258 -> 147 us), and 64K-element tanh*exp 1.5x
PROBE_SIZES = (1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18)
#: the threshold while the machine is too busy to measure (about 26 us of one thread; a launch
#: of the native pool costs a few)
DEFAULT_WORK = 1 << 20
#: seconds over which the machine's idle time is looked at before measuring
IDLE_WINDOW = 0.05
#: the pool must save this fraction of the calling thread's time to count as faster
MARGIN = 0.15
ROUNDS = 9
#: part of a record's key: records of another procedure are never read
RECORD_FORMAT = "stax.parallel-work/1"

_PROBE = """
define void @probe(i8* %xobj, i8* %yobj, i64 %start, i64 %stop) {{
entry:
  %xslot = getelementptr i8, i8* %xobj, i64 {offset}
  %xpointer = bitcast i8* %xslot to float**
  %xdata = load float*, float** %xpointer
  %yslot = getelementptr i8, i8* %yobj, i64 {offset}
  %ypointer = bitcast i8* %yslot to float**
  %ydata = load float*, float** %ypointer
  %empty = icmp sge i64 %start, %stop
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [%start, %entry], [%next, %loop]
  %px = getelementptr float, float* %xdata, i64 %i
  %x = load float, float* %px
{body}
  %py = getelementptr float, float* %ydata, i64 %i
  store float %r, float* %py
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %stop
  br i1 %more, label %loop, label %exit
exit:
  ret void
}}
"""
#: multiplications and additions of the probe's polynomial (Horner's form): compute-bound, as
#: the kernels whose split matters (functions: sin is ~120 units an element) are
_DEGREE = 32


def _body() -> str:
    return "\n".join([*horner("float", _DEGREE), f"  %r = fadd float %h{_DEGREE}, %x"])


def probe_units() -> int:
    """Cost units of one probe element, about as ``costs.work`` counts the same expression: its
    float32 operations (``work`` no longer counts the load: one unit in 67, left in so that
    recorded thresholds keep their meaning)."""
    return units("", "float32") * (1 + 1 + 2 * _DEGREE + 1)


def threshold(directory: Path | None) -> tuple[int, str]:
    """(work, why): the cost units from which a kernel is split over the thread pool."""
    asked = os.environ.get(ENVIRONMENT, "").strip().lower()
    if asked in ("never", "0"):
        return NEVER, f"{ENVIRONMENT}={asked}"
    if asked.isdigit():
        return int(asked), f"{ENVIRONMENT}={asked}"
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else (os.cpu_count() or 1)
    if threads < 2:
        return NEVER, "one thread: nothing to split over"
    if not native_available():
        return PYTHON_POOL_WORK, "the Python pool's launch"
    if directory is None:  # a measurement costs a tenth of a second: once per machine only
        return DEFAULT_WORK, "the default: no cache directory to record a measurement in"

    def valid(record: dict[str, Any]) -> bool:
        return isinstance(record.get("work"), int) and isinstance(record.get("why"), str)

    key = (RECORD_FORMAT, str(threads), _PROBE.format(offset=0, body=_body()),
           str(PROBE_SIZES), str(MARGIN))
    record, read = remembered(directory, key, lambda: _measure(threads), valid)
    return record["work"], record["why"] + (" (recorded)" if read else "")


def busy(threads: int) -> str | None:
    """What shows other work keeping this machine's threads busy (a measurement would time it,
    not the pool), else None: the share of CPU time idle over ``IDLE_WINDOW`` seconds (Linux's
    ``/proc/stat``; this process sleeps meanwhile) below ``threads - 1/2`` threads' worth."""
    first = _cpu_times()
    if first is None:
        return None
    time.sleep(IDLE_WINDOW)
    second = _cpu_times()
    if second is None or second[1] <= first[1]:
        return None
    idle = (second[0] - first[0]) / (second[1] - first[1])
    needed = (threads - 0.5) / threads
    return f"{idle:.0%} of the CPU time idle" if idle < needed else None


def _cpu_times() -> tuple[int, int] | None:
    """(idle, total) clock ticks of all CPUs since boot, or None where unknown."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return (fields[3] + fields[4], sum(fields[:8])) if len(fields) >= 8 else None


def _measure(threads: int) -> tuple[dict[str, Any], bool]:
    doing = busy(threads)
    if doing is not None:  # measured later, by a process that finds the machine idle
        return {"work": DEFAULT_WORK, "why": f"the default: the machine is busy ({doing} "
                f"on {threads} threads), measured another time"}, False
    pool = native_pool(threads)
    if pool is None:
        return {"work": PYTHON_POOL_WORK, "why": "the native pool could not be built"}, True
    _alive, serial, address = _probe_kernel()  # the module keeps the code
    x = np.random.default_rng(0).random(PROBE_SIZES[-1], dtype=np.float32) * np.float32(0.5)
    y = np.empty_like(x)
    best = {size: [math.inf, math.inf] for size in PROBE_SIZES}
    for _ in range(ROUNDS):
        for size in PROBE_SIZES:
            repeats = max(1, (1 << 18) // size)
            for way in (0, 1):
                start = time.perf_counter()
                for _ in range(repeats):
                    if way:
                        pool.parallel_for(address, (x, y), size)
                    else:
                        serial(x, y, 0, size)
                elapsed = (time.perf_counter() - start) / repeats
                best[size][way] = min(best[size][way], elapsed)
    return decide(best), True


def _probe_kernel() -> tuple[CompiledModule, Any, int]:
    """(its module, kept alive; a ctypes callable ``probe(x, y, start, stop)``; its address, for
    the pool)."""
    module = CompiledModule(_PROBE.format(offset=array_data_offset(), body=_body()))
    address = module.address("probe")
    serial = ctypes.CFUNCTYPE(None, ctypes.py_object, ctypes.py_object, ctypes.c_int64,
                              ctypes.c_int64)(address)
    return module, serial, address


def decide(best: dict[int, list[float]]) -> dict[str, Any]:
    """The record for the best (calling thread, pool) seconds of each probe size."""
    per_element = probe_units()
    winning = None
    for size in sorted(best, reverse=True):
        alone, split = best[size]
        if split > (1 - MARGIN) * alone:
            break
        winning = size
    detail = ", ".join(f"{size}: {alone * 1e6:.1f}/{split * 1e6:.1f} us"
                       for size, (alone, split) in sorted(best.items()))
    if winning is None:
        return {"work": NEVER, "why": f"measured: the pool was never {MARGIN:.0%} faster "
                f"(elements: one thread/pool {detail})"}
    work = 1 << round(math.log2(winning * per_element))
    return {"work": work, "why": f"measured: ~{work * UNIT_NS / 1000:.0f} us of one thread "
            f"(elements: one thread/pool {detail})"}
