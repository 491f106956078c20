"""NumPy steps called from the user's own line, so that NumPy's warnings name it.

A warning NumPy issues takes its place from a Python frame: the innermost one for a ufunc's
``RuntimeWarning`` ("divide by zero encountered in log"), the caller of its Python function for
``np.nanmedian``'s "All-NaN slice encountered". A NumPy step of a compiled call runs from the
written-out call (``straight_line.py``), so the warning would name ``<stax call ...>``, and
Python's "default" filter, which shows a warning once per line and module, would show it again
for each version and once more for an eager run. A step whose extern knows its source runs
through a *site*: a one-line function whose code claims the user's file and line and whose
globals are the user's module's, so the warning NumPy gives names the line eager NumPy names,
and lands in the same ``__warningregistry__``.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable
from typing import Any

_SOURCE = re.compile(r"^(?P<file>.+):(?P<line>\d+)(?: in (?P<function>.*))?$")


_sites: dict[tuple[str, int, str], Callable[..., Any]] = {}


def call_site(source: str | None) -> Callable[..., Any] | None:
    """``site(fn, *args, **kwargs)`` calling ``fn`` from ``source`` (``file:line in
    function``, as the op graph records it); None where the source is unknown."""
    found = _SOURCE.match(source or "")
    if found is None:
        return None
    key = (found["file"], int(found["line"]), found["function"] or "<module>")
    site = _sites.get(key)
    if site is None:
        # the whole function on the user's line: blank lines above it, not a line table edited
        # (its format changes between Python versions)
        text = "\n" * (key[1] - 1) + "def site(call, /, *args, **kwargs): " \
            "return call(*args, **kwargs)\n"
        scratch: dict[str, Any] = {}
        exec(compile(text, key[0], "exec"), scratch)
        code = scratch["site"].__code__.replace(co_name=key[2])
        # the globals of the user's module, where eager NumPy's warning keeps its registry; a
        # fresh namespace where none is (code typed at a prompt or run by ``exec``)
        module = module_of(key[0])
        scope = vars(module) if module is not None else \
            {"__name__": "__main__" if key[0].startswith("<") else key[0]}
        site = _sites[key] = types.FunctionType(code, scope, key[2])
    return site


def module_of(filename: str) -> types.ModuleType | None:
    """The module loaded from ``filename`` (a script's ``__main__`` too), or None."""
    for module in list(sys.modules.values()):
        if getattr(module, "__file__", None) == filename:
            return module
    return None
