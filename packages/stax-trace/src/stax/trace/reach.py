"""What a function can reach by name, found before capture runs it.

Two things a capture cannot intercept while the function runs must be seen beforehand:

- a value that differs between calls and is read where no guard sees it (``isolation.py``): a
  NumPy random generator (its methods cannot be wrapped), ``datetime.now`` (a method of an
  immutable type), a guarded function bound to another name before capture (a from-import);
- a call of the builtin ``type``: ``type(x) is np.ndarray`` is False for a proxy, and nothing a
  proxy does can change that answer, so a branch on it would compile the other path.

The scan follows names, as Python resolves them: the code's global names (in its globals, and
attributes of modules, classes and objects by the names the code uses), closure cells, defaults,
the arguments, and — transitively — the code of the user's functions and methods found that way
(NumPy's, Stax's and the standard library's own functions are not entered: they do neither).
It reads ``__dict__`` entries only, so it runs no property or ``__getattr__``; it is bounded, so a
huge object graph costs at most ``BUDGET`` visits.
"""

from __future__ import annotations

import builtins
import collections
import dis
import functools
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stax.ir import UnsupportedError

from .creation import intercepted
from .isolation import Unrepeatable, guarded, unrepeatable
from .outcome import Outcome
from .proxy import Proxy
from .source import library_code
from .traced_sizes import TracedNumber

BUDGET = 2000
MAX_DEPTH = 4  # attribute hops from a name (np.random.mtrand._rand)
MAX_ITEMS = 32  # items of a list, tuple or dict looked into
#: packages whose classes, modules and functions hold no value a traced function stored
_LIBRARY_ROOTS = frozenset({"numpy", "stax", "builtins", *sys.stdlib_module_names})


@dataclass
class Found:
    # what was reached and by which path: a value that differs between calls, which capture
    # could not refuse when read (a NumPy generator, a clock function bound to another name)
    unrepeatable: tuple[Unrepeatable, str] | None = None
    type_call: str | None = None  # "file:line in function" of a call of the builtin type
    #: (what, "file:line in function") of a look-up by a name made at run time (``eval``,
    #: ``exec``, ``globals()``, ``importlib.import_module``): what it reads is in no key
    dynamic_lookup: tuple[str, str] | None = None
    #: "file:line in function" of an exception handler (``try: ... except``) in the user's code
    #: it reaches: NumPy's errors and warnings may be caught there (``event_sources``)
    catches: str | None = None
    unreadable: str | None = None  # a value broke the scan: what the function reaches is unknown
    # globals of the user's functions bound by a from-import to a function capture intercepts
    # (``from numpy import zeros``, ``from builtins import max``): (that globals dict, the
    # name), whose calls are then intercepted too while capture runs
    bound_names: list[tuple[dict[str, Any], str]] = field(default_factory=list)

    def refuse_lookups(self) -> None:
        """Refuse a function that calls ``type()`` or looks values up by run-time names."""
        if self.type_call is not None:
            raise UnsupportedError(
                "the function calls type(): a traced array is not of type numpy.ndarray during "
                "capture, so a test such as type(x) is np.ndarray would take the other branch",
                source=self.type_call, hint="use isinstance(x, np.ndarray), which capture "
                "answers as eager NumPy does")
        if self.dynamic_lookup is not None:
            what, where = self.dynamic_lookup
            raise UnsupportedError(f"the function calls {what}, which looks values up by a "
                                   "name made at run time: no key can follow them",
                                   source=where, hint="name the values in the code, or pass "
                                   "them as arguments")


def code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= code_names(const)
    return names


class _Scan:
    def __init__(self) -> None:
        self.found = Found()
        self.seen: set[int] = set()
        self.budget = BUDGET
        self.functions: list[tuple[types.FunctionType, str, Any]] = []

    def done(self) -> bool:
        return self.found.unrepeatable is not None and self.found.type_call is not None

    def value(self, value: Any, path: str, names: set[str], depth: int = 0,
              owner: Any = None) -> None:
        if self.found.unrepeatable is not None or self.budget <= 0 or id(value) in self.seen:
            return
        self.seen.add(id(value))
        self.budget -= 1
        reached = unrepeatable(value)
        if reached is not None:
            self.found.unrepeatable = (reached[0], f"{path}: {reached[1]}")
        elif isinstance(value, types.FunctionType):
            if not guarded(value):  # a draw through a guarded function is refused when made
                self.functions.append((value, path, owner))
        elif depth <= MAX_DEPTH:
            for label, item, item_owner in _parts(value, names):
                self.value(item, f"{path}{label}", names, depth + 1, item_owner)

    def function(self, fn: types.FunctionType, path: str, owner: Any) -> None:
        """Scan what ``fn``'s code reaches by name (Stax's own wrappers, such as the lifted
        function of a function with free variables, only for the user code they call)."""
        if id(fn.__code__) in self.seen:
            return
        self.seen.add(id(fn.__code__))
        library = _library(fn)
        if library and not fn.__module__.startswith("stax."):
            return
        names = code_names(fn.__code__)
        if not library and self.found.type_call is None and "type" in names and \
                fn.__globals__.get("type", builtins.type) is builtins.type:
            self.found.type_call = _type_call(fn.__code__)
        if not library and self.found.dynamic_lookup is None:
            self.found.dynamic_lookup = _dynamic_lookup(fn, names)
        if not library and self.found.catches is None:
            self.found.catches = _handler(fn.__code__)
        scope = fn.__globals__
        for name in sorted(names & scope.keys()):
            if not library and intercepted(scope[name]):
                self.found.bound_names.append((scope, name))
            self.value(scope[name], f"{fn.__qualname__}: global {name!r}", names)
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                self.value(cell.cell_contents, f"{fn.__qualname__}: closure {name!r}", names)
            except ValueError:  # an empty cell
                pass
        for i, default in enumerate((*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values())):
            self.value(default, f"{fn.__qualname__}: default {i}", names)
        if owner is not None:  # a method: what it reads from self by the names it uses
            self.seen.discard(id(owner))
            self.value(owner, f"{fn.__qualname__}: self", names)

    def run(self, roots: Iterable[tuple[types.FunctionType, str]], leaves: Iterable[Any],
            names: set[str]) -> Found:
        for i, leaf in enumerate(leaves):
            self.value(leaf, f"argument {i}", names)
        for fn, path in roots:
            self.function(fn, path, None)
        while self.functions and not self.done() and self.budget > 0:
            self.function(*self.functions.pop())
        return self.found


def _parts(value: Any, names: set[str]) -> Iterable[tuple[str, Any, Any]]:
    """(path suffix, value, owner for a method) of what Python could reach from ``value`` by one
    name in ``names``, one call or one item."""
    if isinstance(value, types.MethodType):
        return [(".__func__", value.__func__, value.__self__)]
    if isinstance(value, (staticmethod, classmethod)):
        return [(".__func__", value.__func__, None)]
    if isinstance(value, functools.partial):
        return [(".func", value.func, None), *((f".args[{i}]", v, None) for i, v in
                                               enumerate(value.args[:MAX_ITEMS])),
                *((f".keywords[{k!r}]", v, None) for k, v in list(value.keywords.items())[:MAX_ITEMS])]
    if isinstance(value, (tuple, list)) and type(value) in (tuple, list):
        return [(f"[{i}]", v, None) for i, v in enumerate(value[:MAX_ITEMS])]
    if type(value) is dict:
        return [(f"[{k!r}]", v, None) for k, v in list(value.items())[:MAX_ITEMS]]
    if isinstance(value, types.ModuleType):
        scope = vars(value)
        return [(f".{n}", scope[n], None) for n in sorted(names & scope.keys())]
    if isinstance(value, type):
        return [(f".{n}", item, None) for n in sorted(names)
                if (item := _class_attribute(value, n)) is not _MISSING][:MAX_ITEMS]
    parts: list[tuple[str, Any, Any]] = []
    wrapped = _dict_get(value, "__wrapped__")  # a decorator or a compiled function
    if wrapped is not None:
        parts.append((".__wrapped__", wrapped, None))
    own = _instance_dict(value)
    if own is not None:
        parts += [(f".{n}", own[n], None) for n in sorted(names & own.keys())]
        cls = type(value)
        if cls.__module__.split(".")[0] not in ("numpy", "stax"):
            parts += [(f".{n}", item, value) for n in sorted(names)
                      if isinstance(item := _class_attribute(cls, n), types.FunctionType)]
    return parts


_MISSING = object()


def _class_attribute(cls: type, name: str) -> Any:
    """``name`` as Python finds it on ``cls``: in the first class of its MRO that defines it (a
    method a subclass overrides, or one a capture replaced by its guard, hides the base's)."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return _MISSING


def _library(fn: types.FunctionType) -> bool:
    """NumPy's, Stax's or the standard library's own code: it draws no random numbers through a
    path the capture does not intercept, and its ``type()`` calls are not the user's."""
    return library_code(fn.__module__, fn.__code__.co_filename)


def _instance_dict(value: Any) -> dict[str, Any] | None:
    try:
        own = object.__getattribute__(value, "__dict__")
    except (AttributeError, TypeError):
        return None
    return own if type(own) is dict else None


def _dict_get(value: Any, name: str) -> Any:
    own = _instance_dict(value)
    return own.get(name) if own is not None else None


def _type_call(code: types.CodeType, name: str = "type",
               loads: tuple[str, ...] = ("LOAD_GLOBAL", "LOAD_NAME")) -> str | None:
    """Where ``code`` (or code nested in it) loads the builtin ``type`` (or ``name``, by one
    of the instructions ``loads``)."""
    line = code.co_firstlineno
    for instruction in dis.get_instructions(code):
        positions = getattr(instruction, "positions", None)  # Python 3.11+
        line = (positions.lineno if positions is not None else instruction.starts_line) or line
        if instruction.opname in loads and instruction.argval == name:
            return f"{code.co_filename}:{line} in {code.co_name}"
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and name in code_names(const):
            found = _type_call(const, name, loads)
            if found is not None:
                return found
    return None


def _handler(code: types.CodeType) -> str | None:
    """Where ``code`` (or code nested in it) has an exception handler: a ``PUSH_EXC_INFO``
    that starts no ``with`` block's exit."""
    instructions = list(dis.get_instructions(code))
    for k, ins in enumerate(instructions):
        if ins.opname == "PUSH_EXC_INFO" and (k + 1 == len(instructions) or
                                               instructions[k + 1].opname != "WITH_EXCEPT_START"):
            positions = getattr(ins, "positions", None)
            line = (positions.lineno if positions is not None else None) or code.co_firstlineno
            return f"{code.co_filename}:{line} in {code.co_name}"
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found = _handler(const)
            if found is not None:
                return found
    return None


#: builtins that run code or import modules named by a string made at run time: what that
#: code reads is not among the code's names and strings, which the key's free-value guards
#: follow (``globals()["K"]``, ``getattr(config, "scale")`` are followed)
_DYNAMIC = ("eval", "exec", "__import__")


def _dynamic_lookup(fn: types.FunctionType, names: set[str]) -> tuple[str, str] | None:
    for name in _DYNAMIC:
        if name in names and fn.__globals__.get(name, getattr(builtins, name)) is \
                getattr(builtins, name):
            return f"{name}()", _type_call(fn.__code__, name) or fn.__qualname__
    if "import_module" in names:
        where = _type_call(fn.__code__, "import_module", ("LOAD_ATTR", "LOAD_METHOD",
                                                          "LOAD_GLOBAL", "LOAD_NAME"))
        if where is not None:
            return "importlib.import_module()", where
    return None


def _roots(fn: Any) -> list[types.FunctionType]:
    """``fn`` and what it wraps (a decorator's or a compiled function's ``__wrapped__``)."""
    roots: list[types.FunctionType] = []
    seen: set[int] = set()
    current: Any = fn
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, types.MethodType):
            current = current.__func__
        if isinstance(current, types.FunctionType):
            roots.append(current)
        current = _dict_get(current, "__wrapped__")
    return roots


def scan(fn: Callable[..., Any], leaves: Iterable[Any]) -> Found:
    """The first generator ``fn`` can reach by name and the first call of ``type`` in its code."""
    roots = _roots(fn)
    names = set().union(*(code_names(f.__code__) for f in roots)) if roots else set()
    try:
        return _Scan().run([(f, f.__qualname__) for f in roots], leaves, names)
    except Exception as exc:  # a value that breaks a look-up: what it reaches is not known
        return Found(unreadable=f"{type(exc).__name__}: {exc}")


def _places(fn: Callable[..., Any]) -> list[tuple[str, Any, tuple[Any, Any]]]:
    """(path, value, (container, key)) of what ``fn`` reaches besides its arguments: the
    globals its code names, its defaults and its closure cells."""
    places: list[tuple[str, Any, tuple[Any, Any]]] = []
    for root in _roots(fn):
        names = code_names(root.__code__)
        scope = root.__globals__
        places += [(f"global {n!r}", scope[n], (scope, n)) for n in sorted(names & scope.keys())]
        places += [(f"default {i}", v, (None, None)) for i, v in enumerate(root.__defaults__ or ())]
        for name, cell in zip(root.__code__.co_freevars, root.__closure__ or ()):
            try:
                places.append((f"closure {name!r}", cell.cell_contents, (cell, None)))
            except ValueError:
                pass
    return places


#: containers down that a stored traced value is looked for, and the items looked at at most
LEVELS, MAX_LOOKED = 4, 4096


def _held_levels(value: Any, home: tuple[Any, Any], stop: Callable[[Any], bool]
                ) -> list[tuple[str, Any, tuple[Any, Any]]]:
    """``value`` and what it holds, ``LEVELS`` down (``self.log.append(y)``, ``cache["k"] =
    y``, ``self.hist.append({"lr": lr})``), as (path suffix, item, (container, key)); items
    ``stop`` accepts are not entered; at most ``MAX_LOOKED`` items."""
    found = [("", value, home)]
    frontier = [("", value)]
    for level in range(LEVELS):
        deeper = []
        for suffix, item in frontier:
            if level and (stop(item) or (type(item) is np.ndarray and item.dtype != object)):
                continue
            for inner, v, where in _held(item):
                found.append((suffix + inner, v, where))
                deeper.append((suffix + inner, v))
                if len(found) > MAX_LOOKED:
                    return found
        frontier = deeper
    return found


def escaped_proxy(fn: Callable[..., Any], is_proxy: Callable[[Any], bool],
                  objects: Iterable[tuple[str, Any]] = (),
                  value_of: Callable[[Any], Any] = lambda proxy: proxy.value) -> str | None:
    """Where a traced value the function stored survives its capture, among the globals,
    defaults and closure cells its code names and the named ``objects`` (argument objects, a
    method's ``self``), ``LEVELS`` down (``_held_levels``; lists by their last items, where
    appends go): a path such as ``global 'HISTORY'[-1]`` or ``argument 0.last``, or None.

    Each one found where it can be put back (a global, a cell, a list or dict item, an instance
    attribute; a tuple, rebuilt) is replaced by ``value_of`` it, the array eager NumPy would
    have stored there: the capture run was the call's eager execution, so the function's state
    is then as eager left it, and its later eager calls read arrays, not dead proxies."""
    first = None
    places = [(path, value, (None, None)) for path, value in objects] + _places(fn)
    for path, value, home in places:
        try:
            held = _held_levels(value, home, is_proxy)
        except Exception:  # unreadable: a proxy there still refuses to be used later
            continue
        for suffix, item, (container, key) in held:
            if is_proxy(item):
                first = first or f"{path}{suffix}"
                _put_back(container, key, value_of(item))
            elif type(item) is tuple and any(is_proxy(v) for v in item):  # rebuilt with values
                first = first or f"{path}{suffix}"
                _put_back(container, key, plain_copy(item, is_proxy, value_of, 1))
            elif (type(item) in _MAPPINGS or type(item) is set) and any(
                    _holds(k, is_proxy) for k in list(item)[:MAX_ITEMS]):  # ``MEMO[a] = 1``
                first = first or f"{path}{suffix}"
                _rekeyed(item, is_proxy, value_of)
    return first


#: the mappings whose items a stored traced value is looked for in, and put back into
_MAPPINGS = (dict, collections.OrderedDict, collections.Counter, collections.defaultdict)


def _holds(value: Any, is_proxy: Callable[[Any], bool]) -> bool:
    """Whether ``value`` is a traced value, or a tuple or frozenset holding one (a key)."""
    return is_proxy(value) or (type(value) in (tuple, frozenset) and
                               any(_holds(v, is_proxy) for v in value))


def plain_copy(value: Any, is_proxy: Callable[[Any], bool], value_of: Callable[[Any], Any],
               depth: int = LEVELS) -> Any:
    """``value`` with the traced values it holds replaced by theirs: tuples, lists, dicts, sets
    and frozensets rebuilt (``depth`` down), anything else as it is."""
    if is_proxy(value):
        return value_of(value)
    if depth == 0:
        return value
    if type(value) in (tuple, list, set, frozenset):
        return type(value)(plain_copy(v, is_proxy, value_of, depth - 1) for v in value)
    if type(value) is dict:
        return {plain_copy(k, is_proxy, value_of, depth - 1):
                plain_copy(v, is_proxy, value_of, depth - 1) for k, v in value.items()}
    return value


def _rekeyed(held: Any, is_proxy: Callable[[Any], bool], value_of: Callable[[Any], Any]) -> None:
    """The dict's keys or the set's elements that hold traced values, replaced by theirs, in
    place (a dict rebuilt in its order)."""
    if isinstance(held, dict):
        items = list(held.items())
        held.clear()
        for k, v in items:
            held[plain_copy(k, is_proxy, value_of) if _holds(k, is_proxy) else k] = v
        return
    for key in [k for k in held if _holds(k, is_proxy)]:
        held.discard(key)
        held.add(plain_copy(key, is_proxy, value_of))


def reached(fn: Callable[..., Any], target: Any) -> str | None:
    """Where ``fn`` can reach the object ``target`` besides its arguments (a global its code
    names, a closure cell, ``LEVELS`` down as ``escaped_proxy`` looks), or None."""
    for path, value, home in _places(fn):
        if path.startswith("default"):  # a default stands in only for an argument not given
            continue
        try:
            found = _held_levels(value, home, lambda item: item is target)
        except Exception:
            continue
        for suffix, item, _ in found:
            if item is target:
                return f"{path}{suffix}"
    return None


def _put_back(container: Any, key: Any, value: Any) -> None:
    try:
        if container is None:  # an argument object itself: its attributes are put back
            return
        if isinstance(container, types.CellType):
            container.cell_contents = value
        elif type(container) in (*_MAPPINGS, list, collections.deque):
            container[key] = value
        elif type(container) is np.ndarray:  # an object array's element
            container.flat[key] = value
        elif isinstance(container, (type, types.ModuleType, types.FunctionType)):
            setattr(container, key, value)
        elif type(container) not in (tuple, set):
            _instance_dict(container)[key] = value  # type: ignore[index]
    except Exception:  # left as it is: using it later raises the escaped-value error
        pass


def _held(value: Any) -> list[tuple[str, Any, tuple[Any, Any]]]:
    """(path suffix, item, (container, key)) of what ``value`` holds, one level down: items of
    lists (the last ones, where appends go), deques, dicts, sets and tuples; attributes of
    objects, and of the user's own classes, modules and functions (``Stats.last = y``)."""
    if type(value) in (list, collections.deque):
        return [(f"[{i - len(value)}]", v, (value, i)) for i, v in enumerate(value)][-MAX_ITEMS:]
    if isinstance(value, (type, types.ModuleType, types.FunctionType)):
        module = value.__name__ if isinstance(value, types.ModuleType) else \
            getattr(value, "__module__", None) or ""
        if module.split(".")[0] in _LIBRARY_ROOTS:
            return []
        own = dict(vars(value))
        return [(f".{k}", v, (value, k)) for k, v in list(own.items())[:4 * MAX_ITEMS]
                if not k.startswith("__")]
    if type(value) in _MAPPINGS or type(value) in (set, tuple):
        items = value.items() if type(value) in _MAPPINGS else enumerate(value)
        return [(f"[{k!r}]", v, (value, k)) for k, v in list(items)[:MAX_ITEMS]]
    if type(value) is np.ndarray and value.dtype == object and value.size:  # its elements
        return [(f".flat[{i}]", v, (value, i)) for i, v in enumerate(value.flat[:MAX_ITEMS])]
    if isinstance(value, (np.ndarray, np.generic)):
        return []
    own = _instance_dict(value)
    return [(f".{k}", v, (value, k)) for k, v in list(own.items())[:MAX_ITEMS]] if own else []


def settle_stored(tracer: Any, fn: Callable[..., Any], leaves: list[Any],
                   outcome: Outcome) -> str | None:
    """Where the function left a traced value of this capture (``escaped_proxy``), each
    one replaced by the array eager NumPy has there: an argument's is the caller's own array
    (capture computed on a read-only copy), any other its value. It looks in the function's
    globals and cells, its argument objects and a method's ``self`` (through lifting wrappers)."""
    owners = [(f"argument {i}", leaf) for i, leaf in enumerate(leaves)
              if isinstance(getattr(leaf, "__dict__", None), dict) and not isinstance(leaf, type)]
    owner = getattr(getattr(fn, "__wrapped__", fn), "__self__", None)
    if isinstance(getattr(owner, "__dict__", None), dict) and not isinstance(owner, type):
        owners.append(("self", owner))
    callers = {id(argument.proxy): caller for argument, caller in outcome.arguments}
    # a followed number (a scalar argument's, a size) stored is eager's number again
    return escaped_proxy(fn, lambda value: isinstance(value, (Proxy, TracedNumber))
                         and value.tracer is tracer,
                         owners, lambda proxy: callers.get(id(proxy), proxy.value))


def plain_exception(exc: BaseException, tracer: Any) -> None:
    """The function's own error, raised to its caller: its arguments and attributes hold eager's
    numbers, not capture's stand-ins of scalar arguments (``KeyError(a)``, ``ValueError("bad",
    a)``, ``e.value = a``), in place."""
    def plain(value: Any) -> Any:
        return plain_copy(value, lambda v: isinstance(v, TracedNumber) and v.tracer is tracer,
                          lambda v: v.value)
    try:
        exc.args = tuple(plain(a) for a in exc.args)
        for key, value in list(vars(exc).items()):
            setattr(exc, key, plain(value))
    except Exception:  # an exception type that refuses: as it is
        pass


def stand_in_error(exc: Exception) -> Exception:
    """The error capture raises for ``exc``, raised while the function ran on traced values:
    ``exc`` itself (the user's own error, which eager raises too), or, where ``exc`` names the
    stand-in's type (``memoryview(x)``, ``hashlib.md5(x)``, ``weakref.ref(x)``: code that needs
    NumPy's own array object, which eager gives it), a refusal: the call runs eagerly."""
    text = str(exc)
    if type(exc) is TypeError and text == "unhashable type: 'Proxy'":
        return TypeError("unhashable type: 'numpy.ndarray'")  # ``hash(x)``: eager's error
    if isinstance(exc, UnsupportedError) or not any(
            part in text for part in ("'Proxy'", "buffer API", "bytes-like object")):
        return exc
    return UnsupportedError(f"code the function calls needs NumPy's own array object where "
                            f"capture passes a traced one ({type(exc).__name__}: {exc})",
                            hint="as it is, the function runs eagerly")
