"""Exceptions raised by traced calls during capture, and which of them refuse the compile.

A function that catches an exception a traced call raised (``np.linalg.inv`` of a singular
matrix, an error under ``np.errstate(...="raise")``, ``int()`` of a NaN) took a path the data
chose, which a compiled version cannot check: the capture is refused and the function runs
eagerly for that key. An exception the key alone decides (an axis out of range, a constant
index out of bounds, a reshape to another size, the truth value of a several-element array)
is raised alike by every call of the key: its branch compiles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stax.ir import UnsupportedError, tree_leaves

from .proxy import Proxy

#: calls whose ValueError is a size mismatch, decided by the key
_RESHAPES = ("method:reshape", "numpy.reshape", "reshape")


def decided_by_key(target: str, exc: Exception, args: Any) -> bool:
    """Whether the key alone decides that a call of ``target`` raises ``exc``."""
    if isinstance(exc, np.exceptions.AxisError):
        return True
    constant_key = not any(isinstance(v, Proxy) for v in tree_leaves(tuple(args[1:])))
    if isinstance(exc, IndexError) and target == "operator.getitem":
        return constant_key
    return isinstance(exc, ValueError) and target in _RESHAPES and constant_key


def caught_error(raised: list[tuple[str, str, str | None]]) -> UnsupportedError | None:
    """The refusal of a capture whose function returned after traced calls ``raised``
    ``(what, exception type, source)``: the function caught the first."""
    if not raised:
        return None
    what, name, source = raised[0]
    return UnsupportedError(f"{what} raised {name} during capture and the function caught it: "
                            "whether it raises depends on the data", source=source,
                            hint="the function runs eagerly; test the condition with array "
                                 "operations (np.linalg.cond, np.isfinite) instead")
