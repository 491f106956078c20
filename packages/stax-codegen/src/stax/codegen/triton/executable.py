"""Running a CUDA artifact on torch tensors or CuPy arrays: its Triton source loaded from a real
file (Triton reads a kernel's source through ``inspect``), buffers allocated through the inputs'
library (its caching allocator, ``arrays.py``), kernels launched step by step with their planned
grids on that library's current stream of the inputs' device, NumPy steps as the same call
through CuPy (``externs.py``); the outputs come back as arrays of the inputs' kind and device.

On a GPU each kernel is launched through Triton's compiled-kernel launcher with its arguments
bound once (``launcher.py``); the binaries are compiled once per device and kept under the
cache directory given (``binaries.py``), so a warm process launches without compiling. Under
``TRITON_INTERPRET=1`` (torch CPU tensors) Triton runs the kernels as NumPy code through
``kernel[grid](...)``, and the module's ``libdevice`` is NumPy's (``interpret.py``); NumPy's
warnings about the masked-off lanes it computes anyway are silenced. Triton is imported when an
executable is made, torch or CuPy when its arrays are used, never when Stax is imported.

A document's ``triton_source`` is Python text: it is checked to have the generator's form before
any of it is written or imported (``verify.py``), so text that would import a module or call a
Python function is refused (``UntrustedSourceError``), never run.

Not yet: CUDA graphs.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..artifact import KernelArtifact, KernelPlan
from ..executable import ExternResultMismatch, InputMismatch
from . import corpus
from .arrays import ArrayLibrary, library, library_of
from .binaries import BinaryCache
from .externs import Step
from .interpret import numpy_libdevice
from .launcher import KernelLauncher, python_launch
from .verify import check_source

#: every kernel is compiled so that it rounds as NumPy does: no ``a * b + c`` contracted into an
#: FMA (Triton 3.9 still contracts by default), no float32 subnormals flushed in libdevice
LAUNCH_OPTIONS = {"enable_fp_fusion": False, "enable_reflect_ftz": False}

_SOURCE_DIR: list[Path] = []
_log = logging.getLogger("stax.codegen")


def torch_dtypes(torch: Any) -> dict[str, Any]:
    return {"bool": torch.bool, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
            "int64": torch.int64, "uint8": torch.uint8, "uint16": torch.uint16,
            "uint32": torch.uint32, "uint64": torch.uint64, "float32": torch.float32,
            "float64": torch.float64}


def load_source(source: str, directory: str | Path | None = None) -> ModuleType:
    """The module of ``source``, written to ``directory`` (default: a directory of this process
    under the system's temporary one) as ``stax_triton_<hash>.py`` and imported from there.
    ``verify.UntrustedSourceError`` (before anything is written or run) for source that is not
    of the generator's form: a document's text runs only as kernel code (``verify.py``)."""
    check_source(source)
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    if directory is None:
        if not _SOURCE_DIR:
            _SOURCE_DIR.append(Path(tempfile.mkdtemp(prefix="stax-triton-")))
        directory = _SOURCE_DIR[0]
    path = Path(directory) / f"stax_triton_{digest}.py"
    if not path.exists() or path.read_text(encoding="utf-8") != source:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        partial.write_text(source, encoding="utf-8")  # as verify.check_source read it
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


def check_plan(artifact: KernelArtifact) -> None:
    """``UntrustedSourceError`` for source not of the generator's form (``verify.py``);
    ``ValueError`` for a plan its source does not match: a step that is neither a kernel nor a
    NumPy step, a kernel without a launch, or one the source does not define with a pointer per
    buffer and its launch's block sizes as parameters."""
    assert artifact.triton_source is not None
    signatures = check_source(artifact.triton_source, f"{artifact.name}: the Triton source")
    kernels = {k.name: k for k in artifact.kernels}
    externs = {e.buffer for e in artifact.externs}
    for step in artifact.steps:
        if step not in kernels and step not in externs:
            raise ValueError(f"{artifact.name}: step {step!r} is neither a kernel nor a NumPy step")
    for k in artifact.kernels:
        if k.launch is None:
            raise ValueError(f"{artifact.name}: kernel {k.name} has no launch (a CUDA document "
                             "records each kernel's grid, block sizes and warps)")
        params = signatures.get(k.name)
        blocks = {name for name, _ in k.launch.blocks}
        pointers = len(k.args) + len(k.size_args)  # (a size-generic kernel's sizes after them)
        if params is None or len(params) != pointers + len(blocks) or \
                tuple(params[len(k.args):pointers]) != tuple(k.size_args) or \
                set(params[pointers:]) != blocks:
            found = "no such function" if params is None else f"def {k.name}({', '.join(params)})"
            raise ValueError(f"{artifact.name}: kernel {k.name} of the plan (buffers "
                             f"{', '.join(k.args)}; blocks {', '.join(sorted(blocks))}) does not "
                             f"match its Triton source ({found})")


class _Kernel:
    """One kernel step: its buffers' slots, its compiled launcher (on a GPU) and its Python
    path (the interpreter, or where the compiled launcher cannot be used)."""

    def __init__(self, plan: KernelPlan, fn: Any, slot: dict[str, int], dtypes: dict[str, str],
                 source: str, cache: BinaryCache | None,
                 sizes: dict[str, int] | None = None) -> None:
        launch = plan.launch
        self.name = plan.name
        self.args = [slot[a] for a in plan.args]
        options = {"num_warps": launch.num_warps, **LAUNCH_OPTIONS}
        if getattr(launch, "num_stages", None):
            options["num_stages"] = launch.num_stages
        # a size-generic kernel's sizes, after its pointers (issue 15): this instance's values
        self.sizes = tuple((sizes or {})[name] for name in plan.size_args)
        launched = _with_sizes(fn, self.sizes) if self.sizes else fn
        self.python = python_launch(launched, tuple(launch.grid), {**launch.constants, **options})
        self.compiled = KernelLauncher(source, fn, [dtypes[a] for a in plan.args],
                                       dict(launch.constants), options, tuple(launch.grid),
                                       cache, self.sizes,
                                       "i32" if plan.index_bits == 32 else "i64")
        self.verified = False  # the compiled launcher ran once (else a failure falls back)
        self.fallback: str | None = None  # why this kernel goes through Triton's Python path


class _with_sizes:
    def __init__(self, fn: Any, sizes: tuple[int, ...]) -> None:
        self.fn, self.sizes = fn, sizes

    def __getitem__(self, grid: Any) -> Any:
        launch = self.fn[grid]
        return lambda *arrays, **options: launch(*arrays, *self.sizes, **options)


class TritonExecutable:
    """``executable(*arrays)`` runs a CUDA artifact on torch tensors or CuPy arrays given in
    input-buffer order (each with the shape, dtype and strides of its plan, all of one kind on
    one device) and returns the flat list of output leaves (arrays of that kind on that device;
    a NumPy constant stays one). ``cache_dir``: where compiled binaries are kept (None: only in
    this process)."""

    def __init__(self, artifact: KernelArtifact, source_dir: str | Path | None = None,
                 cache_dir: str | Path | None = None, sizes: dict[str, int] | None = None
                 ) -> None:
        if artifact.triton_source is None:
            raise ValueError(f"{artifact.name}: the artifact holds no Triton source (its target "
                             f"is {artifact.target.get('device')!r})")
        import triton

        check_plan(artifact)  # before anything of its source is written or imported
        self.artifact = artifact
        corpus.record(artifact)  # with STAX_TRITON_CORPUS: compiled for sm_90 after the tests
        self.interpreting = bool(triton.knobs.runtime.interpret)
        self.module = load_source(artifact.triton_source, source_dir)
        if self.interpreting:
            self.module.libdevice = numpy_libdevice()  # type: ignore[attr-defined]
        self.cache = BinaryCache(cache_dir) if cache_dir is not None and not self.interpreting \
            else None
        self.launch_path = "interpreter" if self.interpreting else "compiled"
        for b in artifact.buffers:
            if b.role not in ("input", "extern") and any(s < 0 for s in b.strides):
                raise NotImplementedError(f"{artifact.name}: buffer {b.name} has negative "
                                          f"strides {b.strides}, which cannot be allocated")
        inputs = [b for b in artifact.buffers if b.role == "input"]
        self.input_names = [b.name for b in inputs]
        self.input_layouts = [None if np.dtype(b.dtype) == object else
                              (tuple(b.shape), tuple(b.strides), b.dtype) for b in inputs]
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
        self.allocations = [(slot[b.name], tuple(b.shape), tuple(b.strides), b.dtype,
                             storage.storage[b.name] if b.name in shared else None)
                            for b in planned]
        dtypes = {b.name: b.dtype for b in artifact.buffers}
        kernels = {k.name: k for k in artifact.kernels}
        externs = {e.buffer: e for e in artifact.externs}
        self.kernels: list[_Kernel] = []
        self.externs: list[Step] = []
        self.steps: list[_Kernel | Step] = []
        for name in artifact.steps:
            if name in externs:
                self.externs.append(Step(externs[name], slot))
                self.steps.append(self.externs[-1])
            else:
                plan = kernels[name]
                self.kernels.append(_Kernel(plan, getattr(self.module, plan.name), slot, dtypes,
                                            artifact.triton_source, self.cache, sizes))
                self.steps.append(self.kernels[-1])
        self.checks = [(slot[name], why) for name, why in artifact.checks.items()]
        self.outputs = [(slot[o["buffer"]], o["scalar"]) if "buffer" in o else (None, o["const"])
                        for o in artifact.outputs]
        self._library: ArrayLibrary | None = None
        self._made: dict[tuple[str, Any], list[tuple[int, Any]]] = {}

    @property
    def host_steps(self) -> list[str]:
        """The NumPy steps that ran through the host (their module lacked the call)."""
        return [s.plan.target for s in self.externs if s.on_host]

    def __call__(self, *arrays: Any) -> list[Any]:
        """Run on ``arrays``, each checked to be a torch tensor or CuPy array with the shape,
        dtype and strides the plan was made for, all of one kind on one device
        (``InputMismatch`` names the first that is not). ``run`` is the same call unchecked,
        for callers that checked them already."""
        self._check_inputs(arrays)
        return self.run(*arrays)

    def run(self, *arrays: Any) -> list[Any]:
        lib, like = self._library, None
        for a in arrays:
            if lib is not None and lib.is_array(a):
                like = a
                break
            found = library_of(a)
            if found is not None:
                lib, like = found, a
                break
        if lib is None or like is None:  # no array input: torch's default device
            lib = library("torch")
            like = lib.torch.device("cpu" if self.interpreting else "cuda")  # type: ignore[attr-defined]
            index = None if self.interpreting else lib.current_device()
        else:
            index = lib.device_index(like)
        self._library = lib
        env: list[Any] = [*arrays, *([None] * (self.size - len(arrays)))]
        if self.interpreting:
            with np.errstate(all="ignore"):
                self._allocate(env, lib, like, index)
                for step in self.steps:
                    if isinstance(step, Step):
                        step(env, lib, like)
                    else:
                        step.python(*[env[a] for a in step.args])
        elif index != lib.current_device():
            with lib.on_device(index):
                self._allocate(env, lib, like, index)
                self._launch_all(env, lib, like, index)  # type: ignore[arg-type]
        else:
            self._allocate(env, lib, like, index)
            self._launch_all(env, lib, like, index)  # type: ignore[arg-type]
        for i, why in self.checks:
            if bool(env[i].any()):  # an index out of bounds: NumPy's error comes from an eager run
                raise ExternResultMismatch(f"a check failed: {why}")
        return [extra if i is None else env[i] for i, extra in self.outputs]

    def _launch_all(self, env: list[Any], lib: ArrayLibrary, like: Any, index: int) -> None:
        stream = lib.current_stream(index)
        ptr = lib.pointer
        for step in self.steps:
            if type(step) is _Kernel:
                if step.verified:
                    step.compiled.launch([ptr(env[a]) for a in step.args], stream, index)
                else:
                    self._first_launch(step, env, lib, like, index, stream)
            else:
                step(env, lib, like)  # type: ignore[call-arg]

    def _first_launch(self, step: _Kernel, env: list[Any], lib: ArrayLibrary, like: Any,
                      index: int, stream: int) -> None:
        """A kernel's first launch: through the compiled launcher, or, where that fails (a
        Triton whose launcher takes other arguments), through Triton's Python path from then
        on, which is slower but the same kernel."""
        if step.fallback is None:
            try:
                step.compiled.launch([lib.data_ptr(env[a]) for a in step.args], stream, index)
                step.verified = True
                return
            except Exception as exc:
                step.fallback = f"{type(exc).__name__}: {exc}"
                self.launch_path = "python"
                _log.warning("stax: kernel %s launches through Triton's Python path (its compiled "
                             "launcher failed: %s)", step.name, step.fallback)
        torch_lib = library("torch")
        tensors = [env[a] if torch_lib.is_array(env[a]) else torch_lib.from_cupy(env[a], None)
                   for a in step.args]
        torch = torch_lib.torch  # type: ignore[attr-defined]
        on_stream = torch.cuda.stream(torch.cuda.ExternalStream(stream)) if lib.name != "torch" \
            else contextlib.nullcontext()
        with on_stream:
            step.python(*tensors)

    def _allocate(self, env: list[Any], lib: ArrayLibrary, like: Any, index: int | None) -> None:
        """The planned buffers: each its own allocation (made ready once per library and
        device), or a view of a block shared by buffers whose lives do not overlap."""
        key = (lib.name, index)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = [(i, lib.allocation(like, shape, strides, dtype))
                                      for i, shape, strides, dtype, block in self.allocations
                                      if block is None]
        for i, make in made:
            env[i] = make()
        if self.blocks:
            blocks = {i: lib.empty_bytes(size, like) for i, size in self.blocks.items()}
            for i, shape, strides, dtype, block in self.allocations:
                if block is not None:
                    env[i] = lib.view_strided(blocks[block], shape, strides, dtype)

    def _check_inputs(self, arrays: tuple[Any, ...]) -> None:
        """``InputMismatch`` for the first input the kernels cannot read as planned (the stride
        of an axis of length 1 never matters), inputs of two libraries or on more than one
        device, or on a device the executable does not run on."""
        names, layouts = self.input_names, self.input_layouts
        name = self.artifact.name
        if len(arrays) != len(layouts):
            raise InputMismatch(f"{name}: expected {len(layouts)} input arrays "
                                f"({', '.join(names)}), got {len(arrays)}")
        kinds, devices = set(), set()
        known = self._library
        for i, (a, layout) in enumerate(zip(arrays, layouts)):
            if layout is None:
                continue
            lib = known if known is not None and known.is_array(a) else library_of(a)
            if lib is None:
                hint = " (move it to the GPU: torch.as_tensor(x, device='cuda') or " \
                       "cupy.asarray(x))" if isinstance(a, np.ndarray) else ""
                raise InputMismatch(f"{name}: input {i} ({names[i]!r}): expected a torch tensor "
                                    f"or a CuPy array, got {type(a).__name__}{hint}")
            got = lib.layout(a)
            if got != layout:
                self._mismatch(i, got, layout)
            kinds.add(lib)
            devices.add(lib.device_of(a))
        if len(kinds) > 1:
            raise InputMismatch(f"{name}: inputs of several kinds "
                                f"({', '.join(sorted(k.name for k in kinds))}); pass all as torch "
                                "tensors or all as CuPy arrays")
        if len(devices) > 1:
            raise InputMismatch(f"{name}: inputs on several devices ({', '.join(sorted(devices))})")
        for device in devices:
            if self.interpreting != (device == "cpu") or device.split(":")[0] not in ("cpu", "cuda"):
                raise InputMismatch(f"{name}: inputs on {device}, but this executable runs on "
                                    f"{'the CPU (Triton interpreter)' if self.interpreting else 'CUDA'}")

    def _mismatch(self, i: int, got: tuple[Any, ...], layout: tuple[Any, ...]) -> None:
        """``InputMismatch`` for input ``i`` laid out as ``got`` where the plan says ``layout``,
        unless the two differ only in the stride of an axis of length 1 (or of an empty array),
        which never matters."""
        (got_shape, got_strides, got_dtype), (shape, strides, dtype) = got, layout
        what = f"{self.artifact.name}: input {i} ({self.input_names[i]!r})"
        if got_shape != shape or got_dtype != dtype:
            raise InputMismatch(f"{what}: expected {dtype}{list(shape)}, got "
                                f"{got_dtype}{list(got_shape)}")
        if 0 not in shape and any(n != 1 and g != w for n, g, w in zip(shape, got_strides, strides)):
            raise InputMismatch(f"{what}: expected strides {strides} (elements), got {got_strides}")


__all__ = ["LAUNCH_OPTIONS", "TritonExecutable", "check_plan", "load_source"]
