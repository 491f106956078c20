"""Emitters of the bit operators: and, or, xor (logical on bool), shifts with NumPy's answer for
counts outside the width, popcount, a float's sign bit, and a bit cast."""

from __future__ import annotations

from llvmlite import ir

from stax.loop import Binary, Unary

from .registry import Emitter, binary, unary
from .types import is_signed, value_type


@binary("or", "and", "xor")
def bitwise(em: Emitter, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
    b = em.builder
    return {"or": b.or_, "and": b.and_, "xor": b.xor}[e.op](a, c)


@binary("shl", "shr")
def shift(em: Emitter, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
    """NumPy's shifts: a count outside [0, bits) (compared unsigned, so negative counts too)
    gives 0, or -1 for a negative signed value shifted right (LLVM leaves it undefined)."""
    b = em.builder
    width = ir.Constant(a.type, a.type.width)
    inside = b.icmp_unsigned("<", c, width)
    safe = b.select(inside, c, ir.Constant(a.type, 0))
    if e.op == "shl":
        return b.select(inside, b.shl(a, safe), ir.Constant(a.type, 0))
    if is_signed(e.dtype):
        beyond = b.ashr(a, ir.Constant(a.type, a.type.width - 1))  # 0 or -1
        return b.select(inside, b.ashr(a, safe), beyond)
    return b.select(inside, b.lshr(a, safe), ir.Constant(a.type, 0))


@unary("popcount")
def popcount(em: Emitter, e: Unary, x: ir.Value) -> ir.Value:
    """The set bits of |x|, as NumPy's, as a uint8."""
    b = em.builder
    if is_signed(e.x.dtype):
        x = b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)),
                     b.sub(ir.Constant(x.type, 0), x), x)  # MIN wraps to itself: 1 bit
    count = b.call(em.fn.module.declare_intrinsic("llvm.ctpop", [x.type]), [x])
    return b.trunc(count, ir.IntType(8)) if x.type.width > 8 else count


@unary("signbit")
def signbit(em: Emitter, e: Unary, x: ir.Value) -> ir.Value:
    """The float operand's sign bit (the node's dtype is the bool result's)."""
    b = em.builder
    bits = b.bitcast(x, ir.IntType(64 if x.type.intrinsic_name == "f64" else 32))
    return b.icmp_signed("<", bits, ir.Constant(bits.type, 0))


@unary("bitcast")
def bitcast(em: Emitter, e: Unary, x: ir.Value) -> ir.Value:
    """The operand's bits read as the result dtype (of the same width)."""
    return em.builder.bitcast(x, value_type(e.dtype))
