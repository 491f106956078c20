"""The CUDA backend as a ``Target``: Triton source for NVIDIA GPUs, with the op basis its
emitters cover, the dtypes its kernels take, its numeric limits and a first GPU cost model.

The identity names no GPU model: the source is the same for every NVIDIA GPU, and Triton
compiles it for the device it runs on (keying its own binary cache by that device). Making the
target imports neither Triton nor torch; its compiler version is the installed Triton's, read
from the package metadata ("absent" where Triton is not installed: source can still be made).
"""

from __future__ import annotations

import functools
from importlib import metadata

import numpy as np

from stax.ir import CostClass, ops_of_cost
from stax.loop import LOWERINGS, OPERATORS, Reuse, postorder

from ..target import Identity, NumericLimits, Target
from . import rules
from .emit import NESTS
from .registry import emits

#: dtypes the Triton kernels compute in (float16 and bfloat16 wait for a rounding story, as on
#: the CPU)
LOOP_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                         "uint64", "float32", "float64"})
IDENTITY = Identity("cuda", "nvptx64-nvidia-cuda", "generic", "")
#: ops whose lowering needs a loop nest, and which: without that nest in the emitter the op is a
#: NumPy step
NEEDS_NEST = {"cumsum": "scan", "cumprod": "scan"}
#: libdevice calls cost about this many simple operations on a GPU (a float64 one counts twice)
FUNCTION_OPERATIONS = 20
#: a GPU does about this many simple float32 operations in the time it moves one byte
#: (an H200: ~67 TFLOP/s float32 against ~4.8 TB/s)
OPERATIONS_PER_BYTE = 14


def triton_basis() -> frozenset[str]:
    """The ops the Triton kernels implement: every op the loop layer lowers, less an op that is a
    loop operator without a Triton emitter (``registry.emits``) and an op whose lowering needs a
    nest the emitter lacks (``NEEDS_NEST``). An op outside the basis is decomposed where it has a
    rule, else a NumPy step."""
    assert rules.EMITTER_MODULES  # the emitter tables are filled
    return frozenset(op for op in LOWERINGS if (op not in OPERATORS or emits(op))
                     and NEEDS_NEST.get(op, "plain") in NESTS)


def operations(expr: object) -> int:
    """Simple operations to compute one element of ``expr`` on a GPU: a libdevice function
    counts ``FUNCTION_OPERATIONS``, an 8-byte value's operation two."""
    total = 0
    for e in postorder(expr):
        wide = e.dtype in ("float64", "int64", "uint64")
        cost = FUNCTION_OPERATIONS if getattr(e, "op", "") in FUNCTION_OPS else 1
        total += cost * (2 if wide else 1)
    return total


#: the ops declared math routines (``CostClass.FUNCTION``): a libdevice call each
FUNCTION_OPS = ops_of_cost(CostClass.FUNCTION)


def keep_in_memory(reuse: Reuse) -> bool:
    """The GPU's materialization policy (spec §6.6), kept simple: a GPU recomputes cheaply and
    every kept value costs a kernel boundary, so a value is kept only when recomputing it in each
    extra read costs more than writing it once and reading it back in every read
    (``OPERATIONS_PER_BYTE``) — in practice a function result read many times (a broadcast
    operand). A function result that is an output already is written: readers load it when that
    is cheaper than recomputing it."""
    item = np.dtype(reuse.dtype).itemsize * OPERATIONS_PER_BYTE
    per_element = operations(reuse.expr)
    if reuse.output:
        return per_element > item
    factor = reuse.reads / max(reuse.numel, 1)
    return (factor - 1) * per_element > (1 + factor) * item


def _triton_version() -> str:
    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return "absent"


@functools.cache
def triton_target() -> Target:
    """The CUDA target: Triton kernels (``generate(program, target=triton_target())``). The
    float64 trigonometric functions need no argument limit (libdevice reduces any argument); float
    ``//`` and ``%`` run as NumPy (no exact fmod emitter yet)."""
    return Target(identity=IDENTITY, basis=triton_basis(), loop_dtypes=LOOP_DTYPES,
                  limits=NumericLimits(trig_reduction=(), fmod_exact_quotient=()),
                  materialize=keep_in_memory, element_cost=operations,
                  compiler_version=_triton_version(),
                  # a launch per region costs more on a GPU than one select kernel over the
                  # array for the assignment chains programs write (not measured per size yet)
                  update_in_place=False,
                  # complex values as parts are the CPU's for now (no device arrays of them yet)
                  complex_parts=False)
