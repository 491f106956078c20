"""What a function's code can read besides its arguments, found from its instructions.

The key must describe every value a trace read (proposition 2.1). Values named by the code are
found statically: the global names it loads, and the attributes it names of the user's modules,
classes and functions (``config.scale``, ``Cfg.factor``, ``helper.k``). Python also reads by
names held in strings and by imports, which the earlier scans missed, so a changed value went
unseen and a call returned the first trace's result (found by a probe):

- ``getattr(config, "scale")``, ``vars(config)["scale"]``, ``operator.attrgetter("scale")``,
  ``globals()["K"]``: the name is a string constant of the code. Every string constant counts
  as an attribute name (a constant that names nothing costs nothing: no path is made for an
  attribute the holder lacks), and as a global name where the code calls ``globals`` or
  ``vars``;
- ``from config import scale`` or ``import config`` inside the function: the modules the code
  imports (and their parent packages) are holders of the names it loads from them;
- a function's own attributes (``f.k``, a ``functools.wraps`` wrapper's ``w.mult``);
- a class method's class (``cls.factor`` where the compiled callable is ``Model.fit``).

Names computed at run time (``getattr(config, name)`` with ``name`` built by the code) stay
unseen; the user guide says so.
"""

from __future__ import annotations

import ast
import dis
import functools
import inspect
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

_OWN_MODULES = ("numpy", "stax", "builtins", "math", "cmath", "operator", "functools", "itertools",
                "collections", "enum", "typing", "types")
MAX_CHAIN = 3  # hops through user modules and classes from a name (pkg.sub.config.scale)
_ATTRIBUTE_OPS = ("LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR", "IMPORT_FROM")
_NAMESPACE_READERS = ("globals", "vars")


def own_module(module: Any) -> bool:
    """NumPy, Stax and the standard library's functional modules: their callables are stable."""
    if not isinstance(module, str):
        return False
    # "_operator", "_functools": C accelerator modules; "__main__" is the user's
    return module.split(".")[0] in _OWN_MODULES or (module.startswith("_") and
                                                    not module.startswith("__"))


def nested_codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and the code of every function, lambda and comprehension nested in it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from nested_codes(const)


@functools.lru_cache(maxsize=4096)
def global_names(code: types.CodeType) -> tuple[str, ...]:
    """The global names ``code`` (and the functions and comprehensions nested in it) loads,
    from its instructions: ``co_names`` mixes them with attribute names."""
    names: dict[str, None] = {}
    for c in nested_codes(code):
        for ins in dis.get_instructions(c):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                names[ins.argval] = None
    return tuple(names)


@functools.lru_cache(maxsize=4096)
def _string_names(code: types.CodeType) -> tuple[str, ...]:
    """The string constants of ``code`` and its nested code that could name something."""
    return tuple(dict.fromkeys(k for c in nested_codes(code) for k in c.co_consts
                               if type(k) is str and k.isidentifier()))


@functools.lru_cache(maxsize=4096)
def attribute_names(code: types.CodeType) -> frozenset[str]:
    """The attribute names ``code`` and its nested code load, and its string constants."""
    return frozenset(ins.argval for c in nested_codes(code) for ins in dis.get_instructions(c)
                     if ins.opname in _ATTRIBUTE_OPS) | frozenset(_string_names(code))


@functools.lru_cache(maxsize=4096)
def read_global_names(code: types.CodeType) -> tuple[str, ...]:
    """The global names the code loads, and its string constants where it reads its module's
    namespace as a mapping (``globals()["K"]``)."""
    names = dict.fromkeys(global_names(code))
    if any(n in names for n in _NAMESPACE_READERS):
        names.update(dict.fromkeys(_string_names(code)))
    return tuple(names)


@functools.lru_cache(maxsize=4096)
def imported_modules(code: types.CodeType) -> tuple[str, ...]:
    """The modules the code imports (``import a.b`` names ``a`` and ``a.b``), in order."""
    names: dict[str, None] = {}
    for c in nested_codes(code):
        for ins in dis.get_instructions(c):
            if ins.opname == "IMPORT_NAME" and ins.argval:
                parts = ins.argval.split(".")
                names.update(dict.fromkeys(".".join(parts[:k + 1]) for k in range(len(parts))))
    return tuple(names)


def user_holder(value: Any) -> bool:
    """A value whose attributes the key must read: a user module or class (not NumPy's, Stax's
    or the standard library's), or a user function with attributes of its own."""
    if isinstance(value, types.ModuleType):
        return not own_module(value.__name__)
    if isinstance(value, type):
        return not own_module(getattr(value, "__module__", None))
    if isinstance(value, types.FunctionType):
        return bool(getattr(value, "__dict__", None)) and not own_module(value.__module__)
    return False


def held_attributes(holder: Any, names: frozenset[str]) -> Iterator[str]:
    """The attributes of ``holder`` (``user_holder``) among ``names`` (those a code may read:
    ``attribute_names``), sorted."""
    if isinstance(holder, types.FunctionType):
        own = holder.__dict__
        yield from sorted(n for n in names if n in own)
        return
    yield from sorted(n for n in names if hasattr(holder, n))


def imported(name: str) -> Any:
    """The module ``name`` as the code's import would give it now (None before its first
    import: the trace's own import then binds it, and the next call's guard sees it)."""
    return sys.modules.get(name)


# -- every place a function's free values live, as (path, reader) -------------------------------

class _Absent:
    """What a path reads where nothing is bound (a name that is a builtin for now)."""

    def __repr__(self) -> str:
        return "<not bound>"


ABSENT = _Absent()


def reads(fn: Any, lifted: frozenset[str] | set[str] = frozenset(),
          prefix: str = "") -> Iterator[tuple[str, Callable[[], Any]]]:
    """Where the values ``fn`` reads besides its arguments live, each as a path name
    (``globals['K']``, ``config.scale``, ``import config.scale``, ``closure 'w'``, ``defaults``,
    ``self``, ``cls.factor``) and a function reading its value now. ``lifted``: the free arrays
    passed as arguments instead (``freevars.py``). Python functions found are not entered here:
    the guards and the describer each follow them (by identity, or by value)."""
    code = getattr(fn, "__code__", None)
    if code is None:  # a builtin, a ufunc, a callable object: its own state is all it reads
        if not isinstance(fn, (types.BuiltinFunctionType, np.ufunc)):
            yield prefix or "the compiled callable", lambda: fn
        return
    at = f"{prefix}." if prefix else ""
    scope = getattr(fn, "__globals__", {})
    for name in read_global_names(code):
        if name in lifted:
            continue
        value = scope.get(name, ABSENT)
        if isinstance(value, types.ModuleType) and own_module(value.__name__):
            continue  # np, math: not rebound between calls (documented)
        read = functools.partial(scope.get, name, ABSENT)  # no Python frame per call
        yield f"{at}globals[{name!r}]", read
        yield from _held(value, read, f"{at}{name}", code, lifted, name)
    for module in imported_modules(code):
        value = imported(module)
        if value is None or user_holder(value):  # None: imported by the trace, first
            yield from _held(value, functools.partial(imported, module), f"{at}import {module}",
                             code, lifted, None)
    cells = getattr(fn, "__closure__", None) or ()
    for name, cell in zip(code.co_freevars, cells):
        if name not in lifted:
            read = functools.partial(cell_value, cell)
            yield f"{at}closure {name!r}", read
            yield from _held(read(), read, f"{at}{name}", code, lifted, name)
    # each its own path: a tuple of numbers read again is the same object, an ``is`` a call
    # (read as one new pair, it was described on every call: 4 us). The keyword defaults one
    # path per keyword-only parameter (their dictionary, which can change in place, was
    # described on every call: 4 us), those without a default yet too: a default given after
    # the compile is a new value of a guarded path; a call passing the value skips it.
    # Positional defaults given to a function that had none are not seen (a guard on every
    # function's None took each call 0.26 -> 0.48 us)
    if getattr(fn, "__defaults__", None):
        yield f"{at}defaults", lambda: fn.__defaults__
    if hasattr(fn, "__kwdefaults__"):
        first = code.co_argcount  # positional-only ones included
        for name in code.co_varnames[first:first + code.co_kwonlyargcount]:
            yield f"{at}{keyword_default(name)}", functools.partial(_keyword_default, fn, name)
    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType):
        hidden = frozenset(name[len("self."):] for name in lifted if name.startswith("self."))
        # its lifted array attributes are arguments (keyed by layout): the rest by value
        yield f"{at}self", (lambda: fn.__self__) if not hidden else \
            (lambda: _without(fn.__self__, hidden))
        # class attributes read through the instance (self.factor where only the class has it),
        # by the method or by the methods it calls through ``self`` (``self.helper(x)``)
        yield from _held(type(owner), lambda: type(fn.__self__), f"{at}type(self)", code, set(),
                         None, names=method_names(type(owner), attribute_names(code)))
        if isinstance(owner, type):  # a class method: ``cls.factor``
            yield from _held(owner, lambda: fn.__self__, f"{at}cls", code, set(), None)


def keyword_default(name: str) -> str:
    """The guard path of the default of keyword-only parameter ``name``."""
    return f"keyword defaults[{name!r}]"


def _keyword_default(fn: Any, name: str) -> Any:
    return (fn.__kwdefaults__ or {}).get(name, ABSENT)


def _without(owner: Any, hidden: frozenset[str]) -> tuple[type, dict[str, Any]]:
    """An object as its type and its attributes less ``hidden`` (lifted arrays)."""
    return type(owner), {k: v for k, v in vars(owner).items() if k not in hidden}


def _held(value: Any, read: Callable[[], Any], prefix: str, code: types.CodeType,
          lifted: frozenset[str] | set[str], lifted_prefix: str | None, depth: int = 0,
          names: frozenset[str] | None = None) -> Iterator[tuple[str, Callable[[], Any]]]:
    """The attributes ``code`` (or the given ``names``) may read of a user module, class or
    function (``user_holder``); of a module not imported yet (``value`` None), every name the
    code loads. A user module or class found there is followed too (``pkg.config.scale``),
    ``MAX_CHAIN`` hops at most."""
    read_names = attribute_names(code) if names is None else names
    if value is None:
        names_held: Any = sorted(read_names)
    elif user_holder(value):
        names_held = held_attributes(value, read_names)
    else:
        return
    for attr in names_held:
        if lifted_prefix is not None and f"{lifted_prefix}.{attr}" in lifted:
            continue
        attribute = functools.partial(attribute_of, read, attr)
        yield f"{prefix}.{attr}", attribute
        inner = getattr(value, attr, None) if value is not None else None
        if depth < MAX_CHAIN and isinstance(inner, (types.ModuleType, type)):
            yield from _held(inner, attribute, f"{prefix}.{attr}", code, lifted,
                             None if lifted_prefix is None else f"{lifted_prefix}.{attr}",
                             depth + 1)


def method_names(cls: type, names: frozenset[str] | set[str]) -> frozenset[str]:
    """``names`` and the attribute names the code of every method of ``cls`` among them loads,
    and so on: what a method may read through ``self`` (``self.act(x)`` reading ``self.w``)."""
    found, todo = set(names), list(names)
    while todo:
        method = getattr(cls, todo.pop(), None)
        method = getattr(method, "fget", method)  # a property's getter
        code = getattr(getattr(method, "__func__", method), "__code__", None)
        if not isinstance(code, types.CodeType):
            continue
        fresh = attribute_names(code) - found
        found |= fresh
        todo += fresh
    return frozenset(found)


def attribute_of(read: Callable[[], Any], attr: str) -> Any:
    return getattr(read(), attr, ABSENT)


def cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return ABSENT


def callable_names(fn: Any) -> frozenset[str]:
    """The attribute names the code of a compiled callable loads: a function's, a bound or
    class method's, a ``functools.partial``'s function's, a callable object's ``__call__``'s;
    with those of the user functions it calls by global name, and theirs (``helper(layer, x)``
    reading ``layer.w``: an argument object's array read there is lifted too)."""
    for _ in range(4):
        code = getattr(fn, "__code__", None)
        if isinstance(code, types.CodeType):
            return attribute_names(code) | _helper_names(fn)
        fn = getattr(fn, "__func__", None) or getattr(fn, "func", None) or \
            vars(type(fn)).get("__call__")
    return frozenset()


MAX_HELPERS = 64  # user functions followed from a compiled one for the names they load


def _helper_names(fn: Any) -> frozenset[str]:
    """The attribute names loaded by the user functions ``fn`` names as globals, transitively
    (as bound when it is compiled: a helper rebound later is a guarded global, whose new
    reads that are arrays make the capture fall back, never a stale result)."""
    found: set[str] = set()
    seen, todo = {id(fn)}, [fn]
    while todo and len(seen) <= MAX_HELPERS:
        caller = todo.pop()
        scope = getattr(caller, "__globals__", {})
        for name in global_names(caller.__code__):
            helper = scope.get(name)
            if isinstance(helper, types.FunctionType) and id(helper) not in seen and \
                    not own_module(helper.__module__):
                seen.add(id(helper))
                found |= attribute_names(helper.__code__)
                todo.append(helper)
    return frozenset(found)


_ERROR_STATE = frozenset({"errstate", "seterr", "seterrcall"})


def sets_error_state(fn: Any) -> bool:
    """Whether the code of a compiled callable (or a function it names) sets NumPy's error
    state: ``np.errstate(...)``, ``np.seterr(...)``."""
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "__func__", None), "__code__",
                                                    None)
    if not isinstance(code, types.CodeType):
        return bool(callable_names(fn) & _ERROR_STATE)
    if attribute_names(code) & _ERROR_STATE or set(global_names(code)) & _ERROR_STATE:
        return True
    return any(bool(attribute_names(h) & _ERROR_STATE) for h in _named_helpers(fn, code))


def _named_helpers(fn: Any, code: types.CodeType) -> list[types.CodeType]:
    """The code of the user functions ``fn``'s code names as globals (one level)."""
    scope = getattr(fn, "__globals__", {})
    return [h.__code__ for h in (scope.get(n) for n in global_names(code))
            if isinstance(h, types.FunctionType) and not own_module(h.__module__)]


def heeds_underflow(info: dict[str, Any], fn: Any) -> bool:
    """Whether the compiled function's own NumPy error state heeds underflow: capture saw a
    block that did (``info["heeds_underflow"]`` True: a mode other than its relay of the
    caller's), or, where capture cannot tell (``"unclear"``: a block running with the relay's
    own mode, ``log`` or ``call``, which it may have set itself: a review's find), the function
    or a helper it names passes ``under=`` or ``all=`` (or unpacked keywords) to a call."""
    heeds = info.get("heeds_underflow")
    if heeds is True or not heeds:
        return bool(heeds)
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if not isinstance(code, types.CodeType):
        return True  # (nothing to read: heeded, which costs time, never a missed report)
    return any(_passes_underflow(c) for c in (code, *_named_helpers(fn, code)))


def _passes_underflow(code: types.CodeType) -> bool:
    """Whether ``code`` (its nested code too) may set underflow to something other than
    ``"ignore"``: a call passing ``under=`` or ``all=`` a value other than the constant
    ``"ignore"``, or unpacking keywords. Read from its source (a block of ``all="ignore"``
    beside a divide-only one heeded underflow at every call: a review's find), once its
    keyword-name constants say it may; without a source, it may."""
    if not any(any(isinstance(c, tuple) and {"under", "all"} & set(c) for c in inner.co_consts)
               or any(ins.opname == "CALL_FUNCTION_EX" and ins.arg
                      for ins in dis.get_instructions(inner)) for inner in nested_codes(code)):
        return False
    calls = _source_calls(code)
    if calls is None:
        return True
    return any(k.arg is None or (k.arg in ("under", "all") and not (
        isinstance(k.value, ast.Constant) and k.value.value == "ignore"))
        for call in calls for k in call.keywords)


def _source_calls(code: types.CodeType) -> list[ast.Call] | None:
    """The calls written in ``code``'s lines of its source file, nested functions' included
    (None: no source)."""
    try:
        lines, _ = inspect.getsourcelines(code)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def compares_identity(fn: Any) -> bool:
    """Whether ``fn``'s code compares objects' identities: ``a is b`` other than against
    ``None``, or ``id(...)``. Two arguments that are one object (``f(x, x)``) then decide
    something no key describes: such calls run eagerly (``signature.aliased``)."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None:
        return False
    for c in nested_codes(code):
        instructions = list(dis.get_instructions(c))
        for k, ins in enumerate(instructions):
            if ins.opname == "IS_OP" and not any(  # ``x is None``, a loop rewrite's
                    (o.opname == "LOAD_CONST" and o.argval is None) or  # ``p is __stax_unbound__``
                    (o.opname.startswith("LOAD_") and str(o.argval).startswith("__stax"))
                    for o in instructions[max(0, k - 2):k]):
                return True
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval == "id":
                return True
    return False
