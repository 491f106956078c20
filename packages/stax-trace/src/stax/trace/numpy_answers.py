"""NumPy functions written in Python that answer with a Python bool, run by capture on traced
values in forms of their own where NumPy's code converts its operands with ``np.asarray`` (a C
call that would ask a traced value for its data): ``np.array_equal``, ``np.array_equiv``. The
answer is then a data gate, as ``bool((a == b).all())`` written out is, and a convergence test
``if np.array_equal(x_new, x): break`` compiles natively where the whole function ran eagerly.
Each follows NumPy's own code step for step (shapes compared first: the key holds them)."""

from __future__ import annotations

from typing import Any

import numpy as np


def _operand(value: Any) -> Any:
    """A traced value as it is; anything else as NumPy's ``asarray`` makes it."""
    return value if hasattr(value, "tracer") else np.asarray(value)


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    a1, a2 = _operand(a1), _operand(a2)
    if a1.shape != a2.shape:
        return False
    if not equal_nan or a1 is a2:
        return bool((a1 == a2).all()) if not equal_nan else True
    if not any(np.dtype(a.dtype).kind in "fc" for a in (a1, a2)):  # no NaN to hold
        return bool((a1 == a2).all())
    a1nan, a2nan = np.isnan(a1), np.isnan(a2)
    if not bool((a1nan == a2nan).all()):  # NaNs at different places
        return False
    return bool(((a1 == a2) | a1nan).all())  # where a1 is NaN so is a2: equal there


def array_equiv(a1: Any, a2: Any) -> bool:
    a1, a2 = _operand(a1), _operand(a2)
    try:
        np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return False
    return bool((a1 == a2).all())


#: capture target -> the form capture runs on traced values
ANSWERS = {"numpy.array_equal": array_equal, "numpy.array_equiv": array_equiv}
