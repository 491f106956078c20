"""Flattening of nested Python containers into leaves and a serializable tree description.

Arguments and results of user functions are trees of tuples, lists, dicts and named tuples (a
``collections.namedtuple`` or ``typing.NamedTuple`` of parameters, as JAX users write them);
every layer works on the flat list of leaves, and the ``TreeDef`` (plain JSON data) puts them
back together. A named tuple's class is named by module and qualified name, found again where
it was seen in this process or by import.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TreeDef:
    """``kind`` is "leaf", "tuple", "list", "dict", "namedtuple" or "python"; dict keys are kept
    in insertion order; a named tuple's ``keys`` are its class's module and qualified name.

    "python" is a result Python converts (``return float(loss)``): one child, the value
    computed, and ``keys`` the conversion's name in ``RESULT_CONVERSIONS``. Capture makes it
    (``stax.trace.result_conversions``); ``tree_flatten`` never does."""

    kind: str
    children: tuple[TreeDef, ...] = ()
    keys: tuple[Any, ...] = ()

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def to_json(self) -> Any:
        if self.kind == "leaf":
            return "*"
        doc: dict[str, Any] = {"kind": self.kind, "children": [c.to_json() for c in self.children]}
        if self.kind in ("dict", "namedtuple", "python"):
            doc["keys"] = list(self.keys)
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> TreeDef:
        if doc == "*":
            return LEAF
        if doc["kind"] not in _KINDS or (doc["kind"] == "python" and (
                len(doc["children"]) != 1 or tuple(doc.get("keys", ())) not in _CONVERSION_KEYS)):
            raise ValueError(f"not a result tree this reader knows: {doc!r}")
        return cls(doc["kind"], tuple(cls.from_json(c) for c in doc["children"]),
                   tuple(doc.get("keys", ())))

    @property
    def converts(self) -> bool:
        """Whether a result of this tree is converted to a Python number somewhere."""
        return self.kind == "python" or any(c.converts for c in self.children)


#: the Python conversions of a "python" tree node: ``float(x)``, ``x.item()``, ...
RESULT_CONVERSIONS: dict[str, Any] = {"int": int, "float": float, "bool": bool,
                                      "item": lambda v: v.item()}
_CONVERSION_KEYS = {(name,) for name in RESULT_CONVERSIONS}
_KINDS = ("leaf", "tuple", "list", "dict", "namedtuple", "python")


LEAF = TreeDef("leaf")


def tree_flatten(tree: Any) -> tuple[list[Any], TreeDef]:
    leaves: list[Any] = []

    def walk(node: Any) -> TreeDef:
        if type(node) in (tuple, list):
            return TreeDef(type(node).__name__, tuple(walk(c) for c in node))
        if type(node) is dict:
            return TreeDef("dict", tuple(walk(v) for v in node.values()), tuple(node))
        if is_namedtuple(node):
            cls = type(node)
            _NAMED[(cls.__module__, cls.__qualname__)] = cls
            return TreeDef("namedtuple", tuple(walk(c) for c in node),
                           (cls.__module__, cls.__qualname__))
        leaves.append(node)
        return LEAF

    return leaves, walk(tree)


def tree_leaves(tree: Any) -> list[Any]:
    """The leaves of ``tree`` in ``tree_flatten`` order, without building a ``TreeDef`` (hot path)."""
    leaves: list[Any] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        t = type(node)
        if t is tuple or t is list:
            stack.extend(reversed(node))
        elif t is dict:
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, tuple) and hasattr(t, "_fields"):
            stack.extend(reversed(node))
        else:
            leaves.append(node)
    return leaves


def is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and type(value) is not tuple and \
        hasattr(type(value), "_fields")


#: named tuple classes seen by ``tree_flatten`` in this process, by (module, qualified name)
_NAMED: dict[tuple[str, str], type] = {}


def _named_class(module: str, qualname: str) -> type:
    cls = _NAMED.get((module, qualname))
    if cls is None:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        cls = _NAMED[(module, qualname)] = found
    return cls


def tree_unflatten(treedef: TreeDef, leaves: list[Any]) -> Any:
    return _build(treedef, iter(leaves))


def _build(td: TreeDef, it: Iterator[Any]) -> Any:
    """A module-level function, not a recursive closure: a closure that calls itself is a
    reference cycle, and the iterator it holds would keep every leaf (a call's result arrays)
    alive until the cycle collector ran."""
    if td.kind == "leaf":
        return next(it)
    children = [_build(c, it) for c in td.children]
    if td.kind == "python":
        return RESULT_CONVERSIONS[td.keys[0]](children[0])
    if td.kind == "tuple":
        return tuple(children)
    if td.kind == "list":
        return children
    if td.kind == "namedtuple":
        return _named_class(*td.keys)(*children)
    return dict(zip(td.keys, children))
