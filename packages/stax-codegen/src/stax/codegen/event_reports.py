"""Floating-point events reported on NumPy's behalf: a call with events that stands.

A call whose kernels raised events NumPy's error state heeds used to decline, and the runtime
ran it again eagerly so that NumPy warned, raised or called itself: ``np.where(d != 0, a / d,
0.0)`` with zeros in ``d`` ran twice at every call (0.98x NumPy). Where capture found one
operation that may raise each category the call raised (``KernelArtifact.event_reports``,
``stax.trace.event_sources``), eager NumPy raised it there, so NumPy is asked to report it
there: the same ufunc, called from the user's line (``call_sites.py``), on a few elements that
raise exactly those categories (``1 / 0`` a division by zero, ``log(-1)`` an invalid value),
as ``late_reports.py`` does for in-place updates. The message ("divide by zero encountered in
divide"), category, line, ``__warningregistry__``, ``np.seterrcall``'s callback (with the
operation's categories) and ``FloatingPointError`` are NumPy's own, under whatever state the
caller set; an operation reported earlier in the function is reported first, as eager NumPy
ran it first. A call with any category not attributed, or one for which no operands are found,
declines as before, before anything was reported.

Not the same as eager in one respect: ``np.seterrcall``'s callback receives the operation's
categories without underflow (which the kernels do not see; NumPy's state ignores it unless
the caller changed it, and then the call declines at its start).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from .call_sites import call_site
from .cpu.fpevents import DIVIDE, INVALID, OVERFLOW

BITS = {"divide": DIVIDE, "over": OVERFLOW, "invalid": INVALID}
REPORTED = DIVIDE | OVERFLOW | INVALID


def _candidates(dtype: np.dtype) -> list[Any]:
    """Values of ``dtype`` (NumPy scalars: building the operands casts nothing) to try."""
    if dtype.kind == "f":
        info = np.finfo(dtype)
        big = float(info.max)  # (a Python float: compared with float16's, 1e30 would cast)
        values = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -3.0, 100.0, 1000.0, -1000.0, 1e30, -1e30,
                  big, -big, float(info.tiny), np.inf, -np.inf]
        return [dtype.type(v) for v in values if not np.isfinite(v) or abs(v) <= big]
    info_i = np.iinfo(dtype)
    values = [0, 1, -1, 2, -2, int(info_i.min), int(info_i.max)]
    return [dtype.type(v) for v in values if info_i.min <= v <= info_i.max]


def _raised(ufunc: np.ufunc, operands: tuple[np.ndarray, ...]) -> int:
    """The status bits ``ufunc`` raises on ``operands`` (underflow aside)."""
    flags = [0]

    def note(kind: str, flag: int) -> None:
        flags[0] |= flag

    with np.errstate(all="call", call=note):
        ufunc(*operands)
    return flags[0] & REPORTED


@functools.cache
def _operands_for(name: str, dtype: str, bit: int) -> tuple[Any, ...] | None:
    """Values (one per operand) on which ufunc ``name`` raises exactly ``bit``, or None."""
    ufunc, kind = getattr(np, name), np.dtype(dtype)
    values = _candidates(kind)
    with np.errstate(all="ignore"):
        for combo in itertools.product(values, repeat=ufunc.nin):
            operands = tuple(np.array([v], kind) for v in combo)
            if _raised(ufunc, operands) == bit:
                return combo
    return None


def operands(name: str, dtype: str, bits: int) -> tuple[np.ndarray, ...] | None:
    """Arrays on which ufunc ``name`` raises exactly the categories ``bits`` in one call, or
    None where some category has no such values."""
    kind = np.dtype(dtype)
    found = [_operands_for(name, dtype, bit) for bit in (DIVIDE, OVERFLOW, INVALID) if bits & bit]
    if any(f is None for f in found):
        return None
    nin = getattr(np, name).nin
    return tuple(np.array([f[k] for f in found], kind) for k in range(nin))  # type: ignore


def event_reporter(reports: dict[str, list[Any]]) -> Callable[[int], bool] | None:
    """``report(bits)`` for a plan's ``event_reports``: True once NumPy reported the events
    ``bits`` (the call stands), False, having reported nothing, where it cannot (the call
    declines)."""
    by_bit = {BITS[category]: entry for category, entry in reports.items() if category in BITS}
    if not by_bit:
        return None

    def report(bits: int) -> bool:
        raised: dict[int, list[Any]] = {}  # place -> [entry, bits]
        for bit in (DIVIDE, OVERFLOW, INVALID):
            if bits & bit:
                entry = by_bit.get(bit)
                if entry is None:
                    return False
                raised.setdefault(int(entry[3]), [entry, 0])[1] |= bit
        calls = []
        for place in sorted(raised):
            (name, dtype, source, _), some = raised[place]
            arrays = operands(name, dtype, some)
            if arrays is None:
                return False
            calls.append((getattr(np, name), arrays, call_site(source)))
        for ufunc, arrays, site in calls:  # a raise ends it there, as it ended eager NumPy
            if site is not None:
                site(ufunc, *arrays)
            else:
                ufunc(*arrays)
        return True
    return report

