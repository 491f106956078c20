"""NormalizeOperators (spec §4.2, table 4.1): constants to the right of commutative operations,
and only the algebraic identities that hold under IEEE 754."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph import Graph, Node, Opcode
from ..ops import same_index_key
from .base import COMMUTATIVE, call_kwargs, canonical_target, constant_value
from .empty import answered_by_dtype, constant_array, empty_array, empty_region_value, reads_nothing
from .rewrite import is_output_value, substitute

_MUL = ("operator.mul", "numpy.multiply")
_DIV = ("operator.truediv", "numpy.true_divide", "numpy.divide")
_SUB = ("operator.sub", "numpy.subtract")
_ADD = ("operator.add", "numpy.add")
_NEG = ("operator.neg", "numpy.negative")


def _is(value: Any, number: float, sign: int | None = None) -> bool:
    """Whether ``value`` is the real constant ``number`` (of that sign, for a float); never a
    complex constant (``float()`` of one would drop its imaginary part)."""
    if not constant_value(value) or isinstance(value, (bool, np.bool_, complex,
                                                       np.complexfloating)):
        return False
    v = float(value)
    if sign is not None and isinstance(value, (int, np.integer)):
        return v == number and (v != 0 or sign > 0)  # an integer zero converts to +0.0
    return v == number and (sign is None or math.copysign(1.0, v) == sign)


def identity_operand(node: Node) -> Node | None:
    """The operand ``node`` equals by an IEEE-754 identity of table 4.1, if any.

    x*1, x/1, x-(+0), x+(-0), -(-x) hold exactly; x+(+0) does not (-0.0 + 0.0 is +0.0, and
    NumPy's signed zeros are the contract), nor x*0 and reassociation. For a complex x only
    -(-x) and x-(+0) hold: NumPy makes a real operand (r, +0.0) and computes the whole complex
    formula (``(inf+1j) * 1.0`` is ``inf+nanj``, ``-0j + 0.0`` has imaginary part +0.0)."""
    t, args = canonical_target(node), node.args
    if t is None or call_kwargs(node) or not args:
        return None
    if t == "stax.functional.setitem" and len(args) == 3 and isinstance(args[2], Node) and \
            args[2].target == "operator.getitem" and args[2].args[0] is args[0] and \
            same_index_key(args[2].args[1], args[1]):
        return args[0]  # b[k] = b[k]: the tail of ``b[k] += v`` once the update is recorded
    if t in _NEG and isinstance(args[0], Node) and canonical_target(args[0]) in _NEG and \
            isinstance(args[0].args[0], Node):
        return args[0].args[0]
    if len(args) != 2 or not isinstance(args[0], Node):
        return None
    x, c = args
    if "c" in (_kind(x), _kind(node)):
        return x if t in _SUB and _is(c, 0.0, +1) else None
    if (t in _MUL and _is(c, 1.0)) or (t in _DIV and _is(c, 1.0)) or \
            (t in _SUB and _is(c, 0.0, +1)) or (t in _ADD and _is(c, 0.0, -1)):
        return x
    if t in _ADD and _is(c, 0.0) and (_kind(node) in ("i", "u", "b") or _zero_sign_unread(node)):
        return x  # integers have one zero; spec §4.2 accepts x + 0 where no one reads its sign
    return None


#: readers whose result is the same for +0.0 and -0.0 (``exp(-0.0)`` is 1, ``-0.0 < 1`` too)
_SIGN_BLIND = frozenset({"numpy.exp", "numpy.exp2", "numpy.cos", "numpy.cosh", "numpy.abs",
                         "numpy.absolute", "numpy.fabs", "numpy.square", "numpy.log",
                         "numpy.log2", "numpy.log10", "numpy.isnan", "numpy.isfinite",
                         "numpy.isinf", "operator.lt", "operator.le", "operator.gt",
                         "operator.ge", "operator.eq", "operator.ne", "operator.abs"})


def _zero_sign_unread(node: Node) -> bool:
    """Whether nothing can tell the sign of a zero in ``node``'s value: it is read only by
    sign-blind functions (example 4.1's ``(2 * x + 0).exp()``), never returned. Elsewhere
    ``x + 0`` stays: NumPy's ``-0.0 + 0`` is ``+0.0`` (``sum(x)``, an accumulator from 0)."""
    return bool(node.users) and all(u.op is Opcode.CALL_FUNCTION and
                                    canonical_target(u) in _SIGN_BLIND for u in node.users)


def _kind(node: Node) -> str:
    """NumPy's kind letter of ``node``'s dtype ("" when unknown or an object)."""
    meta = node.tensor
    return "" if meta is None or meta.dtype == "object" else np.dtype(meta.dtype).kind


def safe_to_replace(node: Node, x: Node) -> bool:
    """Value is not all: dtype, shape and aliasing must survive (§4.2), judged from metadata."""
    a, b = node.tensor, x.tensor
    if a is None or b is None or a.dtype != b.dtype or a.shape != b.shape or a.scalar != b.scalar:
        return False
    base = _viewed_base(x)
    if (base.op is Opcode.PLACEHOLDER or base.meta.get("aliases") or is_output_value(base) or
            is_output_value(x)) and _returned_through_views(node):
        return False  # an output (or a view of it) would alias an input, or another output
    return True


def _viewed_base(x: Node) -> Node:
    """The value whose memory ``x`` views through a chain of views (``x[1]``, ``x.T``,
    ``x.reshape(-1)``: meta ``view``), or ``x``: ``x[1] * 1`` returned as ``x[1]`` would be a view
    of the argument (found by a probe: writing into the result wrote into the caller's array)."""
    while x.meta.get("view") is not None and x.args and isinstance(x.args[0], Node):
        x = x.args[0]
    return x


def _returned_through_views(node: Node) -> bool:
    """Whether ``node`` or a view of it (``x.T``, ``x[1:]``: meta ``view``) is an output. Such an
    output shares ``node``'s memory, which eager's ``x * 1`` made new: put ``x`` there, and the
    output would alias ``x`` — and show its later in-place updates."""
    stack, seen = [node], {node}
    while stack:
        n = stack.pop()
        if is_output_value(n):
            return True
        for user in n.users:
            if user not in seen and user.meta.get("view") is not None and user.args and \
                    user.args[0] is n:
                seen.add(user)
                stack.append(user)
    return False


@dataclass
class NormalizeOperators:
    name: str = "NormalizeOperators"
    last_summary: str = field(default="", compare=False)

    def run(self, graph: Graph) -> bool:
        notes = []
        for node in list(graph.nodes):
            if node.effectful:  # a draw is rewritten by no rule (``Node.effectful``)
                continue
            if canonical_target(node) in COMMUTATIVE and len(node.args) == 2 and \
                    not call_kwargs(node) and constant_value(node.args[0]) \
                    and isinstance(node.args[1], Node) and _kind(node) != "c":
                # (a complex product is not commutative bit for bit: NumPy's loop computes
                # ``fma(a, d, b*c)``, so ``c * x`` and ``x * c`` differ in the last bits)
                node.set_args((node.args[1], node.args[0]))
                notes.append(f"constant of %{node.name} moved to the right")
            x = identity_operand(node)
            if x is not None and safe_to_replace(node, x):
                notes.append(f"%{node.name} is %{x.name}")
                substitute(graph, node, x)
                continue
            value = empty_region_value(node)
            if value is not None:  # y[k] = v over no element: v is not read (empty.py)
                node.set_args((node.args[0], node.args[1], False if node.tensor.dtype == "bool"
                               else 0))
                notes.append(f"%{node.name} assigns to no element: %{value.name} is not read")
            elif reads_nothing(node):
                zeros = empty_array(graph, node)
                notes.append(f"%{node.name} is empty: %{zeros.name}")
                substitute(graph, node, zeros)
            elif (answer := answered_by_dtype(node)) is not None:
                made = constant_array(graph, node, answer)
                notes.append(f"%{node.name} is {answer} by its operand's dtype: %{made.name}")
                substitute(graph, node, made)
        self.last_summary = "; ".join(notes)
        return bool(notes)
