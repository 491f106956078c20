"""Module and class attributes replaced while captures run (``np.zeros``, ``np.random.rand``...).

A capture must see calls that NumPy's dispatch protocols never show a proxy. The attributes are
replaced by wrappers when the first capture of the process starts and put back when the last one
ends; in every thread that is not capturing, a wrapper only calls what it wraps. The wrappers are
built around the values found at that moment (a user's own replacement is wrapped, not undone),
and an attribute someone else replaced meanwhile is left as they set it.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

#: (owner, attribute name, wrap): ``wrap(current value)`` makes the wrapper, or None to leave it
Target = tuple[Any, str, Callable[[Any], Any]]


class Patches:
    def __init__(self, targets: Callable[[], Iterable[Target]]) -> None:
        self._targets = targets
        self._lock = threading.Lock()
        self._active = 0
        self._captures: dict[int, int] = {}  # thread ident -> captures it runs (for a fork)
        _LIVE.add(self)
        self._made: dict[tuple[int, str, int], Any] = {}  # (owner, name, wrapped) -> wrapper
        self._applied: list[tuple[Any, str, Any, Any, bool]] = []  # owner, name, old, new, own
        self.wrapped: dict[int, Any] = {}  # while applied: id of each wrapped value -> its wrapper

    @contextmanager
    def applied(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._lock:
            if self._active == 0:
                self._apply()
            self._active += 1
            self._captures[me] = self._captures.get(me, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                self._captures[me] -= 1
                if not self._captures[me]:
                    del self._captures[me]
                if self._active == 0:
                    self._restore()

    def _after_fork_in_child(self) -> None:
        """A child forked while another thread captured (or applied the patches, holding the
        lock) has none of that thread: a new lock, and the patches only for the captures of the
        thread that forked; with none, everything put back."""
        self._lock = threading.Lock()
        me = threading.get_ident()
        self._captures = {me: self._captures[me]} if me in self._captures else {}
        self._active = sum(self._captures.values())
        if self._active == 0:
            self._restore()

    def _apply(self) -> None:
        for owner, name, wrap in self._targets():
            own = name in vars(owner)
            current = vars(owner)[name] if own else getattr(owner, name, None)
            if current is None:
                continue
            key = (id(owner), name, id(current))
            wrapper = self._made.get(key)
            if wrapper is None or getattr(wrapper, "__wrapped__", None) is not current:
                wrapper = wrap(current)
                if wrapper is None:
                    continue
                self._made[key] = wrapper
            setattr(owner, name, wrapper)
            self._applied.append((owner, name, current, wrapper, own))
            self.wrapped[id(current)] = wrapper

    def _restore(self) -> None:
        for owner, name, old, new, own in reversed(self._applied):
            if vars(owner).get(name) is not new:
                continue  # replaced by someone else meanwhile: theirs stays
            if own:
                setattr(owner, name, old)
            else:
                delattr(owner, name)
        self._applied.clear()
        self.wrapped.clear()


_LIVE: weakref.WeakSet[Patches] = weakref.WeakSet()


def _reset_in_child() -> None:
    for patches in list(_LIVE):
        patches._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)
