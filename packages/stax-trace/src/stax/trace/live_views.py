"""The live traced views of an array, made again after the array is written.

``v = x[1:-1]`` is a view (``Proxy.view_of``): NumPy's ``v`` shows every later write into
``x``. Capture records values, not memory, so a write into ``x`` (``x[0] = x[1]``, ``x += 1``)
makes ``x`` a new value, and each view of it, kept by a name, is made again from that value
(``Proxy._view_again``): ``u = U.copy(); inner = u[1:-1]`` then ``u[0] = u[1]`` and ``inner +=
r * lap`` in a loop, or ``row = hist[t]`` then ``hist[t + 1] = f(row)``. A view of a view is
made again after the view it was taken from (the order views were taken in). Memory any other
live value shares (a transpose, a reshape) keeps the update refused (``Tracer.shared``).
"""

from __future__ import annotations

import weakref
from typing import Any


class LiveViews:
    """Weak references to every traced value taken as a view ``x[key]``, in the order taken."""

    def __init__(self) -> None:
        self._refs: list[weakref.ref[Any]] = []

    def add(self, view: Any) -> None:
        self._refs.append(weakref.ref(view))

    def of(self, base: Any) -> list[Any]:
        """The live views of ``base``, and views of those, in the order taken (values no longer
        alive are dropped as the list is walked)."""
        alive, found, reached = [], [], {id(base)}
        for ref in self._refs:
            view = ref()
            if view is None:
                continue
            alive.append(ref)
            if view.view_of is not None and id(view.view_of[0]) in reached and view is not base:
                reached.add(id(view))
                found.append(view)
        self._refs = alive
        return found
