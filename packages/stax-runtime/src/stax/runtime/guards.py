"""Guards on the values a function reads besides its arguments (spec proposition 2.1, §2.5).

A trace reads more than its arguments: module globals (``K = 2.0``), closure cells, attributes of
the modules, classes and objects it names (``config.scale``, ``Cfg.factor``, ``self.alpha``), and
the same for every Python function it calls. Free *arrays* are lifted to arguments
(``freevars.py``); every other free value a capture may have read is a constant in the capture, so
it must be part of the key. ``FreeGuards`` lists where those values live (paths such as
``globals['K']``, ``closure 'scale'``, ``config.scale``, ``self``) and describes each by value with
the argument signature's describer (``signature.py``): numbers and strings by value, objects by
their attributes, Python functions by identity plus the values they read, recursively.

A version records the descriptions it was traced under; a call matches it only when every path
still describes the same way, and ``explain()`` and ``STAX_LOGS=recompiles`` name each path that
changed, as for any other guard. A value that is the very object seen at compile time and
immutable (a number, a string, a module, a class, a NumPy function) is accepted by identity, so the
common guards cost a dictionary lookup and an ``is``.

Not seen (documented): rebinding the module names of NumPy and the standard library (``np``,
``math``), mutation of a class's attributes that the function's own code does not name, and state
hidden in C objects without attributes (keyed by identity).
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .signature import (
    Describer,
    GuardFailure,
    Identity,
    Unguardable,
    diff_description,
    global_names,
    nested_codes,
    own_module,
)

# descriptions that the same object always gives again (no mutable state inside)
_STABLE_KINDS = {"float", "int", "bool", "str", "bytes", "NoneType", "complex", "dtype", "identity",
                 "tuple", "frozenset", "slice", "Ellipsis", "NotImplemented"}


@functools.lru_cache(maxsize=4096)
def _attribute_names(code: types.CodeType) -> frozenset[str]:
    """The attribute names ``code`` and its nested code objects load."""
    return frozenset(ins.argval for c in nested_codes(code) for ins in dis.get_instructions(c)
                     if ins.opname in ("LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR"))


@functools.lru_cache(maxsize=4096)
def _global_stores(code: types.CodeType) -> tuple[str, ...]:
    """Names the code rebinds outside its own frame (``global x; x = ...``, ``nonlocal``)."""
    stores: list[str] = []
    for c in nested_codes(code):
        for ins in dis.get_instructions(c):
            if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
                stores.append(f"global {ins.argval!r}")
            elif ins.opname in ("STORE_DEREF", "DELETE_DEREF") and c is code and \
                    ins.argval in code.co_freevars:
                stores.append(f"nonlocal {ins.argval!r}")
    return tuple(stores)


def rebinds_free_names(fn: Callable[..., Any]) -> tuple[str, ...]:
    """What ``fn`` assigns outside its own frame: a side effect a capture cannot replay."""
    code = getattr(fn, "__code__", None)
    return _global_stores(code) if code is not None else ()


def _stable(description: Any) -> bool:
    kind = description[0]
    if kind in ("tuple", "frozenset"):
        return all(_stable(d) for d in description[1])
    return kind in _STABLE_KINDS or not isinstance(kind, str)


class _Path:
    """One place a free value lives, and how to read it now."""

    __slots__ = ("name", "read")

    def __init__(self, name: str, read: Callable[[], Any]) -> None:
        self.name = name
        self.read = read


class FreeGuards:
    """The free values of ``fn`` other than the lifted arrays, as guard paths."""

    def __init__(self, fn: Callable[..., Any], lifted: set[str]) -> None:
        self.paths: list[_Path] = list(_paths(fn, lifted, ""))

    def __bool__(self) -> bool:
        return bool(self.paths)

    def snapshot(self) -> Snapshot:
        """The descriptions of every path now; raises Unguardable naming the path.

        A Python function found on a path is guarded by identity, and the values it reads become
        paths of their own (``globals['helper'].globals['K']``): a call then checks each with an
        ``is`` instead of describing the function again."""
        checks: list[tuple[_Path, Any, Any]] = []
        expanded: set[int] = set()

        def add(path: _Path) -> None:
            value = path.read()
            if _user_function(value):
                checks.append((path, value, ("identity", Identity(value))))
                if id(value) not in expanded:
                    expanded.add(id(value))
                    for sub in _paths(value, set(), path.name):
                        add(sub)
                return
            try:
                description = Describer().describe(value)
            except Unguardable as exc:
                raise Unguardable(f"{path.name}: {exc}") from None
            # the absent marker is one stateless object: a builtin name (``range``) not shadowed
            # by a module global costs an ``is``, not a description, on every call
            kept = value if value is _ABSENT or _stable(description) else _NO_OBJECT
            checks.append((path, kept, description))

        for path in self.paths:
            add(path)
        return Snapshot(checks)


class Snapshot:
    """The free values a version was traced under: a guard that a later call re-checks. An object
    is kept only where identity implies the description (the key then holds it, so its address is
    never reused meanwhile)."""

    def __init__(self, checks: list[tuple[_Path, Any, Any]]) -> None:
        self._checks = checks

    def matches(self) -> bool:
        """Whether every free value still describes as it did (identity first: cheap)."""
        for path, obj, description in self._checks:
            value = path.read()
            if value is obj:
                continue
            try:
                if _describe(value) != description:
                    return False
            except Unguardable:
                return False
        return True

    def failures(self) -> list[GuardFailure]:
        out = []
        for path, _, description in self._checks:
            try:
                now = _describe(path.read())
            except Unguardable as exc:
                now = f"unguardable ({exc})"
            out += diff_description(description, now, path.name)
        return out


def _describe(value: Any) -> Any:
    return ("identity", Identity(value)) if _user_function(value) else \
        Describer().describe(value)


def _user_function(value: Any) -> bool:
    return isinstance(value, types.FunctionType) and not own_module(value.__module__)


_NO_OBJECT = object()


def _paths(fn: Callable[..., Any], lifted: set[str], prefix: str) -> Iterator[_Path]:
    code = getattr(fn, "__code__", None)
    if code is None:  # a builtin, a ufunc, a callable object: its own state is all it reads
        if not isinstance(fn, (types.BuiltinFunctionType, np.ufunc)):
            yield _Path(prefix or "the compiled callable", lambda: fn)
        return
    at = f"{prefix}." if prefix else ""
    scope = getattr(fn, "__globals__", {})
    attributes = _attribute_names(code)
    for name in global_names(code):
        if name in lifted:
            continue
        value = scope.get(name, _ABSENT)
        if isinstance(value, types.ModuleType) and own_module(value.__name__):
            continue  # np, math: not rebound between calls (documented)
        read = functools.partial(scope.get, name, _ABSENT)  # no Python frame per call
        yield _Path(f"{at}globals[{name!r}]", read)
        yield from _attribute_paths(value, read, f"{at}{name}", attributes, lifted, name)
    cells = getattr(fn, "__closure__", None) or ()
    for name, cell in zip(code.co_freevars, cells):
        if name not in lifted:
            read = functools.partial(_cell, cell)
            yield _Path(f"{at}closure {name!r}", read)
            yield from _attribute_paths(read(), read, f"{at}{name}", attributes, lifted, name)
    if getattr(fn, "__defaults__", None) or getattr(fn, "__kwdefaults__", None):
        yield _Path(f"{at}defaults", lambda: (fn.__defaults__, fn.__kwdefaults__))
    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType):
        yield _Path(f"{at}self", lambda: fn.__self__)
        # class attributes read through the instance (self.factor where only the class has it)
        yield from _attribute_paths(type(owner), lambda: type(fn.__self__), f"{at}type(self)",
                                    attributes, set(), "")


def _attribute_paths(value: Any, read: Callable[[], Any], prefix: str, attributes: frozenset[str],
                     lifted: set[str], lifted_prefix: str) -> Iterator[_Path]:
    """The attributes the code names of a user module or class: values that a trace reads
    (``config.scale``, ``Cfg.factor``) without their container changing identity."""
    if not isinstance(value, (types.ModuleType, type)) or own_module(
            getattr(value, "__module__", None) if isinstance(value, type) else value.__name__):
        return
    for attr in sorted(attributes):
        if f"{lifted_prefix}.{attr}" not in lifted and hasattr(value, attr):
            yield _Path(f"{prefix}.{attr}", functools.partial(_attribute_of, read, attr))


class _Absent:
    """What a path reads where nothing is bound (a name that is a builtin for now)."""

    def __repr__(self) -> str:
        return "<not bound>"


_ABSENT = _Absent()


def _attribute_of(read: Callable[[], Any], attr: str) -> Any:
    return getattr(read(), attr, _ABSENT)


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return _ABSENT
