"""The loop index of a lifted body (``loops``): captures that take some 0-d array arguments as
the NumPy scalars they stand for."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

_index_argument: contextvars.ContextVar[frozenset[str] | None] = contextvars.ContextVar(
    "stax_loop_index_argument", default=None)


@contextmanager
def loop_index_argument(*names: str) -> Iterator[None]:
    """Captures started in this block take the 0-d array arguments ``names`` as the NumPy
    scalars they stand for (a loop's item, as the Python int it is: indexing with it makes views,
    ``rows[i]`` a view of ``rows``, not NumPy's copy for a 0-d array index; a scalar the loop
    carries: NumPy's scalar math, its integer overflow reports)."""
    token = _index_argument.set(frozenset(names))
    try:
        yield
    finally:
        _index_argument.reset(token)


@contextmanager
def taking_loop_index_argument() -> Iterator[frozenset[str] | None]:
    """For ``trace``: the names of the arguments that stand for scalars, if any; captures nested
    in this one (a compiled function the body calls) don't see them."""
    name = _index_argument.get()
    token = _index_argument.set(None)
    try:
        yield name
    finally:
        _index_argument.reset(token)
