"""Large buffers from blocks that earlier results gave back (a caching allocator).

A fresh 64 MiB array costs more to touch the first time than to compute: the kernel maps and
zeroes 16384 pages (about 5 ms on the 2-core bench machine, more than the whole softmax should
take). NumPy cannot reuse such a block — glibc returns every allocation above 32 MiB to the
kernel on ``free``, and from a few MiB up its reuse depends on the process's history — so
results of ``MIN_BYTES`` or more come from this pool instead. Below it glibc's own reuse is
faster (measured on ``x * 2``, Zen 5: 1 MiB 23 us from malloc vs 29 us from the pool, which
also costs the call its machine-code entry; 4 MiB 67-82 vs 76-95 us; 8 MiB about even).

Each result is a NumPy array over a small exporter object (a ctypes array at the block's
address); every view of the result keeps that exporter alive, and when the last one dies its
``__del__`` puts the block back. The pool keeps at most ``limit`` bytes of free blocks; the rest is
freed as usual. What callers see is an ordinary writable array (``flags.owndata`` is False, as
for any view).
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import threading
import weakref

import numpy as np

MIN_BYTES = 8 << 20
DEFAULT_LIMIT = 1 << 30


@functools.lru_cache(maxsize=256)
def _exporter_type(nbytes: int) -> type:
    # a subclass per block size (the most recent 256 kept; a program with very many large
    # shapes makes them again), whose instances give their block back when the last view of
    # them dies: ``__del__`` costs far less than a ``weakref.finalize`` per result (4 us)
    return type(f"StaxBlock{nbytes}", (ctypes.c_char * nbytes,), {"__del__": _exporter_died})


def _exporter_died(exporter: ctypes.Array) -> None:
    pool, block = exporter._stax_block  # type: ignore[attr-defined]
    pool._give_back(block)


class BlockPool:
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        #: free blocks by size, each with its address (asking an array for it costs 1 us)
        self._free: dict[int, list[tuple[np.ndarray, int]]] = {}
        self._free_bytes = 0
        self._lock = threading.Lock()
        _POOLS.add(self)
        self.reused = 0
        self.allocated = 0

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, strides: tuple[int, ...] | None = None
              ) -> np.ndarray:
        """An uninitialized array, from a recycled block when one of this size is free."""
        nbytes = max(1, math.prod(shape) * dtype.itemsize)
        with self._lock:
            blocks = self._free.get(nbytes)
            found = blocks.pop() if blocks else None
            if found is not None:
                self._free_bytes -= nbytes
                self.reused += 1
            else:
                self.allocated += 1
        if found is None:
            block = np.empty(nbytes, np.uint8)
            found = (block, block.ctypes.data)
        exporter = _exporter_type(nbytes).from_address(found[1])
        exporter._stax_block = (self, found)
        return np.ndarray(shape, dtype, buffer=exporter, strides=strides)

    def _give_back(self, found: tuple[np.ndarray, int]) -> None:
        nbytes = found[0].nbytes
        with self._lock:
            if self._free_bytes + nbytes <= self.limit:
                self._free.setdefault(nbytes, []).append(found)
                self._free_bytes += nbytes

    def clear(self) -> None:
        """Free every block the pool holds (results still alive keep theirs)."""
        with self._lock:
            self._free.clear()
            self._free_bytes = 0

    @property
    def free_bytes(self) -> int:
        return self._free_bytes


_POOLS: weakref.WeakSet[BlockPool] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # another thread of the parent may have held a pool's lock at the fork: the child gets a
    # new lock (its copy of the free lists is whole, each change being one step under the GIL;
    # at worst the free byte count is one block off, which only moves when blocks are kept)
    for pool in list(_POOLS):
        pool._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

_POOL = BlockPool()


def default_block_pool() -> BlockPool:
    return _POOL
