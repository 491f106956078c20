"""Array attributes of argument objects, lifted to inputs (spec §2.5 applied to ``self``).

``f(layer, x)`` reading ``layer.w`` and ``layer.b``, and a compiled method ``obj.forward(x)``
(``CompiledFunction.__get__`` passes ``obj`` first), read arrays that are neither arguments nor
free variables. Keyed by value with the object, arrays above a few kilobytes made every such
call eager. Here, at each call, the array attributes of each positional argument object that
the function's code names (or the code of the object's methods it reaches through them:
``method_names``) are read and passed as leading arrays, after a ``LiftedAttributes`` marker that
says which they are: the key then describes them by layout (their data is read by the kernels
at every call, an in-place update is written back to the object's array) and describes the
object by its other attributes (``hidden``). While capture runs the function, the object's
lifted attributes are bound to the traced values and put back after (``attributes_bound``; a
shallow-copy stand-in was tried and dropped: ``self is other``, ``id(self)``, registries and
``__del__`` saw another object, wrong results found by a probe). So that the traced values
stand for this argument only: an object passed twice is lifted at its first place, its second
place marked ``(position, "=first")`` (the key then tells ``f(a, a)`` from ``f(a, b)``), and an
object the function also reaches another way (a global, a closure: ``reach.reached``) is not
lifted (the capture is refused: its arrays read that way would stand for every later object).
Another thread reading the object during that first capture would see the traced values
(documented).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from stax.ir import UnsupportedError
from stax.trace import loops
from stax.trace.creation import active_tracer
from stax.trace.proxy import Proxy
from stax.trace.reach import reached

from .code_reads import method_names


@dataclass(frozen=True)
class LiftedAttributes:
    """The leaf before the lifted arrays: ``paths`` names them, ``(argument position,
    attribute)``; its description in the key is the paths (``signature.leaf_signature``)."""

    paths: tuple[tuple[int, str], ...]

    @property
    def leaves(self) -> int:
        """How many leading arguments it and its arrays take."""
        return 1 + len(self.paths)


def as_plain_callable(fn: Any) -> Any:
    """What ``compile`` compiles for ``fn``: a callable object whose class's ``__call__`` is a
    Python function, that function bound to it (``compile(model)``: the class's, as ``model(x)``
    calls it, not an instance attribute named ``__call__``); a compiled method bound to an object
    (``compile(obj.forward)`` of a class-body ``@compile``), its function bound to the object
    (the compiled function's caches stay its own); anything else, itself."""
    if isinstance(fn, types.MethodType) and hasattr(type(fn.__func__), "__stax_key__"):
        return types.MethodType(fn.__func__.fn, fn.__self__)
    call = next((vars(c)["__call__"] for c in type(fn).__mro__ if "__call__" in vars(c)), None)
    if isinstance(call, types.FunctionType) and not hasattr(type(fn), "__stax_key__") and \
            not isinstance(fn, (type, types.FunctionType, types.MethodType)):
        return types.MethodType(call, fn)
    return fn


def own_attributes(value: Any) -> dict[str, Any] | None:
    """The instance dictionary of a plain object argument, or None (arrays, containers,
    modules, classes, functions, NumPy scalars, objects without one or with slots besides)."""
    if isinstance(value, (np.ndarray, np.generic, type, types.ModuleType, types.FunctionType,
                          types.MethodType, tuple, list, dict, int, float, complex, str, bytes)):
        return None
    own = getattr(value, "__dict__", None)
    if type(own) is not dict or any("__slots__" in vars(c) for c in type(value).__mro__[:-1]):
        return None
    return own


class ObjectArrays:
    """Which attributes of a call's object arguments are lifted, for a function whose code
    names ``names``."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names
        self._by_type: dict[type, frozenset[str]] = {}  # the names read through objects of it

    def find(self, args: tuple[Any, ...]) -> LiftedAttributes | None:
        paths: list[tuple[int, str]] = []
        first: dict[int, int] = {}  # id -> the first position of an object met twice
        for position, value in enumerate(args):
            own = own_attributes(value)
            if not own:
                continue
            if id(value) in first:  # the same object again: its arrays are the first's
                paths.append((position, f"={first[id(value)]}"))
                continue
            first[id(value)] = position
            names = self._by_type.get(type(value))
            if names is None:
                names = self._by_type[type(value)] = method_names(type(value), self.names)
            paths += [(position, a) for a in sorted(names & own.keys())
                      if type(own[a]) is np.ndarray]
        return LiftedAttributes(tuple(paths)) if paths else None


def with_lifted(objects: ObjectArrays | None, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` as the key and the program take them: the ``LiftedAttributes`` leaf and the
    lifted arrays first, when the objects among them have any."""
    lifted = objects.find(args) if objects is not None else None
    return args if lifted is None else (lifted, *lifted_values(lifted, args), *args)


def lifted_values(lifted: LiftedAttributes, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The lifted arrays (an object's second place: None, a constant the function ignores)."""
    return tuple(None if attr.startswith("=") else vars(args[position])[attr]
                 for position, attr in lifted.paths)


def hidden(lifted: LiftedAttributes, args: tuple[Any, ...]) -> dict[int, frozenset[str]]:
    """``id`` of each object -> its lifted attributes, which its description leaves out."""
    found: dict[int, set[str]] = {}
    for position, attr in lifted.paths:
        if not attr.startswith("="):
            found.setdefault(id(args[position]), set()).add(attr)
    return {key: frozenset(names) for key, names in found.items()}


@contextmanager
def attributes_bound(owner: Any, placed: dict[str, Any]) -> Iterator[None]:
    """The object's lifted attributes bound to their traced values while capture runs the
    function (its helpers and methods read them through the object too), then put back: each
    still bound to its traced value gets the array it had; one the function rebound keeps its
    new value, which capture's escape check settles to eager's array. The object itself, not a
    copy: its identity is the function's (``self is other``, ``id(self)``, registries)."""
    own = vars(owner)
    before = {a: own.get(a) for a in placed}
    own.update(placed)
    try:
        yield
    finally:
        for attr, value in placed.items():
            if own.get(attr) is value:
                own[attr] = before[attr]


def tracing(values: Any) -> bool:
    """Whether ``values`` (lifted arrays) are a capture's traced values, not an eager run's."""
    return any(isinstance(v, Proxy) for v in values)


def with_object_arrays(fn: Callable[..., Any], leading: int) -> Callable[..., Any]:
    """``fn`` (its ``leading`` free arrays first) taking a call's lifted object arrays after a
    ``LiftedAttributes`` leaf: each object's attributes bound to them while ``fn`` runs."""
    target = getattr(fn, "__wrapped__", fn)

    def call(*args: Any, **kwargs: Any) -> Any:
        # its loops lifted, as capture does for the function it is given (this wrapper)
        run = (loops.rewritten(fn) or fn) if active_tracer() is not None else fn
        marker = args[leading] if len(args) > leading else None
        if type(marker) is not LiftedAttributes:
            return run(*args, **kwargs)
        values = args[leading + 1:leading + marker.leaves]
        user_args = args[leading + marker.leaves:]
        if not tracing(values):  # an eager run: the objects themselves (their arrays are these)
            return run(*args[:leading], *user_args, **kwargs)
        placed: dict[int, dict[str, Any]] = {}
        for (position, attr), value in zip(marker.paths, values):
            if not attr.startswith("="):  # a second place of one object: bound once
                placed.setdefault(position, {})[attr] = value
        for position in placed:
            where = reached(target, user_args[position])
            if where is not None:  # its arrays read that way would stand for the argument's
                raise UnsupportedError(
                    f"the object passed as argument {position} is also the function's "
                    f"{where}: its arrays are not lifted", hint="pass its arrays as arguments")
        with ExitStack() as stack:
            for position, attrs in placed.items():
                stack.enter_context(attributes_bound(user_args[position], attrs))
            return run(*args[:leading], *user_args, **kwargs)
    call.__wrapped__ = target  # type: ignore[attr-defined]  # capture's scans look through it
    return call
