"""Loop bodies as data: immutable expression DAGs (STYLE.md habit 4, spec §6).

A body is printed, hashed, serialized and inspected without running it. Sharing is by object
identity: the same subexpression object used twice is one DAG node, and the serialized form keeps
that (nodes are numbered once, referenced by number).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from stax.ir.serialize import decode_value, encode_value

from .index import Affine

#: loop-level operators and their arity.
#: ``or``/``and``/``xor`` are bitwise (logical on bool); ``shl``/``shr`` follow NumPy for counts
#: outside [0, bits) (0, or -1 for a negative signed value shifted right)
BINARY_OPS = ("add", "sub", "mul", "truediv", "maximum", "minimum", "or", "and", "xor", "shl",
              "shr", "copysign", "floordiv", "mod", "hypot", "pow", "arctan2", "logaddexp",
              "logaddexp2", "ldexp", "py_floordiv", "py_mod")
# ldexp: a float and an int64 operand; py_floordiv/py_mod: float // and % by NumPy's npy_divmod
COMPARISON_OPS = ("lt", "le", "gt", "ge", "eq", "ne")  # operands in a common dtype, result bool
UNARY_OPS = ("neg", "abs", "sqrt", "floor", "ceil", "trunc", "rint", "exp", "log", "tanh",
             "sin", "cos", "log2", "log10", "log1p", "expm1", "exp2", "sinh", "cosh", "cbrt",
             "arctan", "arcsin", "arccos", "arcsinh", "arccosh", "arctanh", "tan",
             "signbit", "popcount", "bitcast")
# signbit: float operand, bool result; popcount: uint8; bitcast: the operand's bits read as the
# (same-width) result dtype


class Expr:
    dtype: str

    def children(self) -> tuple[Expr, ...]:
        return ()


@dataclass(frozen=True, eq=False)
class Load(Expr):
    buffer: str
    index: Affine
    dtype: str


@dataclass(frozen=True, eq=False)
class GuardedLoad(Load):
    """``buffer[index]`` where ``guard`` holds, else 0: the piece of a concatenation or the inside
    of a padding. The index may leave the buffer where the guard is false; it is never read
    there (the emitter branches, which LLVM turns into masked vector loads)."""

    guard: Expr = None  # type: ignore[assignment]

    def children(self) -> tuple[Expr, ...]:
        return (self.guard,)


@dataclass(frozen=True, eq=False)
class IndirectLoad(Load):
    """``buffer`` at the element offset computed by ``offset`` (an int64 expression): reads that
    are not affine in the loop variables, as a reshape of a non-contiguous array (floor division
    and remainder of the flat index). ``index`` is the constant 0 and means nothing here: the
    scheduler treats the buffer as read anywhere."""

    offset: Expr = None  # type: ignore[assignment]

    def children(self) -> tuple[Expr, ...]:
        return (self.offset,)


@dataclass(frozen=True, eq=False)
class Index(Expr):
    """The value of an affine expression of the loop variables, as an integer of ``dtype``
    (``np.arange``, ``np.eye``, ``np.tril``'s diagonal test)."""

    index: Affine
    dtype: str


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: Any
    dtype: str


@dataclass(frozen=True, eq=False)
class Cast(Expr):
    x: Expr
    dtype: str

    def children(self) -> tuple[Expr, ...]:
        return (self.x,)


@dataclass(frozen=True, eq=False)
class Unary(Expr):
    op: str
    x: Expr
    dtype: str

    def children(self) -> tuple[Expr, ...]:
        return (self.x,)


@dataclass(frozen=True, eq=False)
class Binary(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: str

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True, eq=False)
class Select(Expr):
    """``cond ? a : b`` with ``cond`` a bool expression."""

    cond: Expr
    a: Expr
    b: Expr
    dtype: str

    def children(self) -> tuple[Expr, ...]:
        return (self.cond, self.a, self.b)


def postorder(root: Expr) -> Iterator[Expr]:
    """Every DAG node once, operands before users."""
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
    (its operands are not visited then); the rest rebuilt only where an operand changed, so
    shared subexpressions stay shared."""
    memo: dict[int, Expr] = {}

    def visit(e: Expr) -> Expr:
        done = memo.get(id(e))
        if done is not None:
            return done
        out = replace_node(e)
        if out is None:
            kids = e.children()
            new = [visit(k) for k in kids]
            if all(a is b for a, b in zip(kids, new)):
                out = e
            elif isinstance(e, Cast | Unary):
                out = dataclasses.replace(e, x=new[0])
            elif isinstance(e, Binary):
                out = dataclasses.replace(e, a=new[0], b=new[1])
            elif isinstance(e, Select):
                out = dataclasses.replace(e, cond=new[0], a=new[1], b=new[2])
            else:  # loads with operands (guard, offset) are replaced whole or kept
                out = e
        memo[id(e)] = out
        return out
    return visit(root)


def loads(root: Expr) -> list[Load]:
    return [e for e in postorder(root) if isinstance(e, Load)]


# -- text and JSON -------------------------------------------------------------------------------


def _describe(e: Expr, ref: dict[int, str]) -> str:
    if isinstance(e, GuardedLoad):
        return f"load {e.buffer}[{e.index}] if {ref[id(e.guard)]} else 0"
    if isinstance(e, IndirectLoad):
        return f"load {e.buffer}[{ref[id(e.offset)]}]"
    if isinstance(e, Load):
        return f"load {e.buffer}[{e.index}]"
    if isinstance(e, Index):
        return f"index {e.index}"
    if isinstance(e, Const):
        return f"const {e.value!r}"
    if isinstance(e, Cast):
        return f"cast {ref[id(e.x)]}"
    if isinstance(e, Unary):
        return f"{e.op} {ref[id(e.x)]}"
    if isinstance(e, Binary):
        return f"{e.op} {ref[id(e.a)]}, {ref[id(e.b)]}"
    if isinstance(e, Select):
        return f"select {ref[id(e.cond)]}, {ref[id(e.a)]}, {ref[id(e.b)]}"
    raise TypeError(type(e).__name__)


def format_expr(root: Expr, indent: str = "    ") -> list[str]:
    ref: dict[int, str] = {}
    lines = []
    for i, e in enumerate(postorder(root)):
        ref[id(e)] = f"t{i}"
        lines.append(f"{indent}t{i}: {e.dtype} = {_describe(e, ref)}")
    return lines


def expr_to_json(root: Expr) -> list[Any]:
    ref: dict[int, int] = {}
    out: list[Any] = []
    for e in postorder(root):
        ref[id(e)] = len(out)
        if isinstance(e, GuardedLoad):
            out.append(["guarded_load", e.dtype, e.buffer, e.index.to_json(), ref[id(e.guard)]])
        elif isinstance(e, IndirectLoad):
            out.append(["indirect_load", e.dtype, e.buffer, ref[id(e.offset)]])
        elif isinstance(e, Load):
            out.append(["load", e.dtype, e.buffer, e.index.to_json()])
        elif isinstance(e, Index):
            out.append(["index", e.dtype, e.index.to_json()])
        elif isinstance(e, Const):
            out.append(["const", e.dtype, encode_value(e.value)])
        elif isinstance(e, Cast):
            out.append(["cast", e.dtype, ref[id(e.x)]])
        elif isinstance(e, Unary):
            out.append(["unary", e.dtype, e.op, ref[id(e.x)]])
        elif isinstance(e, Binary):
            out.append(["binary", e.dtype, e.op, ref[id(e.a)], ref[id(e.b)]])
        elif isinstance(e, Select):
            out.append(["select", e.dtype, ref[id(e.cond)], ref[id(e.a)], ref[id(e.b)]])
    return out


def expr_from_json(doc: list[Any]) -> Expr:
    nodes: list[Expr] = []
    for kind, dtype, *rest in doc:
        if kind == "load":
            nodes.append(Load(rest[0], Affine.from_json(rest[1]), dtype))
        elif kind == "indirect_load":
            nodes.append(IndirectLoad(rest[0], Affine(), dtype, nodes[rest[1]]))
        elif kind == "guarded_load":
            nodes.append(GuardedLoad(rest[0], Affine.from_json(rest[1]), dtype, nodes[rest[2]]))
        elif kind == "index":
            nodes.append(Index(Affine.from_json(rest[0]), dtype))
        elif kind == "const":
            nodes.append(Const(decode_value(rest[0]), dtype))
        elif kind == "cast":
            nodes.append(Cast(nodes[rest[0]], dtype))
        elif kind == "unary":
            nodes.append(Unary(rest[0], nodes[rest[1]], dtype))
        elif kind == "binary":
            nodes.append(Binary(rest[0], nodes[rest[1]], nodes[rest[2]], dtype))
        elif kind == "select":
            nodes.append(Select(nodes[rest[0]], nodes[rest[1]], nodes[rest[2]], dtype))
        else:
            raise ValueError(f"unknown expression kind {kind!r}")
    return nodes[-1]
