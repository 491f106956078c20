"""Backends: the spec §1.2 contract ``backend(graph, example_inputs, **options) -> callable``.

A backend receives the capture program and the example arrays (input-buffer order) and returns a
callable that takes arrays in that order and returns the flat list of output leaves.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from stax.codegen import (
    DiskCache,
    Executable,
    KernelArtifact,
    Target,
    TritonExecutable,
    generate,
    target_for,
)
from stax.codegen.cpu.target import describe_host
from stax.codegen.instantiate import GenericExecutable
from stax.ir import CAPTURE_SCHEMA, GraphProgram, lower_capture, run_graph, verify_graph
from stax.ir.passes import DEFAULT_PIPELINE, decompose_to_basis, run_pipeline
from stax.ir.sizes import active_env
from stax.loop import lower_opgraph

from . import config
from .capture_cache import stax_fingerprint

Backend = Callable[..., Callable[..., list[Any]]]
BACKENDS: dict[str, Backend] = {}
#: whether this process's log has described the host's decisions (``STAX_LOGS=kernels``, once)
_HOST_DESCRIBED: list[bool] = []


def register_backend(name: str, backend: Backend) -> None:
    BACKENDS[name] = backend


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; registered: {sorted(BACKENDS)}") from None


def stax_backend(capture: GraphProgram, example_inputs: list[np.ndarray], *,
                 dump: Callable[[str, Any], None] | None = None,
                 timings: dict[str, float] | None = None,
                 log: Callable[[str, str], None] | None = None,
                 pipeline: str = DEFAULT_PIPELINE, cache_dir: Any = None, device: str = "cpu",
                 target: Target | None = None, **options: Any) -> Callable[..., list[Any]]:
    """The default backend: passes -> op graph -> loop IR -> fused LLVM kernels, for ``target``
    (default: the target of ``device``). The target decides the decomposition basis, the
    materialization policy, the code and the cache keys."""
    target = target or target_for(device)
    dump = dump or (lambda stage, doc: None)
    log = log or (lambda category, text: None)
    if target.device == "cpu" and not _HOST_DESCRIBED:
        _HOST_DESCRIBED.append(True)
        log("kernels", describe_host())
    timings = timings if timings is not None else {}
    clock = time.perf_counter()

    def stage(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = now - clock
        clock = now

    # with STAX_DUMP_DIR every document is wanted, so the plan is made, not loaded; a
    # size-generic plan is not stored (its documents' sizes are expressions)
    plans = _plan_cache(cache_dir) if config.current().dump_dir is None else None
    autotune = bool(options.get("autotune")) and target.identity.device == "cuda"
    key = plans.key(json.dumps(capture.to_json(), sort_keys=True, default=repr), pipeline,
                    stax_fingerprint(), *target.cache_key, "autotune" if autotune else "") \
        if plans is not None else None
    blob = plans.load(key) if plans is not None and key is not None else None
    if plans is not None and key is not None and blob is not None:
        # the whole plan of an identical capture: straight to machine code
        cached = _cached_plan(plans, key, blob, cache_dir)
        if cached is not None and not _admits_traced_sizes(cached[1]):
            cached = None  # another process's generic plan, guarded off these sizes: made anew
        if cached is not None:
            artifact, executable, loaded = cached
            for category in ("passes", "kernels"):
                log(category, f"plan of {capture.name} from the disk cache (key {key}): passes, "
                              "lowering and code generation skipped")
            timings["plan (disk cache)"] = loaded - clock
            clock = loaded
            dump("kernels", artifact)
            stage(_jit_stage(executable))
            return executable
    capture = GraphProgram.from_json(capture.to_json(), CAPTURE_SCHEMA)  # passes rewrite a copy
    log("passes", f"passes on {capture.name}:\n{run_pipeline(capture.graph, pipeline)}")
    stage("passes")
    opgraph = lower_capture(capture)
    expanded = decompose_to_basis(opgraph.graph, basis=target.basis)  # spec §4.8
    if expanded:
        log("passes", f"op-level decomposition: {', '.join(expanded)}")
    verify_graph(opgraph.graph)
    dump("opgraph", opgraph)
    stage("opgraph")
    # its cost model (§6.6), its dtypes and numeric limits
    loop = lower_opgraph(opgraph, materialize=target.materialize, options=target.loop_options)
    dump("loopir", loop)
    stage("loopir")
    artifact = _tuned(loop, example_inputs, target, cache_dir, log) if autotune else None
    artifact = artifact or generate(loop, target=target)
    dump("kernels", artifact)
    stage("kernels")
    if plans is not None and key is not None:
        plans.store(key, json.dumps(artifact.to_json()).encode())
    executable = make_executable(artifact, cache_dir)
    stage(_jit_stage(executable))
    executable.artifact = artifact
    return executable


def _tuned(loop: Any, example_inputs: list[np.ndarray], target: Target, cache_dir: Any,
           log: Callable[[str, str], None]) -> KernelArtifact | None:
    """``options={"autotune": True}`` on CUDA: each kernel's launch chosen by timing a few
    candidates on device copies of the example inputs (``triton/autotune.py``: a progress line
    per kernel, winners kept under ``cache_dir/autotune`` per kernel, shape class and GPU model).
    None, with a log line, where torch is missing (the tuner times through it)."""
    try:
        import torch
    except ImportError:
        log("kernels", "autotune skipped: it times kernels on torch tensors, and torch is not "
                       "installed; the heuristic launches are used")
        return None
    from stax.codegen.triton.autotune import tune

    from .devices import interpreting

    device = torch.device("cpu" if interpreting() else "cuda")
    arrays = []
    for a in example_inputs:
        if not isinstance(a, np.ndarray) or a.dtype == object:
            arrays.append(a)
            continue
        strides = tuple(s // a.itemsize for s in a.strides)
        host = torch.from_numpy(np.ascontiguousarray(a)).reshape(a.shape)
        on_device = torch.empty_strided(a.shape, strides, dtype=host.dtype, device=device)
        on_device.copy_(host)  # the plan's layout, the example's values
        arrays.append(on_device)
    return tune(loop, arrays, target=target, cache_dir=cache_dir)


def make_executable(artifact: KernelArtifact, cache_dir: Any) -> Executable | TritonExecutable:
    """What runs an artifact: its target's executable (LLVM machine code for the CPU, Triton
    kernels on the inputs' GPU for CUDA, their binaries kept under ``cache_dir``; Triton is
    imported only then)."""
    if artifact.sizes:
        return GenericExecutable(artifact, cache_dir)  # sizes given per call
    if artifact.target.get("device") == "cuda":
        return TritonExecutable(artifact, cache_dir=cache_dir)
    return Executable(artifact, cache_dir)


def _admits_traced_sizes(executable: Any) -> bool:
    """Whether a stored plan serves the sizes this compile traced: a generic plan's guards
    were decided at another process's sizes and may exclude these."""
    env = active_env() if isinstance(executable, GenericExecutable) else None
    if env is None:
        return True
    hints = env.hints
    return all(low <= hints.get(name, low) <= high
               for name, (low, high) in executable.symbols.items()) and \
        all(guard.holds(hints) for guard in executable.guards)


def _jit_stage(executable: Executable | TritonExecutable) -> str:
    module = getattr(executable, "module", None)
    return "jit (disk cache)" if getattr(module, "from_cache", False) else "jit"


def _plan_cache(cache_dir: Any) -> DiskCache | None:
    """Kernel plans stored by the content of the capture they came from (with the pipeline and
    the target's cache key): a warm start skips passes, lowering and IR emission."""
    if cache_dir is None:
        return None
    return DiskCache(Path(cache_dir) / "plans", suffix=".json", root=cache_dir)


def _cached_plan(plans: DiskCache, key: str, blob: bytes, cache_dir: Any
                 ) -> tuple[KernelArtifact, Executable | TritonExecutable, float] | None:
    """The executable of a stored plan (and when its document was read), or None: a plan that
    does not parse or build (a defect of the entry, an extern outside the allow-list) is a miss,
    reported once and removed; the plan is made again from the capture."""
    try:
        artifact = KernelArtifact.from_json(json.loads(blob))
        loaded = time.perf_counter()
        executable = make_executable(artifact, cache_dir)
    except Exception as exc:  # any defect of a stored document is a miss
        plans.discard(key, f"the plan does not load ({type(exc).__name__}: {exc})")
        return None
    executable.artifact = artifact
    return artifact, executable, loaded


def eager_backend(capture: GraphProgram, example_inputs: list[np.ndarray],
                  **options: Any) -> Callable[..., list[Any]]:
    """Runs the captured graph with the NumPy reference interpreter."""
    names = [n for n in capture.inputs if n is not None]
    graph = capture.graph

    def run(*arrays: np.ndarray) -> list[Any]:
        return list(run_graph(graph, dict(zip(names, arrays))))
    return run


register_backend("stax", stax_backend)
register_backend("eager", eager_backend)


def dump_path(directory: Path, name: str, version: int, stage: str) -> Path:
    return directory / f"{name}.v{version}.{stage}.json"
