"""A compiled function called without dispatch by a caller that vouches for its keys (a lifted
loop's runner, ``lifted_loops.py``): ``CompiledFunction.direct``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .signature import Unguardable, signature
from .versions import Version


class DirectCalls:
    _free: Any
    _names: Any
    _lookup: Any

    def direct(self, *args: Any) -> tuple[Callable[..., Any] | None, bool, Version | None]:
        """``(run, checks, version)``: ``run(*args)`` for later calls whose arguments have the
        signature of these, the version they select called without dispatch (no key, no guard:
        the caller vouches that nothing the key covers changes between its calls, as a lifted
        loop's runner does); ``checks``: it is the machine-code entry (which hands arguments of
        other layouts to the dispatcher itself); ``version``: the one selected, where its leaves
        are these arguments. ``(None, False, None)`` when it is missing, eager or has data gates.
        A call it declines raises (``ExternResultMismatch``, ``RunEagerly``): the caller then
        makes that call through the dispatcher."""
        free = tuple(self._free.read()) if self._free else ()
        args = (*free, *args)
        try:
            version = self._lookup(signature(args, {}, self._names), args, {})
        except Unguardable:
            return None, False, None
        if version is None or not version.native or version.gates is not None:
            return None, False, None
        entry = version.entry
        if entry is not None and not getattr(entry, "dispatches", False) and not free:
            return entry.function, True, version
        if version.fast is not None and not free:
            return version.fast, False, version
        run = version.run
        return (lambda *call_args: run((*free, *call_args), {})), False, None if free else version
