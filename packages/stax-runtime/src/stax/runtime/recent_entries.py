"""Dispatch level 0: the entries of the last few kinds of call, before the dispatcher.

A compiled function runs the entry of the version its previous call used (``key_entry.py``,
``sized_entries.py``): one comparison per argument, then machine code. A call of another kind
(another size, layout or scalar value) goes to the dispatcher, which finds the version (2-3 us
from the layouts, 8-20 us from a full signature) and installs that version's entry in turn. Calls
that take turns between a few kinds (a loop over three sizes, a sweep over ``p`` in
``np.abs(x) ** p``) went through the dispatcher at every call: 8-23 us for NumPy's 2.

Here the dispatcher first looks the call up by a quick key (each array's layout, each scalar's
type and value) among the entries installed for the last ``MAX_RECENT`` kinds of call, and runs
the one found. An entry checks its whole key itself and hands any other call back to the
dispatcher, so the table can only make a call faster, never different: the quick key merely
picks the entry to try. The entry tried is taken out of the table while it runs, so a call it
hands back goes on to the full dispatch (and the entry is put back only where it served the
call). The table is emptied wherever the versions change (a compile, a key made eager, a
rescan of free variables), as it holds the entries of the versions there were.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

#: kinds of call whose entries are kept (calls cycling over more go through the dispatcher)
MAX_RECENT = 16

#: scalars keyed by type and value (hashable, compared by ``==``: the entry tells -0.0 from 0.0)
_BY_VALUE = frozenset({float, int, bool, str, type(None), np.float64, np.float32, np.float16,
                       np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint16,
                       np.uint8, np.bool_})


def recent_key(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The quick key of a positional call: an array's layout, a scalar's type and value; None
    where an argument is anything else (containers, objects: the dispatcher keys those)."""
    key: list[Any] = []
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            key.append((a.shape, a.strides, a.dtype))
        elif kind in _BY_VALUE:
            key.append((kind, a))
        else:
            return None
    return tuple(key)


class RecentEntries:
    """The entries of recent kinds of call, by ``recent_key``. ``installed``: the entry the
    dispatch running now installed for its call (``OtherBranches._install``); ``dispatched``
    counts the calls that went past the table (an entry that served its call itself, with no
    dispatch since, goes back into the table)."""

    __slots__ = ("cleared", "dispatched", "installed", "table")

    def __init__(self) -> None:
        self.table: dict[tuple[Any, ...], Callable[..., Any]] = {}
        self.installed: Callable[..., Any] | None = None
        self.dispatched = self.cleared = 0

    def clear(self) -> None:
        """Versions changed: no entry made before goes back in (one installed by the dispatch
        running now, before its version declined, included)."""
        self.table.clear()
        self.installed = None
        self.cleared += 1

    def run(self, entry: Callable[..., Any], key: tuple[Any, ...], args: tuple[Any, ...]) -> Any:
        """``entry(*args)``, out of the table while it runs; back in where it served the call
        (no dispatch since) and the table was not emptied meanwhile."""
        dispatched, cleared = self.dispatched, self.cleared
        result = entry(*args)
        if self.dispatched == dispatched and self.cleared == cleared:
            self.table.setdefault(key, entry)
        return result

    def keep(self, key: tuple[Any, ...]) -> None:
        """After a dispatch: the entry it installed, for calls like this one (the oldest kind
        goes past ``MAX_RECENT``)."""
        entry, self.installed = self.installed, None
        if entry is None:
            return
        self.table.pop(key, None)  # (latest last: the first is the oldest)
        self.table[key] = entry
        while len(self.table) > MAX_RECENT:
            try:
                del self.table[next(iter(self.table))]
            except (KeyError, StopIteration, RuntimeError):  # another thread's change
                break


class RecentCalls:
    """``_dispatch`` for ``CompiledFunction``, whose entries hand it every call they do not
    serve, and ``_install``, with which its dispatch makes an entry the next call's."""

    _recent: RecentEntries
    _call: Callable[..., Any]
    _find_and_run: Callable[..., Any]

    def _dispatch(self, *args: Any, **kwargs: Any) -> Any:
        """The entry installed for calls like this one lately (level 0), else the dispatch
        proper (levels 1-3: ``CompiledFunction._find_and_run``)."""
        recent = self._recent
        key = None if kwargs else recent_key(args)
        if key is not None:
            entry = recent.table.get(key)
            # (not the entry installed: that one handed this call here)
            if entry is not None and entry is not self._call and \
                    recent.table.pop(key, None) is entry:
                self._call = entry  # (calls of one kind in a row: straight to it)
                if self._recent is not recent:  # its code was replaced meanwhile (a thread's
                    self._call = self._dispatch  # ``code_changes.refresh``): not the old entry
                return recent.run(entry, key, args)
        recent.dispatched += 1
        recent.installed = None
        result = self._find_and_run(*args, **kwargs)
        if key is not None:
            recent.keep(key)
        return result

    def _install(self, entry: Callable[..., Any]) -> None:
        """``entry``, made for calls like this one, the next call's (and kept for level 0)."""
        self._call = self._recent.installed = entry
