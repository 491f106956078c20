"""Which of a lifted loop's results are one object (``lifted_loops.Runner``): Python sees an
array bound to two names (``a = b = c``, ``v = u``) as one object after the loop, and the
step's results must be so too."""

from __future__ import annotations

from typing import Any

import numpy as np


def identities(results: list[Any], given: dict[str, Any], order: list[int]
               ) -> tuple[int | str | None, ...]:
    """Per result array, the result of one object that stands for the others (the first in
    ``order``: those the body updates in place first, ``standing_order``), else the input it
    is (its name, among the inputs the runner does not copy), else None; None for the one
    that stands."""
    first: dict[int, int] = {}
    for k in order:
        if isinstance(results[k], np.ndarray):
            first.setdefault(id(results[k]), k)
    out: list[int | str | None] = []
    for k, value in enumerate(results):
        same: int | str | None = None
        if isinstance(value, np.ndarray):
            same = first[id(value)]
            if same == k:
                same = None
                for name, v in given.items():
                    if v is value:
                        same = name
                        break
        out.append(same)
    return tuple(out)


def standing_order(names: list[str], mutated: tuple[str, ...]) -> list[int]:
    """The results' positions, those the body updates in place first (``identities``)."""
    return sorted(range(len(names)), key=lambda k: (names[k] not in mutated, k))
