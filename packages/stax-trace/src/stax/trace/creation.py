"""Capturing NumPy's array-creation functions (``np.ones(shape)``, ``np.arange(n)``...).

They take no array, so NumPy's dispatch protocols never show them to a proxy, and their result
would look like an array from outside the function (which capture must refuse: it could be a
global that changes). During capture the module attributes are replaced by recorders that call
NumPy as usual, return the real array (C code that calls ``np.zeros`` must get an ndarray), and
remember how it was made. When such an array meets a traced call unchanged, the tracer records the
creation call as a node; if it was modified in place first, capture refuses it. Outside capture,
and in other threads, the recorders only call NumPy.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .source import user_source

if TYPE_CHECKING:
    from .tracer import Tracer

CREATION_FUNCTIONS = ("zeros", "ones", "full", "arange", "linspace", "logspace", "geomspace",
                      "eye", "identity", "tri")

@dataclass
class Created:
    """An array a creation function returned during capture, and how to make it again."""

    array: np.ndarray
    target: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    snapshot: np.ndarray
    source: str | None
    node: Any = None

    def unchanged(self) -> bool:
        return bool(np.array_equal(self.array, self.snapshot, equal_nan=self.array.dtype.kind == "f"))


_active = threading.local()
_lock = threading.Lock()
_installed = 0


def _recorder(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def record(*args: Any, **kwargs: Any) -> Any:
        array = original(*args, **kwargs)
        tracer = getattr(_active, "tracer", None)
        if tracer is not None and type(array) is np.ndarray:
            tracer.created[id(array)] = Created(array, f"numpy.{name}", args, kwargs,
                                                array.copy(), user_source())
        return array
    record.__stax_original__ = original  # type: ignore[attr-defined]
    return record


_ORIGINALS = {name: getattr(np, name) for name in CREATION_FUNCTIONS}
_RECORDERS = {name: _recorder(name, fn) for name, fn in _ORIGINALS.items()}


@contextmanager
def _routed_to(tracer: Tracer | None) -> Iterator[None]:
    """This thread's creation calls go to ``tracer`` (None: to NumPy only) while the block runs."""
    previous = getattr(_active, "tracer", None)
    _active.tracer = tracer
    try:
        yield
    finally:
        _active.tracer = previous


def not_recording() -> Any:
    """NumPy's own calls while it computes a recorded call's value are not the user's: suspend."""
    return _routed_to(None)


@contextmanager
def recording_creation(tracer: Tracer) -> Iterator[None]:
    """Route this thread's ``np.<creation>`` calls to ``tracer`` while the block runs."""
    global _installed
    with _lock:
        if _installed == 0:
            for name, fn in _RECORDERS.items():
                setattr(np, name, fn)
        _installed += 1
    try:
        with _routed_to(tracer):
            yield
    finally:
        with _lock:
            _installed -= 1
            if _installed == 0:
                for name, fn in _ORIGINALS.items():
                    setattr(np, name, fn)
