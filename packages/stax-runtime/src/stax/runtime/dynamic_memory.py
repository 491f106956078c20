"""Automatic dynamic's decisions, kept on disk (issue 15, item 5).

A process learns that a function's calls vary in some sizes (or scalar values) at its second
distinct signature; a new process would learn it again, compiling an exact version first. The
decision is stored in the disk cache, keyed by the function (as its captures are:
``capture_cache.capture_key``) and by the call's *skeleton* — its signature with every size of 2
or more and every scalar value left out — so that a warm process's first call of that skeleton
compiles the size-generic version at once (whose plan the disk cache then holds as well).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stax.codegen import DiskCache

from .capture_cache import Uncacheable, capture_key
from .generic import Pattern, every_dimension, generic_key
from .signature import holds_identity

_FORMAT = "stax.dynamic-decisions/1"


class DecisionStore:
    """The patterns a function went dynamic in, by call skeleton, in ``cache_dir``."""

    def __init__(self, fn: Callable[..., Any], cache_dir: str | Path) -> None:
        self.fn = fn
        self.entries = DiskCache(Path(cache_dir) / "dynamic", suffix=".json", root=cache_dir)

    @classmethod
    def of(cls, fn: Callable[..., Any], cache_dir: str | Path | None) -> DecisionStore | None:
        return None if cache_dir is None else cls(fn, cache_dir)

    def _key(self, sigma: Any) -> str | None:
        skeleton = generic_key(sigma, every_dimension(sigma) or frozenset())
        if skeleton is None or holds_identity(sigma):
            return None
        try:
            return capture_key(self.fn, (_FORMAT, skeleton), [])
        except Uncacheable:
            return None

    def patterns(self, sigma: Any) -> list[Pattern]:
        """The patterns stored for this call's skeleton (none on any defect of the entry)."""
        key = self._key(sigma)
        blob = self.entries.load(key) if key is not None else None
        if blob is None:
            return []
        try:
            return [frozenset((int(i), int(d)) for i, d in p) for p in json.loads(blob)]
        except (ValueError, TypeError):
            self.entries.discard(key, "a dynamic decision that does not parse")
            return []

    def remember(self, sigma: Any, pattern: Pattern) -> None:
        key = self._key(sigma)
        if key is None:
            return
        known = self.patterns(sigma)
        if pattern not in known:
            known.append(pattern)
            self.entries.store(key, json.dumps([sorted(p) for p in known]).encode())
