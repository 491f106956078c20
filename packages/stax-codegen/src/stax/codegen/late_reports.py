"""Floating-point events of an in-place ufunc, reported after it wrote the argument, as NumPy.

``x -= m`` in NumPy runs the subtract loop into ``x`` and only then looks at the CPU's flags:
it warns, raises, calls or logs by its error state with ``x`` already written. A late kernel
that applies that one operation (``LoopProgram.late_reports``) does the same: it writes over
the argument once the call stands, ORing its events into the call's events word, and the new
bits go to the function ``reporter`` makes. That function makes NumPy report them itself: the
same ufunc on two tiny arrays whose elements raise exactly those categories (``x / 0`` a
division by zero, ``max - (-max)`` an overflow...), called from the user's line
(``call_sites.py``), so the message ("overflow encountered in subtract"), the category, the
line, the ``__warningregistry__``, ``np.seterrcall``'s callback and ``FloatingPointError``
are NumPy's own, under whatever state the caller set. Categories the state ignores stay silent
there too.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import errstate
from .call_sites import call_site
from .cpu.fpevents import DIVIDE, INVALID, OVERFLOW, UNDERFLOW

#: per ufunc and category, one pair of operands raising exactly that event: ``huge``, ``tiny``
#: stand for the dtype's largest finite and smallest normal values
_OPERANDS: dict[str, dict[int, tuple[object, object]]] = {
    "add": {OVERFLOW: ("huge", "huge"), INVALID: (np.inf, -np.inf)},
    "subtract": {OVERFLOW: ("huge", "-huge"), INVALID: (np.inf, np.inf)},
    "multiply": {OVERFLOW: ("huge", 2.0), UNDERFLOW: ("tiny", "tiny"), INVALID: (0.0, np.inf)},
    "divide": {DIVIDE: (1.0, 0.0), OVERFLOW: ("huge", 0.5), UNDERFLOW: ("tiny", 3.0),
               INVALID: (0.0, 0.0)},
}


def categories(ufunc: str) -> int:
    """The events ``ufunc`` may raise on floats (NumPy's status bits)."""
    return sum(_OPERANDS[ufunc])


def _value(v: object, info: np.finfo) -> float:
    return {"huge": info.max, "-huge": -info.max, "tiny": info.tiny}.get(v, v)  # type: ignore


def operands(ufunc: str, dtype: np.dtype, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Two arrays of ``dtype`` on which ``ufunc`` raises exactly the events ``bits``."""
    info = np.finfo(dtype)
    pairs = [pair for bit, pair in _OPERANDS[ufunc].items() if bits & bit]
    return (np.array([_value(a, info) for a, _ in pairs], dtype),
            np.array([_value(b, info) for _, b in pairs], dtype))


def reporter(reports: dict[str, list[str]], dtypes: dict[str, str]) -> Callable[[int], None]:
    """``report(bits)`` for a plan's late reports (one a plan, ``overwrites.py``): the events
    ``bits`` the late kernel raised, reported by NumPy as that ufunc's from the user's line
    when its state heeds one of them. ``dtypes``: each late buffer's dtype."""
    (late, (name, source)), = reports.items()
    ufunc, dtype, possible = getattr(np, name), np.dtype(dtypes[late]), categories(name)
    site = call_site(source)

    def report(bits: int) -> None:
        raised = bits & possible
        if errstate.heeded() & raised:  # every category raised, as NumPy's flags hold them
            a, b = operands(name, dtype, raised)  # (``np.seterrcall``'s callback sees them all)
            if site is not None:
                site(ufunc, a, b)
            else:
                ufunc(a, b)
    return report
