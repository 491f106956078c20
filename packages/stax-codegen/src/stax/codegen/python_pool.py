"""A persistent pool of Python worker threads that run kernel chunks in parallel: the fallback
where the native pool (``cpu/native_pool.py``) is not available, or with ``STAX_THREADS=python``.

ctypes releases the GIL around a foreign call, so Python threads calling a compiled kernel on
disjoint ``[start, stop)`` ranges run on all cores. The workers start with the first parallel
launch and live for the whole process; a launch costs two queue operations per worker. A forked
child starts from a fresh lock and queues, and its own workers (an at-fork handler).
"""

from __future__ import annotations

import os
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any


class ThreadPool:
    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._reset()
        _POOLS.add(self)

    def _reset(self) -> None:
        """No workers yet: the next parallel launch starts them. Also what a forked child does
        with every pool, whatever the parent's threads were doing at the fork (a launch's lock
        held, tasks queued for workers the child does not have, results not yet collected)."""
        self._tasks: list[queue.SimpleQueue[Any]] = []
        self._done: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started = False

    def _start(self) -> None:
        for i in range(self.size - 1):
            tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
            threading.Thread(target=self._work, args=(tasks, self._done), name=f"stax-worker-{i}",
                             daemon=True).start()
            self._tasks.append(tasks)
        self._started = True

    def _work(self, tasks: queue.SimpleQueue[Any], done: queue.SimpleQueue[Any]) -> None:
        while True:
            fn, args = tasks.get()
            outcome: BaseException | None = None
            try:
                fn(*args)
            except BaseException as exc:  # reported to the caller, never lost
                outcome = exc
            # drop the call's arrays before saying done: a reference kept until the next task
            # would keep a result alive after the caller let go of it (its block could not go
            # back to the pool, and every call would touch fresh pages)
            del fn, args
            done.put(outcome)

    def parallel_for(self, fn: Callable[..., Any], args: tuple[Any, ...], total: int) -> None:
        """Run ``fn(*args, start, stop)`` over ``[0, total)`` split into one chunk per thread."""
        n = min(self.size, total)
        if n <= 1:
            fn(*args, 0, total)
            return
        bounds = [total * i // n for i in range(n + 1)]
        with self._lock:  # one parallel launch at a time: the done-queue is shared
            if not self._started:
                self._start()
            for i in range(1, n):
                self._tasks[i - 1].put((fn, (*args, bounds[i], bounds[i + 1])))
            error: BaseException | None = None
            try:
                fn(*args, bounds[0], bounds[1])
            except BaseException as exc:
                error = exc
            for _ in range(n - 1):
                result = self._done.get()
                error = error or result
        if error is not None:
            raise error


_POOL: ThreadPool | None = None
_POOLS: weakref.WeakSet[ThreadPool] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for pool in list(_POOLS):
        pool._reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def default_pool() -> ThreadPool:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPool(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                           else (os.cpu_count() or 1))
    return _POOL
