"""NumPy functions written in Python that answer with a Python bool, run by capture on traced
values in forms of their own where NumPy's code converts its operands with ``np.asarray`` (a C
call that would ask a traced value for its data): ``np.array_equal``, ``np.array_equiv``. The
answer is then a data gate, as ``bool((a == b).all())`` written out is, and a convergence test
``if np.array_equal(x_new, x): break`` compiles natively where the whole function ran eagerly.
Each follows NumPy's own code step for step (shapes compared first: the key holds them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .proxy import Proxy
from .traced_sizes import TracedNumber


class _NotAnArray(Exception):
    """An operand NumPy's ``asarray`` refuses (a ragged list): NumPy answers False."""


def _operand(value: Any) -> Any:
    """A traced array as it is; a followed scalar argument by its value (read: in the key);
    anything else as NumPy's ``asarray`` makes it."""
    if isinstance(value, Proxy):
        return value
    if isinstance(value, TracedNumber):
        value = value.read()
    if isinstance(value, (int, float, complex, np.generic)):  # compared as the number it is
        return value  # (an array made of it: an untraced array in a traced call)
    try:
        return np.asarray(value)
    except Exception as exc:  # NumPy's ``except Exception: return False``
        raise _NotAnArray from exc


def _shape(value: Any) -> tuple[int, ...]:
    return np.shape(value) if not isinstance(value, Proxy) else value.shape


def _all(condition: Any) -> bool:
    """``bool`` of every element (a traced answer is a data gate)."""
    return bool(np.all(condition))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    try:
        a1, a2 = _operand(a1), _operand(a2)
    except _NotAnArray:
        return False
    if _shape(a1) != _shape(a2):
        return False
    if equal_nan and a1 is a2:
        return True
    if not equal_nan or not any(np.result_type(a).kind in "fc" for a in (a1, a2)):
        return _all(a1 == a2)  # (no NaN to hold where neither is a float)
    a1nan, a2nan = np.isnan(a1), np.isnan(a2)
    if not _all(a1nan == a2nan):  # NaNs at different places
        return False
    return _all((a1 == a2) | a1nan)  # where a1 is NaN so is a2: equal there


def array_equiv(a1: Any, a2: Any) -> bool:
    try:
        a1, a2 = _operand(a1), _operand(a2)
    except _NotAnArray:
        return False
    try:
        np.broadcast_shapes(_shape(a1), _shape(a2))
    except ValueError:
        return False
    return _all(a1 == a2)


#: capture target -> the form capture runs on traced values
ANSWERS = {"numpy.array_equal": array_equal, "numpy.array_equiv": array_equiv}
