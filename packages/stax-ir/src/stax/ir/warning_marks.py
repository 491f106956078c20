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

import warnings
from typing import Any


def unmark(message: Any, category: type[Warning], lineno: int, registry: Any) -> None:
    """Take back the marks a shown ``message`` left (``registry``: its module's, or None)."""
    text = str(message)
    warnings.onceregistry.pop((text, category), None)  # type: ignore[attr-defined]
    if isinstance(registry, dict):
        for key in ((text, category, lineno), (text, category, 0), (text, category)):
            registry.pop(key, None)
