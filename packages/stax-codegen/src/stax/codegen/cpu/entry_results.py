"""Results the user's code converts to Python numbers (``return float(loss)``, ``x.item()``):
the machine-code entry (``entry.py``) converts them as ``tree_unflatten`` would, with CPython's
own ``PyNumber_Float``, ``PyNumber_Long`` and ``PyObject_IsTrue``.

A result tree's "python" node (``stax.ir.TreeDef``) names the conversion; ``item`` is the one
its dtype's ``item()`` makes. A conversion may fail (``int(nan)`` raises ValueError): the entry
then releases every result and returns NULL with CPython's error set, as the eager call raises.
"""

from __future__ import annotations

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
