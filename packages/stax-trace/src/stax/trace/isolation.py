"""Random number generators during capture (spec §3.7).

Capture runs the user's function once, on proxies. A random draw made there would advance a
generator the caller owns, and the eager fallback would then draw again: two draws for one call.
Saving generator states before capture and putting them back after it is no answer either: a
draw another thread makes meanwhile would be rewound and repeated. So capture never draws from a
generator it does not own:

- a ``np.random.Generator`` argument is traced (its draws become graph nodes, replayed on the
  caller's generator at run time); capture draws from a private copy of it;
- any other draw the function could reach is refused *before* it happens (``UnsupportedError``:
  the function runs eagerly and draws once per call, in the caller's thread):

  * NumPy's legacy functions (``np.random.rand``, ``seed``...), ``np.random.default_rng()``
    without a seed, and the standard library's ``random`` functions and the drawing methods of
    ``random.Random`` and ``random.SystemRandom`` are replaced, while some capture runs, by
    wrappers that refuse in a capturing thread and call the original in every other thread (no
    state is touched);
  * what those wrappers cannot intercept is refused by name before capture starts, if the
    function can reach it (``reach.py`` scans a function's globals, closure cells, defaults,
    the helper functions and methods it calls, the attributes of arguments it reads): NumPy's
    generator objects (their types are immutable and their locks read-only), a generator
    argument other than a ``np.random.Generator``, a ``random.Random`` whose class draws by its
    own code, and a guarded function bound to a name before the wrappers were put in place
    (``from numpy.random import rand``; ``from numpy.random import default_rng`` is refused even
    when called with a seed, which the scan does not see). A ``random.Random`` made inside the
    function is refused the same way (its class's drawing methods are reached by name).

Not covered: a generator reached only through a path the name scan cannot follow (a value
computed at run time, more than ``reach.MAX_DEPTH + 1`` attribute hops from a name), or a NumPy
generator made inside the function (``np.random.Generator(...)``, ``RandomState()``): capture
draws from it, so a scalar drawn there becomes a constant of the compiled function (an array
drawn there is refused, as any array that is not an argument).

Every refusal made while the function runs (a draw, or any construct the tracer refuses) is also
kept on the capture's ``Watch``: a function that catches the error and goes on still fails to
capture, since the capture would have baked in the other branch.
"""

from __future__ import annotations

import _random
import copy
import functools
import random
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from stax.ir import UnsupportedError

from .patching import Patches, Target
from .source import user_source

NUMPY_GENERATORS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)

DRAWS = ("the function draws random numbers from np.random or a generator it does not take as an "
         "argument; such draws are not captured")
DRAWS_HINT = ("pass a np.random.Generator argument; as it is, the function runs eagerly and its "
              "generators advance exactly once")


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


def draw_error(what: str, source: str | None = None) -> UnsupportedError:
    return UnsupportedError(f"{DRAWS} ({what})", source=source, hint=DRAWS_HINT)


def refused(error: UnsupportedError) -> UnsupportedError:
    """``error``, remembered as the refusal of the capture running in this thread, if any."""
    watches = getattr(_local, "watches", None)
    if watches and watches[-1].refused is None:
        watches[-1].refused = error
    return error


def _refuse(what: str) -> UnsupportedError:
    return refused(draw_error(what, user_source(3)))


def _guard(label: str, original: Callable[..., Any],
           draws: Callable[..., bool] | None = None) -> Callable[..., Any]:
    """``original``, refused in a thread that is capturing (when ``draws(*args, **kwargs)``)."""
    @functools.wraps(original)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if getattr(_local, "watches", None) and (draws is None or draws(*args, **kwargs)):
            raise _refuse(label)
        return original(*args, **kwargs)
    guarded.__stax_guarded__ = label  # type: ignore[attr-defined]
    return guarded


def _unseeded(seed: Any = None, *args: Any, **kwargs: Any) -> bool:
    """``default_rng()`` draws its seed from the OS (a new stream each call), and
    ``default_rng(generator)`` returns that generator: draws from either cannot be captured."""
    return seed is None or isinstance(seed, NUMPY_GENERATORS)


def _targets() -> list[Target]:
    """What ``refusing_draws`` guards: NumPy's legacy functions (methods of its global
    RandomState, and seeding), ``default_rng`` without a seed, the ``random`` module's functions
    (methods of its hidden ``Random``) and the drawing methods of ``random.Random`` and
    ``SystemRandom``, which every ``random.Random`` instance uses, however it is reached."""
    targets: list[Target] = []
    for module in (np.random, np.random.mtrand):
        targets += [(module, name, functools.partial(_guard, f"numpy.random.{name}"))
                    for name in _LEGACY_NAMES if name in vars(module)]
        if "default_rng" in vars(module):
            targets.append((module, "default_rng", functools.partial(
                _guard, "numpy.random.default_rng() without a seed", draws=_unseeded)))
    for name, value in list(vars(random).items()):
        if getattr(value, "__self__", None) is random._inst:
            targets.append((random, name, functools.partial(_guard, f"random.{name}")))
    for cls in (random.Random, random.SystemRandom):
        for name in ("random", "getrandbits", "randbytes", "seed", "setstate"):
            if cls is random.Random or name in vars(cls):  # SystemRandom: only its own
                targets.append((cls, name, functools.partial(_guard, f"{cls.__name__}.{name}")))
    return targets


_PATCHES = Patches(_targets)


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
    """Whether ``value`` is one of the wrappers above (a draw through it is refused when made)."""
    return type(value) is types.FunctionType and "__stax_guarded__" in value.__dict__


def generator_kind(value: Any) -> str | None:
    """What ``value`` is when a capture could not intercept draws from it: a NumPy generator or
    a bound method of one, a C method of a ``random.Random``, a ``random.Random`` whose class
    draws by its own code; None otherwise."""
    if isinstance(value, NUMPY_GENERATORS):
        return f"a {type(value).__module__}.{type(value).__qualname__}"
    wrapper = _PATCHES.wrapped.get(id(value))
    if wrapper is not None:  # ``from numpy.random import seed``: bound before any capture
        return f"{wrapper.__stax_guarded__} imported by name"
    if isinstance(value, _random.Random):  # random.Random's own methods are guarded
        return f"a {type(value).__qualname__} (its class draws by its own code)" \
            if _own_draws(type(value)) else None
    if not isinstance(value, (types.MethodType, types.BuiltinMethodType)):
        return None
    owner = value.__self__
    if owner is not None and not isinstance(owner, type):
        if isinstance(owner, NUMPY_GENERATORS):
            return f"{type(owner).__qualname__}.{getattr(value, '__name__', '?')}"
        if isinstance(owner, _random.Random) and isinstance(value, types.BuiltinMethodType):
            return f"random.Random.{getattr(value, '__name__', '?')}"
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
