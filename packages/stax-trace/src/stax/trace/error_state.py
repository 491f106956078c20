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
