"""Loop bodies as data: immutable expression DAGs (STYLE.md habit 4, spec §6).

A body is printed, hashed, serialized and inspected without running it. Sharing is by object
identity: the same subexpression object used twice is one DAG node, and the serialized form keeps
that (nodes are numbered once, referenced by number).

Every visitor over expression kinds (printer, serializer, interpreter, emitters) dispatches
through a ``KindTable``: one handler per kind, looked up by the node's exact class, so no visitor
depends on the order of ``isinstance`` tests and a kind a visitor forgot fails when its table is
built.
"""

from __future__ import annotations

import dataclasses
import itertools
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from stax.ir.serialize import decode_value, encode_value

from .index import Affine
from .operators import operator_names

#: the loop operators by arity, and the comparisons (operands in a common dtype, result bool),
#: in declaration order: derived from their declarations (``operators.OPERATORS``)
BINARY_OPS = operator_names(2)
TERNARY_OPS = operator_names(3)
COMPARISON_OPS = operator_names(2, comparison=True)
UNARY_OPS = operator_names(1)


class Expr:
    dtype: str
    #: the kind's name in the text and JSON forms
    kind: ClassVar[str] = ""
    #: the fields that hold operand expressions, in operand order
    operands: ClassVar[tuple[str, ...]] = ()

    def children(self) -> tuple[Expr, ...]:
        return tuple([getattr(self, name) for name in self.operands])

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        """This node over other operands (same kind, dtype and attributes)."""
        return dataclasses.replace(self, **dict(zip(self.operands, children)))  # type: ignore[type-var]


@dataclass(frozen=True, eq=False)
class Load(Expr):
    """``buffer[index]``, the index affine in the loop variables."""

    kind: ClassVar[str] = "load"
    buffer: str
    index: Affine
    dtype: str


@dataclass(frozen=True, eq=False)
class GuardedLoad(Load):
    """``buffer[index]`` where ``guard`` holds, else 0: the piece of a concatenation or the inside
    of a padding. The index may leave the buffer where the guard is false; it is never read
    there (the emitter branches, which LLVM turns into masked vector loads)."""

    kind: ClassVar[str] = "guarded_load"
    operands: ClassVar[tuple[str, ...]] = ("guard",)
    guard: Expr = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class IndirectLoad(Expr):
    """``buffer`` at the element offset computed by ``offset`` (an int64 expression): reads that
    are not affine in the loop variables, as a reshape of a non-contiguous array (floor division
    and remainder of the flat index). It has no affine index (it is no ``Load``): the scheduler
    treats the buffer as read anywhere (``loads`` lists it, ``affine_loads`` does not)."""

    kind: ClassVar[str] = "indirect_load"
    operands: ClassVar[tuple[str, ...]] = ("offset",)
    buffer: str
    dtype: str
    offset: Expr


@dataclass(frozen=True, eq=False)
class Index(Expr):
    """The value of an affine expression of the loop variables, as an integer of ``dtype``
    (``np.arange``, ``np.eye``, ``np.tril``'s diagonal test)."""

    kind: ClassVar[str] = "index"
    index: Affine
    dtype: str


@dataclass(frozen=True, eq=False)
class Const(Expr):
    kind: ClassVar[str] = "const"
    value: Any
    dtype: str


@dataclass(frozen=True, eq=False)
class Cast(Expr):
    kind: ClassVar[str] = "cast"
    operands: ClassVar[tuple[str, ...]] = ("x",)
    x: Expr
    dtype: str


@dataclass(frozen=True, eq=False)
class Unary(Expr):
    kind: ClassVar[str] = "unary"
    operands: ClassVar[tuple[str, ...]] = ("x",)
    op: str
    x: Expr
    dtype: str


@dataclass(frozen=True, eq=False)
class Binary(Expr):
    kind: ClassVar[str] = "binary"
    operands: ClassVar[tuple[str, ...]] = ("a", "b")
    op: str
    a: Expr
    b: Expr
    dtype: str


@dataclass(frozen=True, eq=False)
class Ternary(Expr):
    """A loop operator of three operands (``fma``: ``a * b + c`` rounded once)."""

    kind: ClassVar[str] = "ternary"
    operands: ClassVar[tuple[str, ...]] = ("a", "b", "c")
    op: str
    a: Expr
    b: Expr
    c: Expr
    dtype: str


@dataclass(frozen=True, eq=False)
class Select(Expr):
    """``cond ? a : b`` with ``cond`` a bool expression."""

    kind: ClassVar[str] = "select"
    operands: ClassVar[tuple[str, ...]] = ("cond", "a", "b")
    cond: Expr
    a: Expr
    b: Expr
    dtype: str


#: every expression kind, by its name
EXPR_KINDS: dict[str, type[Expr]] = {cls.kind: cls for cls in (
    Load, GuardedLoad, IndirectLoad, Index, Const, Cast, Unary, Binary, Ternary, Select)}
#: the kinds that read a buffer, and those of them that read it at an affine index
READ_KINDS = frozenset({Load, GuardedLoad, IndirectLoad})
AFFINE_READ_KINDS = frozenset({Load, GuardedLoad})

H = TypeVar("H")


class KindTable(Generic[H]):
    """One visitor's handler for every expression kind (fx's ``run_node``: dispatch by table,
    not by the order of ``isinstance`` tests). A handler is found by the node's exact class, so
    a subclass never falls into its base's handler; a table that lacks a kind fails when it is
    built, and a node of a class that is no kind fails when it is met."""

    def __init__(self, visitor: str, handlers: Mapping[type[Expr], H]) -> None:
        kinds = set(EXPR_KINDS.values())
        missing = sorted(cls.kind for cls in kinds - set(handlers))
        foreign = sorted(cls.__name__ for cls in set(handlers) - kinds)
        if missing or foreign:
            raise TypeError(f"{visitor}: no handler for the expression kinds {missing}" if missing
                            else f"{visitor}: handlers for classes that are no expression kind "
                                 f"{foreign}")
        self.visitor = visitor
        self.handlers: dict[type[Expr], H] = dict(handlers)

    def handler(self, cls: type[Expr]) -> H:
        try:
            return self.handlers[cls]
        except KeyError:
            raise TypeError(f"{self.visitor}: {cls.__name__} is no expression kind") from None

    def __call__(self, e: Expr, *args: Any) -> Any:
        return self.handler(type(e))(e, *args)  # type: ignore[operator]


def postorder(root: Expr) -> Iterator[Expr]:
    """Every DAG node once, operands before users. An expression never changes: its order is
    kept while it lives (rerolling an unrolled loop's 400 rows walked each body a few dozen
    times: 0.9 s of a 1.1 s first call)."""
    before = _ORDERS.get(root)
    if before is None:  # (the root itself is not kept: a value holding its key never dies)
        before = _ORDERS[root] = tuple(_walk(root))[:-1]
    return itertools.chain(before, (root,))


#: each expression's ``postorder`` but itself, for as long as the expression lives
_ORDERS: weakref.WeakKeyDictionary[Expr, tuple[Expr, ...]] = weakref.WeakKeyDictionary()


def _walk(root: Expr) -> Iterator[Expr]:
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in seen:
            continue
        if expanded:
            seen.add(id(node))
            yield node
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(node.children()) if id(c) not in seen)


def rewrite(root: Expr, replace_node: Callable[[Expr], Expr | None]) -> Expr:
    """``root`` with every node for which ``replace_node`` returns an expression replaced by it
    (its operands are not visited then); the rest rebuilt only where an operand changed (a
    load's guard or offset included), so shared subexpressions stay shared."""
    memo: dict[int, Expr] = {}

    def visit(e: Expr) -> Expr:
        done = memo.get(id(e))
        if done is not None:
            return done
        out = replace_node(e)
        if out is None:
            kids = e.children()
            new = tuple(visit(k) for k in kids)
            if all(a is b for a, b in zip(kids, new)):
                out = e
            else:
                out = e.with_children(new)
        memo[id(e)] = out
        return out
    return visit(root)


#: an expression that reads a buffer
Read = Load | GuardedLoad | IndirectLoad


def loads(root: Expr) -> list[Read]:
    """Every read of a buffer in ``root`` (indirect ones included: their buffer is read anywhere,
    and they have no ``index``)."""
    return [e for e in postorder(root) if type(e) in READ_KINDS]


def affine_loads(root: Expr) -> list[Load]:
    """The reads of ``root`` at an index affine in the loop variables (``Load``, ``GuardedLoad``)."""
    return [e for e in postorder(root) if type(e) in AFFINE_READ_KINDS]


# -- text and JSON -------------------------------------------------------------------------------

Refs = dict[int, Any]  # id of an operand node -> its name (text) or number (JSON)

_DESCRIBE: KindTable[Callable[[Any, Refs], str]] = KindTable("format_expr", {
    Load: lambda e, ref: f"load {e.buffer}[{e.index}]",
    GuardedLoad: lambda e, ref: f"load {e.buffer}[{e.index}] if {ref[id(e.guard)]} else 0",
    IndirectLoad: lambda e, ref: f"load {e.buffer}[{ref[id(e.offset)]}]",
    Index: lambda e, ref: f"index {e.index}",
    Const: lambda e, ref: f"const {e.value!r}",
    Cast: lambda e, ref: f"cast {ref[id(e.x)]}",
    Unary: lambda e, ref: f"{e.op} {ref[id(e.x)]}",
    Binary: lambda e, ref: f"{e.op} {ref[id(e.a)]}, {ref[id(e.b)]}",
    Ternary: lambda e, ref: f"{e.op} {ref[id(e.a)]}, {ref[id(e.b)]}, {ref[id(e.c)]}",
    Select: lambda e, ref: f"select {ref[id(e.cond)]}, {ref[id(e.a)]}, {ref[id(e.b)]}",
})


def format_expr(root: Expr, indent: str = "    ") -> list[str]:
    ref: Refs = {}
    lines = []
    for i, e in enumerate(postorder(root)):
        ref[id(e)] = f"t{i}"
        lines.append(f"{indent}t{i}: {e.dtype} = {_DESCRIBE(e, ref)}")
    return lines


#: each kind's JSON fields after ``[kind, dtype]``
_TO_JSON: KindTable[Callable[[Any, Refs], list[Any]]] = KindTable("expr_to_json", {
    Load: lambda e, ref: [e.buffer, e.index.to_json()],
    GuardedLoad: lambda e, ref: [e.buffer, e.index.to_json(), ref[id(e.guard)]],
    IndirectLoad: lambda e, ref: [e.buffer, ref[id(e.offset)]],
    Index: lambda e, ref: [e.index.to_json()],
    Const: lambda e, ref: [encode_value(e.value)],
    Cast: lambda e, ref: [ref[id(e.x)]],
    Unary: lambda e, ref: [e.op, ref[id(e.x)]],
    Binary: lambda e, ref: [e.op, ref[id(e.a)], ref[id(e.b)]],
    Ternary: lambda e, ref: [e.op, ref[id(e.a)], ref[id(e.b)], ref[id(e.c)]],
    Select: lambda e, ref: [ref[id(e.cond)], ref[id(e.a)], ref[id(e.b)]],
})


def expr_to_json(root: Expr) -> list[Any]:
    ref: Refs = {}
    out: list[Any] = []
    for e in postorder(root):
        ref[id(e)] = len(out)
        out.append([e.kind, e.dtype, *_TO_JSON(e, ref)])
    return out


#: each kind's node from its dtype, its JSON fields and the nodes decoded before it
_FROM_JSON: KindTable[Callable[[str, list[Any], list[Expr]], Expr]] = KindTable("expr_from_json", {
    Load: lambda dtype, f, nodes: Load(f[0], Affine.from_json(f[1]), dtype),
    GuardedLoad: lambda dtype, f, nodes: GuardedLoad(f[0], Affine.from_json(f[1]), dtype,
                                                     nodes[f[2]]),
    IndirectLoad: lambda dtype, f, nodes: IndirectLoad(f[0], dtype, nodes[f[1]]),
    Index: lambda dtype, f, nodes: Index(Affine.from_json(f[0]), dtype),
    Const: lambda dtype, f, nodes: Const(decode_value(f[0]), dtype),
    Cast: lambda dtype, f, nodes: Cast(nodes[f[0]], dtype),
    Unary: lambda dtype, f, nodes: Unary(f[0], nodes[f[1]], dtype),
    Binary: lambda dtype, f, nodes: Binary(f[0], nodes[f[1]], nodes[f[2]], dtype),
    Ternary: lambda dtype, f, nodes: Ternary(f[0], nodes[f[1]], nodes[f[2]], nodes[f[3]], dtype),
    Select: lambda dtype, f, nodes: Select(nodes[f[0]], nodes[f[1]], nodes[f[2]], dtype),
})


def expr_from_json(doc: list[Any]) -> Expr:
    nodes: list[Expr] = []
    for kind, dtype, *fields in doc:
        cls = EXPR_KINDS.get(kind)
        if cls is None:
            raise ValueError(f"unknown expression kind {kind!r}")
        nodes.append(_FROM_JSON.handler(cls)(dtype, fields, nodes))
    return nodes[-1]
