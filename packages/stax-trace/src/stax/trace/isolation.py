"""Side-effect isolation around capture (spec §3.7): random number generators.

Capture runs the user's function once on private copies of its arrays. Random generators cannot be
copied that way, so their states are saved before capture and put back after it: capture consumes
no random numbers, and the caller's generators advance exactly as in eager execution. A function
that did draw random numbers is refused (random draws are not graph nodes yet), so it runs eagerly
and draws them there, once.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

_RNG_TYPES = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)


def _bit_generator(rng: Any) -> Any:
    if isinstance(rng, np.random.Generator):
        return rng.bit_generator
    if isinstance(rng, np.random.RandomState):
        return rng._bit_generator
    return rng


def reachable_generators(fn: Callable[..., Any], leaves: Iterable[Any]) -> list[Any]:
    """Generators among the arguments, the function's globals and its closure, and NumPy's global
    generator."""
    found: dict[int, Any] = {}
    code = getattr(fn, "__code__", None)
    scope = getattr(fn, "__globals__", {})
    candidates = list(leaves)
    if isinstance(code, types.CodeType):
        candidates += [scope.get(name) for name in code.co_names]
        candidates += [_cell(c) for c in (getattr(fn, "__closure__", None) or ())]
    for value in candidates:
        if isinstance(value, _RNG_TYPES):
            found[id(value)] = value
    found[id(np.random.mtrand._rand)] = np.random.mtrand._rand
    return list(found.values())


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return None


class RandomStateGuard:
    """Saves generator states; ``restore()`` puts them back and says which had advanced."""

    def __init__(self, generators: list[Any]) -> None:
        self.saved = [(g, _bit_generator(g).state) for g in generators]

    def restore(self) -> set[int]:
        """Put every state back; the ids of the generators that had advanced."""
        advanced = set()
        for g, state in self.saved:
            bit_generator = _bit_generator(g)
            if not _same(bit_generator.state, state):
                advanced.add(id(g))
                bit_generator.state = state
        return advanced


def _same(a: Any, b: Any) -> bool:
    """Equality of generator states, which hold arrays (MT19937's key) inside dicts."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)
