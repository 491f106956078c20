"""The array libraries a CUDA executable takes its inputs from: torch tensors and CuPy arrays.

``library_of(x)`` recognises an array by the module its type comes from, so it imports neither
torch nor CuPy (an object of theirs means its library is imported already). Each library knows
how to read an array's layout and data pointer, allocate through its own caching allocator,
name its device (``"cuda:0"``, ``"cpu"``), find the current stream of a device, and view an
array as a CuPy array and back through DLPack without a copy (``as_cupy``/``from_cupy``), so a
NumPy step runs as CuPy's call of the same name (``externs.py``).

Under ``TRITON_INTERPRET=1`` the inputs are torch CPU tensors: NumPy stands in for CuPy there
(``as_cupy`` is the tensor's NumPy view, ``numpy_module`` is NumPy), so the same code runs.
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
import sys
from typing import Any

import numpy as np

#: the loop dtypes (``BufferPlan.dtype``) a CUDA plan uses
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64")


class ArrayLibrary:
    """What the executable needs of an array library; ``TorchArrays`` and ``CupyArrays``."""

    name = ""

    def is_array(self, a: Any) -> bool:
        raise NotImplementedError

    def device_of(self, a: Any) -> str:
        """``"cuda:N"`` or ``"cpu"``."""
        raise NotImplementedError

    def device_index(self, a: Any) -> int | None:
        """The CUDA ordinal of ``a``'s device, None on the CPU."""
        raise NotImplementedError

    def dtype_name(self, a: Any) -> str:
        raise NotImplementedError

    def layout(self, a: Any) -> tuple[tuple[int, ...], tuple[int, ...], str]:
        """Shape, strides in elements and loop dtype name."""
        raise NotImplementedError

    def data_ptr(self, a: Any) -> int:
        raise NotImplementedError

    #: ``pointer(a)``: ``data_ptr`` as the fastest callable the library has
    pointer: Any = None

    def to_numpy(self, a: Any) -> np.ndarray:
        """A host copy (one synchronizing copy on a GPU)."""
        raise NotImplementedError

    def from_numpy(self, array: np.ndarray, like: Any) -> Any:
        """``array`` on ``like``'s device (a contiguous copy)."""
        raise NotImplementedError

    def scalar(self, value: Any, dtype: str, like: Any) -> Any:
        """A 0-d array of ``dtype`` holding ``value`` on ``like``'s device: filled there (the
        value a kernel argument, no copy from host memory, nothing waited for), a Python
        scalar argument made a run-time input (issue 15)."""
        return self.from_numpy(np.array(value, dtype), like)

    def empty_strided(self, shape: tuple[int, ...], strides: tuple[int, ...], dtype: str,
                      like: Any) -> Any:
        """An uninitialised array of ``dtype`` with these strides (elements, none negative) on
        ``like``'s device (``like`` an array, or a device string)."""
        raise NotImplementedError

    def allocation(self, like: Any, shape: tuple[int, ...], strides: tuple[int, ...],
                   dtype: str) -> Any:
        """``make()``: a new ``empty_strided(shape, strides, dtype)`` on ``like``'s device
        (for CuPy: the current device), with the work of each call done once."""
        return lambda: self.empty_strided(shape, strides, dtype, like)

    def empty_bytes(self, nbytes: int, like: Any) -> Any:
        raise NotImplementedError

    def view_strided(self, block: Any, shape: tuple[int, ...], strides: tuple[int, ...],
                     dtype: str) -> Any:
        """A ``dtype`` view with these element strides of the start of byte block ``block``."""
        raise NotImplementedError

    def copy_into(self, out: Any, src: Any) -> None:
        """``out[...] = src`` for two arrays of this library."""
        raise NotImplementedError

    def as_cupy(self, a: Any) -> Any:
        """``a`` as an array of ``numpy_module(a)``, sharing its memory (DLPack)."""
        raise NotImplementedError

    def from_cupy(self, c: Any, like: Any) -> Any:
        """An array of this library sharing ``c``'s memory (DLPack)."""
        raise NotImplementedError

    def numpy_module(self, like: Any) -> Any:
        """The module implementing NumPy's API on ``like``'s device: CuPy, or NumPy on the CPU."""
        raise NotImplementedError

    def current_stream(self, index: int) -> int:
        """The raw handle of the library's current stream on CUDA device ``index``."""
        raise NotImplementedError

    def current_device(self) -> int:
        raise NotImplementedError

    def on_device(self, index: int | None) -> Any:
        """A context making device ``index`` current (nothing to do for None)."""
        raise NotImplementedError

    def step_stream(self, like: Any) -> Any:
        """A context in which ``numpy_module(like)``'s work runs on this library's current stream
        of ``like``'s device (so a NumPy step is ordered with the kernels)."""
        return contextlib.nullcontext()


def _span(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Elements a strided layout spans (0 for an empty array)."""
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    """C-order strides (elements) of ``shape``."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class TorchArrays(ArrayLibrary):
    name = "torch"

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.dtypes = {"bool": torch.bool, "int8": torch.int8, "int16": torch.int16,
                       "int32": torch.int32, "int64": torch.int64, "uint8": torch.uint8,
                       "uint16": torch.uint16, "uint32": torch.uint32, "uint64": torch.uint64,
                       "float32": torch.float32, "float64": torch.float64}
        self.names = {v: k for k, v in self.dtypes.items()}
        self.pointer = torch.Tensor.data_ptr
        self._get_device: Any = None
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self._raw_stream = raw if raw is not None else \
            (lambda index: torch.cuda.current_stream(index).cuda_stream)

    def is_array(self, a: Any) -> bool:
        return isinstance(a, self.torch.Tensor)

    def device_of(self, a: Any) -> str:
        if a.is_cuda:
            return f"cuda:{a.get_device()}"
        d = a.device
        return "cpu" if d.type == "cpu" else f"{d.type}:{d.index or 0}"

    def device_index(self, a: Any) -> int | None:
        index = a.get_device()
        return None if index < 0 else index

    def dtype_name(self, a: Any) -> str:
        return self.names.get(a.dtype, str(a.dtype))

    def layout(self, a: Any) -> tuple[tuple[int, ...], tuple[int, ...], str]:
        return tuple(a.shape), tuple(a.stride()), self.dtype_name(a)

    def data_ptr(self, a: Any) -> int:
        return a.data_ptr()

    def to_numpy(self, a: Any) -> np.ndarray:
        return a.detach().cpu().numpy()

    def _device(self, like: Any) -> Any:
        torch = self.torch
        return like.device if isinstance(like, torch.Tensor) else \
            like if isinstance(like, torch.device) else torch.device(like)

    def allocation(self, like: Any, shape: tuple[int, ...], strides: tuple[int, ...],
                   dtype: str) -> Any:
        return functools.partial(self.torch.empty_strided, shape, strides, dtype=self.dtypes[dtype],
                                 device=self._device(like))

    def from_numpy(self, array: np.ndarray, like: Any) -> Any:
        host = self.torch.from_numpy(np.asarray(array, order="C"))  # ascontiguousarray: 0-d -> (1,)
        return host.to(self._device(like))

    def scalar(self, value: Any, dtype: str, like: Any) -> Any:
        return self.torch.full((), value, dtype=self.dtypes[dtype], device=self._device(like))

    def empty_strided(self, shape: tuple[int, ...], strides: tuple[int, ...], dtype: str,
                      like: Any) -> Any:
        return self.torch.empty_strided(shape, strides, dtype=self.dtypes[dtype],
                                        device=self._device(like))

    def empty_bytes(self, nbytes: int, like: Any) -> Any:
        return self.torch.empty(nbytes, dtype=self.torch.uint8, device=self._device(like))

    def view_strided(self, block: Any, shape: tuple[int, ...], strides: tuple[int, ...],
                     dtype: str) -> Any:
        nbytes = _span(shape, strides) * np.dtype(dtype).itemsize
        return block[:nbytes].view(self.dtypes[dtype]).as_strided(shape, strides)

    def copy_into(self, out: Any, src: Any) -> None:
        out.copy_(src)

    def as_cupy(self, a: Any) -> Any:
        if a.device.type == "cpu":
            return a.detach().numpy()  # NumPy stands in for CuPy (the interpreter)
        import cupy

        return cupy.from_dlpack(a.detach())

    def from_cupy(self, c: Any, like: Any) -> Any:
        if isinstance(c, np.ndarray):
            if not c.flags.writeable or any(s < 0 or s % c.itemsize for s in c.strides):
                c = np.array(c)  # torch takes neither read-only nor negatively strided arrays
            return self.torch.from_numpy(c)
        return self.torch.from_dlpack(c)

    def numpy_module(self, like: Any) -> Any:
        if self._device(like).type == "cpu":
            return np
        import cupy

        return cupy

    def current_stream(self, index: int) -> int:
        return self._raw_stream(index)

    def current_device(self) -> int:
        if self._get_device is None:
            index = self.torch.cuda.current_device()  # initializes CUDA
            self._get_device = getattr(self.torch._C, "_cuda_getDevice", None)
            return index
        return self._get_device()

    def on_device(self, index: int | None) -> Any:
        return contextlib.nullcontext() if index is None else self.torch.cuda.device(index)

    def step_stream(self, like: Any) -> Any:
        device = self._device(like)
        if device.type == "cpu":
            return contextlib.nullcontext()
        import cupy

        index = device.index or 0
        stack = contextlib.ExitStack()
        stack.enter_context(cupy.cuda.Device(index))
        stack.enter_context(cupy.cuda.ExternalStream(self.current_stream(index), index))
        return stack


class CupyArrays(ArrayLibrary):
    name = "cupy"

    def __init__(self) -> None:
        import cupy

        self.cupy = cupy
        self.pointer = operator.attrgetter("data.ptr")

    def is_array(self, a: Any) -> bool:
        return isinstance(a, self.cupy.ndarray)

    def device_of(self, a: Any) -> str:
        return f"cuda:{a.device.id}"

    def device_index(self, a: Any) -> int | None:
        return a.device.id

    def dtype_name(self, a: Any) -> str:
        return a.dtype.name

    def layout(self, a: Any) -> tuple[tuple[int, ...], tuple[int, ...], str]:
        size = a.itemsize
        return tuple(a.shape), tuple(s // size for s in a.strides), a.dtype.name

    def data_ptr(self, a: Any) -> int:
        return a.data.ptr

    def to_numpy(self, a: Any) -> np.ndarray:
        return self.cupy.asnumpy(a)

    def _index(self, like: Any) -> int:
        if isinstance(like, self.cupy.ndarray):
            return like.device.id
        return int(str(like).rpartition(":")[2] or 0)

    def from_numpy(self, array: np.ndarray, like: Any) -> Any:
        with self.cupy.cuda.Device(self._index(like)):
            return self.cupy.asarray(np.asarray(array, order="C"))

    def scalar(self, value: Any, dtype: str, like: Any) -> Any:
        with self.cupy.cuda.Device(self._index(like)):
            return self.cupy.full((), value, np.dtype(dtype))

    def empty_strided(self, shape: tuple[int, ...], strides: tuple[int, ...], dtype: str,
                      like: Any) -> Any:
        cupy, dt = self.cupy, np.dtype(dtype)
        with cupy.cuda.Device(self._index(like)):
            base = cupy.empty(max(_span(shape, strides), 1), dt)
        return cupy.ndarray(shape, dt, memptr=base.data, strides=tuple(s * dt.itemsize for s in strides))

    def allocation(self, like: Any, shape: tuple[int, ...], strides: tuple[int, ...],
                   dtype: str) -> Any:
        """On the current device (the executable makes the inputs' device current first)."""
        cupy, dt = self.cupy, np.dtype(dtype)
        if strides == _contiguous(shape):
            return functools.partial(cupy.empty, shape, dt)
        span, steps = max(_span(shape, strides), 1), tuple(s * dt.itemsize for s in strides)
        return lambda: cupy.ndarray(shape, dt, memptr=cupy.empty(span, dt).data, strides=steps)

    def empty_bytes(self, nbytes: int, like: Any) -> Any:
        with self.cupy.cuda.Device(self._index(like)):
            return self.cupy.empty(max(nbytes, 1), np.uint8)

    def view_strided(self, block: Any, shape: tuple[int, ...], strides: tuple[int, ...],
                     dtype: str) -> Any:
        dt = np.dtype(dtype)
        return self.cupy.ndarray(shape, dt, memptr=block.data,
                                 strides=tuple(s * dt.itemsize for s in strides))

    def copy_into(self, out: Any, src: Any) -> None:
        out[...] = src

    def as_cupy(self, a: Any) -> Any:
        return a

    def from_cupy(self, c: Any, like: Any) -> Any:
        return c if isinstance(c, self.cupy.ndarray) else self.from_numpy(np.asarray(c), like)

    def numpy_module(self, like: Any) -> Any:
        return self.cupy

    def current_stream(self, index: int) -> int:
        """Of the current device, which the executable makes ``index`` first."""
        return self.cupy.cuda.get_current_stream().ptr

    def current_device(self) -> int:
        return self.cupy.cuda.runtime.getDevice()

    def on_device(self, index: int | None) -> Any:
        return contextlib.nullcontext() if index is None else self.cupy.cuda.Device(index)


_LIBRARIES: dict[str, ArrayLibrary] = {}


def library(name: str) -> ArrayLibrary:
    """The library ``"torch"`` or ``"cupy"`` (imports it)."""
    found = _LIBRARIES.get(name)
    if found is None:
        found = _LIBRARIES[name] = {"torch": TorchArrays, "cupy": CupyArrays}[name]()
    return found


def library_of(array: Any) -> ArrayLibrary | None:
    """The library ``array`` belongs to (a torch tensor or a CuPy array), or None; imports
    nothing unless the object's type comes from torch or CuPy (which are then imported)."""
    root = type(array).__module__.partition(".")[0]
    if root not in ("torch", "cupy") or root not in sys.modules:
        return None
    lib = library(root)
    return lib if lib.is_array(array) else None


def nbytes_of(shape: tuple[int, ...], dtype: str) -> int:
    return math.prod(shape) * np.dtype(dtype).itemsize


__all__ = ["DTYPES", "ArrayLibrary", "CupyArrays", "TorchArrays", "library", "library_of"]
