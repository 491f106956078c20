"""Size-generic artifacts run at each call's sizes (issue 15, docs/dynamic-shapes.md).

A size-generic artifact's buffers, launch ranges, NumPy steps and storage blocks are expressions
of size symbols (``stax.ir.sizes``); its LLVM IR holds none of them: a kernel takes the range
of its outer loop at launch, and every other size it was compiled with was either a constant of
the program or a decision recorded as a shape guard (a size that reached the IR text would not
parse). So one compiled module serves every size the guards admit, and a call at new sizes costs
an *instance*: the artifact with the sizes put in (``instantiate``) and its written-out call
(``Executable`` over the shared module), kept per sizes for the next call.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stax.ir.shape_env import UNBOUNDED, Guard
from stax.ir.sizes import Size, parse_size
from stax.ir.sizes import concrete as sizes_at

from .artifact import KernelArtifact, KernelPlan
from .executable import Executable, InputMismatch
from .generate import worth_splitting

#: instances kept per generic artifact (a stream of batch sizes: each size's call plan, not its
#: machine code, which all share)
MAX_INSTANCES = 64


def instantiate(artifact: KernelArtifact, values: Mapping[str, int]) -> KernelArtifact:
    """The artifact at sizes ``values``: every size a number, and each kernel whose cost
    depends on them split over the pool where that many cost units are worth it."""
    concrete = sizes_at(artifact, values)
    threshold = artifact.target.get("parallel_work")
    kernels = [_split(k, values, threshold) for k in concrete.kernels]
    externs = [dataclasses.replace(e, args=_encoded_sizes(e.args, values),
                                   kwargs=_encoded_sizes(e.kwargs, values))
               for e in concrete.externs]
    return dataclasses.replace(concrete, kernels=kernels, externs=externs)


def _encoded_sizes(doc: Any, values: Mapping[str, int]) -> Any:
    """A NumPy call's encoded arguments with each size (``{"size": "s0*4"}``: a reshape's
    ``x.shape[0] * 4``) its value at these sizes."""
    if isinstance(doc, list):
        return [_encoded_sizes(v, values) for v in doc]
    if isinstance(doc, dict):
        if set(doc) == {"size"}:
            size = parse_size(doc["size"])
            return size.evaluate(values) if isinstance(size, Size) else size
        return {k: _encoded_sizes(v, values) for k, v in doc.items()}
    return doc


def _split(kernel: KernelPlan, values: Mapping[str, int], threshold: Any) -> KernelPlan:
    if kernel.cost is None:
        return kernel
    parallel = kernel.parallel and kernel.outer_range > 1 and \
        worth_splitting(kernel.cost, kernel.bytes_read + kernel.bytes_written, threshold)
    return dataclasses.replace(kernel, parallel=parallel, cost=None)


def _layouts(arrays: Sequence[Any]) -> tuple[Any, ...]:
    """The inputs' shapes and strides (an object input, a ``Generator`` NumPy steps draw
    from, has none; a torch tensor's are ``stride()``)."""
    return tuple((getattr(a, "shape", None), _strides(a), getattr(a, "dtype", None))
                 for a in arrays)


def _strides(a: Any) -> Any:
    strides = getattr(a, "strides", None)
    if strides is None and callable(getattr(a, "stride", None)):
        return tuple(a.stride())
    return strides


def bindings(artifact: KernelArtifact) -> list[tuple[str, int, int]]:
    """Where each size symbol is read at a call: ``(symbol, input, dimension)`` for the first
    input dimension that is exactly the symbol."""
    found: dict[str, tuple[int, int]] = {}
    inputs = [b for b in artifact.buffers if b.role == "input"]
    for i, b in enumerate(inputs):
        for d, n in enumerate(b.shape):
            if isinstance(n, Size) and len(n.symbols) == 1:
                name, = n.symbols
                if n.same(Size.symbol(name)):
                    found.setdefault(name, (i, d))
    return [(name, i, d) for name, (i, d) in sorted(found.items())]


class GenericExecutable:
    """A size-generic artifact as a callable over flat arrays: each call's sizes read from its
    inputs, its guards checked (``InputMismatch`` when they fail: the caller's dispatch then
    looks for another version), and the instance at those sizes run."""

    def __init__(self, artifact: KernelArtifact, cache_dir: str | Path | None = None) -> None:
        if not artifact.sizes:
            raise ValueError(f"{artifact.name}: not a size-generic artifact (no sizes)")
        self.artifact = artifact
        table = artifact.sizes["symbols"]
        self.symbols = {str(name): (int(low), int(high)) for name, (low, high, _) in table.items()}
        self.hints = {str(name): int(traced) for name, (_, _, traced) in table.items()}
        self.guards: list[Guard] = [Guard.from_json(g) for g in artifact.sizes["guards"]]
        self.reads = bindings(artifact)
        missing = set(self.symbols) - {name for name, _, _ in self.reads}
        if missing:
            raise ValueError(f"{artifact.name}: no input dimension gives the sizes "
                             f"{sorted(missing)}")
        inputs = [b for b in artifact.buffers if b.role == "input"]
        self.input_shapes = [b.shape for b in inputs]
        self.input_strides = [b.strides for b in inputs]
        self._cache_dir = cache_dir
        self._modules: dict[str, Any] = {}  # fast and precise machine code, for every instance
        self._instances: OrderedDict[tuple[int, ...], Executable] = OrderedDict()
        #: input shapes whose sizes and guards were checked, and their instance
        self._by_shapes: dict[tuple[Any, ...], Executable] = {}
        #: machine-code entries per input shapes (False: seen once, None: it has none)
        self._entries: dict[tuple[Any, ...], Any] = {}
        self._retired_hits = 0
        #: instances made so far: a call that made one is no sample of a steady call's time
        self.instances_made = 0
        self._lock = threading.Lock()

    def sizes_of(self, arrays: Sequence[Any]) -> dict[str, int]:
        values = {}
        for name, i, d in self.reads:
            shape = getattr(arrays[i], "shape", None)
            if shape is None or len(shape) <= d:
                raise InputMismatch(f"input {i}: expected an array of rank "
                                    f"{len(self.input_shapes[i])}")
            values[name] = int(shape[d])
        return values

    def failures(self, arrays: Sequence[Any]) -> list[str]:
        """Why these arrays are outside the version: each failed size relation or guard."""
        return [f"{condition} (got {actual})"
                for condition, _, actual in self.failed_guards(arrays)]

    def failed_guards(self, arrays: Sequence[Any]) -> list[tuple[str, Any, Any]]:
        """``(condition, expected, actual)`` of each shape guard these arrays fail: a symbol's
        range, an input's shape as the symbols give it (duck-sized dimensions equal), and the
        guards the compile's decisions recorded (with the site that decided)."""
        try:
            values = self.sizes_of(arrays)
        except InputMismatch as exc:
            return [(str(exc), "an array", None)]
        where = ", ".join(f"{name} = inputs[{i}].shape[{d}]" for name, i, d in self.reads)
        failed: list[tuple[str, Any, Any]] = []
        for name, (low, high) in self.symbols.items():
            if not low <= values[name] <= high:
                bounds = f"{low} <= {name}" + (f" <= {high}" if high < UNBOUNDED else "")
                failed.append((f"{bounds} where {where}", True, values[name]))
        for i, (shape, strides) in enumerate(zip(self.input_shapes, self.input_strides)):
            got = tuple(getattr(arrays[i], "shape", ()))
            want = tuple(n.evaluate(values) if isinstance(n, Size) else n for n in shape)
            if got != want:
                failed.append((f"inputs[{i}].shape == ({', '.join(map(str, shape))}) where "
                               f"{where}", want, got))
                continue
            itemsize = getattr(getattr(arrays[i], "dtype", None), "itemsize", 1)
            real = tuple(getattr(arrays[i], "strides", ()))
            planned = tuple((n.evaluate(values) if isinstance(n, Size) else n) * itemsize
                            for n in strides)
            if 0 not in got and any(n > 1 and a != b for n, a, b in zip(got, real, planned)):
                failed.append((f"inputs[{i}].strides == ({', '.join(map(str, strides))}) "
                               f"elements where {where}", planned, real))
        failed += [(f"{g} where {where} (decided at {g.site})", True,
                    g.expression.evaluate(values)) for g in self.guards if not g.holds(values)]
        return failed

    def instance(self, values: Mapping[str, int]) -> Executable:
        key = tuple(values[name] for name, _, _ in self.reads)
        found = self._instances.get(key)
        if found is not None:
            self._instances.move_to_end(key)
            return found
        with self._lock:
            found = self._instances.get(key)
            if found is None:
                found = self._made(instantiate(self.artifact, values), values)
                self.instances_made += 1
                self._instances[key] = found
                while len(self._instances) > MAX_INSTANCES:
                    self._instances.popitem(last=False)
        return found

    def _made(self, instance: KernelArtifact, values: Mapping[str, int]) -> Any:
        """The executable of one instance: machine code over the shared modules, or for CUDA the
        Triton kernels, which take the sizes as arguments (one source for every instance)."""
        if instance.target.get("device") == "cuda":
            from .triton.executable import TritonExecutable

            return TritonExecutable(instance, cache_dir=self._cache_dir, sizes=dict(values))
        return Executable(instance, self._cache_dir, modules=self._modules)

    def entry_for(self, arrays: Sequence[Any], slow: Any,
                  otherwise: Callable[[Sequence[Any]], Any] | None = None,
                  scalars: tuple[tuple[int, str], ...] = ()) -> Any:
        """A machine-code entry for calls with exactly these arrays' layouts (``entry``), made
        the second time they are seen (a size that comes back), else None. Where the instance
        has none (its kernels run on the thread pool), ``otherwise(arrays)``'s entry (the
        runtime's key entry for these exact layouts), if given. ``scalars``: inputs the call
        passes as Python or NumPy scalars, with their kinds (``arrays`` has their 0-d arrays;
        the entry reads the call's own values, ``Executable.entry``)."""
        shapes = _layouts(arrays)
        instance = self._by_shapes.get(shapes)
        if instance is None or [(a.shape, a.strides, a.dtype) if type(a) is np.ndarray else None
                                for a in arrays] != instance.input_layouts:
            return None  # an entry only for the layouts its instance was planned for
        made = self._entries.get(shapes)
        if made is None:  # first sight: count it
            if shapes not in self._entries:
                self._entries[shapes] = False
            return None
        if made is False:
            made = instance.entry(list(arrays), slow, scalars)
            if isinstance(made, str):
                made = otherwise(arrays) if otherwise is not None else None
            with self._lock:  # ``entry_hits`` reads the table from other threads
                if len(self._entries) >= MAX_INSTANCES:
                    self._retired_hits += sum(e.hits for e in tuple(self._entries.values()) if e)
                    self._entries = {}
                self._entries[shapes] = made
        return made

    def entry_hits(self) -> int:
        """Calls its entries ran (``cache_info``'s level-1 hits)."""
        return self._retired_hits + sum(e.hits for e in tuple(self._entries.values()) if e)

    def __call__(self, *arrays: np.ndarray) -> list[Any]:
        try:  # the input layouts checked before: their instance, run unchecked
            found = self._by_shapes.get(_layouts(arrays))
        except AttributeError:
            found = None
        if found is not None:
            return found.run(*arrays)
        failed = self.failures(arrays)
        if failed:
            raise InputMismatch(f"{self.artifact.name}: outside the generic version: "
                                f"{'; '.join(failed)}")
        found = self.instance(self.sizes_of(arrays))
        result = found(*arrays)  # checked the first time
        if len(self._by_shapes) >= MAX_INSTANCES:
            self._by_shapes.clear()
        self._by_shapes[_layouts(arrays)] = found
        return result
