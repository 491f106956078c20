"""Data gates the machine-code entry tests itself (``entry.py``, ``EntryPlan.gates``).

A version whose data gates are checked in its program (``stax.runtime.gate_checks``) computes
each gate's value as one more result after the user's: ``if y.max() < 5:`` is a 0-d bool. The
Python call compares those values with the outcomes capture saw and hands the call to the
dispatcher where one differs (another branch's version). Done by the interpreter, that cost
15 us a call of a 60-element function that NumPy runs in 2. The entry does the same compare in
machine code, right after the kernels (before their events and checks, as the Python call
does): a value that differs sends the call, untouched, to ``slow`` - the dispatcher, which runs
it again and finds the branch that applies.

A gate is ``(test, expected)`` (``EntryGate``), said by the caller, which knows what Python
read: ``"truth"``, the value's truth (``bool(v)``: not zero, a NaN true), against a bool;
``"equal"``, the value itself against a number (an ``int`` of an integer or bool buffer, a
float of a float buffer, bit for bit: ``-0.0`` is not ``0.0``, and any NaN matches a NaN, as
``stax.runtime.gates.same_outcome`` has it). A gate read otherwise (a list, a complex) gets no
entry. Two words outside the entry (``live``) say whether its gates hold at all (the caller
clears the first when the program's values turn out not to be NumPy's: every call then goes
slow) and count the calls whose gates matched.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from llvmlite import ir

from .types import I64

_FLOATS = {"float16": ir.HalfType(), "float32": ir.FloatType(), "float64": ir.DoubleType()}


@dataclass(frozen=True)
class EntryGate:
    """What the entry compares one gate's value with (see the module's docstring)."""

    test: str  # "truth" or "equal"
    expected: Any  # a bool for "truth"; an int or a float for "equal"


def tested_gates(buffers: Any, outputs: Any, gates: tuple[EntryGate, ...], slots: dict[str, int]
                 ) -> tuple[tuple[int, str, EntryGate], ...] | str:
    """``EntryPlan.gates``: ``(slot, dtype, gate)`` of each of ``gates``, the values of the
    artifact's ``outputs`` (of its ``buffers``, at ``slots``), or why the entry cannot test
    them."""
    shapes = {b.name: (tuple(b.shape), b.dtype) for b in buffers}
    found = [shapes.get(o.get("buffer")) for o in outputs]
    refused = _refusal(gates, found)
    return refused if refused is not None else tuple(
        (slots[o["buffer"]], shape[1], g) for o, shape, g in zip(outputs, found, gates))


def _refusal(gates: tuple[EntryGate, ...], buffers: list[tuple[tuple[int, ...], str] | None]
             ) -> str | None:
    """Why the entry cannot test ``gates`` on their buffers (``(shape, dtype)`` each; None: the
    value is no buffer of the program), or None when it can."""
    for gate, buffer in zip(gates, buffers, strict=True):
        if buffer is None:
            return "a data gate's value is not computed by its kernels"
        shape, dtype = buffer
        kind = np.dtype(dtype).kind
        if math.prod(shape) != 1 or kind not in "biuf" or (kind == "f" and dtype not in _FLOATS):
            return f"a data gate reads a {dtype} value of shape {shape}"
        if gate.test == "truth" and type(gate.expected) is bool:
            continue
        if gate.test == "equal" and _pattern(gate.expected, dtype) is not None:
            continue
        return f"a data gate's outcome {gate.expected!r} is not one the entry compares"
    return None


def _pattern(expected: Any, dtype: str) -> int | float | None:
    """The bits ``expected`` has as a ``dtype`` value (NaN for a float NaN), or None where no
    value of ``dtype`` is ``expected`` (the gate could never match: no entry)."""
    kind = np.dtype(dtype).kind
    if kind in "biu" and type(expected) is int:
        info = (0, 1) if kind == "b" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        if not info[0] <= expected <= info[1]:
            return None
        return int(np.array(expected, dtype).view(f"u{np.dtype(dtype).itemsize}"))
    if kind == "f" and type(expected) is float:
        if expected != expected:
            return math.nan
        value = np.array(expected, dtype)
        if float(value) != expected:  # (not a value of the dtype)
            return None
        return int(value.view(f"u{value.itemsize}"))
    return None


def emit_gates(b: ir.IRBuilder, gates: tuple[tuple[int, str, EntryGate], ...],
               data: Callable[[int], ir.Value], live: ir.Value,
               require: Callable[[ir.Value], None]) -> None:
    """Compare each gate's value (``(slot, dtype, gate)``; ``data(slot)``: its data pointer)
    with its outcome, through ``require`` (a false condition goes slow); ``live``: the address
    of the word that must not be zero, the next one counting the calls that pass."""
    words = b.inttoptr(live, I64.as_pointer())
    require(b.icmp_signed("!=", b.load(words), ir.Constant(I64, 0)))
    for slot, dtype, gate in gates:
        kind, size = np.dtype(dtype).kind, np.dtype(dtype).itemsize
        bits = ir.IntType(8 * size)
        raw = b.load(b.bitcast(data(slot), bits.as_pointer()))
        if gate.test == "truth":
            if kind == "f":
                value = b.bitcast(raw, _FLOATS[dtype])
                true = b.fcmp_unordered("!=", value, ir.Constant(_FLOATS[dtype], 0.0))
            else:
                true = b.icmp_unsigned("!=", raw, ir.Constant(bits, 0))
            require(true if gate.expected else b.not_(true))
            continue
        pattern = _pattern(gate.expected, dtype)
        if isinstance(pattern, float):  # a NaN: any NaN
            value = b.bitcast(raw, _FLOATS[dtype])
            require(b.fcmp_unordered("uno", value, value))
        else:
            require(b.icmp_unsigned("==", raw, ir.Constant(bits, pattern)))
    passed = b.gep(words, [ir.Constant(I64, 1)])
    b.store(b.add(b.load(passed), ir.Constant(I64, 1)), passed)

