"""Running an artifact: compile its module once, then allocate buffers and launch kernels per call."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .artifact import BufferPlan, KernelArtifact
from .cpu.jit import CompiledModule, kernel_function
from .threadpool import default_pool


def _allocator(plan: BufferPlan) -> Callable[[], np.ndarray]:
    shape, dtype = plan.shape, np.dtype(plan.dtype)
    strides = tuple(s * dtype.itemsize for s in plan.strides)
    if np.empty(shape, dtype).strides == strides:
        return lambda: np.empty(shape, dtype)
    size = math.prod(shape)
    return lambda: np.ndarray(shape, dtype, buffer=np.empty(size, dtype), strides=strides)


class Executable:
    """``executable(*arrays)`` runs the artifact on arrays given in input-buffer order and returns
    the flat list of output leaves (``artifact.outputs`` order)."""

    def __init__(self, artifact: KernelArtifact) -> None:
        self.artifact = artifact
        self.module = CompiledModule(artifact.llvm_ir)
        self.input_names = [b.name for b in artifact.buffers if b.role == "input"]
        allocs = [(b.name, _allocator(b)) for b in artifact.buffers if b.role != "input"]
        pool = default_pool()
        launches = []
        for k in artifact.kernels:
            fn = kernel_function(self.module, k.name, len(k.args))
            launches.append((fn, k.args, k.outer_range, k.parallel and pool.size > 1))
        outputs = artifact.outputs
        input_names = self.input_names

        def run(*arrays: np.ndarray) -> list[Any]:
            env = dict(zip(input_names, arrays))
            for name, alloc in allocs:
                env[name] = alloc()
            for fn, args, outer, parallel in launches:
                objs = [env[a] for a in args]
                if parallel:
                    pool.parallel_for(fn, tuple(objs), outer)
                else:
                    fn(*objs, 0, outer)
            results = []
            for out in outputs:
                if "buffer" in out:
                    value = env[out["buffer"]]
                    results.append(value[()] if out["scalar"] else value)
                else:
                    results.append(out["const"])
            return results

        self.run = run
        self.__call__ = run

    def __call__(self, *arrays: np.ndarray) -> list[Any]:
        return self.run(*arrays)
