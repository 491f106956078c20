"""Lifting free variables to arguments (spec §2.5, lambda lifting).

Arrays a function reads from its module globals or its closure are not in its parameter list, yet
each call must see their current binding and data. Stax reads them at every call and passes them
as leading arguments, so they enter the key (a rebinding to an array of another layout recompiles)
and the kernel reads their current data (an in-place update is seen without recompiling,
example 2.2). Capture runs a copy of the function whose globals and cells hold the proxies; a
bound method's object has its lifted attributes bound to the proxies while capture runs (another
thread reading them during that first call would see the proxies: documented).
"""

from __future__ import annotations

import dis
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .code_reads import nested_codes

_GLOBAL = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS")


class FreeVariables:
    """The free arrays of ``fn``: globals, closure cells, attributes of modules it reads
    (``config.scale``) and, for a bound method, the array attributes of its object that its code
    names (``self.w``), bound to arrays when first seen."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        code = getattr(fn, "__code__", None)
        scope = getattr(fn, "__globals__", {})
        codes = list(nested_codes(code)) if code is not None else []
        names = {n for c in codes for n in c.co_names}  # globals and attribute names alike
        # names read as globals (not ``x.mean`` beside a global array ``mean``)
        loaded = {i.argval for c in codes for i in dis.get_instructions(c) if i.opname in _GLOBAL}
        self.globals = sorted(n for n in loaded if isinstance(scope.get(n), np.ndarray))
        self.module_attrs = sorted(
            (m, a) for m in loaded if isinstance(scope.get(m), types.ModuleType)
            # the module's own dictionary: a module ``__getattr__`` may warn (NumPy's for
            # ``np.str``: names of the function that are no attribute of the module)
            for a in names if isinstance(vars(scope[m]).get(a), np.ndarray))
        cells = getattr(fn, "__closure__", None) or ()
        freevars = code.co_freevars if code is not None else ()
        self.cells = [(name, i) for i, (name, cell) in enumerate(zip(freevars, cells))
                      if isinstance(_cell_value(cell), np.ndarray)]
        owner = getattr(fn, "__self__", None)
        own = _own_attributes(owner)
        read_through_self = _method_names(type(owner), names) if own else set()
        self.attributes = sorted(a for a in read_through_self if isinstance(own.get(a), np.ndarray))
        self.names = [*self.globals, *(f"{m}.{a}" for m, a in self.module_attrs),
                      *(name for name, _ in self.cells), *(f"self.{a}" for a in self.attributes)]

    def __bool__(self) -> bool:
        return bool(self.names)

    def read(self) -> tuple[Any, ...]:
        """The current values, in ``names`` order."""
        scope = self.fn.__globals__
        closure = self.fn.__closure__
        own = _own_attributes(getattr(self.fn, "__self__", None))
        return (*(scope.get(n) for n in self.globals),
                *(getattr(scope[m], a, None) for m, a in self.module_attrs),
                *(_cell_value(closure[i]) for _, i in self.cells),
                *(own.get(a) for a in self.attributes))

    def lifted(self) -> Callable[..., Any]:
        """``g(*free_values, *args, **kwargs)``: ``fn`` reading its free variables from arguments."""
        fn, count = self.fn, len(self.names)

        n_globals, n_attrs = len(self.globals), len(self.module_attrs)

        def call(*values: Any, **kwargs: Any) -> Any:
            scope = dict(fn.__globals__)
            scope.update(zip(self.globals, values))
            views: dict[str, dict[str, Any]] = {}
            for (module, attr), value in zip(self.module_attrs, values[n_globals:]):
                views.setdefault(module, {})[attr] = value
            for module, attrs in views.items():
                scope[module] = _ModuleView(fn.__globals__[module], attrs)
            closure = list(fn.__closure__ or ())
            for (_, index), value in zip(self.cells, values[n_globals + n_attrs:count]):
                closure[index] = types.CellType(value)
            clone = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__,
                                       tuple(closure) or None)
            clone.__kwdefaults__ = fn.__kwdefaults__
            if isinstance(fn, types.MethodType):  # a bound method: bound to the same object
                placed = dict(zip(self.attributes, values[count - len(self.attributes):count]))
                with _attributes_set(fn.__self__, placed):
                    return types.MethodType(clone, fn.__self__)(*values[count:], **kwargs)
            return clone(*values[count:], **kwargs)
        call.__wrapped__ = fn  # type: ignore[attr-defined]  # capture's scans look through it
        return call


class _ModuleView:
    """A module as the captured function sees it: the lifted attributes replaced."""

    def __init__(self, module: types.ModuleType, lifted: dict[str, Any]) -> None:
        self._module = module
        self._lifted = lifted

    def __getattr__(self, name: str) -> Any:
        lifted = self.__dict__["_lifted"]
        return lifted[name] if name in lifted else getattr(self.__dict__["_module"], name)


def _own_attributes(owner: Any) -> dict[str, Any]:
    """The instance dictionary of a bound method's object (empty for a module, a class or an
    object without one)."""
    if owner is None or isinstance(owner, (types.ModuleType, type)):
        return {}
    own = getattr(owner, "__dict__", None)
    return own if type(own) is dict else {}


def _method_names(cls: type, names: set[str]) -> set[str]:
    """``names`` and the names the code of every method of ``cls`` among them names, and so on:
    what a method may read through ``self`` (``self.act(x)`` reading ``self.w``)."""
    found, todo = set(names), list(names)
    while todo:
        method = getattr(cls, todo.pop(), None)
        code = getattr(method, "__code__", None)
        if code is None:
            continue
        for c in nested_codes(code):
            fresh = set(c.co_names) - found
            found |= fresh
            todo += fresh
    return found


@contextmanager
def _attributes_set(owner: Any, placed: dict[str, Any]) -> Iterator[None]:
    """The object's lifted attributes bound to their proxies while capture runs the method (its
    helpers and other methods read them through ``self`` too), then put back: each still bound
    to its proxy gets the array it had (one the method rebound keeps its new value, which the
    capture's escape check then settles)."""
    own = _own_attributes(owner)
    before = {a: own.get(a) for a in placed}
    own.update(placed)
    try:
        yield
    finally:
        for a, proxy in placed.items():
            if own.get(a) is proxy:
                own[a] = before[a]


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None
