"""Captures on disk: a warm start in a new process skips the mixed-mode run of the program.

Capture runs the function once on the real arguments (mixed mode, spec §3), which for large
inputs costs as much as the eager program — more than the rest of a warm start together. A
capture is a function of the code the trace ran, the globals that code read and the signature,
so it is stored under a key made of exactly those, recomputed from the live objects at every
compile (a change anywhere gives another key, never a stale capture):

- Stax, NumPy and Python versions and the signature sigma (shapes, strides, dtypes, scalars);
- the compiled function: its code (nested functions and lambdas included), defaults, closure
  values, and every global its code names — a constant by value, a lifted free array (the
  function's own globals, module attributes and cells: arguments, keyed by sigma), a module by
  name together with the attributes the code names, any other Python function recursively in
  the same way;
- a callable of Stax, NumPy or the standard library by name only when it is exactly what its
  module and qualified name denote (a module-level function, ufunc, builtin or class: no state
  of its own). Callables that carry state are described by it: a ``functools.partial`` by its
  function, arguments and keywords, ``operator.itemgetter``/``attrgetter``/``methodcaller`` by
  their arguments, a bound method (``np.add.reduce``) by its object and name.

What cannot be keyed this way makes the capture uncacheable (it is traced, as before): a global
or closure value of another type (a dict, an instance, a class of the user's, a bound method of
an instance, ``np.vectorize``), an array that is not lifted (read by a helper, inside a tuple or
a partial: its contents could be baked into the capture), more than ``MAX_FUNCTIONS`` functions,
a capture with data gates (their outcomes belong to the example it ran on). Entries are bound to
their key by the object cache; a stored capture that does not parse is a miss (reported once,
removed, traced again).
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import sys
import types
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from stax.codegen import DiskCache
from stax.ir import CAPTURE_SCHEMA, GraphProgram

from .code_reads import attribute_names, imported_modules, nested_codes, read_global_names
from .signature import float_key, holds_identity

MAX_FUNCTIONS = 200
_CONSTANTS = (int, float, complex, str, bytes, bool, type(None), np.generic, np.dtype)
_OWN_ROOTS = frozenset({"stax", "numpy", *sys.stdlib_module_names})
#: callables of the standard library described by their constructor's arguments (``__reduce__``)
_REDUCIBLE = (operator.itemgetter, operator.attrgetter, operator.methodcaller)


class Uncacheable(Exception):
    pass


def _code_hash(code: types.CodeType) -> str:
    digest = hashlib.sha256()
    for c in nested_codes(code):
        digest.update(c.co_code)
        digest.update(repr((c.co_names, c.co_varnames, c.co_freevars, c.co_name,
                            [k for k in c.co_consts if not isinstance(k, types.CodeType)])).encode())
    return digest.hexdigest()


def _by_name(value: Any) -> list[str] | None:
    """``["own", module, qualname]`` when ``value`` is exactly what that name denotes in Stax,
    NumPy or the standard library (whose versions are in the key): a module-level function,
    ufunc, builtin or class, which holds no state of its own. None for anything else — a
    partial, a bound method, an instance, a closure made by a library function — whose state
    the name does not cover."""
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or \
            module.split(".")[0] not in _OWN_ROOTS:
        return None
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None) if found is not None else None
    return ["own", module, qualname] if found is value else None


def _constant(value: Any) -> str:
    """A constant by its exact value: a float's sign of zero and NaN bits (``repr`` says 'nan'
    for every NaN), a NumPy scalar's bytes. A subclass of a builtin may behave otherwise than
    its value says (its ``__rmul__`` is code): not keyed."""
    t = type(value)
    if t is float:
        return float_key(value)
    if t is complex:
        return f"{float_key(value.real)},{float_key(value.imag)}"
    if isinstance(value, np.generic):
        return f"{value.dtype.str}:{value.tobytes().hex()}" if t.__module__ == "numpy" \
            else _subclass(value)
    if t in (int, str, bytes, bool, type(None)) or isinstance(value, np.dtype):
        return repr(value)
    return _subclass(value)


def _subclass(value: Any) -> str:
    raise Uncacheable(f"it reads a {type(value).__qualname__}, a subclass of a builtin type whose "
                      "methods may be code")


class _Keyer:
    """Describes functions and the values they read as JSON-able data: every value by its whole
    state, or ``Uncacheable``."""

    def __init__(self) -> None:
        self.visiting: set[int] = set()
        self.functions = 0

    def value(self, value: Any, attrs: tuple[str, ...] = (), lifted: bool = False) -> Any:
        """``lifted``: an array here is a lifted free variable (an argument keyed by sigma,
        ``freevars.py``): the compiled function's own globals, module attributes and cells.
        Anywhere else an array's contents could be baked into the capture: uncacheable."""
        if isinstance(value, _CONSTANTS):
            return ["const", type(value).__name__, _constant(value)]
        if isinstance(value, tuple) and type(value) is tuple:
            return ["tuple", [self.value(v) for v in value]]
        if isinstance(value, np.ndarray):
            if lifted and type(value) is np.ndarray:
                return ["array"]
            raise Uncacheable("it reads an array that is not one of its lifted free variables")
        if isinstance(value, types.ModuleType):
            return self.module(value, attrs, lifted)
        if isinstance(value, types.FunctionType):
            return _by_name(value) or self.function(value, attrs)
        named = _by_name(value)
        if named is not None:
            return named
        if isinstance(value, (types.BuiltinMethodType, types.MethodType)):
            owner = value.__self__
            if owner is None or isinstance(owner, types.ModuleType):
                raise Uncacheable(f"it reads {value!r}, which is not reachable by its name")
            func = getattr(value, "__func__", None)
            return ["method", self.value(owner), self.value(func) if func is not None
                    else value.__name__]
        if type(value) is functools.partial:
            if value.__dict__:
                raise Uncacheable("it reads a functools.partial with attributes")
            return ["partial", self.value(value.func), [self.value(a) for a in value.args],
                    {k: self.value(v) for k, v in sorted(value.keywords.items())}]
        if type(value) in _REDUCIBLE:
            maker, args = value.__reduce__()
            return ["reduce", self.value(maker), [self.value(a) for a in args]]
        raise Uncacheable(f"it reads a {type(value).__name__}")

    def module(self, module: types.ModuleType, attrs: tuple[str, ...], lifted: bool) -> Any:
        if id(module) in self.visiting:
            return ["module", module.__name__]
        self.visiting.add(id(module))
        # the module's own dictionary: its ``__getattr__`` may warn (NumPy's, for ``np.str``:
        # a name of the code that is no attribute of the module)
        own = vars(module)
        described = {a: self.value(own[a], attrs, lifted=lifted and not isinstance(
            own[a], types.ModuleType)) for a in attrs if not a.startswith("__") and a in own}
        self.visiting.discard(id(module))
        return ["module", module.__name__, described]

    def function(self, fn: types.FunctionType, read: tuple[str, ...] = (), top: bool = False) -> Any:
        """``read``: the attribute names the reader's code mentions (``helper.scale``)."""
        if id(fn) in self.visiting:
            return ["recursive", fn.__qualname__]
        self.functions += 1
        if self.functions > MAX_FUNCTIONS:
            raise Uncacheable(f"it reaches more than {MAX_FUNCTIONS} Python functions")
        self.visiting.add(id(fn))
        code = fn.__code__
        # the names the code loads, and its string constants (``getattr(config, "scale")``,
        # ``globals()["K"]``: ``code_reads``)
        names = sorted({n for c in nested_codes(code) for n in c.co_names} |
                       attribute_names(code) | set(read_global_names(code)))
        attrs = tuple(names)
        scope = fn.__globals__
        described = {
            "code": _code_hash(code),
            "defaults": [self.value(d) for d in fn.__defaults__ or ()],
            "kwdefaults": {k: self.value(v) for k, v in sorted((fn.__kwdefaults__ or {}).items())},
            "closure": [self.cell(c, attrs, top) for c in fn.__closure__ or ()],
            "globals": {n: self.value(scope[n], attrs, lifted=top) for n in names if n in scope},
            # its own attributes, read through its own name too (``f.k`` inside ``f``)
            "attributes": {k: self.value(v) for k, v in sorted(vars(fn).items())
                           if k in read or k in attrs},
            "imports": {m: self.imported(m, attrs) for m in imported_modules(code)},
        }
        self.visiting.discard(id(fn))
        return ["function", fn.__module__, fn.__qualname__, described]

    def imported(self, name: str, attrs: tuple[str, ...]) -> Any:
        """A module the code imports (``from config import scale`` inside the function): the
        standard library's and NumPy's by name, the user's by the attributes the code names."""
        if name.split(".")[0] in _OWN_ROOTS:
            return ["own", name]
        module = sys.modules.get(name)
        if module is None:  # what the trace's import will bind is unknown now
            raise Uncacheable(f"it imports {name}, which is not imported yet")
        return self.module(module, attrs, False)

    def cell(self, cell: types.CellType, attrs: tuple[str, ...], top: bool) -> Any:
        try:
            contents = cell.cell_contents
        except ValueError:  # not bound yet
            return ["empty"]
        return self.value(contents, attrs, lifted=top)


def capture_key(fn: Callable[..., Any], sigma: Any, names: list[str]) -> str:
    """The key of ``fn``'s capture on arguments of signature ``sigma``; raises Uncacheable."""
    if not isinstance(fn, types.FunctionType):
        raise Uncacheable(f"a {type(fn).__name__} is not a Python function")
    described = _Keyer().function(fn, top=True)
    parts = ["stax.capture-cache/1", sys.version, np.__version__,
             *(_version(d) for d in ("stax-ir", "stax-trace", "stax-runtime")), stax_fingerprint(),
             repr(sigma), repr(names), json.dumps(described, sort_keys=True)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def captures_for(fn: Callable[..., Any], sigma: Any, names: list[str], cache_dir: Any,
                 log: Callable[[str], None]) -> tuple[CaptureCache | None, str | None]:
    """The disk cache of captures and ``fn``'s key in it for ``sigma``; (None, None) without a
    cache directory, for a signature holding an object's identity, or when something the
    trace depends on cannot be keyed (``log`` says what)."""
    if cache_dir is None or holds_identity(sigma):
        return None, None
    try:
        return CaptureCache(cache_dir), capture_key(fn, sigma, names)
    except Uncacheable as exc:
        log(str(exc))
        return None, None


@functools.cache
def stax_fingerprint() -> str:
    """A digest of every Stax source file this process imported from: a capture or a plan made
    by other Stax code (another release, or an edited source tree, whose version does not move)
    gets another key. Computed once per process (a few milliseconds)."""
    import stax

    digest = hashlib.sha256()
    for root in sorted(stax.__path__):
        for path in sorted(Path(root).rglob("*.py")):
            digest.update(path.as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.cache
def _version(dist: str) -> str:
    """A distribution's version, read once per process (reading metadata costs ~0.25 ms)."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:  # running from a source tree
        return "source"


class CaptureCache:
    def __init__(self, directory: Path) -> None:
        self.entries = DiskCache(Path(directory) / "captures", suffix=".json", root=directory)

    def load(self, key: str) -> GraphProgram | None:
        """The stored capture, or None: an entry that does not parse is a miss, never an error."""
        blob = self.entries.load(key)
        if blob is None:
            return None
        try:
            return GraphProgram.from_json(json.loads(blob), CAPTURE_SCHEMA)
        except Exception as exc:  # any defect of a stored document is a miss
            self.entries.discard(key, f"the capture does not load ({type(exc).__name__}: {exc})")
            return None

    def store(self, key: str, capture: GraphProgram) -> None:
        self.entries.store(key, json.dumps(capture.to_json()).encode())
