"""A NaN-seen flag carried beside an extreme (``x.max()``, argmax's pass one), whose numbers'
extreme leaves NaNs out: an integer as wide as the float, nonzero once a NaN was seen (the NaN's
own bits or'ed in: a NaN's are never zero). A flag of one bit, or a mask or'ed in (which the
loop vectorizer narrows to bytes), cost a pack and an extract a vector: 1M float32 ``max`` and
``argmax`` ran at half NumPy's speed on AVX2 (AMD Zen 3)."""

from __future__ import annotations

from llvmlite import ir

from .registry import Emitter


def nan_flag_type(typ: ir.Type) -> ir.IntType:
    """The flag's type beside an extreme of ``typ`` (an integer's: its own, never set)."""
    return ir.IntType(typ.width if isinstance(typ, ir.IntType) else
                      {"half": 16, "float": 32, "double": 64}[str(typ)])


def nan_bits(em: Emitter, number: ir.Value, x: ir.Value, flag: ir.Value) -> ir.Value:
    """``flag`` with ``x``'s bits or'ed in where ``x`` is not a ``number``."""
    b = em.builder
    return b.or_(flag, b.select(number, ir.Constant(flag.type, 0), b.bitcast(x, flag.type)))


def nan_seen(em: Emitter, flag: ir.Value) -> ir.Value:
    return em.builder.icmp_unsigned("!=", flag, ir.Constant(flag.type, 0))
