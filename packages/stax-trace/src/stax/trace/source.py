"""Finding the user's source line for a recorded call (errors, dumps and warnings name it)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import numpy as np

_SKIP_PREFIXES = ("stax.", "numpy", "operator", "functools")


def user_frame(depth: int = 2) -> FrameType | None:
    """The innermost frame outside Stax and NumPy."""
    frame: FrameType | None = sys._getframe(depth)
    while frame is not None:
        if not frame.f_globals.get("__name__", "").startswith(_SKIP_PREFIXES):
            return frame
        frame = frame.f_back
    return None


def user_source(depth: int = 2) -> str | None:
    """``file:line in function`` of the innermost frame outside Stax and NumPy."""
    frame = user_frame(depth + 1)
    if frame is None:
        return None
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


class HeldWarnings:
    """NumPy's floating-point warnings (divide by zero, overflow, invalid value) while capture
    runs NumPy on the examples, held back with the user's line that caused each.

    The call that follows a capture — its compiled version, whose kernels report the same events
    and then run the call eagerly, or the eager fallback — gives eager NumPy's warnings itself,
    so those of capture would be duplicates. Only when capture ends in the user's own error (an
    error eager NumPy would raise too, after warning) are they given, at the user's lines, before it.
    NumPy writes them here in its ``log`` error mode.
    """

    def __init__(self) -> None:
        self.pending: list[tuple[str, str, int, dict[str, Any]]] = []

    def write(self, text: str) -> None:  # NumPy: "Warning: divide by zero encountered in divide\n"
        frame = user_frame(2)
        if frame is not None:
            self.pending.append((text.strip().removeprefix("Warning: "), frame.f_code.co_filename,
                                 frame.f_lineno, frame.f_globals))

    def emit(self) -> None:
        """Each held warning, as ``warnings.warn`` would give it from the user's line."""
        for message, filename, lineno, scope in self.pending:
            warnings.warn_explicit(message, RuntimeWarning, filename, lineno,
                                   module=scope.get("__name__"),
                                   registry=scope.setdefault("__warningregistry__", {}),
                                   module_globals=scope)
        self.pending.clear()


@contextmanager
def holding_warnings() -> Iterator[HeldWarnings]:
    """While the block runs, NumPy's floating-point warnings in this thread are held (NumPy's
    error state is per thread and context: other threads are untouched). Error modes other than
    ``warn``, and a user's own ``seterrcall``, are left as they are."""
    held = HeldWarnings()
    state = np.geterr()
    relayed = {kind: "log" for kind, mode in state.items() if mode == "warn"}
    if not relayed or any(mode in ("call", "log") for mode in state.values()):
        yield held
        return
    with np.errstate(call=held, **relayed):
        yield held
