"""Array attributes of argument objects, lifted to inputs (spec §2.5 applied to ``self``).

``f(layer, x)`` reading ``layer.w`` and ``layer.b``, and a compiled method ``obj.forward(x)``
(``CompiledFunction.__get__`` passes ``obj`` first), read arrays that are neither arguments nor
free variables. Keyed by value with the object, arrays above a few kilobytes made every such
call eager. Here, at each call, the array attributes of each positional argument object that
the function's code names (or the code of the object's methods it reaches through them:
``method_names``) are read and passed as leading arrays, after a ``LiftedAttributes`` marker that
says which they are: the key then describes them by layout (their data is read by the kernels
at every call, an in-place update is written back to the object's array) and describes the
object by its other attributes (``hidden``). Capture runs the function on a stand-in for each
such object (``stand_in``: a shallow copy whose lifted attributes are the traced values), so the
object is never changed and no other path to it (a global, another argument, another thread)
sees traced values; what the function does to the stand-in's attributes is carried over to the
object (``commit``), and the runtime's side-effect check then runs the function eagerly for that
key, as for any argument object it changes.

An object that appears twice among the arguments is lifted once per position (each a stand-in
of its own); the arrays are then the same array twice, which the dispatcher's aliasing rules
handle as for ``f(x, x)``.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from stax.ir import UnsupportedError
from stax.trace import loops
from stax.trace.proxy import Proxy

from .code_reads import method_names


@dataclass(frozen=True)
class LiftedAttributes:
    """The leaf before the lifted arrays: ``paths`` names them, ``(argument position,
    attribute)``; its description in the key is the paths (``signature.leaf_signature``)."""

    paths: tuple[tuple[int, str], ...]


def python_callable_object(fn: Any) -> bool:
    """An instance of a user class whose ``__call__`` is a Python function (not a function, a
    class, a ``functools.partial`` or a compiled function, which says what it compiles with
    ``__stax_key__``): ``compile(model)`` compiles its bound ``__call__``."""
    call = next((vars(c)["__call__"] for c in type(fn).__mro__ if "__call__" in vars(c)), None)
    return isinstance(call, types.FunctionType) and not hasattr(type(fn), "__stax_key__") and \
        not isinstance(fn, (type, types.FunctionType, types.MethodType))


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
        paths = []
        for position, value in enumerate(args):
            own = own_attributes(value)
            if not own:
                continue
            names = self._by_type.get(type(value))
            if names is None:
                names = self._by_type[type(value)] = method_names(type(value), self.names)
            paths += [(position, a) for a in sorted(names & own.keys())
                      if type(own[a]) is np.ndarray]
        return LiftedAttributes(tuple(paths)) if paths else None


def lifted_values(lifted: LiftedAttributes, args: tuple[Any, ...]) -> tuple[np.ndarray, ...]:
    return tuple(vars(args[position])[attr] for position, attr in lifted.paths)


def hidden(lifted: LiftedAttributes, args: tuple[Any, ...]) -> dict[int, frozenset[str]]:
    """``id`` of each object -> its lifted attributes, which its description leaves out."""
    found: dict[int, set[str]] = {}
    for position, attr in lifted.paths:
        found.setdefault(id(args[position]), set()).add(attr)
    return {key: frozenset(names) for key, names in found.items()}


def stand_in(owner: Any, placed: dict[str, Any]) -> Any:
    """A shallow copy of ``owner`` (same class, same attribute values) whose lifted attributes
    are the traced values: capture runs the function on it, so the object itself is never
    changed (another thread reading it, or another path to it — a global, a second argument —
    sees its arrays, not traced values)."""
    try:
        clone = object.__new__(type(owner))
    except TypeError:
        raise UnsupportedError(f"an argument object of type {type(owner).__qualname__} cannot "
                               "be copied to trace its arrays", hint="pass the arrays as "
                               "arguments") from None
    own = vars(clone)
    own.update(vars(owner))
    own.update(placed)
    return clone


def tracing(values: Any) -> bool:
    """Whether ``values`` (lifted arrays) are a capture's traced values, not an eager run's."""
    return any(isinstance(v, Proxy) for v in values)


def commit(clone: Any, owner: Any, placed: dict[str, Any]) -> None:
    """Carry what the function did to the stand-in's attributes over to the object: the capture
    run is the call's eager execution, so the object ends as eager leaves it. A traced value
    stored there is then replaced by capture's escape check (``stax.trace.reach``) with the
    array eager NumPy would hold (the caller's own array for an argument or a lifted one), and
    the function runs eagerly for that key."""
    expected = {**vars(owner), **placed}
    now, own = vars(clone), vars(owner)
    for key in expected.keys() - now.keys():
        own.pop(key, None)
    for key, value in now.items():
        if key not in expected or value is not expected[key]:
            own[key] = value  # a traced value: settled by capture's escape check


def with_object_arrays(fn: Callable[..., Any], leading: int) -> Callable[..., Any]:
    """``fn`` (its ``leading`` free arrays first) taking a call's lifted object arrays after a
    ``LiftedAttributes`` leaf: each object's attributes bound to them while ``fn`` runs."""
    target = getattr(fn, "__wrapped__", fn)

    def call(*args: Any, **kwargs: Any) -> Any:
        run = loops.rewritten(fn) or fn  # its loops lifted, as capture does for any function
        marker = args[leading] if len(args) > leading else None
        if type(marker) is not LiftedAttributes:
            return run(*args, **kwargs)
        values = args[leading + 1:leading + 1 + len(marker.paths)]
        user_args = args[leading + 1 + len(marker.paths):]
        if not tracing(values):  # an eager run: the objects themselves (their arrays are these)
            return run(*args[:leading], *user_args, **kwargs)
        placed: dict[int, dict[str, Any]] = {}
        for (position, attr), value in zip(marker.paths, values):
            placed.setdefault(position, {})[attr] = value
        stand_ins = {position: stand_in(user_args[position], attrs)
                     for position, attrs in placed.items()}
        try:
            return run(*args[:leading],
                       *(stand_ins.get(i, v) for i, v in enumerate(user_args)), **kwargs)
        finally:
            for position, clone in stand_ins.items():
                commit(clone, user_args[position], placed[position])
    call.__wrapped__ = target  # type: ignore[attr-defined]  # capture's scans look through it
    return call
