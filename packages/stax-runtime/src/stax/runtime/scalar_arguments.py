"""Scalar arguments passed to a compiled version as run-time inputs (issue 15; issue 14 item 3).

A generic version whose capture had scalar arguments made inputs (``stax.ir.scalar_inputs``)
takes a Python ``float``/``int`` as a 0-d ``float64``/``int64`` array and a NumPy scalar
(``np.float64(t)``, ``np.float32``, NumPy's integers) as a 0-d array of its own dtype;
``ScalarArguments`` wraps its executable so the runtime's runners pass the values unchanged:
each is converted on the way in, and a value the conversion would not keep exactly (an ``int``
past 2**53, which NumPy converts to a float array's dtype through a double) is a guard failure,
so the call takes another version. The machine-code entry reads them itself
(``stax.codegen.cpu.entry_scalars``).

A CUDA version takes the 0-d array on the device of its array inputs, made by their library
(``ArrayLibrary.scalar``: a fill on the device, no host copy to wait for).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from stax.codegen import Executable, TritonExecutable
from stax.codegen.triton.arrays import library_of
from stax.ir.scalar_inputs import value_kind
from stax.ir.scalar_predicates import OTHER_OUTCOME, describe, holds

#: an int argument converted to a float array's dtype exactly (as NumPy does, via a double)
EXACT_INT = 2 ** 53
_DTYPES = {"int": np.dtype(np.int64), "float": np.dtype(np.float64),
           "complex": np.dtype(np.complex128)}


def input_dtype(kind: str) -> np.dtype:
    """The dtype of the 0-d input a scalar of ``kind`` is passed as."""
    return _DTYPES[kind] if kind in _DTYPES else np.dtype(kind.split(".", 1)[1])


class ScalarArguments:
    """An executable whose flat inputs include scalar arguments, by position."""

    def __init__(self, inner: Any, slots: list[int], scalars: Mapping[int, str],
                 pattern: Any = None, predicates: Sequence[Any] = ()) -> None:
        self.inner = inner
        #: comparisons of the scalars Python branched on, with their outcomes: a call where
        #: one comes out otherwise fails a guard (``stax.ir.scalar_predicates``)
        self.predicates = [list(p) for p in predicates]
        #: the generic pattern it was compiled for: the call's, with the other Python scalars
        #: it takes as inputs (``generic.compile_generic``)
        self.pattern = pattern
        self.slots = slots  # the flat arguments the inputs are, scalars among them
        self.scalars = {slots.index(leaf): kind for leaf, kind in scalars.items()
                        if leaf in slots}
        self.artifact = getattr(inner, "artifact", None)
        #: the size-generic executable inside (its shape guards), if any
        self.sized = inner if hasattr(inner, "failed_guards") else None
        self.on_device = self.artifact is not None and \
            self.artifact.target.get("device") == "cuda"
        # the arrays' layouts are the key's, the scalars' made here: an exact executable's
        # unchecked run (a generic one checks each new layout once itself)
        self._run = inner.run if isinstance(inner, (Executable, TritonExecutable)) else inner

    @classmethod
    def around(cls, executable: Any, program: Any, scalars: Mapping[int, str],
               pattern: Any = None, predicates: Sequence[Any] = ()) -> Any:
        """``executable`` itself when no scalar is an input, else wrapped."""
        slots = [i for i, s in enumerate(program.inputs) if s is not None]
        if not any(leaf in slots for leaf in scalars):
            return executable
        return cls(executable, slots, scalars, pattern, predicates)

    def _inputs(self, inputs: Sequence[Any]) -> list[Any]:
        arrays = list(inputs)
        if self.on_device:
            return self._device_inputs(arrays)
        for position, kind in self.scalars.items():
            arrays[position] = np.array(arrays[position], input_dtype(kind))
        return arrays

    def _device_inputs(self, arrays: list[Any]) -> list[Any]:
        found = next(((a, library) for i, a in enumerate(arrays) if i not in self.scalars
                      and (library := library_of(a)) is not None), None)
        if found is None:  # no device array among the inputs: the executable raises its error
            return arrays
        like, library = found
        for position, kind in self.scalars.items():
            arrays[position] = library.scalar(arrays[position], input_dtype(kind).name, like)
        return arrays

    def __call__(self, *inputs: Any) -> list[Any]:
        return self._run(*self._inputs(inputs))

    def failed_guards(self, inputs: Sequence[Any]) -> list[tuple[str, Any, Any]]:
        """``(condition, expected, actual)`` of each guard these inputs fail: a scalar of
        another type or out of the exact range, then the sizes' guards."""
        failed = []
        for position, kind in self.scalars.items():
            value = inputs[position]
            if value_kind(value) != kind:
                failed.append((f"type(inputs[{self.slots[position]}]) is {kind}", kind,
                               type(value).__name__))
            elif kind == "int" and not -EXACT_INT < value < EXACT_INT:
                failed.append((f"abs(inputs[{self.slots[position]}]) < 2**53", True, value))
        if not failed and self.predicates and not holds(self.predicates, {
                self.slots[p]: inputs[p] for p in self.scalars}):
            failed.append(("; ".join(describe(p) for p in self.predicates), True,
                           OTHER_OUTCOME))
        if failed or self.sized is None:
            return failed
        return self.sized.failed_guards(self._inputs(inputs))

    def failures(self, inputs: Sequence[Any]) -> list[str]:
        return [f"{condition} (got {actual})"
                for condition, _, actual in self.failed_guards(inputs)]

    def entry(self, inputs: Sequence[Any], slow: Any) -> Any:
        """The machine-code entry for calls like ``inputs`` (every flat argument an input):
        the exact executable's, its scalar inputs checked by type and read by value
        (``cpu/entry_scalars.py``), or why there is none."""
        if self.on_device or self.sized is not None or not isinstance(self.inner, Executable):
            return "its sizes are generic or it runs on a device"
        return self.inner.entry(self._inputs(inputs), slow, tuple(sorted(self.scalars.items())))

    def entry_for(self, inputs: Sequence[Any], slow: Any, otherwise: Any = None) -> Any:
        """Generic in sizes too: the machine-code entry of the instance for these layouts (its
        scalar inputs checked by type and read by value), made the second time they are seen,
        else None (``GenericExecutable.entry_for``; ``otherwise``: see there)."""
        if self.sized is None or self.on_device:
            return None
        return self.sized.entry_for(self._inputs(inputs), slow, otherwise,
                                    tuple(sorted(self.scalars.items())))

    def entry_hits(self) -> int:
        return self.sized.entry_hits() if self.sized is not None else 0

    @property
    def instances_made(self) -> int:
        return self.sized.instances_made if self.sized is not None else 0


def example_inputs(program: Any, leaves: Sequence[Any]) -> list[Any]:
    """The example inputs of ``program`` (a backend's second argument) from a call's flat
    arguments: a scalar made an input as the 0-d array it is passed as."""
    return [np.array(leaves[i], input_dtype(kind))
            if (kind := value_kind(leaves[i])) is not None else leaves[i]
            for i, s in enumerate(program.inputs) if s is not None]
