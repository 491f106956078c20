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
``math``) and Python's builtins in ``builtins`` (a module global shadowing one is seen),
mutation of a class's attributes that the function's own code does not name, and state hidden
in C objects without attributes (keyed by identity).
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Callable, Iterator
from typing import Any

from stax.ir import UnsupportedError

from .code_reads import ABSENT as _ABSENT
from .code_reads import attribute_names, nested_codes, own_module, reads
from .freevars import FreeVariables
from .signature import Describer, GuardFailure, Identity, Unguardable, diff_description
from .value_checks import ValueChecks, keyed_apart

# descriptions that the same object always gives again (no mutable state inside)
_STABLE_KINDS = {"float", "int", "bool", "str", "bytes", "NoneType", "complex", "dtype", "identity",
                 "tuple", "frozenset", "slice", "Ellipsis", "NotImplemented"}


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

    __slots__ = ("name", "names", "read")

    def __init__(self, name: str, read: Callable[[], Any], names: frozenset[str]) -> None:
        self.name = name
        self.read = read
        self.names = names  # the attribute names of the code reading it (``Describer``)


def rescanned(fn: Callable[..., Any], free: FreeVariables, guards: FreeGuards
              ) -> tuple[FreeVariables, FreeGuards, bool]:
    """``fn``'s free variables and guards scanned again (at a miss: ``@compile`` runs before the
    module binds the globals the function reads, and a global may be rebound to an array
    later), with whether the lifted set changed (versions keyed by the old set then no longer
    match: their signatures have another length). The guarded paths too: a global class bound
    after compile() is followed to the attributes the code names (``Config.scale``), unseen
    while it was unbound."""
    new_free = FreeVariables(fn)
    new_guards, changed = FreeGuards(fn, lifted=set(new_free.names)), \
        new_free.names != free.names
    if changed or [p.name for p in new_guards.paths] != [p.name for p in guards.paths]:
        guards = new_guards
    return (new_free if changed else free), guards, changed


class FreeGuards:
    """The free values of ``fn`` other than the lifted arrays, as guard paths."""

    def __init__(self, fn: Callable[..., Any], lifted: set[str]) -> None:
        self.paths: list[_Path] = list(_paths(fn, lifted, ""))

    def __bool__(self) -> bool:
        return bool(self.paths)

    def snapshot(self, unread: frozenset[str] = frozenset()) -> Snapshot:
        """The descriptions of every path now but those ``unread`` names (a keyword default
        the call passes a value for); raises Unguardable naming the path.

        A Python function found on a path is guarded by identity, and the values it reads become
        paths of their own (``globals['helper'].globals['K']``): a call then checks each with an
        ``is`` instead of describing the function again."""
        checks: list[tuple[_Path, Any, Any]] = []
        values: list[Any] = []  # each path's value now: its condition is written from it
        expanded: set[int] = set()

        def add(path: _Path) -> None:
            value = path.read()
            code = _code_holder(value)
            if code is not None:
                checks.append((path, value, _describe(value, path.names)))
                values.append(value)
                if id(value) not in expanded:
                    expanded.add(id(value))
                    for sub in _paths(code, set(), path.name):
                        add(sub)
                return
            try:
                description = _describe(value, path.names)
            except Unguardable as exc:
                raise Unguardable(f"{path.name}: {exc}") from None
            # the absent marker is one stateless object: a builtin name (``range``) not shadowed
            # by a module global costs an ``is``, not a description, on every call
            kept = value if value is _ABSENT or _stable(description) else _NO_OBJECT
            checks.append((path, kept, description))
            values.append(value)

        for path in self.paths:
            if path.name not in unread:
                add(path)
        return Snapshot(checks, values)


class Snapshot:
    """The free values a version was traced under: a guard that a later call re-checks. An object
    is kept only where identity implies the description (the key then holds it, so its address is
    never reused meanwhile)."""

    def __init__(self, checks: list[tuple[_Path, Any, Any]], values: list[Any] | None = None
                 ) -> None:
        self._checks = checks
        written = _written_matches(checks, values) if values is not None else None
        if written is not None:
            self.matches = written  # type: ignore[method-assign]

    def matches(self) -> bool:
        """Whether every free value still describes as it did (identity first: cheap). A
        snapshot made from the values themselves runs a written condition instead
        (``_written_matches``)."""
        for path, obj, description in self._checks:
            value = path.read()
            if not (value is obj and _same_code(value, description)) and \
                    not _same(path, description, value):
                return False
        return True

    def failures(self) -> list[GuardFailure]:
        out = []
        for path, _, description in self._checks:
            try:
                now = _describe(path.read(), path.names)
            except Unguardable as exc:
                now = f"unguardable ({exc})"
            out += diff_description(description, now, path.name)
        return out


def _written_matches(checks: list[tuple[_Path, Any, Any]], values: list[Any]
                     ) -> Callable[[], bool] | None:
    try:  # (a value nested deeper than the writer or Python's compiler go: the loop runs)
        return _write_matches(checks, values)
    except Exception:
        return None


def _write_matches(checks: list[tuple[_Path, Any, Any]], values: list[Any]
                   ) -> Callable[[], bool] | None:
    """``Snapshot.matches`` as one generated function: each path read once, then an ``is``
    against the object kept, or the condition that its value describes as it did
    (``value_checks.py``: a bound method's ``self`` was described on every call, 7 us), or,
    where none is written, its description compared. None where the condition does not hold
    for the values it was written from (a defect: the loop then runs)."""
    constants: dict[str, Any] = {}
    tests = []
    for k, ((path, obj, description), value) in enumerate(zip(checks, values)):
        constants[f"read{k}"] = path.read
        constants[f"same{k}"] = functools.partial(_same, path, description)
        if obj is not _NO_OBJECT:
            constants[f"kept{k}"] = obj
            constants["same_code"] = _same_code
            code = f" and same_code(v{k}, description{k})" \
                if description[0] == "identity" and len(description) > 2 else ""
            constants[f"description{k}"] = description
            tests.append(f"(((v{k} := read{k}()) is kept{k}{code}) or same{k}(v{k}))")
            continue
        names = frozenset() if isinstance(value, (types.ModuleType, type)) else path.names
        test = None if keyed_apart(description) else \
            ValueChecks(constants, f"c{k}_").test(f"v{k}", value, names)
        tests.append(f"(((v{k} := read{k}()) is not None or True) and "
                     f"{test if test is not None else f'same{k}(v{k})'})")
    source = (f"def matches():\n    try:\n        return {' and '.join(tests) or 'True'}\n"
              "    except Exception:\n        return False\n")  # (a value's attribute raising)
    exec(compile(source, "<stax free-value guards>", "exec"), constants)
    try:
        holds = constants["matches"]()
    except Exception:  # a defect of the writer: never the user's call to fail
        return None
    return constants["matches"] if holds else None


def _same(path: _Path, description: Any, value: Any) -> bool:
    """Whether ``value`` at ``path`` still describes as ``description``."""
    try:
        return _describe(value, path.names) == description
    except Unguardable:
        return False


def _describe(value: Any, names: frozenset[str]) -> Any:
    """A path's value: a function by identity (its reads are paths of their own), a module or
    class by identity too (the attributes the code names are paths: ``config.scale``, an array
    there lifted to an argument), anything else by what it holds."""
    holder = _code_holder(value)
    if holder is not None:  # its code too: one swapped in place (autoreload) is another
        code = getattr(holder, "__code__", None)
        return ("identity", Identity(value)) if code is None else \
            ("identity", Identity(value), Identity(code))
    return Describer(frozenset() if isinstance(value, (types.ModuleType, type)) else names
                     ).describe(value)


def _same_code(value: Any, description: Any) -> bool:
    """Whether a function guarded by identity still runs the code it was described with."""
    if description[0] != "identity" or len(description) < 3:
        return True
    holder = _code_holder(value)
    return getattr(holder, "__code__", None) is description[2].obj


def _code_holder(value: Any) -> Any:
    """The function whose reads stand for ``value``'s, where ``value`` is guarded by identity:
    a user function itself, or what a compiled function compiles (``__stax_key__``: another
    compiled function called inside, or the function itself when it recurses); else None."""
    if isinstance(value, types.FunctionType) and not own_module(value.__module__):
        return value
    keyed = getattr(type(value), "__stax_key__", None)
    return keyed(value) if keyed is not None else None


_NO_OBJECT = object()


def _paths(fn: Callable[..., Any], lifted: set[str], prefix: str) -> Iterator[_Path]:
    code = getattr(fn, "__code__", None)
    names = attribute_names(code) if code is not None else frozenset()
    for name, read in reads(fn, lifted, prefix):
        yield _Path(name, read, names)


def snapshot_for_capture(guards: FreeGuards, rebinds: tuple[str, ...],
                         unread: frozenset[str] = frozenset()) -> Snapshot | None:
    """The free values a trace is about to read (None when there are none; ``unread``: paths
    it does not read); UnsupportedError when the function rebinds a name outside its frame or
    reads a value that cannot be keyed."""
    if rebinds:
        raise UnsupportedError(f"the function assigns {', '.join(rebinds)}: a side effect a "
                               "capture cannot replay on later calls",
                               hint="return the value instead")
    if not guards or all(path.name in unread for path in guards.paths):
        return None
    try:
        return guards.snapshot(unread)
    except Unguardable as exc:
        raise UnsupportedError(f"a value it reads cannot be keyed: {exc}",
                               hint="pass it as an argument") from None
