"""NumPy's error state as capture sees it: whether the function set its own.

NumPy keeps its error state (``np.errstate``, ``np.seterr``) in a context variable holding a
capsule; entering a block, or ``np.seterr``, puts a new capsule there. Python's warning filters
decide what becomes of NumPy's warnings: a ``warnings.catch_warnings()`` block (a new filters
list) or a ``simplefilter`` call inside the function counts as its own state too. Capture notes the
capsule where the function begins and looks again at every operation it records: one recorded
under another capsule ran inside the function's own block (in the function or in any function
it calls, however deep), whose categories the caller's state at a later call does not
decide. Such a program's floating-point events are left to NumPy (``info["sets_errstate"]``:
no events reported on NumPy's behalf, ``stax.loop.event_reports`` and ``overwrites``).

Underflow is the one category a caller's default state ignores that kernels do not always report
(``stax.codegen.errstate``): where an operation ran under the function's own block heeding it
(``np.errstate(under="raise")``) the capture says so (``info["heeds_underflow"]``), and calls
heed underflow whatever the caller's state, so the block decides it in the eager run.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np


def _contextvar() -> Any:
    try:
        return np._core._multiarray_umath._extobj_contextvar
    except AttributeError:  # NumPy 1.x: no context variable
        return None


_STATE = _contextvar()


def current_error_state() -> tuple[Any, ...]:
    """The current state's identity: NumPy's capsule, and Python's warning filters (the list,
    which ``warnings.catch_warnings`` replaces, its length and first entry, which
    ``simplefilter`` changes). NumPy 1.x has no capsule: its settings, so every operation
    counts as under the function's own state there (its events left to NumPy)."""
    filters = warnings.filters
    numpy = _STATE.get() if _STATE is not None else (np.geterr(), np.geterrcall())
    return numpy, id(filters), len(filters), id(filters[0]) if filters else 0


#: ``heeds_underflow`` where a block of the function's own runs with the relay's underflow mode
#: (``log`` or ``call``): set so by the block (``np.errstate(under="log")``), or left as the
#: caller's; the runtime reads the function's code to tell
UNCLEAR = "unclear"


def error_state_at_entry() -> tuple[tuple[Any, ...], str]:
    """The state where the function begins, and its underflow mode: capture runs the function
    under its own relay of the caller's state (``source.holding_warnings``: ``"log"`` or
    ``"call"`` for every category the caller does not raise on, ignored ones included), which a
    block of the function's own that leaves underflow alone inherits."""
    return current_error_state(), np.geterr()["under"]


def note_error_state(tracer: Any) -> None:
    """At an operation ``tracer`` records: whether it runs under the function's own state
    (``tracer.own_error_state``), and whether that state heeds underflow of its own accord
    (``tracer.heeds_underflow``): set to another mode than the relay's, or under a caller's
    ``raise``, which a block setting ``raise`` itself cannot be told from; the relay's own mode
    is ``UNCLEAR``. NumPy's categories are read only under a state of the function's own."""
    entry, entry_under = tracer.error_state or (None, "ignore")  # None: not begun
    if current_error_state() == entry:
        return
    tracer.own_error_state = True
    under = np.geterr()["under"]
    if under == "ignore":
        return
    if under != entry_under or entry_under == "raise":
        tracer.heeds_underflow = True
    else:  # the relay's own mode: the block set it so, or left it (its code says which)
        tracer.heeds_underflow = UNCLEAR
