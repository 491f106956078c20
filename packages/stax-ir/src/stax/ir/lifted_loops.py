"""Loops lifted out of capture (``stax.trace.loops``): the process's table of their runners.

A lifted loop is one capture node, ``stax.functional.lifted_loop(*arrays, loop=key)``, whose
runner (a compiled loop body called once per item, ``stax.runtime.lifted_loops``) lives in this
process only: the key names it here, and a document naming a key this process did not register
cannot run (``LookupError``: the caller runs the function eagerly). Programs holding one are not
stored in the disk caches of captures (``holds_lifted_loop``)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

LIFTED_LOOP = "stax.functional.lifted_loop"

_runners: dict[str, Callable[..., tuple[Any, ...]]] = {}
_lock = threading.Lock()
_numbers = itertools.count(1)  # not uuid4: capture refuses reads of the OS's entropy


def register_lifted_loop(runner: Callable[..., tuple[Any, ...]]) -> str:
    """A new key for ``runner`` (it stays registered for the life of the process: compiled
    versions that name it may run at any later call)."""
    with _lock:
        key = f"loop-{next(_numbers)}"
        _runners[key] = runner
    return key


def lifted_loop_runner(key: Any) -> Callable[..., tuple[Any, ...]] | None:
    """The runner registered under ``key`` in this process, or None."""
    return _runners.get(key) if isinstance(key, str) else None


def run_lifted_loop(*arrays: Any, loop: str) -> tuple[Any, ...]:
    runner = _runners.get(loop)
    if runner is None:
        raise LookupError(f"lifted loop {loop!r} was not registered in this process")
    return runner(*arrays)


def holds_lifted_loop(graph: Any) -> bool:
    return any(node.target == LIFTED_LOOP for node in graph.nodes)
