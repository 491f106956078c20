"""Python conditions under which a value describes as it did: an object's key at a lookup's cost.

The key describes an argument object (a config with scalar fields, a layer whose array
attributes are lifted, the ``self`` of a compiled method) by walking it (``signature.Describer``):
its class, each attribute, its class's attributes and methods, the values those methods read.
Walked on every call that costs 10-40 us where the eager call costs 1. ``ValueChecks.test``
walks the value once, as the describer does, and writes a condition that a later value meets only
if it describes the same way: its type by identity, each attribute by type and value, each user
function and class by identity and the values the describer reads of them (their globals, their
defaults, the attributes the code names). Key entries (``key_entry.py``) and free-value guards
(``guards.Snapshot``) evaluate it instead of describing.

Where it cannot write such a condition (a set, whose description follows its iteration order; a
cycle; a ``functools.partial``; a class too rich to describe, keyed by identity) it gives None
and the caller keeps the describer. What the describer does not see (documented in
``guards.py``: ``np`` rebound) the condition does not see either.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import devices
from .code_reads import (
    ABSENT,
    attribute_names,
    held_attributes,
    method_names,
    own_module,
    reads,
    user_holder,
)
from .signature import (
    CALLABLE_TYPES,
    MAX_VALUES,
    SMALL_ARRAY_BYTES,
    Identity,
    class_state,
    float_key,
    layout_of,
)

_NONE = object()
_GONE = object()
_BY_VALUE = (int, bool, str, bytes)
#: read paths of a function whose presence its code alone decides; besides them, only the
#: attributes of a user module or class it names (``cfg.scale``: their holder's check keeps
#: the list), not an import's, which a first import changes
_STATIC_PATHS = ("globals[", "closure ", "defaults", "keyword defaults[")


def scalar_test(name: str, x: Any, constants: dict[str, Any], tag: str) -> str | None:
    """The condition that ``name`` (a plain name: it is read more than once) is a scalar keyed
    as ``x`` is: its exact type, then its value; its bits where ``==`` cannot tell (±0.0, NaN).
    ``tag`` names its constants. None for a value this does not handle."""
    t = type(x)
    if t is float:
        if x != x or x == 0.0:
            constants[f"{tag}_key"] = float_key(x)
            return f"type({name}) is float and float_key({name}) == {tag}_key"
        constants[f"{tag}_value"] = x
        return f"type({name}) is float and {name} == {tag}_value"
    if x is None:
        return f"{name} is None"
    if t in _BY_VALUE:
        constants[f"{tag}_value"] = x
        return f"type({name}) is {t.__name__} and {name} == {tag}_value"
    if t is complex:
        constants[f"{tag}_keys"] = (float_key(x.real), float_key(x.imag))
        return (f"type({name}) is complex and (float_key({name}.real), float_key({name}.imag)) "
                f"== {tag}_keys")
    if isinstance(x, np.generic):
        dtype = x.dtype
        if dtype.kind not in "biufc" or dtype.type is not t:
            return None
        constants.update({f"{tag}_type": t, f"{tag}_value": x, f"{tag}_bytes": x.tobytes()})
        if dtype.kind == "c" or (dtype.kind == "f" and (x != x or x == 0)):  # (a part's sign)
            return f"type({name}) is {tag}_type and {name}.tobytes() == {tag}_bytes"
        return f"type({name}) is {tag}_type and {name} == {tag}_value"
    return None


class ValueChecks:
    """Writes conditions into one generated function: its constants go to ``constants`` under
    names starting with ``prefix``; its locals (``:=``) likewise."""

    def __init__(self, constants: dict[str, Any], prefix: str,
                 lifted: dict[int, str] | None = None) -> None:
        self.constants = constants
        #: ``id`` of each argument object whose arrays are lifted -> the argument's name: met
        #: again inside another value, it is that argument (its arrays are the lifted ones)
        self.lifted = lifted or {}
        self.prefix = prefix
        self.count = 0
        self.budget = 4 * MAX_VALUES  # values checked before the condition is given up
        self.active: set[int] = set()  # objects being walked (a cycle: no condition)
        constants.setdefault("float_key", float_key)
        constants.setdefault("ndarray", np.ndarray)

    def fresh(self, value: Any = _NONE) -> str:
        name = f"{self.prefix}{self.count}"
        self.count += 1
        if value is not _NONE:
            self.constants[name] = value
        return name

    def bound(self, expr: str) -> tuple[str, str]:
        """A plain name for ``expr`` and the clause binding it (empty where it is one)."""
        if expr.isidentifier():
            return expr, ""
        local = self.fresh()
        return local, f"(({local} := {expr}) is not None or True) and "

    def test(self, expr: str, x: Any, names: frozenset[str],
             skip: dict[int, frozenset[str]] | None = None) -> str | None:
        """The condition that the value of ``expr`` describes as ``x`` does with
        ``Describer(names, skip)``; None where none is written."""
        self.budget -= 1
        if self.budget < 0:
            return None
        name, bind = self.bound(expr)
        scalar = scalar_test(name, x, self.constants, self.fresh())
        if scalar is not None:
            return f"({bind}{scalar})"
        if isinstance(x, (np.generic, complex)) or type(x) in (float, *_BY_VALUE):
            return None  # a scalar not handled above (a float16, a longdouble)
        if isinstance(x, np.dtype):
            return f"({bind}type({name}) is {self.fresh(type(x))} and {name} == {self.fresh(x)})"
        if x is Ellipsis or x is NotImplemented or x is ABSENT:  # (singletons)
            return f"({bind}{name} is {self.fresh(x)})"
        if id(x) in self.active:
            return None
        self.active.add(id(x))
        try:
            inner = self._compound(name, x, names, skip or {})
        finally:
            self.active.discard(id(x))
        return None if inner is None else f"({bind}{inner})"

    def _all(self, parts: Iterator[str | None]) -> str | None:
        out = []
        for part in parts:
            if part is None:
                return None
            out.append(part)
        return " and ".join(out)

    def _compound(self, name: str, x: Any, names: frozenset[str],
                  skip: dict[int, frozenset[str]]) -> str | None:
        t = type(x)
        if t in (tuple, list):
            head = f"type({name}) is {t.__name__} and len({name}) == {len(x)}"
            return self._all(iter([head, *(self.test(f"{name}[{k}]", v, names)
                                         for k, v in enumerate(x))]))
        if t is dict:
            if not all(type(k) is str for k in x):
                return None
            keys, types_ = self.fresh(tuple(x)), self.fresh((str,) * len(x))
            # (a key equal to a string is not one: a str subclass describes otherwise)
            head = f"type({name}) is dict and tuple({name}) == {keys} and " \
                f"tuple(map(type, {name})) == {types_}"
            return self._all(iter([head, *(self.test(f"{name}[{k!r}]", v, names)
                                         for k, v in x.items())]))
        if t is slice:
            return self._all(iter([f"type({name}) is slice",
                                   *(self.test(f"{name}.{a}", getattr(x, a), names)
                                     for a in ("start", "stop", "step"))]))
        if t is np.ndarray:
            if x.nbytes > SMALL_ARRAY_BYTES or x.dtype.hasobject:
                return None
            return (f"type({name}) is ndarray and {name}.shape == {self.fresh(x.shape)} and "
                    f"{name}.strides == {self.fresh(x.strides)} and {name}.dtype == "
                    f"{self.fresh(x.dtype)} and {name}.tobytes() == "
                    f"{self.fresh(np.ascontiguousarray(x).tobytes())}")
        if isinstance(x, (type, types.ModuleType)) and user_holder(x):
            return self._holder(name, x, names)
        if isinstance(x, (type, types.ModuleType)) or t in CALLABLE_TYPES or \
                isinstance(x, _IDENTITY_BASES):
            return f"{name} is {self.fresh(x)}"
        if devices.library_of(x) is not None:
            return None
        if isinstance(x, types.FunctionType):
            return self._function(name, x, names)
        if isinstance(x, types.MethodType):
            return self._all(iter([f"type({name}) is {self.fresh(types.MethodType)}",
                                   self.test(f"{name}.__func__", x.__func__, names),
                                   self.test(f"{name}.__self__", x.__self__, names)]))
        keyed = getattr(t, "__stax_key__", None)  # a compiled function (a class's method):
        if keyed is not None:  # itself and what it compiles
            return self._all(iter([f"{name} is {self.fresh(x)}", self.test(
                f"{name}.__stax_key__()", keyed(x), names)]))
        if t.__module__ in ("functools", "collections", "array", "builtins"):
            return None  # partials, sets, deques, iterators...
        return self._instance(name, x, t, names, skip)

    def _holder(self, name: str, x: Any, names: frozenset[str]) -> str | None:
        """A user module or class: itself, the attributes among ``names`` it has by value and
        those it has not still missing (one appearing changes the description)."""
        held = list(held_attributes(x, names))
        # (a module's ``__getattr__`` defined later answers every name)
        absent = self.fresh(frozenset(names) - set(held) | {"__getattr__"} if isinstance(
            x, types.ModuleType) else frozenset(names) - set(held))
        if isinstance(x, types.ModuleType):
            # a module __getattr__ answers any name; a module of another class (a property
            # there, PEP 549's pattern) has attributes its dictionary does not show
            if "__getattr__" in vars(x) or type(x) is not types.ModuleType:
                return None
            missing = [f"type({name}) is {self.fresh(types.ModuleType)}",
                       f"{name}.__dict__.keys().isdisjoint({absent})"]
        else:
            if type(x) is not type:  # a user metaclass's attributes
                return None
            mro = self.fresh(x.__mro__)
            missing = [f"{name}.__mro__ is {mro}",
                       *(f"{self.fresh(c)}.__dict__.keys().isdisjoint({absent})"
                         for c in x.__mro__)]
        gone = self.fresh(_GONE)  # (an attribute deleted: not the value tested)
        return self._all(iter([f"{name} is {self.fresh(x)}", *missing,
                               *(self.test(f"getattr({name}, {a!r}, {gone})", getattr(x, a),
                                           names) for a in held)]))

    def _function(self, name: str, fn: types.FunctionType, names: frozenset[str]) -> str | None:
        """A user function: itself, and each value it reads (the describer's ``_function``)."""
        if own_module(fn.__module__):
            return f"{name} is {self.fresh(fn)}"
        inner = names | attribute_names(fn.__code__)
        # its own attributes: one set later is a holder's new path (``code_reads._held``)
        parts: list[str | None] = [f"{name} is {self.fresh(fn)}",
                                   f"{name}.__code__ is {self.fresh(fn.__code__)}",
                                   f"tuple({name}.__dict__) == {self.fresh(tuple(vars(fn)))}"]
        for path, read in reads(fn):
            if not path.startswith(_STATIC_PATHS) and (path.startswith("import ") or
                                                        "." not in path.split("[")[0]):
                return None
            parts.append(self.test(f"{self.fresh(read)}()", read(), inner))
        return self._all(iter(parts))

    def _instance(self, name: str, x: Any, t: type, names: frozenset[str],
                  skip: dict[int, frozenset[str]]) -> str | None:
        """An instance with an attribute dictionary (no builtin base, no slots): its type, its
        attribute names in order, each attribute but the lifted arrays, its class's state."""
        base, slots = layout_of(t)
        own = getattr(x, "__dict__", None)
        if base is not None or slots or type(own) is not dict:
            return None
        owner = self.lifted.get(id(x))
        if owner is not None and owner != name:  # the lifted argument, met again in another
            return f"{name} is {owner}"
        names = method_names(t, names)  # (as the describer: what its methods load too)
        lifted = skip.get(id(x), frozenset())
        attrs = self.fresh()
        parts = [f"type({name}) is {self.fresh(t)}",
                 *(f"{name} is not {other}" for other in sorted(set(self.lifted.values()))
                   if other != name),
                 f"tuple(({attrs} := {name}.__dict__)) == {self.fresh(tuple(own))}"]
        parts += [self.test(f"{attrs}[{k!r}]", v, names) for k, v in own.items()
                  if k not in lifted]
        parts.append(self._class(t, names))
        return self._all(iter(parts))

    def _class(self, t: type, names: frozenset[str]) -> str | None:
        """What the describer's ``_class`` reads of ``t``: each user class of its MRO's own
        attributes (their names in order, then each by value; a property's functions, a static
        or class method's function)."""
        parts: list[str | None] = [f"{self.fresh(t)}.__mro__ is {self.fresh(t.__mro__)}"]
        for c in t.__mro__:
            if c is object or own_module(c.__module__):
                continue
            own, seen = self.fresh(), self.fresh([tuple(vars(c))])
            state = self.fresh(tuple(k for k in vars(c) if class_state(k)))
            self.constants["class_keys"] = class_keys
            parts.append(f"(tuple(({own} := {self.fresh(c)}.__dict__)) == {seen}[0] or "
                         f"class_keys({own}, {seen}, {state}))")
            for k, v in vars(c).items():
                if class_state(k):
                    parts.append(self._class_attribute(f"{own}[{k!r}]", v, names))
        return self._all(iter(parts))

    def _class_attribute(self, expr: str, v: Any, names: frozenset[str]) -> str | None:
        if isinstance(v, property):
            name, bind = self.bound(expr)
            return self._all(iter([f"{bind}isinstance({name}, property)",
                                   *(self.test(f"{name}.{a}", getattr(v, a), names)
                                     for a in ("fget", "fset", "fdel"))]))
        if isinstance(v, (staticmethod, classmethod)):
            name, bind = self.bound(expr)
            return self._all(iter([f"{bind}type({name}) is {self.fresh(type(v))}",
                                   self.test(f"{name}.__func__", v.__func__, names)]))
        return self.test(expr, v, names)


_IDENTITY_BASES: tuple[type, ...] = (enum.Enum,)


def class_keys(own: Any, seen: list[tuple[str, ...]], state: tuple[str, ...]) -> bool:
    """Whether a class's attributes that are state (``signature.class_state``) are still
    ``state``, in order, when its whole key list is no longer ``seen[0]``: pickling or copying an
    instance adds ``__slotnames__`` to its class; the new list is the one compared next time."""
    keys = tuple(own)
    if tuple(k for k in keys if class_state(k)) != state:
        return False
    seen[0] = keys
    return True


def keyed_apart(description: Any) -> bool:
    """Whether a description holds a part the describer keyed by identity for want of budget or
    because of a cycle (``("class", ...)``, ``("cycle", ...)``): no condition stands for it."""
    if isinstance(description, tuple):
        if len(description) == 2 and description[0] in ("class", "cycle") and \
                isinstance(description[1], Identity):
            return True
        return any(keyed_apart(d) for d in description)
    return False


