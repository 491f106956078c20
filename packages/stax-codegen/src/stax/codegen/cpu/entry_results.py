"""What the machine-code entry (``entry.py``) makes of its results besides arrays: the Python
numbers the user's code converts them to (``return float(loss)``, ``x.item()``), as
``tree_unflatten`` would, with CPython's own ``PyNumber_Float``, ``PyNumber_Long`` and
``PyObject_IsTrue``; and the lists and dicts that hold them (``return {"loss": loss, "grad":
g}``), with ``PyList_New``/``PyList_SetItem`` and ``PyDict_New``/``PyDict_SetItem``, the keys
constants of the entry.

A result tree's "python" node (``stax.ir.TreeDef``) names the conversion; ``item`` is the one
its dtype's ``item()`` makes. A conversion may fail (``int(nan)`` raises ValueError): the entry
then releases every result and returns NULL with CPython's error set, as the eager call raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from llvmlite import ir

from .types import I8P, I64

I32 = ir.IntType(32)

#: the conversion a "python" node's key makes of a 0-d result of each dtype kind
_ITEM = {"f": "float", "i": "int", "u": "int", "b": "bool"}
CONVERSIONS = ("float", "int", "bool")


def leaf_conversions(tree: Any, dtypes: list[str]) -> tuple[str | None, ...] | str:
    """Per result leaf, in order, the conversion the entry makes (None: none), or why it cannot
    (``dtypes``: each leaf's dtype, None for a constant)."""
    found: list[str | None] = []

    def walk(node: Any, kind: str | None) -> str | None:
        if node.kind == "python":
            return walk(node.children[0], node.keys[0])
        if node.kind != "leaf":
            for child in node.children:
                why = walk(child, None)
                if why is not None:
                    return why
            return None
        dtype = dtypes[len(found)]
        if kind is not None and dtype is None:
            return "a result converted to a Python number is a constant"
        if kind == "item":
            kind = _ITEM.get(np.dtype(dtype).kind)
            if kind is None:
                return f"a result's item() is a Python {np.dtype(dtype).kind!r} number"
        found.append(kind)
        return None
    why = walk(tree, None)
    return why if why is not None else tuple(found)


def convert(b: ir.IRBuilder, fn: ir.Function, results: list[ir.Value],
            conversions: tuple[str | None, ...], api: dict[str, Any], decref: ir.Value) -> None:
    """Replace ``results`` (each holding a reference) by their conversions; ``api``: the
    CPython functions by name, loaded from the entry's context."""
    for k, kind in enumerate(conversions):
        if kind is None:
            continue
        value = results[k]
        if kind == "bool":
            truth = b.call(api["PyObject_IsTrue"], [value])
            made = b.call(api["PyBool_FromLong"],
                          [b.zext(b.icmp_signed(">", truth, ir.Constant(I32, 0)), I64)])
        else:
            made = b.call(api["PyNumber_Float" if kind == "float" else "PyNumber_Long"], [value])
        b.call(decref, [value])
        results[k] = made
        failed = fn.append_basic_block(f"convert_failed{k}")
        ok = fn.append_basic_block(f"converted{k}")
        b.cbranch(b.icmp_unsigned("==", b.ptrtoint(made, I64), ir.Constant(I64, 0)), failed, ok)
        b.position_at_end(failed)  # CPython's error is set: release the others and raise it
        for j, other in enumerate(results):
            if j != k:
                b.call(decref, [other])
        b.ret(ir.Constant(I8P, None))
        b.position_at_end(ok)


def signatures() -> dict[str, ir.FunctionType]:
    """The C signatures of the functions ``convert`` calls."""
    return {"PyNumber_Float": ir.FunctionType(I8P, [I8P]),
            "PyNumber_Long": ir.FunctionType(I8P, [I8P]),
            "PyObject_IsTrue": ir.FunctionType(I32, [I8P]),
            "PyBool_FromLong": ir.FunctionType(I8P, [I64])}


@dataclass(frozen=True)
class Built:
    """A list or dict of results (``kind``), its items nestings as ``EntryPlan.nesting``'s (a
    result's position, a tuple, or a ``Built``), a dict's keys the entry's constants at
    ``keys``."""

    kind: str
    children: tuple[Any, ...]
    keys: tuple[int, ...] = ()


def buildable(tree: Any) -> bool:
    """One leaf (maybe converted to a Python number), or a tuple, list or dict of such (not a
    named tuple, whose class the entry would have to call)."""
    if tree.kind == "leaf":
        return True
    if tree.kind == "python":
        return tree.children[0].kind == "leaf"
    return tree.kind in ("tuple", "list", "dict") and all(buildable(c) for c in tree.children)


def nesting_of(tree: Any, leaves: Any, constants: list[Any]) -> Any:
    """The tree's shape: each leaf its result's position, a tuple a tuple, a list or dict a
    ``Built`` (a dict's keys appended to ``constants``)."""
    if tree.kind in ("leaf", "python"):
        return next(leaves)
    children = tuple(nesting_of(c, leaves, constants) for c in tree.children)
    if tree.kind == "tuple":
        return children
    keys = ()
    if tree.kind == "dict":
        keys = tuple(range(len(constants), len(constants) + len(tree.keys)))
        constants.extend(tree.keys)
    return Built(tree.kind, children, keys)


def build(b: ir.IRBuilder, item: Any, results: list[ir.Value], api: dict[str, Any],
          constant: Any, decref: ir.Value) -> ir.Value:
    """The object of ``item`` (a nesting), each result's reference handed to its container;
    ``constant(k)``: the entry's k-th constant object."""
    if isinstance(item, int):
        return results[item]
    kind = "tuple" if isinstance(item, tuple) else item.kind
    children = item if isinstance(item, tuple) else item.children
    if kind == "dict":
        made = b.call(api["PyDict_New"], [])
        for key, child in zip(item.keys, children):
            value = build(b, child, results, api, constant, decref)
            b.call(api["PyDict_SetItem"], [made, constant(key), value])  # takes its own
            b.call(decref, [value])
        return made
    new, set_item = ("PyTuple_New", "PyTuple_SetItem") if kind == "tuple" else \
        ("PyList_New", "PyList_SetItem")
    made = b.call(api[new], [ir.Constant(I64, len(children))])
    for k, child in enumerate(children):  # (SetItem steals the item's reference)
        b.call(api[set_item], [made, ir.Constant(I64, k),
                               build(b, child, results, api, constant, decref)])
    return made


def builder_signatures() -> dict[str, ir.FunctionType]:
    """The C signatures of the functions ``build`` calls (the tuple ones are the entry's own)."""
    return {"PyList_New": ir.FunctionType(I8P, [I64]),
            "PyList_SetItem": ir.FunctionType(I32, [I8P, I64, I8P]),
            "PyDict_New": ir.FunctionType(I8P, []),
            "PyDict_SetItem": ir.FunctionType(I32, [I8P, I8P, I8P])}


def converted_leaf(tree: Any) -> bool:
    """A result converted to a Python number (a lifted loop's carried float): to the item loop,
    which carries its 0-d buffer, a result as any other."""
    return tree.kind == "python" and len(tree.children) == 1 and tree.children[0].kind == "leaf"
