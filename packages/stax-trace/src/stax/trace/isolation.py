"""Values that differ from one call to the next, during capture (spec §3.7).

Capture runs the user's function once, on proxies, and keeps what does not depend on the traced
arrays as constants of the compiled function. A value two eager calls with equal arguments would
not share — a random draw, fresh entropy, the clock — must never become such a constant. And a
random draw made at capture would advance a generator the caller owns, which the eager fallback
would then advance again. Saving generator states before capture and putting them back after it
is no answer: a draw another thread makes meanwhile would be rewound and repeated. So capture
reads none of these values itself:

- a ``np.random.Generator`` argument is traced (its draws become graph nodes, replayed on the
  caller's generator at run time); capture draws from a private copy of it;
- any other such read the function could make is refused *before* it happens
  (``UnsupportedError`` naming it: the function runs eagerly, and reads anew on every call, in
  the caller's thread):

  * while some capture runs, these are replaced by wrappers that refuse in a capturing thread
    and call the original in every other thread (no state is touched): NumPy's legacy functions
    (``np.random.rand``, ``seed``...), ``np.random.default_rng()`` without a seed, the OS entropy
    NumPy takes for any generator or ``SeedSequence`` made without a seed (``PCG64()``,
    ``RandomState()``, ``Generator(MT19937())``...), the standard library's ``random`` functions
    and the drawing and seeding methods of ``random.Random`` and ``random.SystemRandom``; and,
    read by the user's code (not by the standard library's: logging's time stamps), the clock
    (``time.time``, ``perf_counter``...) and the OS's entropy (``os.urandom``, ``secrets``,
    ``uuid.uuid4``, ``uuid.uuid1``);
  * what those wrappers cannot intercept is refused by name before capture starts, if the
    function can reach it (``reach.py`` scans a function's globals, closure cells, defaults,
    the helper functions and methods it calls, the attributes of arguments it reads): NumPy's
    generator objects (their types are immutable and their locks read-only), a generator
    argument other than a ``np.random.Generator``, a ``random.Random`` whose class draws by its
    own code, ``datetime.now``/``today``/``utcnow`` (methods of immutable types), and a guarded
    function bound to a name before the wrappers were put in place (``from numpy.random import
    rand``, ``from time import perf_counter``; ``from numpy.random import default_rng`` is
    refused even when called with a seed, which the scan does not see).

A NumPy generator made inside the function *with* a seed gives the same numbers on every eager
call: capture draws from it, a scalar drawn there is a constant (eager's on every call), an array
drawn there is refused as any array that is not an argument. ``np.random.RandomState(seed)`` and
``BitGenerator.jumped()`` take OS entropy before they set their state, so they are refused too
(the function runs eagerly, with eager's results). A ``random.Random`` made inside the function,
seeded or not, is refused when it seeds itself.

Not covered: a generator or clock reached only through a path the name scan cannot follow (a
value computed at run time, more than ``reach.MAX_DEPTH + 1`` attribute hops from a name), the
clock or entropy read by C code (``np.datetime64("now")``) or by the standard library on the
user's behalf (``email.utils.formatdate()``), and other sources of change between calls that do
not draw or read the clock (a file's contents, ``os.environ``, ``id()`` of a new object).

Every refusal made while the function runs (a draw, or any construct the tracer refuses) is also
kept on the capture's ``Watch``: a function that catches the error and goes on still fails to
capture, since the capture would have baked in the other branch.
"""

from __future__ import annotations

import _random
import copy
import datetime
import functools
import os
import random
import secrets
import sys
import threading
import time
import types
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from stax.ir import UnsupportedError

from .patching import Patches, Target
from .source import library_frame, user_source

NUMPY_GENERATORS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)


@dataclass(frozen=True)
class Unrepeatable:
    """A kind of value two eager calls with equal arguments need not share: how a capture that
    would read one says so."""

    what: str
    hint: str

    def error(self, label: str, source: str | None = None) -> UnsupportedError:
        return UnsupportedError(f"{self.what} ({label})", source=source, hint=self.hint)


DRAW = Unrepeatable(
    "the function draws random numbers from np.random or a generator it does not take as an "
    "argument; such draws are not captured",
    "pass a np.random.Generator argument; as it is, the function runs eagerly and its generators "
    "advance exactly once")
OUTSIDE = Unrepeatable(
    "the function reads a value that differs from call to call; a compiled version would keep the "
    "one read when it compiled",
    "pass the value as an argument; as it is, the function runs eagerly and reads it on every call")


class Watch:
    """One capture running in this thread, and the first construct it refused: the capture fails
    with it even if the function caught the error and went on (a draw skipped, a fallback value
    used: the capture would have baked in another result)."""

    def __init__(self) -> None:
        self.refused: UnsupportedError | None = None


_local = threading.local()  # .watches: the captures running in this thread, innermost last
#: NumPy's legacy module functions: methods of its global RandomState, and seeding (by name, so
#: that a user's own replacement of one is guarded too)
_LEGACY_NAMES = sorted({n for n, v in vars(np.random.mtrand).items() if not n.startswith("_") and
                        getattr(v, "__self__", None) is np.random.mtrand._rand} |
                       {"seed", "ranf", "sample", "get_bit_generator", "set_bit_generator"})


def refused(error: UnsupportedError) -> UnsupportedError:
    """``error``, remembered as the refusal of the capture running in this thread, if any."""
    watches = getattr(_local, "watches", None)
    if watches and watches[-1].refused is None:
        watches[-1].refused = error
    return error


@dataclass(frozen=True)
class Guard:
    """How the wrapper of one function refuses it in a capturing thread."""

    label: str | Callable[..., str]  # what the refusal names (or: computed from the call)
    note: str = ""  # what it reads, when the name does not say
    kind: Unrepeatable = DRAW
    when: Callable[..., bool] | None = None  # refuse only calls for which when(*args, **kwargs)
    # refuse only calls from the user's code: the standard library's, NumPy's and Stax's own
    # reads (logging's time stamps, Stax's timers) do not flow into the function's values
    user_calls: bool = False

    def describe(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        label = self.label if isinstance(self.label, str) else self.label(*args, **kwargs)
        return f"{label}: {self.note}" if self.note else label

    def bound_by_name(self, qualname: str) -> str:
        """What the scan says when it finds the function this guard wraps, bound to a name
        before the guards were put in place (``from time import perf_counter``)."""
        label = self.label if isinstance(self.label, str) else qualname
        return f"{label} imported by name: {self.note}" if self.note else f"{label} imported by name"

    def refuses(self, caller: types.FrameType, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        if self.user_calls and library_frame(caller):
            return False
        if self.when is None:
            return True
        try:
            return self.when(*args, **kwargs)
        except TypeError:  # arguments the function itself refuses: its own error
            return False


def _guarded(guard: Guard, original: Callable[..., Any]) -> Callable[..., Any]:
    """``original``, refused in a thread that is capturing, as ``guard`` says."""
    @functools.wraps(original)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if getattr(_local, "watches", None) and guard.refuses(sys._getframe(1), args, kwargs):
            raise refused(guard.kind.error(guard.describe(args, kwargs),
                                           user_source(2, stdlib=False)))
        return original(*args, **kwargs)
    guarded.__stax_guarded__ = guard  # type: ignore[attr-defined]
    return guarded


def _guard(label: str | Callable[..., str], **how: Any) -> Callable[[Any], Any]:
    """The ``wrap`` of a patching target: ``_guarded`` with a ``Guard(label, **how)``."""
    return functools.partial(_guarded, Guard(label, **how))


def _unseeded(seed: Any = None, *args: Any, **kwargs: Any) -> bool:
    """``default_rng()`` draws its seed from the OS (a new stream each call), and
    ``default_rng(generator)`` returns that generator: draws from either cannot be captured."""
    return seed is None or isinstance(seed, NUMPY_GENERATORS)


def _seeding(self: Any, a: Any = None, *args: Any, **kwargs: Any) -> str:
    """What ``Random.seed`` (which ``random.Random()`` calls) is refused as."""
    if isinstance(self, random.SystemRandom):
        return "random.SystemRandom(): it draws from the OS's entropy"
    name = type(self).__qualname__ if isinstance(self, random.Random) else "Random"
    if a is None:
        return (f"random.{name}() or {name}.seed() without a seed, which takes fresh entropy from "
                "the OS; the standard library's generators are not captured")
    return (f"random.{name}(seed) or {name}.seed(seed): the standard library's generators are "
            "not captured")


#: what NumPy takes from the OS for a bit generator or SeedSequence made without a seed
NUMPY_ENTROPY = ("a NumPy generator, bit generator or SeedSequence made without a seed, which takes "
                 "fresh entropy from the OS; so do np.random.RandomState(seed) and "
                 "BitGenerator.jumped() before they set their state")

#: the clock: (module, name, the arguments that make it read the clock, or None: always)
_CLOCK: list[tuple[Any, str, Callable[..., bool] | None]] = [
    *((time, name, None) for name in (
        "time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
        "process_time", "process_time_ns", "thread_time", "thread_time_ns", "clock_gettime",
        "clock_gettime_ns")),
    *((time, name, lambda secs=None: secs is None) for name in ("localtime", "gmtime", "ctime")),
    (time, "asctime", lambda t=None: t is None),
    (time, "strftime", lambda format, t=None: t is None),
    (os, "times", None),  # the process's CPU times so far
    (uuid, "uuid1", None),
]
#: the operating system's entropy
_ENTROPY: list[tuple[Any, str]] = [
    (os, "urandom"), (os, "getrandom"), (uuid, "uuid4"),
    *((secrets, name) for name in ("randbits", "randbelow", "choice", "token_bytes", "token_hex",
                                   "token_urlsafe")),
]
#: the clock read by methods of immutable types: refused by name (``reach.py``)
_CLOCK_METHODS = {id(vars(cls)[name]): f"{cls.__module__}.{cls.__qualname__}.{name}"
                  for cls in (datetime.date, datetime.datetime) for name in ("now", "today", "utcnow")
                  if name in vars(cls)}


def _targets() -> list[Target]:
    """What ``refusing_draws`` guards: NumPy's legacy functions (methods of its global
    RandomState, and seeding), ``default_rng`` without a seed, the entropy NumPy seeds a
    generator made without a seed from, the ``random`` module's functions (methods of its
    hidden ``Random``) and the drawing and seeding methods of ``random.Random`` and
    ``SystemRandom``, which every ``random.Random`` instance uses, however it is reached; the
    clock and the OS's entropy."""
    targets: list[Target] = []
    for module in (np.random, np.random.mtrand):
        targets += [(module, name, _guard(f"numpy.random.{name}"))
                    for name in _LEGACY_NAMES if name in vars(module)]
        if "default_rng" in vars(module):
            targets.append((module, "default_rng", _guard(
                "numpy.random.default_rng() without a seed", when=_unseeded)))
    # SeedSequence(entropy=None) calls this module global (it is secrets.randbits)
    targets.append((np.random.bit_generator, "randbits", _guard(NUMPY_ENTROPY)))
    for name, value in list(vars(random).items()):
        if getattr(value, "__self__", None) is random._inst:
            targets.append((random, name, _guard(f"random.{name}")))
    for cls in (random.Random, random.SystemRandom):
        for name in ("random", "getrandbits", "randbytes", "seed", "setstate"):
            if cls is random.Random or name in vars(cls):  # SystemRandom: only its own
                label = _seeding if name == "seed" else f"{cls.__name__}.{name}"
                targets.append((cls, name, _guard(label)))
    targets += [(module, name, _guard(f"{module.__name__}.{name}()", note="the clock", kind=OUTSIDE,
                                      when=when, user_calls=True))
                for module, name, when in _CLOCK if name in vars(module)]
    targets += [(module, name, _guard(f"{module.__name__}.{name}()", note="entropy from the OS",
                                      kind=OUTSIDE, user_calls=True))
                for module, name in _ENTROPY if name in vars(module)]
    return targets


_PATCHES = Patches(_targets)


@contextmanager
def not_watching() -> Iterator[None]:
    """Stax's own work inside a capture (compiling a lifted loop's body: its temporary files and
    disk caches draw names from ``random``) is not the function's: no capture watches it (a
    capture started inside watches its own function)."""
    watches = getattr(_local, "watches", None)
    _local.watches = []
    try:
        yield
    finally:
        _local.watches = watches if watches is not None else []


@contextmanager
def refusing_draws() -> Iterator[Watch]:
    """While the block runs, draws this thread reaches through NumPy's legacy functions or the
    ``random`` module are refused (other threads draw as usual)."""
    watches = _local.__dict__.setdefault("watches", [])
    with _PATCHES.applied():
        watch = Watch()
        watches.append(watch)
        try:
            yield watch
        finally:
            watches.pop()


def guarded(value: Any) -> bool:
    """Whether ``value`` is one of the wrappers above (a read through it is refused when made)."""
    return type(value) is types.FunctionType and "__stax_guarded__" in value.__dict__


def unrepeatable(value: Any) -> tuple[Unrepeatable, str] | None:
    """What ``value`` is when a capture could not intercept the values it gives: a NumPy
    generator or a bound method of one, a C method of a ``random.Random``, a ``random.Random``
    whose class draws by its own code, a guarded function bound before the guards were put in
    place, ``datetime.now`` and its kin; None otherwise."""
    if isinstance(value, NUMPY_GENERATORS):
        return DRAW, f"a {type(value).__module__}.{type(value).__qualname__}"
    wrapper = _PATCHES.wrapped.get(id(value))
    if wrapper is not None:  # ``from numpy.random import seed``: bound before any capture
        guard = wrapper.__stax_guarded__
        return guard.kind, guard.bound_by_name(wrapper.__qualname__)
    if id(value) in _CLOCK_METHODS:
        return OUTSIDE, f"{_CLOCK_METHODS[id(value)]}(): the clock"
    if isinstance(value, _random.Random):  # random.Random's own methods are guarded
        return (DRAW, f"a {type(value).__qualname__} (its class draws by its own code)") \
            if _own_draws(type(value)) else None
    if not isinstance(value, (types.MethodType, types.BuiltinMethodType)):
        return None
    owner = value.__self__
    name = getattr(value, "__name__", "?")
    if owner in (datetime.date, datetime.datetime) and name in ("now", "today", "utcnow"):
        return OUTSIDE, f"datetime.{owner.__qualname__}.{name}(): the clock"
    if owner is not None and not isinstance(owner, type):
        if isinstance(owner, NUMPY_GENERATORS):
            return DRAW, f"{type(owner).__qualname__}.{name}"
        if isinstance(owner, _random.Random) and isinstance(value, types.BuiltinMethodType):
            return DRAW, f"random.Random.{name}"
    return None


def _own_draws(cls: type) -> bool:
    """A ``random.Random`` class that draws by code outside the ``random`` module."""
    if not issubclass(cls, random.Random):
        return True
    return any(("random" in vars(c) or "getrandbits" in vars(c)) for c in cls.__mro__
               if c.__module__ not in ("random", "_random"))


def private_copy(generator: np.random.Generator) -> np.random.Generator:
    """A copy of a caller's generator for capture to draw from. Its state is read under the bit
    generator's lock, which NumPy's own draws hold (another thread may be drawing from it)."""
    with generator.bit_generator.lock:
        return copy.deepcopy(generator)


def private_generator(generator: np.random.Generator, outcome: Any) -> np.random.Generator:
    """The private copy capture draws from in place of a generator argument, noted on
    ``outcome`` (whose caller's generator it advances as eager did). One generator passed as
    two arguments is refused: each got a copy of its own, so capture drew the same numbers
    twice (``x + r1.normal() - r2.normal()`` came back 0) and left the caller's generator
    where one copy ended (a review's find); eagerly the draws interleave in one stream."""
    if any(caller is generator for caller, _ in outcome.generators):
        raise UnsupportedError("one np.random.Generator passed as two arguments (their draws "
                               "interleave in one stream)", hint="pass it once")
    private = private_copy(generator)
    outcome.generators.append((generator, private))
    return private


#: ``out`` among a Generator draw's positional parameters: a draw into an array (filled in
#: place) is not captured (``proxy.GeneratorProxy``)
OUT_AT = {"random": 2, "standard_normal": 2, "standard_exponential": 3, "standard_gamma": 3}
