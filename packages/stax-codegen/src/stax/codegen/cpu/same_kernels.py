"""Kernels that are the same code: emitted once, the others made LLVM aliases of it.

An unrolled Python loop makes one kernel per step, and the steps of a time-stepping loop differ
only in the buffers they read and write (``u1 = f(u0)``, ``u2 = f(u1)``...). LLVM's time is
linear in the number of functions (about 14 ms each to optimize and compile at O3), so a
100-step heat equation spent 2 s compiling 81 copies of 3 kernels. A kernel is emitted from its
``KernelSpec`` alone and takes its buffers as arguments by position, so two specs equal up to a
renaming of their buffers emit the same function: the second is an alias of the first (same
symbol address; the plan, steps and documents name kernels as before).

The key walks the spec's dataclasses (nodes, bodies, nest) field by field: buffer names are
replaced by their order of first appearance, every other leaf kept with its type and ``repr``
(``-0.0`` and ``0.0``, ``1`` and ``1.0``, NaNs of either sign stay distinct: floats by their
bits).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from stax.loop import ComputedBuffer, IndirectLoad, Load

from ..rowshare import Spill
from .emit import KernelSpec

#: the dataclass fields that hold buffer names (subclasses included: ``GuardedLoad``)
_BUFFER_FIELDS = ((ComputedBuffer, "name"), (ComputedBuffer, "updates"), (Load, "buffer"),
                  (IndirectLoad, "buffer"), (Spill, "reduction"), (Spill, "buffer"))


@functools.cache
def _names_a_buffer(kind: type, field: str) -> bool:
    return any(issubclass(kind, c) and field == n for c, n in _BUFFER_FIELDS)


def kernel_key(spec: KernelSpec) -> Any:
    """What ``emit_kernel`` makes of ``spec``, up to the names of its kernel and buffers: the
    records of its objects in the order first reached, each object once (expressions share
    operands: complex arithmetic's DAG would be exponential written out as a tree), an operand
    by its record's position."""
    names: dict[str, int] = {}
    seen: dict[int, int] = {}  # id of a dataclass object -> its record's position
    records: list[Any] = []

    def buffer(name: str | None) -> Any:
        return None if name is None else ("buffer", names.setdefault(name, len(names)))

    def walk(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            at = seen.get(id(value))
            if at is None:
                kind = type(value)
                record = (kind.__name__, tuple(
                    buffer(getattr(value, f.name)) if _names_a_buffer(kind, f.name)
                    else walk(getattr(value, f.name)) for f in dataclasses.fields(value)))
                at = seen[id(value)] = len(records)
                records.append(record)
            return ("record", at)
        if isinstance(value, (tuple, list)):
            return tuple(walk(v) for v in value)
        if isinstance(value, dict):
            return ("dict", tuple(sorted((repr(k), walk(v)) for k, v in value.items())))
        if isinstance(value, (set, frozenset)):
            return ("set", tuple(sorted(repr(walk(v)) for v in value)))
        if isinstance(value, (float, np.floating)):  # bits: -0.0, NaNs of either sign
            return (type(value).__name__, np.asarray(value).tobytes())
        return (type(value).__name__, repr(value))

    args = tuple(buffer(a) for a in spec.args)  # argument positions first
    roots = (walk(spec.nodes), walk(spec.nest))
    renamed = (tuple(sorted((buffer(k), buffer(v)) for k, v in spec.in_place.items())),
               buffer(spec.events), tuple(sorted(buffer(d) for d in spec.discard)),
               tuple(sorted(buffer(o) for o in spec.owned)),
               tuple(sorted(buffer(c) for c in spec.callers)))
    dtypes = tuple(spec.dtypes.get(n) for n in names)  # of every buffer named, in that order
    return args, roots, tuple(records), renamed, dtypes, spec.precise


def alias_lines(aliases: list[tuple[str, str, int]]) -> str:
    """LLVM IR text making each ``(name, emitted, arity)`` kernel an alias of ``emitted``."""
    lines = []
    for name, emitted, arity in aliases:
        signature = f"void ({', '.join(['i8*'] * arity + ['i64', 'i64'])})"
        lines.append(f'@"{name}" = alias {signature}, {signature}* @"{emitted}"')
    return "".join(f"{line}\n" for line in lines)
