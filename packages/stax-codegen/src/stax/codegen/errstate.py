"""NumPy's floating-point error state at run time: what a call's events mean for it.

Kernels report events (``cpu/fpevents.py``); NumPy's error state (``np.errstate``,
``np.seterr``) says per category whether to ignore, warn, raise, call a function or log. A call
whose events the state does not ignore is declined (``executable.FloatingPointEvents``) before
anything it computed is visible, and the runtime runs it eagerly: NumPy then warns, raises or
calls exactly as it does, with its own messages, once. Underflow is reported only by kernels of
single IEEE operations (the CPU's flag); a plan with another kernel that may underflow
(``underflow_unseen``) declines every call while the state does not ignore underflow (NumPy's
default ignores it).

The state is a context variable holding a capsule; reading the capsule costs ~30 ns and the
categories are worked out again (``np.geterr()``, ~1 us) only when it is another capsule than last
time (a new ``errstate`` block, another thread's state). The machine-code entry reads the
capsule's error mask itself (``cpu/entry.py``).
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from typing import Any

import numpy as np

from stax.ir.warning_marks import moved_to_user, unmark

from .call_sites import module_of
from .cpu.fpevents import DIVIDE, INVALID, OVERFLOW, UNDERFLOW

CATEGORIES = (("divide", DIVIDE, "divide by zero"), ("over", OVERFLOW, "overflow"),
              ("under", UNDERFLOW, "underflow"), ("invalid", INVALID, "invalid value"))


def _contextvar() -> Any:
    try:
        return np._core._multiarray_umath._extobj_contextvar
    except AttributeError:  # NumPy 1.x: no context variable; np.geterr() every call
        return None


STATE = _contextvar()
_last: tuple[Any, int] = (object(), 0)


def _from_geterr() -> int:
    state = np.geterr()
    return sum(bit for name, bit, _ in CATEGORIES if state[name] != "ignore")


def heeded() -> int:
    """The categories (NumPy's status bits) the current error state does not ignore."""
    global _last
    if STATE is None:
        return _from_geterr()
    current = STATE.get()
    last = _last
    if last[0] is current:  # the capsule is kept alive in ``_last``: its id is not reused
        return last[1]
    bits = _from_geterr()
    _last = (current, bits)
    return bits


def describe(bits: int) -> str:
    names = [text for _, bit, text in CATEGORIES if bits & bit]
    return ", ".join(names) if names else "a non-finite value (events not known)"


def recording(events: np.ndarray) -> Any:
    """An error state for a NumPy step inside a call: its events are ORed into ``events`` (the
    call's events buffer) instead of warning or raising there — a declined call would otherwise
    report them twice, once here and once in its eager run."""
    def record(kind: str, flag: int) -> None:
        events[0] |= flag & (DIVIDE | OVERFLOW | UNDERFLOW | INVALID)
    return np.errstate(all="call", call=record)


# -- the same, at the cost of a context-variable set (a NumPy step costs ~1 us less) -----------

_target = threading.local()  # the events buffer of this thread's current recording
_recording_state: Any = None  # NumPy's error-state capsule "call _record for every category"


def _record(kind: str, flag: int) -> None:
    _target.events[0] |= flag & (DIVIDE | OVERFLOW | UNDERFLOW | INVALID)


def start_recording(events: np.ndarray) -> Any:
    """Record NumPy's events into ``events`` from now until ``stop_recording(token)``: what
    ``recording`` does, without building an ``np.errstate`` (one capsule serves every call; the
    buffer is the thread's own). A call enters it once, before its first NumPy step, and leaves
    it after its last (``straight_line.py``): 0.4 us a call, not a step. NumPy's warnings from
    Python (``RuntimeWarning``: "Degrees of freedom <= 0 for slice") are held too
    (``stop_recording`` returns them): a declined call's eager run gives them again."""
    global _recording_state
    held = _hold_warnings()
    if STATE is None:
        state = recording(events)
        state.__enter__()
        return state, held
    if _recording_state is None:
        with np.errstate(all="call", call=_record):
            _recording_state = STATE.get()
    previous = getattr(_target, "events", None)
    _target.events = events
    return STATE.set(_recording_state), previous, held


def report(flag: int) -> bool:
    """OR ``flag`` into the events of the NumPy step this thread is running inside a call
    (``start_recording``), as NumPy's own report would be; False when none is running. For a
    step that runs compiled code of its own (a lifted loop's body), whose events NumPy did not
    see."""
    events = getattr(_target, "events", None)
    if events is None or STATE is None or np.geterrcall() is not _record:
        return False
    events[0] |= flag
    return True


def stop_recording(token: Any) -> list[Any]:
    """Leave the recording ``token`` started; the warnings held since, for ``give_warnings``
    once the call stands (a declined call drops them)."""
    if STATE is None:
        token[0].__exit__(None, None, None)
    else:
        STATE.reset(token[0])
        _target.events = token[1]
    outer = token[-1]
    held, _target.warnings = _target.warnings, outer
    _target.unsettled = held  # until given (the call stands) or forgotten (it declines)
    return held


def forget_held() -> None:
    """This thread's last call declined: the warnings it held never reach the user, but their
    first issue marked the registry of the line that issued them, so under Python's "default"
    filter (a line warns once) the eager run's own warning would not show ("Degrees of freedom
    <= 0 for slice" was lost). Unmark them."""
    held, _target.unsettled = getattr(_target, "unsettled", None), None
    for message, category, filename, lineno, *scope in held or ():
        if scope:  # (moved to the user's line: it left no mark there)
            continue
        # held means shown: the filters passed it, so any mark it left is this call's
        unmark(message, category, lineno, getattr(module_of(filename), "__warningregistry__", None))


# -- NumPy's Python warnings, held while a call's NumPy steps run --------------------------------

def _hold_warnings() -> list[Any] | None:
    """Start holding this thread's ``RuntimeWarning``s (``_show``); the list held before."""
    if getattr(warnings.showwarning, "held_by_stax_calls", False) is False:
        _route_warnings()
    outer = getattr(_target, "warnings", None)
    _target.warnings = []
    return outer


def _route_warnings() -> None:
    """``warnings.showwarning`` through ``show``: a ``RuntimeWarning`` of a thread whose call
    holds warnings is held, anything else shown as before. Warnings' state is the process's:
    the hook stays (a ``catch_warnings`` block that ends takes it out with what it restores)."""
    shown = warnings.showwarning

    def show(message: Any, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: Any = None) -> None:
        held = getattr(_target, "warnings", None)
        if held is not None and issubclass(category, RuntimeWarning):
            held.append(_at_users_line(message, category, filename, lineno))
        else:
            shown(message, category, filename, lineno, file, line)
    show.held_by_stax_calls = True  # type: ignore[attr-defined]
    warnings.showwarning = show


def _at_users_line(message: Any, category: type[Warning], filename: str, lineno: int
                   ) -> tuple[Any, ...]:
    """A held warning: as issued, or where its line is Stax's own, at the user's line calling
    it (``warning_marks.moved_to_user``: the step's call site, ``call_sites.py``) with that
    line's module, whose filters decide it when it is given, as eager's."""
    frame = moved_to_user(message, category, filename, lineno)
    if frame is None:
        return message, category, filename, lineno
    return message, category, frame.f_code.co_filename, frame.f_lineno, frame.f_globals


def give_warnings(held: list[Any]) -> None:
    """The warnings a call that stands held, shown as NumPy gave them. The user's filters
    passed each one when NumPy issued it (and marked the line's registry, or the "once"
    registry): the filters are not asked again, which would drop it there."""
    _target.unsettled = None
    for message, category, filename, lineno, *scope in held:
        if scope:  # moved to the user's line (``_at_users_line``): its filters decide
            warnings.warn_explicit(message, category, filename, lineno,
                                   module=scope[0].get("__name__") or filename,
                                   registry=scope[0].setdefault("__warningregistry__", {}),
                                   module_globals=scope[0])
        else:
            warnings.showwarning(message, category, filename, lineno)


_NO_CHANGE = contextlib.nullcontext()


#: ``heeding_all``'s level for a function whose own block heeded underflow when it was captured
HEEDING_UNDERFLOW = 2


def heeding_all(on: int) -> Any:
    """While a call of a function that sets NumPy's error state itself (``np.errstate`` inside)
    runs: every event heeded, so any event declines the call and the eager run lets the
    function's own block decide (the kernels cannot see that block; under a caller's ``ignore``
    the call stood, silent, where eager's inner block warned). Underflow only at
    ``HEEDING_UNDERFLOW`` (its block heeded it): heeded, a plan with kernels that cannot report it
    declines every call (``underflow_unseen``). ``on`` False: as is."""
    if not on:
        return _NO_CHANGE
    current = np.geterr()
    categories = ("divide", "over", "invalid", "under") if on == HEEDING_UNDERFLOW else \
        ("divide", "over", "invalid")
    return np.errstate(**{k: "warn" for k in categories if current[k] == "ignore"})
