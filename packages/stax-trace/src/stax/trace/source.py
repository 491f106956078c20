"""Finding the user's source line for a recorded call (errors and dumps name it)."""

from __future__ import annotations

import sys

_SKIP_PREFIXES = ("stax.", "numpy", "operator", "functools")


def user_source(depth: int = 2) -> str | None:
    """``file:line in function`` of the innermost frame outside Stax and NumPy."""
    frame = sys._getframe(depth)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(_SKIP_PREFIXES):
            code = frame.f_code
            return f"{code.co_filename}:{frame.f_lineno} in {code.co_name}"
        frame = frame.f_back
    return None
