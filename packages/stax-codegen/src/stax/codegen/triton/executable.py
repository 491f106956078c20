"""Running a CUDA artifact: its Triton source loaded from a real file (Triton reads a kernel's
source through ``inspect``), each kernel ``triton.jit``-ed, buffers allocated with torch on the
inputs' device, kernels launched step by step with their planned grids, NumPy steps through the
host (``externs.py``, temporary).

Under ``TRITON_INTERPRET=1`` (torch CPU tensors) Triton runs the kernels as NumPy code, and the
module's ``libdevice`` is NumPy's (``interpret.py``); NumPy's warnings about the masked-off
lanes it computes anyway are silenced. Triton and torch are imported when an executable is made,
never when Stax is imported.

Not yet (issue 12): launches go through ``kernel[grid](...)`` (Triton's Python launcher, about
tens of microseconds each), no disk cache of binaries, no CUDA graphs, no CuPy arrays.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import math
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..artifact import ExternPlan, KernelArtifact
from ..executable import ExternResultMismatch, InputMismatch
from .externs import host_step
from .interpret import numpy_libdevice

#: every kernel is compiled so that it rounds as NumPy does: no ``a * b + c`` contracted into an
#: FMA (Triton 3.9 still contracts by default), no float32 subnormals flushed in libdevice
LAUNCH_OPTIONS = {"enable_fp_fusion": False, "enable_reflect_ftz": False}

_SOURCE_DIR: list[Path] = []


def torch_dtypes(torch: Any) -> dict[str, Any]:
    return {"bool": torch.bool, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
            "int64": torch.int64, "uint8": torch.uint8, "uint16": torch.uint16,
            "uint32": torch.uint32, "uint64": torch.uint64, "float32": torch.float32,
            "float64": torch.float64}


def load_source(source: str, directory: str | Path | None = None) -> ModuleType:
    """The module of ``source``, written to ``directory`` (default: a directory of this process
    under the system's temporary one) as ``stax_triton_<hash>.py`` and imported from there."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    if directory is None:
        if not _SOURCE_DIR:
            _SOURCE_DIR.append(Path(tempfile.mkdtemp(prefix="stax-triton-")))
        directory = _SOURCE_DIR[0]
    path = Path(directory) / f"stax_triton_{digest}.py"
    if not path.exists() or path.read_text() != source:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        partial.write_text(source)
        partial.replace(path)
    name = f"stax_triton_{digest}"
    found = sys.modules.get(name)
    if found is not None and getattr(found, "__file__", None) == str(path):
        return found
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class TritonExecutable:
    """``executable(*tensors)`` runs a CUDA artifact on torch tensors given in input-buffer order
    (each with the shape, dtype and strides of its plan, all on one device) and returns the flat
    list of output leaves (tensors on that device; a NumPy constant stays one)."""

    def __init__(self, artifact: KernelArtifact, source_dir: str | Path | None = None) -> None:
        if artifact.triton_source is None:
            raise ValueError(f"{artifact.name}: the artifact holds no Triton source (its target "
                             f"is {artifact.target.get('device')!r})")
        import torch
        import triton

        self.torch = torch
        self.artifact = artifact
        self.interpreting = bool(triton.knobs.runtime.interpret)
        self.module = load_source(artifact.triton_source, source_dir)
        if self.interpreting:
            self.module.libdevice = numpy_libdevice()  # type: ignore[attr-defined]
        dtypes = torch_dtypes(torch)
        for b in artifact.buffers:
            if b.role not in ("input", "extern") and any(s < 0 for s in b.strides):
                raise NotImplementedError(f"{artifact.name}: buffer {b.name} has negative "
                                          f"strides {b.strides}, which torch cannot allocate")
        inputs = [b for b in artifact.buffers if b.role == "input"]
        self.input_names = [b.name for b in inputs]
        self.input_layouts = [None if np.dtype(b.dtype) == object else
                              (tuple(b.shape), tuple(b.strides), dtypes[b.dtype]) for b in inputs]
        slot = {name: i for i, name in enumerate(self.input_names)}
        planned = [b for b in artifact.buffers if b.role in ("output", "intermediate")]
        for b in planned:
            slot[b.name] = len(slot)
        for e in artifact.externs:
            slot[e.buffer] = len(slot)
        self.size = len(slot)
        self.slot = slot
        storage = artifact.storage
        shared = {b.name for b in planned if storage is not None and storage.shared(b.name)}
        self.blocks = {storage.storage[n]: storage.sizes[storage.storage[n]] for n in shared} \
            if storage is not None else {}
        self.allocations = [(slot[b.name], b, storage.storage[b.name] if b.name in shared else None)
                            for b in planned]
        kernels = {k.name: k for k in artifact.kernels}
        externs = {e.buffer: e for e in artifact.externs}
        self.steps: list[Callable[[list[Any]], None]] = []
        for step in artifact.steps:
            if step in externs:
                self.steps.append(host_step(externs[step], slot, torch, self._to_device))
            else:
                self.steps.append(self._launcher(kernels[step], slot))
        self.checks = [(slot[name], why) for name, why in artifact.checks.items()]
        self.outputs = [(slot[o["buffer"]], o["scalar"]) if "buffer" in o else (None, o["const"])
                        for o in artifact.outputs]
        self._device: Any = None

    def _launcher(self, plan: Any, slot: dict[str, int]) -> Callable[[list[Any]], None]:
        kernel = getattr(self.module, plan.name)
        launch = plan.launch
        args = [slot[a] for a in plan.args]
        grid = tuple(launch.grid)
        options = {**launch.constants, "num_warps": launch.num_warps, **LAUNCH_OPTIONS}

        def run(env: list[Any]) -> None:
            if math.prod(grid) == 0:
                return  # nothing to compute (an empty array)
            kernel[grid](*[env[a] for a in args], **options)
        return run

    def _to_device(self, array: np.ndarray, plan: ExternPlan) -> Any:
        torch = self.torch
        host = torch.from_numpy(np.ascontiguousarray(array))
        if all(s >= 0 for s in plan.strides):
            out = torch.empty_strided(plan.shape, plan.strides, dtype=torch_dtypes(torch)[plan.dtype],
                                      device=self._device)
            out.copy_(host)
            return out
        return host.to(self._device)

    def _allocate(self, env: list[Any], device: Any) -> None:
        torch = self.torch
        dtypes = torch_dtypes(torch)
        blocks = {i: torch.empty(size, dtype=torch.uint8, device=device)
                  for i, size in self.blocks.items()}
        for i, b, block in self.allocations:
            if block is None:
                env[i] = torch.empty_strided(b.shape, b.strides, dtype=dtypes[b.dtype], device=device)
            else:
                nbytes = math.prod(b.shape) * np.dtype(b.dtype).itemsize
                env[i] = blocks[block][:nbytes].view(dtypes[b.dtype]).as_strided(b.shape, b.strides)

    def __call__(self, *tensors: Any) -> list[Any]:
        """Run on ``tensors``, each checked to be a torch tensor with the shape, dtype and
        strides the plan was made for, all on one device (``InputMismatch`` names the first that
        is not). ``run`` is the same call unchecked, for callers that checked them already."""
        self._check_inputs(tensors)
        return self.run(*tensors)

    def run(self, *tensors: Any) -> list[Any]:
        torch = self.torch
        device = next((t.device for t in tensors if isinstance(t, torch.Tensor)),
                      torch.device("cpu"))
        self._device = device
        env: list[Any] = [*tensors, *([None] * (self.size - len(tensors)))]
        self._allocate(env, device)
        quiet = np.errstate(all="ignore") if self.interpreting else contextlib.nullcontext()
        # Triton launches on the current device: make it the inputs' (and their current stream)
        on_device = torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
        with quiet, on_device:
            for step in self.steps:
                step(env)
        for i, why in self.checks:
            if bool(env[i].any()):  # an index out of bounds: NumPy's error comes from an eager run
                raise ExternResultMismatch(f"a check failed: {why}")
        return [extra if i is None else env[i] for i, extra in self.outputs]

    def _check_inputs(self, tensors: tuple[Any, ...]) -> None:
        """``InputMismatch`` for the first input the kernels cannot read as planned (the stride
        of an axis of length 1 never matters), or inputs on more than one device."""
        names, layouts = self.input_names, self.input_layouts
        name = self.artifact.name
        if len(tensors) != len(layouts):
            raise InputMismatch(f"{name}: expected {len(layouts)} input tensors "
                                f"({', '.join(names)}), got {len(tensors)}")
        devices = set()
        for i, (t, layout) in enumerate(zip(tensors, layouts)):
            if layout is None:
                continue
            shape, strides, dtype = layout
            what = f"{name}: input {i} ({names[i]!r})"
            if not isinstance(t, self.torch.Tensor):
                raise InputMismatch(f"{what}: expected a torch tensor, got {type(t).__name__}")
            if tuple(t.shape) != shape or t.dtype != dtype:
                raise InputMismatch(f"{what}: expected {dtype}{list(shape)}, got "
                                    f"{t.dtype}{list(t.shape)}")
            if t.numel() and any(n != 1 and got != want
                                 for n, got, want in zip(shape, t.stride(), strides)):
                raise InputMismatch(f"{what}: expected strides {strides} (elements), got "
                                    f"{t.stride()}")
            devices.add(t.device)
        if len(devices) > 1:
            raise InputMismatch(f"{name}: inputs on several devices "
                                f"({', '.join(sorted(map(str, devices)))})")


__all__ = ["LAUNCH_OPTIONS", "TritonExecutable", "load_source"]
