"""``range(n)`` of a scalar argument as a loop's items (issue 13: a time-stepping loop whose count
of steps is an argument, ``for k in range(nsteps)``).

``range(n)`` reads ``n``: its value becomes part of the key, and every new count compiled a new
version until the function reached its limit and ran eagerly. The loop rewriter
(``header``) makes a loop header's ``range(...)`` a call of ``range_call``,
which during capture, where the stop is a followed int argument (``TracedScalar``) and the start
and step are plain ints, gives a ``TracedRange``: the items of this capture's count, read from
nothing. ``loops._run_loop`` lifts such a loop with the stop as a run-time input of its step
(``stop``), the count recorded as two scalar predicates instead (at least as many items as make
the loop lift, at most ``DYNAMIC_ITEMS``: the interval ``item_uses`` checks the item's
arithmetic on); wherever it does not lift it, the range is read (``read``) and keyed as before.
"""

from __future__ import annotations

import ast
import builtins
import operator
from typing import Any

import numpy as np

from .creation import active_tracer
from .traced_scalars import TracedScalar
from .traced_sizes import TracedNumber

#: the most items a run-time count may give (a count above it is another version, its count
#: keyed): a lifted body's item arithmetic is checked on the items up to it (``item_uses``)
DYNAMIC_ITEMS = 2 ** 24


class TracedRange:
    """A loop header's ``range(...)`` whose stop is a followed int argument (a Python int or a
    NumPy integer), or whose start or stop is a traced integer (``range(i + 1, n)``,
    ``range(i)`` in a lifted body, ``i`` its item): ``items`` the range of this capture's
    values, read from nothing yet; ``stop`` the traced argument stop, ``start`` and ``end`` the
    traced integer start and stop."""

    __slots__ = ("args", "end", "items", "start", "stop")

    def __init__(self, args: tuple[Any, ...], stop: TracedScalar | None,
                 start: Any = None, end: Any = None) -> None:
        self.args, self.stop, self.start, self.end = args, stop, start, end
        self.items = range(*(a.value if isinstance(a, TracedNumber) else
                             int(a.value) if a is start or a is end else a for a in args))

    def read(self) -> range:
        """The items, the stop read: its value part of the key (the loop unrolls, or lifts with
        its count fixed)."""
        return range(*(operator.index(a) if isinstance(a, TracedNumber) else a for a in self.args))

    def settle(self, fewest: int | None) -> None:
        """After the loop lifted with the count a run-time input (``fewest``: the fewest items
        that lift it so), predicates that the stop gives at least ``fewest`` items and at most
        ``DYNAMIC_ITEMS``: the version applies to any such count. Where they cannot be recorded
        (``MAX_PREDICATES``), or the count was no input (``fewest`` None), the stop is read."""
        start = self.items.start
        if fewest is None or not (self.stop >= start + fewest and  # each recorded, or read
                                  self.stop <= start + DYNAMIC_ITEMS):
            self.read()


def range_call(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` as a loop header calls it; a ``TracedRange`` for the builtin ``range`` during
    capture where the stop is a followed int argument, the start and step plain ints and the
    step 1."""
    if fn is not builtins.range or active_tracer() is None or not 1 <= len(args) <= 3:
        return fn(*args)
    stop = args[0] if len(args) == 1 else args[1]
    others = args[:1] + args[2:] if len(args) > 1 else ()  # the start and the step
    if len(args) <= 2 and _traced_integer(stop) and (len(args) == 1 or type(args[0]) is int
                                                      or _traced_integer(args[0])):
        start = args[0] if len(args) == 2 else 0  # ``range(i)``, ``range(0, i + 1)``
        return TracedRange((start, stop), None, start if _traced_integer(start) else None, stop)
    if len(args) == 2 and _traced_integer(args[0]) and (
            type(stop) is int or (isinstance(stop, TracedNumber) and _integer(stop.value))):
        # (a traced stop is read: its value part of the key)
        return TracedRange((args[0], operator.index(stop)), None, args[0])
    if not (isinstance(stop, TracedScalar) and _integer(stop.value)) or \
            any(isinstance(a, TracedNumber) or type(a) is not int for a in others) or \
            (len(args) == 3 and args[2] != 1):
        return fn(*args)
    if type(stop.value) is not int:  # a NumPy integer argument: its comparisons with the
        if stop.expr is not None:  # items' bounds are an int's (``settle``), recorded so
            return fn(*args)
        stop = TracedScalar(int(stop.value), stop.leaf, stop.tracer)
        args = (*args[:-1], stop) if len(args) == 1 else (args[0], stop, *args[2:])
    return TracedRange(args, stop)


def _traced_integer(value: Any) -> bool:
    """A traced integer scalar (a 0-d value of an integer dtype), such as a lifted body's item
    or arithmetic on it."""
    from .proxy import Proxy  # the proxy module imports the tracer, which imports loops
    return isinstance(value, Proxy) and np.ndim(value.value) == 0 and \
        np.asarray(value.value).dtype.kind in "iu"


def _integer(value: Any) -> bool:
    """A Python int (not a bool) or a NumPy integer scalar (``np.int64(n)``, a count read from
    an array): ``range`` takes its ``__index__``, so the items are the same Python ints."""
    return type(value) is int or isinstance(value, np.integer)


def header(iterable: ast.expr) -> ast.expr:
    """A loop header's ``range(...)`` (positional arguments) as ``__stax_loop__.range(range,
    ...)``: the same call, whose stop may stay a run-time input (``range_call``); any other
    iterable as it is."""
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and
            iterable.func.id == "range" and not iterable.keywords and
            not any(isinstance(a, ast.Starred) for a in iterable.args)):
        return iterable
    return ast.Call(ast.Attribute(ast.Name("__stax_loop__", ast.Load()), "range", ast.Load()),
                    [iterable.func, *iterable.args], [])
