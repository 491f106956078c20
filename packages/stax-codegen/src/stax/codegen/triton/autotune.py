"""Autotuning of the Triton kernels' launches (issue 12 item 4, ``options={"autotune": True}``):
a small search over the block shapes and warps ``launch.candidates`` proposes for each kernel
(the heuristic's choice first), timed on the call's own arrays, one progress line per kernel on
stderr, the winner cached on disk per kernel, shape class and GPU model.

Kernels are tuned one after another, each with the winners of those before it: a candidate is the
whole program generated again with that kernel's block shape (its source can change with it: a
phase persistent under one ``R0_BLOCK`` is looped under a smaller one) and timed as a whole.
The cache key is the kernel's source under the heuristic's launch (which spells out its shape:
sizes are literals), the GPU's name and Triton's version; an entry is a small JSON document
under ``<cache_dir>/autotune``, checked when read (a malformed one is a miss).
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from stax.loop import LoopProgram

from ..artifact import KernelArtifact
from ..target import Target
from .generate import generate_triton, kernel_shapes
from .launch import Blocks, LaunchPolicy, candidates
from .target import triton_target

Timer = Callable[[Callable[[], Any]], float]


def device_timer(run: Callable[[], Any]) -> float:
    """Median seconds of ``run`` on the GPU: ``triton.testing.do_bench`` (CUDA events, the L2
    flushed before each timed run) where torch is installed, else CuPy's events."""
    try:
        import torch  # noqa: F401  (do_bench reaches the device through torch)
    except ImportError:
        return _cupy_timer(run)
    import triton.testing
    return triton.testing.do_bench(run, warmup=10, rep=40, return_mode="median") * 1e-3


def _cupy_timer(run: Callable[[], Any], repeats: int = 20) -> float:
    import cupy
    times = []
    for i in range(repeats + 3):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        run()
        end.record()
        end.synchronize()
        if i >= 3:  # warmed up
            times.append(cupy.cuda.get_elapsed_time(start, end) * 1e-3)
    return statistics.median(times)


def host_timer(run: Callable[[], Any], repeats: int = 3) -> float:
    """Median wall seconds of ``run`` (the interpreter, where no GPU times it)."""
    times = []
    for _ in range(repeats):
        clock = time.perf_counter()
        run()
        times.append(time.perf_counter() - clock)
    return statistics.median(times)


def gpu_model() -> str:
    """The current CUDA device's name (through torch, or CuPy without it), or ``interpreter``
    under ``TRITON_INTERPRET``."""
    import triton
    if triton.knobs.runtime.interpret:
        return "interpreter"
    try:
        import torch
    except ImportError:
        import cupy
        name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "interpreter"


def cache_key(source: str, gpu: str) -> str:
    import triton
    text = json.dumps([source, gpu, triton.__version__])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def kernel_source(artifact: KernelArtifact, name: str) -> str:
    """The source of kernel ``name`` in ``artifact``'s module (from its ``@triton.jit`` line to
    the next kernel's)."""
    source = artifact.triton_source or ""
    start = source.index(f"def {name}(")
    end = source.find("@triton.jit", start)
    return source[source.rfind("@triton.jit", 0, start):end if end >= 0 else len(source)]


def _read(path: Path) -> Blocks | None:
    try:
        doc = json.loads(path.read_text())
        blocks = Blocks(int(doc["xblock"]), int(doc["r0_block"]), int(doc["num_warps"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    ok = all(v > 0 and v & (v - 1) == 0 for v in (blocks.xblock, blocks.num_warps)) and \
        (blocks.r0_block == 0 or blocks.r0_block & (blocks.r0_block - 1) == 0)
    return blocks if ok else None


def tune(program: LoopProgram, arrays: Sequence[Any], target: Target | None = None,
         policy: LaunchPolicy | None = None, cache_dir: str | Path | None = None,
         timer: Timer | None = None, progress: Callable[[str], None] | None = None,
         limit: int = 8) -> KernelArtifact:
    """The artifact of ``program`` with each kernel's launch chosen by timing up to ``limit``
    candidates on ``arrays`` (the inputs in input-buffer order, torch tensors on the GPU, or CPU
    tensors under the interpreter); winners are read from and written to ``cache_dir``."""
    from .executable import TritonExecutable

    target = target or triton_target()
    policy = policy or LaunchPolicy()
    gpu = gpu_model()
    timer = timer or (host_timer if gpu == "interpreter" else device_timer)
    progress = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    folder = Path(cache_dir) / "autotune" if cache_dir is not None else None
    baseline = generate_triton(program, target, policy=policy)
    chosen: dict[str, Blocks] = {}
    for name, xnumel, inner, kind, itemsize in kernel_shapes(program, policy=policy):
        path = None
        if folder is not None:
            path = folder / f"{cache_key(kernel_source(baseline, name), gpu)}.json"
            cached = _read(path)
            if cached is not None:
                chosen[name] = cached
                progress(f"stax: autotune {program.name}.{name}: {cached.label()} (disk cache)")
                continue
        options = candidates(xnumel, inner, kind, policy, limit, itemsize)
        timed: list[tuple[float, Blocks]] = []
        for blocks in options:
            artifact = generate_triton(program, target, policy=policy, configs={**chosen, name: blocks})
            try:
                run = TritonExecutable(artifact).run
                run(*arrays)  # compiled and checked to run before it is timed
                timed.append((timer(lambda run=run: run(*arrays)), blocks))
            except Exception as exc:  # a configuration that does not compile or fit: skipped
                progress(f"stax: autotune {program.name}.{name}: {blocks.label()} failed "
                         f"({type(exc).__name__})")
        if not timed:
            continue
        best_time, best = min(timed, key=lambda t: t[0])
        chosen[name] = best
        progress(f"stax: autotune {program.name}.{name}: {len(timed)} configs, best {best.label()} "
                 f"{best_time * 1e3:.4f} ms (heuristic {options[0].label()} {timed[0][0] * 1e3:.4f} ms)"
                 if timed[0][1] == options[0] else
                 f"stax: autotune {program.name}.{name}: {len(timed)} configs, best {best.label()} "
                 f"{best_time * 1e3:.4f} ms")
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{id(path)}.tmp")
            partial.write_text(json.dumps({"xblock": best.xblock, "r0_block": best.r0_block,
                                           "num_warps": best.num_warps, "seconds": best_time,
                                           "gpu": gpu, "kernel": name}))
            partial.replace(path)
    return generate_triton(program, target, policy=policy, configs=chosen)


def variants(program: LoopProgram, policy: LaunchPolicy | None = None, limit: int = 8
             ) -> list[tuple[str, Mapping[str, Blocks]]]:
    """Every kernel's candidates, one kernel varied at a time (the others' heuristic launch):
    ``(label, configs)`` pairs for ``generate_triton(..., configs=configs)`` (a benchmark's
    sweep)."""
    policy = policy or LaunchPolicy()
    out = []
    for name, xnumel, inner, kind, itemsize in kernel_shapes(program, policy=policy):
        for blocks in candidates(xnumel, inner, kind, policy, limit, itemsize):
            out.append((f"{name}:{blocks.label()}", {name: blocks}))
    return out


__all__ = ["cache_key", "device_timer", "gpu_model", "host_timer", "tune", "variants"]
