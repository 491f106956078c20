"""Python's marks of a warning already shown, taken back.

A warning that passes the filters is marked where the filter says to remember it: the issuing
line's ``__warningregistry__`` under "default" (a line warns once), the module's under "module",
``warnings.onceregistry`` and the module's under "once" (whose keys differ between Python's C
and Python implementations of ``warnings``: all are taken). Capture and compiled calls run
NumPy on the user's data and hold its warnings: a held warning that is dropped (capture's run,
a call that declines and runs eagerly) must not leave its mark, or the user's own run of that
line, which does give it, finds it marked and stays silent.
"""

from __future__ import annotations

import sys
import warnings
from types import FrameType
from typing import Any

#: modules whose lines are not the user's (Stax's own, NumPy's Python code, the call helpers)
NOT_USERS = ("stax.", "numpy", "operator", "functools")


def unmark(message: Any, category: type[Warning], lineno: int, registry: Any) -> None:
    """Take back the marks a shown ``message`` left (``registry``: its module's, or None)."""
    text = str(message)
    warnings.onceregistry.pop((text, category), None)  # type: ignore[attr-defined]
    if isinstance(registry, dict):
        for key in ((text, category, lineno), (text, category, 0), (text, category)):
            registry.pop(key, None)


def moved_to_user(message: Any, category: type[Warning], filename: str, lineno: int
                  ) -> FrameType | None:
    """Where a warning being shown (called from ``warnings.showwarning``'s replacement), issued
    at ``filename:lineno``, belongs when that line is Stax's own (a NumPy step's implementation,
    ``stax.ir.ops``' ``y[key] = value`` casting complex values to real): the innermost frame
    outside Stax and NumPy calling it, the user's line, as eager NumPy names it (the mark the
    warning left at Stax's line taken back: the user's line's filters decide). None where the
    line is not Stax's (or no such caller is found)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and (frame.f_code.co_filename, frame.f_lineno) != (filename, lineno):
        frame = frame.f_back
    if frame is None or not frame.f_globals.get("__name__", "").startswith("stax."):
        return None
    unmark(message, category, lineno, frame.f_globals.get("__warningregistry__"))
    # outward from Stax's line (nearer the warning, the warnings module's own frames)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(NOT_USERS):
        frame = frame.f_back
    return frame
