"""A NumPy function's ``out`` given by position (``np.clip(x, 0, 1, a)``, ``np.sum(x, 0, None,
o)``, ``np.dot(x, y, o)``) as the keyword the tracer handles: recorded as a function of its
other arguments, the write into ``a`` was lost (the compiled call gave ``a`` unchanged and a
result that was not ``a``: a review's find)."""

from __future__ import annotations

import functools
import inspect
from typing import Any


@functools.lru_cache(maxsize=512)
def _out_position(func: Any) -> tuple[int, tuple[str, ...]] | None:
    """Where ``func``'s ``out`` parameter stands among its positional ones, and their names;
    None where it has none (or no signature)."""
    try:
        parameters = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    names = tuple(p.name for p in parameters
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    return (names.index("out"), names) if "out" in names else None


def keyword_out(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args`` and ``kwargs`` with an ``out`` given by position (and the positional arguments
    after it) as keywords; as they are otherwise."""
    found = _out_position(func)
    if found is None or len(args) <= found[0]:
        return args, kwargs
    at, names = found
    # (a ``dtype`` before it too, by keyword: the tracer's ``out`` path reads and sets it)
    at = 1 if "dtype" in names[:at] else at
    moved = dict(zip(names[at:], args[at:]))
    if set(moved) & set(kwargs):
        return args, kwargs  # (given twice: NumPy's own TypeError)
    return args[:at], {**kwargs, **moved}
