"""The NumPy reference interpreter: the semantics of a capture or op graph (STYLE.md habit 6)."""

from __future__ import annotations

import importlib
import operator
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import UnsupportedError
from .graph import Graph, Node, Opcode, map_nodes
from .ops import NN_FUNCTIONS, get_op
from .program import GraphProgram
from .pytree import tree_flatten, tree_unflatten


class DisallowedExternError(UnsupportedError):
    """A document names a call target outside the allow-list (``os.system``, ``numpy.load``,
    a method of an object other than an array or generator). Documents and cache entries are
    data: they may name only NumPy's public numerical callables, ``operator``'s functions and
    Stax's own functions, never an arbitrary importable name."""


#: NumPy modules whose public functions a document may name (``numpy.linalg.inv``).
NUMPY_MODULES = ("numpy", "numpy.linalg", "numpy.fft", "numpy.lib.stride_tricks", "numpy.lib.scimath")
#: public NumPy callables that read or write files, run Python callables or strings, change the
#: process's global state, or read memory outside an array's bounds: never called from a document.
NUMPY_DENIED = frozenset({
    "load", "save", "savez", "savez_compressed", "loadtxt", "savetxt", "genfromtxt", "fromfile",
    "fromregex", "memmap", "frompyfunc", "fromfunction", "piecewise", "apply_along_axis",
    "apply_over_axes", "vectorize", "bmat", "info", "show_config", "show_runtime", "get_include",
    "seterr", "seterrcall", "setbufsize", "set_printoptions", "printoptions", "test",
    "as_strided", "from_dlpack", "nested_iters",
})
#: ufunc methods a document may name (``numpy.add.reduce``); ``at`` writes in place.
UFUNC_METHODS = frozenset({"reduce", "accumulate", "reduceat", "outer"})
#: methods a document may call on an array (or NumPy scalar): none writes, reads files or pickles.
ARRAY_METHODS = frozenset({
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "choose", "clip",
    "compress", "conj", "conjugate", "copy", "cumprod", "cumsum", "diagonal", "dot", "flatten",
    "getfield", "item", "max", "mean", "min", "nonzero", "prod", "ravel", "repeat", "reshape",
    "round", "searchsorted", "squeeze", "std", "sum", "swapaxes", "take", "to_device", "tobytes",
    "tolist", "trace", "transpose", "var", "view",
})
#: draws a document may make from a ``np.random.Generator`` argument (``GeneratorProxy``).
GENERATOR_METHODS = frozenset(
    n for n in dir(np.random.Generator) if not n.startswith("_") and n not in ("spawn", "bit_generator"))
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, type(np.concatenate))


def resolve_function(target: str) -> Callable[..., Any]:
    """The Python callable a ``call_function`` target or an extern names, from the allow-list
    only: Stax's functions (``NN_FUNCTIONS``), ``operator``'s functions, and NumPy's public
    functions and ufuncs (and ufunc methods) of ``NUMPY_MODULES`` outside ``NUMPY_DENIED``.
    Raises ``DisallowedExternError`` for any other name; nothing is imported but NumPy's own
    modules."""
    if not isinstance(target, str):
        raise DisallowedExternError(f"call target {target!r} is not a name")
    if target in NN_FUNCTIONS:
        return NN_FUNCTIONS[target]
    module_name, _, name = target.rpartition(".")
    if module_name == "operator":
        fn = getattr(operator, name, None) if not name.startswith("_") else None
        if isinstance(fn, types.BuiltinFunctionType) and name != "call":
            return fn
    elif module_name in NUMPY_MODULES:
        fn = getattr(importlib.import_module(module_name), name, None) if _public(name) else None
        if isinstance(fn, (np.ufunc, *_FUNCTION_TYPES)) and name not in NUMPY_DENIED:
            return fn
    elif name in UFUNC_METHODS:
        owner_module, _, ufunc_name = module_name.rpartition(".")
        if owner_module in NUMPY_MODULES and _public(ufunc_name):
            ufunc = getattr(importlib.import_module(owner_module), ufunc_name, None)
            if isinstance(ufunc, np.ufunc):
                return getattr(ufunc, name)
    raise DisallowedExternError(
        f"call target {target!r} is not an allowed callable",
        hint="a document may name only NumPy's public numerical functions and ufuncs "
             f"({', '.join(NUMPY_MODULES)}), operator's functions and stax.nn functions")


def call_method(receiver: Any, name: str, args: Any, kwargs: dict[str, Any],
                check_only: bool = False) -> Any:
    """``receiver.name(*args, **kwargs)`` for a ``call_method`` node or a method extern, only
    for the methods of ``ARRAY_METHODS`` on arrays and NumPy scalars and ``GENERATOR_METHODS``
    on generators. ``check_only``: whether ``name`` is allowed on some receiver (a plan's check
    at load time, before any receiver exists)."""
    if check_only:
        if name not in ARRAY_METHODS | GENERATOR_METHODS:
            raise _disallowed(receiver, name)
        return None
    return bound_method(receiver, name)(*args, **kwargs)


def bound_method(receiver: Any, name: str) -> Any:
    """``receiver.name``, a method ``call_method`` allows on it."""
    allowed = ARRAY_METHODS if isinstance(receiver, (np.ndarray, np.generic)) else \
        GENERATOR_METHODS if isinstance(receiver, np.random.Generator) else frozenset()
    if name not in allowed:
        raise _disallowed(receiver, name)
    return getattr(receiver, name)


def _disallowed(receiver: Any, name: str) -> DisallowedExternError:
    return DisallowedExternError(
        f"method {name!r} of a {type(receiver).__name__} is not an allowed call",
        hint="a document may call only non-mutating ndarray methods and Generator draws")


def _public(name: str) -> bool:
    return bool(name) and not name.startswith("_")


def run_graph(graph: Graph, env: dict[str, Any]) -> tuple[Any, ...]:
    """Evaluate ``graph`` with placeholders bound by target name in ``env``; the flat outputs.

    A value is dropped after its last reader, as eager NumPy drops its temporaries: a replayed
    stencil over (1000, 1500) float32 held seven 6 MB temporaries at once, each fresh memory
    (page faults) on every call, 6.7 ms against eager's 1.7."""
    values: dict[Node, Any] = {}
    readers = {node: len(node.users) for node in graph.nodes}

    def arg(value: Any) -> Any:
        return map_nodes(value, values.__getitem__)

    for node in graph.nodes:
        if node.op is Opcode.PLACEHOLDER:
            values[node] = env[node.target]
            continue
        if node.op is Opcode.OUTPUT:
            return tuple(arg(node.args[0]))
        if node.op is Opcode.CALL_METHOD:
            self_, *rest = arg(node.args)
            values[node] = call_method(self_, node.target, rest, arg(node.kwargs))
        elif node.op is Opcode.CALL_FUNCTION:
            fn = get_op(node.target).reference if graph.dialect == "op" else resolve_function(node.target)
            values[node] = fn(*arg(node.args), **arg(node.kwargs))
        else:
            raise NotImplementedError(f"interpreter: opcode {node.op.value} (node %{node.name})")
        for read in node.inputs:
            readers[read] -= 1
            if not readers[read]:
                del values[read]
    raise ValueError("graph has no output node")


def run_program(program: GraphProgram, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call a captured or lowered program like the user's function."""
    leaves, _ = tree_flatten((tuple(args), dict(kwargs)))
    env = {name: leaf for name, leaf in zip(program.inputs, leaves) if name is not None}
    flat = list(run_graph(program.graph, env))
    if program.writeback:
        flat = program.writeback_plan().apply(flat, env)
    return tree_unflatten(program.output_tree, flat)
