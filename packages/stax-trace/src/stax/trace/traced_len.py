"""``len(x)`` of a traced array, called by the user's code: its first size, followed as
``x.shape[0]`` is (``traced_sizes.py``).

CPython's ``len`` turns what ``__len__`` returns into a C integer, so ``Proxy.__len__`` can
only give the number, and giving it makes dimension 0 exact: a size-generic version (issue 15)
of ``x / len(x)`` would then be refused. While capture runs, the builtin ``len`` (and the
user's globals bound to it by a from-import) is replaced by a wrapper (``creation.intercept``,
as ``minmax.py`` replaces ``max``/``min``). Called by the user's own code (``calls.py``: the
frame's current instruction calls this very function) on a traced array of this thread's
capture with at least one dimension, it returns ``x.shape[0]``: a ``TracedSize``, which any
use that decides something (``range(len(x))``, ``len(x) > 3``, ``int(...)``) reads, making
the dimension exact as before. Every other call — NumPy's and Stax's own Python, C code,
``map(len, ...)``, other threads, a 0-d array's ``TypeError`` — is the builtin's, unchanged.
"""

from __future__ import annotations

import builtins
import functools
import sys
from collections.abc import Callable
from typing import Any

from .calls import calls
from .creation import active_tracer, intercept
from .proxy import Proxy
from .source import library_frame

_LEN = builtins.len


def _wrapper(original: Callable[[Any], int]) -> Callable[[Any], Any] | None:
    if original is not _LEN:  # someone's own replacement: theirs, untouched
        return None

    @functools.wraps(original)
    def length(obj: Any, /) -> Any:
        if type(obj) is not Proxy:  # the common case first: one type test per call
            return original(obj)
        caller = sys._getframe(1)
        if obj.tracer is not active_tracer() or not obj.value.ndim or library_frame(caller) \
                or not calls(caller, length):
            return original(obj)
        return obj.tracer.sizes.shape_of(obj)[0]
    return length


intercept(builtins, "len", _wrapper)
