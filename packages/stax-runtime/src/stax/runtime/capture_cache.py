"""Captures on disk: a warm start in a new process skips the mixed-mode run of the program.

Capture runs the function once on the real arguments (mixed mode, spec §3), which for large
inputs costs as much as the eager program — more than the rest of a warm start together. A
capture is a function of the code the trace ran, the globals that code read and the signature,
so it is stored under a key made of exactly those, recomputed from the live objects at every
compile (a change anywhere gives another key, never a stale capture):

- Stax, NumPy and Python versions and the signature sigma (shapes, strides, dtypes, scalars);
- the compiled function: its code (nested functions and lambdas included), defaults, closure
  values, and every global its code names — a constant by value, an array as a lifted argument,
  a module by name together with the attributes the code names, a function of Stax, NumPy or the
  standard library by name, any other Python function recursively in the same way.

What cannot be keyed this way makes the capture uncacheable (it is traced, as before): a global
or closure value of another type (a dict, an instance, a class), more than ``MAX_FUNCTIONS``
functions, a capture with data gates (their outcomes belong to the example it ran on). Entries
are stored with a digest by the object cache (a corrupted one is reported once and rebuilt).
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import types
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from stax.codegen.cpu.objcache import ObjectCache
from stax.ir import CAPTURE_SCHEMA, GraphProgram

MAX_FUNCTIONS = 200
_CONSTANTS = (int, float, complex, str, bytes, bool, type(None), np.generic, np.dtype)
_OWN_MODULES = ("stax", "numpy", "builtins", "math", "operator", "functools", "itertools")


class Uncacheable(Exception):
    pass


def _nested_codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _nested_codes(const)


def _code_hash(code: types.CodeType) -> str:
    digest = hashlib.sha256()
    for c in _nested_codes(code):
        digest.update(c.co_code)
        digest.update(repr((c.co_names, c.co_varnames, c.co_freevars, c.co_name,
                            [k for k in c.co_consts if not isinstance(k, types.CodeType)])).encode())
    return digest.hexdigest()


def _own(value: Any) -> bool:
    """Stax, NumPy and the standard library (their versions are in the key): not looked into."""
    module = getattr(value, "__module__", None) or ""
    if isinstance(value, types.FunctionType):
        return module.split(".")[0] in _OWN_MODULES
    return module.split(".")[0] in _OWN_MODULES or module.startswith("_")


class _Keyer:
    """Describes functions and the values they read as JSON-able data."""

    def __init__(self) -> None:
        self.visiting: set[int] = set()
        self.functions = 0

    def value(self, value: Any, attrs: tuple[str, ...] = ()) -> Any:
        if isinstance(value, _CONSTANTS):
            return ["const", type(value).__name__, repr(value)]
        if isinstance(value, tuple):
            return ["tuple", [self.value(v) for v in value]]
        if isinstance(value, np.ndarray):
            return ["array"]  # a lifted free variable: an argument, keyed by sigma
        if isinstance(value, types.ModuleType):
            return ["module", value.__name__, {a: self.value(getattr(value, a)) for a in attrs
                                               if hasattr(value, a) and not a.startswith("__")
                                               and not isinstance(getattr(value, a),
                                                                  types.ModuleType)}]
        if isinstance(value, types.FunctionType) and not _own(value):
            return self.function(value)
        if _own(value) and callable(value):  # Stax/NumPy/standard library: versions are keyed
            return ["own", getattr(value, "__module__", None),
                    getattr(value, "__qualname__", getattr(value, "__name__", repr(type(value))))]
        raise Uncacheable(f"it reads a {type(value).__name__}")

    def function(self, fn: types.FunctionType) -> Any:
        if id(fn) in self.visiting:
            return ["recursive", fn.__qualname__]
        self.functions += 1
        if self.functions > MAX_FUNCTIONS:
            raise Uncacheable(f"it reaches more than {MAX_FUNCTIONS} Python functions")
        self.visiting.add(id(fn))
        code = fn.__code__
        names = sorted({n for c in _nested_codes(code) for n in c.co_names})
        attrs = tuple(names)
        scope = fn.__globals__
        described = {
            "code": _code_hash(code),
            "defaults": [self.value(d) for d in fn.__defaults__ or ()],
            "kwdefaults": {k: self.value(v) for k, v in sorted((fn.__kwdefaults__ or {}).items())},
            "closure": [self.value(c.cell_contents, attrs) for c in fn.__closure__ or ()],
            "globals": {n: self.value(scope[n], attrs) for n in names if n in scope},
        }
        self.visiting.discard(id(fn))
        return ["function", fn.__module__, fn.__qualname__, described]


def capture_key(fn: Callable[..., Any], sigma: Any, names: list[str]) -> str:
    """The key of ``fn``'s capture on arguments of signature ``sigma``; raises Uncacheable."""
    if not isinstance(fn, types.FunctionType):
        raise Uncacheable(f"a {type(fn).__name__} is not a Python function")
    described = _Keyer().function(fn)
    parts = ["stax.capture-cache/1", sys.version, np.__version__,
             *(_version(d) for d in ("stax-ir", "stax-trace", "stax-runtime")), stax_fingerprint(),
             repr(sigma), repr(names), json.dumps(described, sort_keys=True)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


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


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:  # running from a source tree
        return "source"


class CaptureCache:
    def __init__(self, directory: Path) -> None:
        self.entries = ObjectCache(directory / "captures", suffix=".json")

    def load(self, key: str) -> GraphProgram | None:
        blob = self.entries.load(key)
        return None if blob is None else GraphProgram.from_json(json.loads(blob), CAPTURE_SCHEMA)

    def store(self, key: str, capture: GraphProgram) -> None:
        self.entries.store(key, json.dumps(capture.to_json()).encode())
