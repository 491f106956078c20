"""A lifted loop's first run at capture (``lifted_loops.lift``, ``lifted_while``): its results,
and whether its body runs compiled or in NumPy, by their times per item."""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator
from typing import Any

from stax.trace.creation import not_recording
from stax.trace.isolation import not_watching
from stax.trace.source import drop_held, held_mark

#: the runners ``first_run`` ran while ``collecting_runners`` (a capture's lifted loops)
_MADE: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("stax_lifted_runners",
                                                                        default=None)


@contextlib.contextmanager
def collecting_runners() -> Iterator[list[Any]]:
    """The lifted loops' runners the block's captures make (``stax.runtime.recapture``)."""
    made: list[Any] = []
    token = _MADE.set(made)
    try:
        yield made
    finally:
        _MADE.reset(token)


class Unstable(Exception):
    """A Python value the body binds changed: each would be a new version of the body."""


def first_run(runner: Any, start: list[Any]) -> tuple[tuple[Any, ...], str] | str:
    """The capture's run of the remaining items (its results, and how the runner runs them),
    or why the loop unrolls; the runner is set to the faster way that keeps eager semantics.
    NumPy's reports (held by capture) are kept from the one run whose results count."""
    mark = held_mark()
    collected = _MADE.get()
    if collected is not None:
        collected.append(runner)
    try:
        results = runner(*start)
        how = "body compiled once"
    except Exception as exc:
        why = str(exc) if isinstance(exc, Unstable) else f"{type(exc).__name__}: {exc}"
        runner.eager = True
        drop_held(mark)
        try:
            with not_recording():
                results = runner(*start)
        except Exception:
            drop_held(mark)
            return f"its body does not compile on its own ({why})"
        runner.refusal = why
        return results, f"body run by NumPy: it does not compile on its own ({why})"
    kept = held_mark()
    with not_recording():  # NumPy's own calls, not the capture's
        eager = runner.eager_seconds_per_item(start)
    # the first run compiled the body and its item loop, on cold caches, and the second may be
    # the item loop's own first run (a few items: 40-60 us an item against 0.5 warm): time up
    # to two more. A run-time count's version serves counts far above this capture's: its
    # items are timed apart from a run's fixed cost (tens of us), as one run's less another's
    # of one item
    for _ in range(2):
        if eager is None or eager >= runner.seconds_per_item:
            break
        with not_watching():
            try:
                again = _timed_run(runner, start)
                if runner.stop_input and runner.count > 1:
                    count = runner.count
                    one = _timed_run(runner, [*start[:-1], runner.items.start + 1])
                    again = max(again * count - one, 0.0) / (count - 1)
            except Unstable as exc:  # (a body version per carried value past the first's)
                drop_held(kept)
                runner.eager, runner.refusal = True, str(exc)
                return results, f"body run by NumPy: it does not compile on its own ({exc})"
        runner.seconds_per_item = min(runner.seconds_per_item, again)
    drop_held(kept)  # the timing runs' reports repeat the first run's
    if eager is not None and eager < runner.seconds_per_item:
        # a tiny body (scalar recurrences): a call per item costs more than NumPy's own work
        runner.eager = True
        how = (f"body run by NumPy: {eager * 1e6:.1f} us an item, compiled "
               f"{runner.seconds_per_item * 1e6:.1f} us")
    return results, how


def _timed_run(runner: Any, start: list[Any]) -> float:
    """Seconds an item of a run of ``runner`` from ``start`` took (its results dropped)."""
    clock = time.perf_counter()
    runner(*start)
    return (time.perf_counter() - clock) / max(runner.count, 1)
