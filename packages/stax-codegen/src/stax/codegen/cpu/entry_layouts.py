"""The memory an entry's buffers take (``entry.py``): a storage block several buffers share as
one allocation, and the bytes an input's elements span (the overlap guard of updated
arguments)."""

from __future__ import annotations

import numpy as np

from ..artifact import KernelArtifact


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
