"""Tensor metadata: what every layer knows about a value without looking at its data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import UnsupportedError
from .sizes import size_from_json, size_to_json

#: dtypes that every layer understands, by NumPy name.
SUPPORTED_DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
)


_DTYPE_NAMES = {np.dtype(name): name for name in SUPPORTED_DTYPES}


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides, in elements, for ``shape``."""
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _one(n: Any) -> bool:
    """A length 1 that is a number (a dynamic size is asked about only where it matters)."""
    return isinstance(n, int) and n == 1


def dense_strides(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """``strides`` where they lay out ``shape`` densely in some order of its dimensions (row-
    major, F-ordered, any transpose: the order NumPy keeps for element-wise results, ``x.T + 1``
    is F-ordered); otherwise row-major. In elements."""
    order = sorted(range(len(shape)), key=lambda d: -strides[d])
    dense = [0] * len(shape)
    step = 1
    for d in reversed(order):
        dense[d] = step
        step *= shape[d]
    if all(_one(shape[d]) or dense[d] == strides[d] or shape[d] == 1
           for d in range(len(shape))):
        return tuple(strides)  # a length-1 dimension's stride as NumPy gave it
    return contiguous_strides(shape)


def elements_overlap(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int = 1) -> bool:
    """Whether two elements of a layout share memory: a zero stride on an axis longer than 1,
    or axes whose strides interleave (as ``as_strided`` makes). Strides and ``itemsize`` in one
    unit (bytes, or elements with ``itemsize`` 1); a negative stride counts by its size. An
    empty layout has no elements to share (NumPy gives ``np.ones((0, 7))`` strides (0, 0))."""
    if 0 in shape:
        return False
    extent = itemsize  # memory spanned by the axes of smaller strides
    for stride, n in sorted((abs(s), n) for s, n in zip(strides, shape) if n > 1):
        if stride < extent:
            return True
        extent += stride * (n - 1)  # the last copy of the smaller axes ends there
    return False


def fresh_strides(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """The strides NumPy gives a fresh element-wise result of an operand with ``strides``
    (``order="K"``), in elements: dense, its dimensions ordered as the operand's absolute
    strides, as NumPy's iterator orders them — an insertion sort from the innermost dimension
    that skips a comparison with a broadcast (zero-stride) or length-1 dimension. A reversed
    or stepped operand gives a dense result; checked against NumPy on 3,000 random layouts."""
    nd = len(shape)
    key = [0 if shape[d] == 1 else abs(strides[d]) for d in range(nd)]
    perm = list(range(nd - 1, -1, -1))  # innermost first
    for i0 in range(1, nd):
        j0, position = perm[i0], i0
        for i1 in range(i0 - 1, -1, -1):
            j1 = perm[i1]
            if key[j0] == 0 or key[j1] == 0:
                continue  # no order between them: look further
            if key[j1] <= key[j0]:
                break
            position = i1
        if position != i0:
            perm.insert(position, perm.pop(i0))
    dense = [0] * nd
    step = 1
    for d in perm:
        dense[d] = step
        step *= shape[d]
    return tuple(dense)


@dataclass(frozen=True)
class TensorMeta:
    """Shape, dtype, strides (in elements, not bytes) and device of one array value.

    ``scalar`` is true when the eager value is a NumPy scalar (``np.float32(1.0)``) rather than a
    0-d array: NumPy reductions over all axes return scalars, and a compiled function must too.
    """

    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...]
    device: str = "cpu"
    scalar: bool = False

    @classmethod
    def of(cls, value: Any) -> TensorMeta:
        """Metadata of a NumPy array or NumPy scalar."""
        if isinstance(value, np.generic):
            return cls((), value.dtype.name, (), scalar=True)
        if not isinstance(value, np.ndarray):
            raise TypeError(f"expected a NumPy array, got {type(value).__name__}")
        dtype = value.dtype
        name = _DTYPE_NAMES.get(dtype)
        if name is not None:  # the common case, without NumPy's slow dtype.name
            itemsize = dtype.itemsize
            strides = tuple(s // itemsize for s in value.strides)
            if all(s * itemsize == b for s, b in zip(strides, value.strides)):
                return cls(value.shape, name, strides)
        if not dtype.isnative:
            raise UnsupportedError(f"array of non-native byte order {dtype.str!r}",
                                   hint="convert with .astype(dtype.newbyteorder('='))")
        if dtype.name not in SUPPORTED_DTYPES:
            raise UnsupportedError(f"dtype {dtype.name}, which Stax does not support yet")
        itemsize = dtype.itemsize
        if any(s % itemsize for s in value.strides):
            raise UnsupportedError(f"byte strides {value.strides} are not multiples of the "
                                   f"item size {itemsize}")
        strides = tuple(s // itemsize for s in value.strides)
        return cls(tuple(int(d) for d in value.shape), dtype.name, strides)

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * self.np_dtype.itemsize

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"shape": [size_to_json(n) for n in self.shape],
                               "dtype": self.dtype,
                               "strides": [size_to_json(n) for n in self.strides],
                               "device": self.device}
        if self.scalar:
            doc["scalar"] = True
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> TensorMeta:
        return cls(tuple(size_from_json(n) for n in doc["shape"]), doc["dtype"],
                   tuple(size_from_json(n) for n in doc["strides"]),
                   doc.get("device", "cpu"), bool(doc.get("scalar", False)))

    def __str__(self) -> str:
        return f"{self.dtype}{list(self.shape)}"
