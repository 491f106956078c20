"""Lifting free variables to arguments (spec §2.5, lambda lifting).

Arrays a function reads from its module globals or its closure are not in its parameter list, yet
each call must see their current binding and data. Stax reads them at every call and passes them
as leading arguments, so they enter the key (a rebinding to an array of another layout recompiles)
and the kernel reads their current data (an in-place update is seen without recompiling,
example 2.2). Capture runs a copy of the function whose globals and cells hold the proxies; a
bound method's object has its lifted attributes bound to their proxies while capture runs
(``object_arrays.attributes_bound``).
"""

from __future__ import annotations

import dis
import types
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import numpy as np

from .code_reads import method_names, nested_codes
from .object_arrays import attributes_bound, own_attributes, tracing

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
        own = own_attributes(owner) or {}
        read_through_self = method_names(type(owner), names) if own else frozenset()
        self.attributes = sorted(a for a in read_through_self if isinstance(own.get(a), np.ndarray))
        self.names = [*self.globals, *(f"{m}.{a}" for m, a in self.module_attrs),
                      *(name for name, _ in self.cells), *(f"self.{a}" for a in self.attributes)]

    def __bool__(self) -> bool:
        return bool(self.names)

    def read(self) -> tuple[Any, ...]:
        """The current values, in ``names`` order: one generated function (``_reader``), run
        before every call's key entry (four generators unpacked cost 1.1 us of a 1.7 us call
        of a function reading one module-level array; written out, 0.1 us)."""
        reader = self.__dict__.get("_read")
        if reader is None:
            reader = self._read = self._reader()
        return reader()

    def _reader(self) -> Callable[[], tuple[Any, ...]]:
        constants: dict[str, Any] = {"scope": self.fn.__globals__, "cell_value": _cell_value,
                                     "fn": self.fn}
        parts = [f"scope.get({n!r})" for n in self.globals]
        parts += [f"getattr(scope[{m!r}], {a!r}, None)" for m, a in self.module_attrs]
        for _, i in self.cells:
            constants[f"cell{i}"] = self.fn.__closure__[i]
            parts.append(f"cell_value(cell{i})")
        # (attributes checked plain at __init__: the object's own dictionary)
        parts += [f"vars(fn.__self__).get({a!r})" for a in self.attributes]
        source = f"def read():\n    return ({''.join(p + ', ' for p in parts)})\n"
        exec(compile(source, "<stax free values>", "exec"), constants)
        return constants["read"]

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
            if isinstance(fn, types.MethodType):  # a bound method: bound to the same object,
                owner = fn.__self__  # its lifted attributes the traced values while capturing
                placed = dict(zip(self.attributes, values[count - len(self.attributes):count]))
                # an eager run's values are the object's arrays already
                with attributes_bound(owner, placed) if tracing(placed.values()) else nullcontext():
                    return types.MethodType(clone, owner)(*values[count:], **kwargs)
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


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None
