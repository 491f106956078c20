"""Finding the user's source line for a recorded call (errors, dumps and warnings name it)."""

from __future__ import annotations

import dis
import os
import sys
import sysconfig
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import numpy as np

from stax.ir import UnsupportedError
from stax.ir.warning_marks import moved_to_user, unmark

_SKIP_PREFIXES = ("stax.", "numpy", "operator", "functools")
_STDLIB = os.path.join(sysconfig.get_paths()["stdlib"], "")
_INSTALLED = ("site-packages", "dist-packages")


def library_code(module: str | None, filename: str) -> bool:
    """Whether code of ``module`` in ``filename`` is NumPy's, Stax's or the standard library's
    (its frozen modules too: ``<frozen _collections_abc>``): not the user's (third-party
    packages count as the user's)."""
    return (module or "").split(".")[0] in ("numpy", "stax") or filename.startswith("<frozen ") \
        or (filename.startswith(_STDLIB) and not any(p in filename for p in _INSTALLED))


#: what NumPy's indexing of an untraced array by a traced one is refused as (``user_subscript``)
UNTRACED_INDEXED = ("an array that is not traced (a constant written in the function, a global, "
                    "an object's attribute) indexed by a traced array: NumPy's indexing needs "
                    "the index's data; pass the indexed array as an argument")


def user_subscript() -> bool:
    """Whether the innermost user frame is at ``a[b]`` or ``a[b] = c``: NumPy's own indexing of
    an untraced array asking a traced index for its data (``table[idx]``)."""
    frame = user_frame(3)
    if frame is None or frame.f_lasti < 0:
        return False
    return dis.opname[frame.f_code.co_code[frame.f_lasti]] in ("BINARY_SUBSCR", "STORE_SUBSCR")


def library_frame(frame: FrameType) -> bool:
    return library_code(frame.f_globals.get("__name__"), frame.f_code.co_filename)


def user_frame(depth: int = 2, stdlib: bool = True) -> FrameType | None:
    """The innermost frame outside Stax and NumPy (and the standard library, unless ``stdlib``)."""
    frame: FrameType | None = sys._getframe(depth)
    while frame is not None:
        if not frame.f_globals.get("__name__", "").startswith(_SKIP_PREFIXES) and (
                stdlib or not library_frame(frame)):
            return frame
        frame = frame.f_back
    return None


def user_source(depth: int = 2, stdlib: bool = True) -> str | None:
    """``file:line in function`` of the innermost frame outside Stax and NumPy (and the standard
    library, unless ``stdlib``: ``random.Random()`` is refused in ``random.py``, called here)."""
    frame = user_frame(depth + 1, stdlib)
    if frame is None:
        return None
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


_traced = threading.local()


@contextmanager
def traced_value() -> Iterator[None]:
    """Marks NumPy's work on a recorded call's operands (a traced value being computed)."""
    _traced.depth = getattr(_traced, "depth", 0) + 1
    try:
        yield
    finally:
        _traced.depth -= 1


def computing_traced_value() -> bool:
    return getattr(_traced, "depth", 0) > 0


#: NumPy's text for each error category (its messages start with it)
_CATEGORY_OF = {"divide by zero": "divide", "overflow": "over", "underflow": "under",
                "invalid value": "invalid"}


class HeldWarnings:
    """NumPy's floating-point reports (divide by zero, overflow, invalid value) while capture
    runs NumPy on the examples, held back: warnings with the user's line that caused each, and
    for the ``print``, ``log`` and ``call`` error modes what NumPy would print, log or call.

    The call that follows a capture — its compiled version, whose kernels report the same events
    and then run the call eagerly, or the eager fallback — gives eager NumPy's reports itself,
    so those of capture would be duplicates. Only when capture ends in the user's own error (an
    error eager NumPy would raise too, after reporting) are they given, in order, before it.
    NumPy hands them here in its ``log`` error mode (``write``) or, for ``call``, by calling.

    NumPy's warnings from Python (``RuntimeWarning``: "All-NaN slice encountered", "Degrees of
    freedom <= 0 for slice") are held the same way (``python``): a compiled version declines
    such a call (a check) and its eager run warns; the first call warned twice.
    """

    def __init__(self, modes: dict[str, str] | None = None, errcall: Any = None) -> None:
        self.pending: list[tuple[str, Any]] = []
        # events NumPy reported outside a traced call: computing a constant (np.arccos of a
        # scalar argument), which a compiled version returns without reporting again
        self.untraced: list[str] = []
        #: ... of them, the underflows (NumPy's default ignores them: a compiled version
        #: declines a call whose state heeds them, ``info["constant_underflow"]``)
        self.untraced_under: list[str] = []
        self.modes = modes or {}
        self.errcall = errcall  # the user's np.seterrcall, for the call and log modes
        self.emitting = False  # ``emit`` is giving the held reports
        #: warnings the function's own code issued (``warnings.warn`` outside NumPy, NumPy's C
        #: code called on an untraced value), held as the others: a compiled version would not
        #: issue them again (``issuer``)
        self.issued: list[str] = []

    def refuse_unrepeated(self) -> None:
        """Raise ``UnsupportedError`` where capture held a report a compiled version would not
        give again: a warning of the function's own, an event computing a constant."""
        if self.issued:
            raise UnsupportedError(f"the function warns ({self.issued[0]}): a compiled version "
                                   "would not warn again",
                                   hint="as it is, the function runs eagerly")
        if self.untraced:
            raise UnsupportedError(f"NumPy reported '{self.untraced[0]}' computing a value that "
                                   "does not depend on the traced arrays: a compiled version "
                                   "would return it without reporting it again",
                                   hint="as it is, the function runs eagerly")

    def write(self, text: str) -> None:  # NumPy: "Warning: divide by zero encountered in divide\n"
        message = text.strip().removeprefix("Warning: ")
        category = _CATEGORY_OF.get(message.split(" encountered")[0], "")
        mode = self.modes.get(category, "warn")
        if not computing_traced_value():
            (self.untraced if category != "under" else self.untraced_under).append(message)
        if mode == "ignore":
            return
        if mode != "warn":
            self.pending.append((mode, message))
            return
        frame = user_frame(2)
        if frame is not None:
            self.pending.append(("warn", (message, frame.f_code.co_filename, frame.f_lineno,
                                          frame.f_globals)))

    def hold(self, message: Any, category: type[Warning], filename: str, lineno: int) -> None:
        """A Python warning NumPy or the function gave while capture ran (``_show``), with the
        module of the line it names."""
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and (frame.f_code.co_filename, frame.f_lineno) != (filename, lineno):
            frame = frame.f_back
        module = frame.f_globals.get("__name__") if frame is not None else None
        self.pending.append(("python", (message, category, filename, lineno, module)))
        # going through the filters marked the line's registry: under Python's "default"
        # filter (a line warns once) the warning would never show again, neither when capture
        # drops it (the compiled call or an eager run gives it) nor when it gives it (``_give``
        # marks the registry then)
        unmark(message, category, lineno,
               frame.f_globals.get("__warningregistry__") if frame is not None else None)

    def __call__(self, kind: str, flag: int) -> None:  # NumPy's call mode
        if not computing_traced_value():
            (self.untraced if _CATEGORY_OF.get(kind) != "under" else
             self.untraced_under).append(f"{kind} encountered")
        self.pending.append(("call", (kind, flag)))

    def emit(self) -> None:
        """Each held report, as NumPy would have given it (warnings from the user's line).
        Called while capture still holds reports (the user's own error ends it): what is given
        here passes through (``emitting``)."""
        pending, self.pending = self.pending, []
        self.emitting = True
        try:
            self._give(pending)
        finally:
            self.emitting = False

    def _give(self, pending: list[tuple[str, Any]]) -> None:
        for mode, what in pending:
            if mode == "warn":
                message, filename, lineno, scope = what
                warnings.warn_explicit(message, RuntimeWarning, filename, lineno,
                                       module=scope.get("__name__") or filename,
                                       registry=scope.setdefault("__warningregistry__", {}),
                                       module_globals=scope)
            elif mode == "python":  # the user's filters decide again (``hold``)
                message, category, filename, lineno, module = what
                scope = getattr(sys.modules.get(module or ""), "__dict__", None)
                registry = scope.setdefault("__warningregistry__", {}) if scope is not None \
                    else {}
                warnings.warn_explicit(message, category, filename, lineno,
                                       module=module or filename, registry=registry)
            elif mode == "call":
                self.errcall(*what)
            elif mode == "log":
                self.errcall.write(f"Warning: {what}\n")
            else:  # print
                sys.stderr.write(f"Warning: {what}\n")


@contextmanager
def holding_warnings() -> Iterator[HeldWarnings]:
    """While the block runs, NumPy's floating-point reports in this thread are held (NumPy's
    error state is per thread and context: other threads are untouched); ``raise`` is left as
    it is (capture then ends in NumPy's error, as eager does)."""
    state = np.geterr()
    held = HeldWarnings(state, np.geterrcall())
    # ignored categories are relayed too (and dropped): an event while computing a constant
    # matters to a later call made under another error state
    relayed = {kind: "call" if mode == "call" else "log" for kind, mode in state.items()
               if mode in ("warn", "print", "log", "call", "ignore")}
    outer = getattr(_holding, "held", None)
    _holding.held = held
    # a capture nested in a recorded call's work (a lifted loop's body compiled at its first
    # run) judges its own constants: an event computing one is not the outer call's
    depth, _traced.depth = getattr(_traced, "depth", 0), 0
    installed = _show_through_holding()
    warn = _warn_through_holding()
    try:
        if not relayed:
            yield held
            return
        with np.errstate(call=held, **relayed):
            yield held
    finally:
        _holding.held, _traced.depth = outer, depth
        if installed is not None and warnings.showwarning is installed:
            warnings.showwarning = installed.shown
        if warn is not None and warnings.warn is warn:
            warnings.warn = warn.original


def _warn_through_holding() -> Any:
    """Route ``warnings.warn`` through a function that notes a call from the function's own
    code in the capturing thread (``HeldWarnings.issued``), whether the filters then show it,
    drop it or raise it: under an ``"error"`` filter the warning is an exception the function
    may catch, and the branch it takes must not become the version. None when in place."""
    if getattr(warnings.warn, "original", None) is not None:
        return None
    original = warnings.warn

    def warn(message: Any, category: Any = None, stacklevel: int = 1, source: Any = None,
             **kwargs: Any) -> None:
        held = getattr(_holding, "held", None)
        if held is not None and not held.emitting:
            caller = sys._getframe(1)
            if not caller.f_globals.get("__name__", "").startswith(("numpy", "stax.")):
                kind = type(message) if isinstance(message, Warning) else category or UserWarning
                held.issued.append(f"{kind.__name__} '{message}' at {caller.f_code.co_filename}:"
                                   f"{caller.f_lineno}")
        original(message, category, stacklevel + 1, source, **kwargs)
    warn.original = original  # type: ignore[attr-defined]
    warnings.warn = warn
    return warn


def _show_through_holding() -> Any:
    """Route ``warnings.showwarning`` through ``_show`` (the function put in place, or None when
    one is in place already). Warnings' state is the process's, not the thread's: ``_show``
    holds a warning only for the thread whose capture holds reports, and passes the others on;
    the capture that put it in place takes it out if it is still there."""
    if getattr(warnings.showwarning, "shown", None) is not None:
        return None
    shown = warnings.showwarning

    def show(message: Any, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: Any = None) -> None:
        held = getattr(_holding, "held", None)
        if held is None or held.emitting:
            shown(message, category, filename, lineno, file, line)
        elif not issuer().startswith(("numpy", "stax.")):  # held: given once by the call
            held.issued.append(f"{category.__name__} '{message}' at {filename}:{lineno}")
            held.hold(message, category, filename, lineno)
        elif issubclass(category, RuntimeWarning) or not computing_traced_value():
            if not computing_traced_value():  # of a constant: a compiled version would
                held.untraced.append(str(message))  # return it without warning again
            # a traced value's warning at Stax's own line (``stax.ir.ops``' ``y[key] = value``
            # casting complex to real): at the user's line, as eager NumPy gives it
            held.hold(message, category, *_users_line(message, category, filename, lineno))
        else:
            shown(message, category, filename, lineno, file, line)
    show.shown = shown  # type: ignore[attr-defined]
    warnings.showwarning = show
    return show


_holding = threading.local()  # this thread's HeldWarnings, while capture holds them


def _users_line(message: Any, category: type[Warning], filename: str, lineno: int
                ) -> tuple[str, int]:
    """``filename:lineno``, or where that is Stax's own line, the user's line calling it
    (``warning_marks.moved_to_user``)."""
    frame = moved_to_user(message, category, filename, lineno)
    return (filename, lineno) if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def issuer() -> str:
    """The module whose code called ``warnings.warn`` for the warning being shown (for a
    warning of NumPy's C code, the module that called it: Stax's own for a traced value)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") in ("warnings", __name__):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "") if frame is not None else ""


def held_mark() -> tuple[int, int, int] | None:
    """Where the reports capture holds now end (None: none are held), for ``drop_held``."""
    held = getattr(_holding, "held", None)
    return None if held is None else (len(held.pending), len(held.untraced),
                                      len(held.untraced_under))


def drop_held(mark: tuple[int, int, int] | None, end: tuple[int, int, int] | None = None
              ) -> None:
    """Forget the reports held since ``mark`` (until ``end``): work capture did again, or
    undid (a lifted loop's trial runs, its traced first iteration), whose reports eager NumPy
    gives once."""
    held = getattr(_holding, "held", None)
    if held is not None and mark is not None:
        del held.pending[mark[0]:end[0] if end is not None else None]
        del held.untraced[mark[1]:end[1] if end is not None else None]
        del held.untraced_under[mark[2]:end[2] if end is not None else None]
