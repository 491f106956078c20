"""Launching a kernel through Triton's compiled-kernel launcher, its arguments bound once.

``kernel[grid](*args, **options)`` (Triton's Python path) binds and specializes every argument,
hashes a cache key and looks the kernel up on each call: tens of microseconds. Here the kernel
is compiled (or loaded from the binary cache, ``binaries.py``) once per device and alignment,
and each call is one call of the launcher Triton made for it: the grid, the stream, the
function handle, the packed metadata and the buffers' raw pointers, then the constants (which
the launcher skips; it takes every parameter in order). The same call in Triton 3.6 and 3.9
(``CompiledKernel.run`` is the launcher; 3.9 passes the metadata and hooks to one C function, 3.6
to the launcher built for the kernel's signature).

Pointers are assumed 16-byte aligned (so loads vectorize), as Triton's own specialization
assumes of an aligned pointer; a call with a pointer that is not (a slice of an input) gets a
binary compiled for that case (cached like the others). Launch hooks (``knobs.runtime``) are read
when a kernel is bound for a device.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

from .binaries import BinaryCache, KernelSpec, compiled_kernel


class Bound:
    """One compiled kernel loaded on one device, with what each launch passes."""

    __slots__ = ("compiled", "enter", "exit", "function", "metadata", "run")

    def __init__(self, compiled: Any) -> None:
        from triton import knobs

        self.compiled = compiled
        self.run = compiled.run  # loads the binary on the current device
        if getattr(compiled, "function", None) is None:  # a Triton whose launcher does not load it
            compiled._init_handles()
        self.function = compiled.function
        self.metadata = compiled.packed_metadata
        self.enter = _hook(knobs.runtime.launch_enter_hook)
        self.exit = _hook(knobs.runtime.launch_exit_hook)


def _hook(hook: Any) -> Any:
    """A launch hook, or None where there is none (Triton 3.9's empty ``HookChain``, which the
    launcher would call for nothing on every launch)."""
    return None if hook is None or getattr(hook, "calls", True) == [] else hook


class KernelLauncher:
    """Launches kernel ``fn`` (of module ``source``) with buffers of ``dtypes``, ``constants``
    and ``options`` on ``grid``: ``launch(pointers, stream, device_index)``."""

    def __init__(self, source: str, fn: Any, dtypes: list[str], constants: dict[str, Any],
                 options: dict[str, Any], grid: tuple[int, ...], cache: BinaryCache | None,
                 sizes: tuple[int, ...] = (), size_type: str = "i64") -> None:
        self.source, self.fn, self.dtypes = source, fn, dtypes
        self.constants, self.options, self.cache = constants, options, cache
        self.sizes, self.size_type = tuple(sizes), size_type  # a size-generic kernel's sizes
        self.grid = (tuple(grid) + (1, 1, 1))[:3]
        self.empty = self.grid[0] * self.grid[1] * self.grid[2] == 0
        names = list(fn.arg_names)
        self.tail = (*self.sizes,
                     *(constants[n] for n in names[len(dtypes) + len(self.sizes):]))
        self._aligned: dict[int, Bound] = {}  # device index -> every pointer aligned
        self._bound: dict[tuple[int, tuple[int, ...]], Bound] = {}
        self.compiles = 0

    def spec(self, aligned: tuple[int, ...]) -> KernelSpec:
        return KernelSpec.of(self.source, self.fn, self.dtypes, self.constants, aligned,
                             self.options, len(self.sizes), self.size_type)

    def bind(self, index: int, aligned: tuple[int, ...]) -> Bound:
        """The kernel for device ``index`` (the current device) with parameters ``aligned``
        assumed 16-byte aligned: loaded from the cache, or compiled."""
        found = self._bound.get((index, aligned))
        if found is None:
            from triton.runtime import driver

            target = driver.active.get_current_target()
            compiled = compiled_kernel(self.spec(aligned), self.fn, target, self.cache)
            found = self._bound[(index, aligned)] = Bound(compiled)
            if len(aligned) == len(self.dtypes):
                self._aligned[index] = found
        return found

    def launch(self, pointers: list[int], stream: int, index: int) -> None:
        if self.empty:
            return  # nothing to compute (an empty array)
        bound = self._aligned.get(index)
        if bound is None or functools.reduce(operator.or_, pointers, 0) & 15:
            bound = self.bind(index, tuple(i for i, p in enumerate(pointers) if not p & 15))
        g = self.grid
        meta = None if bound.enter is None else bound.compiled.launch_metadata(g, stream, *pointers,
                                                                               *self.tail)
        bound.run(g[0], g[1], g[2], stream, bound.function, bound.metadata, meta, bound.enter,
                  bound.exit, *pointers, *self.tail)


def python_launch(fn: Any, grid: tuple[int, ...], options: dict[str, Any]) -> Callable[..., None]:
    """``launch(*arrays)`` through ``fn[grid](...)``: Triton's Python path, which the
    interpreter runs."""
    empty = 0 in grid

    def launch(*arrays: Any) -> None:
        if not empty:
            fn[grid](*arrays, **options)
    return launch


__all__ = ["Bound", "KernelLauncher", "python_launch"]
