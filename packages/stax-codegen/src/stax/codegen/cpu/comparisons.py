"""Emitters of the comparison operators (bool results from operands of one dtype)."""

from __future__ import annotations

from llvmlite import ir

from stax.loop import Binary

from .registry import Emitter, binary
from .types import is_float, is_signed

PREDICATES = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


@binary(*PREDICATES)
def compare(em: Emitter, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
    """Floats ordered (false where either side is NaN, and quiet where the kernel reads the
    CPU's flags: ``fpchecks.ordered``), except ``!=``, true where either side is NaN; integers
    by their signedness."""
    b = em.builder
    symbol = PREDICATES[e.op]
    dtype = e.a.dtype
    if is_float(dtype):
        return b.fcmp_unordered(symbol, a, c) if e.op == "ne" else em.ordered(symbol, a, c)
    return (b.icmp_signed if is_signed(dtype) else b.icmp_unsigned)(symbol, a, c)
