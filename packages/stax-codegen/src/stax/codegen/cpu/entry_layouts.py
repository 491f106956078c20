"""The memory an entry's buffers take (``entry.py``): a storage block several buffers share as
one allocation, and the bytes an input's elements span (the overlap guard of updated
arguments); the guard's compares of an argument's extents and strides, and of two arguments'
spans."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from llvmlite import ir

from ..artifact import KernelArtifact
from .types import I8P, I64

Field = Callable[[ir.Value, int, ir.Type], ir.Value]


def shared_block(artifact: KernelArtifact, name: str) -> int | None:
    storage = artifact.storage
    if storage is None or not storage.shared(name):
        return None
    return storage.storage[name]


def block_layout(artifact: KernelArtifact, block: int
                  ) -> tuple[tuple[int, ...], tuple[int, ...], str] | str:
    """One allocation for the buffers that share a storage block (kernels read only its data
    pointer): the result's own array when a result lives there, else bytes."""
    storage = artifact.storage
    assert storage is not None
    results = {o.get("buffer") for o in artifact.outputs}
    members = [b for b in artifact.buffers if storage.storage.get(b.name) == block]
    owners = [b for b in members if b.name in results]
    if len(owners) > 1:
        return "two results share storage"
    if not owners:
        return (storage.sizes[block],), (1,), "uint8"
    owner = owners[0]
    itemsize = np.dtype(owner.dtype).itemsize
    if int(np.prod(owner.shape)) * itemsize < storage.sizes[block] or \
            tuple(owner.strides) != _contiguous(tuple(owner.shape)):
        return "a result shares storage with a larger buffer"
    return tuple(owner.shape), tuple(s * itemsize for s in owner.strides), owner.dtype


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def byte_span(layout: tuple[tuple[int, ...], tuple[int, ...], str]) -> tuple[int, int] | None:
    """The bytes an input's elements span, as offsets from its data pointer ``[low, high)``
    (None: it has none)."""
    shape, strides, dtype = layout
    if 0 in shape:
        return None
    low = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0)
    high = sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0)
    return low, high + np.dtype(dtype).itemsize


def same_extents(b: ir.IRBuilder, a: ir.Value, shape: tuple[int, ...], strides: tuple[int, ...],
                 layout: Any, field: Field) -> ir.Value:
    """Whether array ``a`` (its type, dtype and ndim checked) has ``shape`` and ``strides``."""
    dims, steps = field(a, layout.dimensions, I64.as_pointer()), field(a, layout.strides,
                                                                      I64.as_pointer())
    same = ir.Constant(ir.IntType(1), 1)
    for d, (extent, stride) in enumerate(zip(shape, strides)):
        got_extent = b.load(b.gep(dims, [ir.Constant(I64, d)]))
        same = b.and_(same, b.icmp_signed("==", got_extent, ir.Constant(I64, extent)))
        if extent != 1:  # NumPy ignores the stride of a length-1 axis, and so does the kernel
            got_stride = b.load(b.gep(steps, [ir.Constant(I64, d)]))
            same = b.and_(same, b.icmp_signed("==", got_stride, ir.Constant(I64, stride)))
    return same


def apart(b: ir.IRBuilder, mine: Any, theirs: Any, a: ir.Value, other: ir.Value, layout: Any,
          field: Field) -> ir.Value:
    """Whether the bytes of ``a`` and ``other`` (of input layouts ``mine`` and ``theirs``) do
    not overlap (true where either has no elements)."""
    span_a, span_o = byte_span(mine), byte_span(theirs)
    if span_a is None or span_o is None:
        return ir.Constant(ir.IntType(1), 1)
    at_a, at_o = (b.ptrtoint(field(x, layout.data, I8P), I64) for x in (a, other))
    low_a, high_a, low_o, high_o = (b.add(at, ir.Constant(I64, offset)) for at, offset in (
        (at_a, span_a[0]), (at_a, span_a[1]), (at_o, span_o[0]), (at_o, span_o[1])))
    return b.or_(b.icmp_unsigned(">=", low_a, high_o), b.icmp_unsigned(">=", low_o, high_a))
