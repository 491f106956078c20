"""Emitters of the comparisons, the bit operators (and, or, xor: logical on bool; shifts with
NumPy's answer for counts outside the width; popcount; a float's sign bit; a bit cast) and
integer ``//`` and ``%`` as NumPy computes them (the quotient rounded toward minus infinity, 0
for a zero divisor, ``MIN // -1`` wrapping): the divisor is made safe before dividing, since
Triton's integer division truncates and is undefined for those divisors."""

from __future__ import annotations

import numpy as np

from stax.loop import Binary, Const, Unary

from .registry import Writer, binary, unary
from .source import is_signed, tl_dtype

PREDICATES = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
BITWISE = {"or": "|", "and": "&", "xor": "^"}


@binary(*PREDICATES)
def compare(w: Writer, e: Binary, a: str, b: str) -> str:
    """Floats ordered (false where either side is NaN), except ``!=``, true there; integers by
    their signedness: Triton's comparisons, as NumPy's."""
    return f"{a} {PREDICATES[e.op]} {b}"


@binary(*BITWISE)
def bitwise(w: Writer, e: Binary, a: str, b: str) -> str:
    return f"{a} {BITWISE[e.op]} {b}"


@binary("shl", "shr")
def shift(w: Writer, e: Binary, a: str, b: str) -> str:
    """A count outside [0, bits) gives 0, or -1 for a negative signed value shifted right."""
    bits = np.dtype(e.dtype).itemsize * 8
    zero = w.const(0, e.dtype)
    inside = f"({b} < {w.const(bits, e.dtype)})"
    if is_signed(e.dtype):
        inside = f"({b} >= {zero}) & {inside}"
    inside = w.assign(inside, "inside")
    safe = w.assign(f"tl.where({inside}, {b}, {zero})")
    if e.op == "shl":
        return f"tl.where({inside}, {a} << {safe}, {zero})"
    beyond = f"{a} >> {w.const(bits - 1, e.dtype)}" if is_signed(e.dtype) else zero
    return f"tl.where({inside}, {a} >> {safe}, {beyond})"


@binary("floordiv", "mod")
def integer_divmod(w: Writer, e: Binary, a: str, b: str) -> str:
    zero, one = w.const(0, e.dtype), w.const(1, e.dtype)
    if isinstance(e.b, Const) and int(e.b.value) > 0:  # a reshape's or an index's divisor
        if not is_signed(e.dtype):
            return f"{a} // {b}" if e.op == "floordiv" else f"{a} % {b}"
        r = w.assign(f"{a} % {b}")  # truncated: the sign of a
        if e.op == "floordiv":
            return f"tl.where({r} < {zero}, {a} // {b} - {one}, {a} // {b})"
        return f"tl.where({r} < {zero}, {r} + {b}, {r})"
    if not is_signed(e.dtype):
        safe = w.assign(f"tl.where({b} == {zero}, {one}, {b})")
        value = f"{a} // {safe}" if e.op == "floordiv" else f"{a} % {safe}"
        return f"tl.where({b} == {zero}, {zero}, {value})"
    minus_one = w.const(-1, e.dtype)
    unsafe = w.assign(f"({b} == {zero}) | ({b} == {minus_one})", "unsafe")
    safe = w.assign(f"tl.where({unsafe}, {one}, {b})")
    q = w.assign(f"{a} // {safe}")  # truncated
    r = w.assign(f"{a} - {q} * {safe}")
    adjust = w.assign(f"({r} != {zero}) & (({r} < {zero}) != ({safe} < {zero}))", "adjust")
    if e.op == "floordiv":
        floor = f"tl.where({adjust}, {q} - {one}, {q})"
        return f"tl.where({b} == {zero}, {zero}, tl.where({b} == {minus_one}, {zero} - {a}, {floor}))"
    rem = f"tl.where({adjust}, {r} + {safe}, {r})"
    return f"tl.where({unsafe}, {zero}, {rem})"


#: the unsigned type of each width, and the width libdevice's popc takes
_UNSIGNED = {1: "tl.uint8", 2: "tl.uint16", 4: "tl.uint32", 8: "tl.uint64"}


@unary("popcount")
def popcount(w: Writer, e: Unary, x: str) -> str:
    """The set bits of |x| (MIN's magnitude wraps to itself: one bit) as a uint8."""
    dtype = e.x.dtype
    if is_signed(dtype):
        x = w.assign(f"tl.where({x} < 0, {w.const(0, dtype)} - {x}, {x})")
    size = np.dtype(dtype).itemsize
    bits = f"{x}.to({_UNSIGNED[size]}, bitcast=True)"
    wide = "tl.int64" if size == 8 else "tl.int32"
    widened = f"{bits}.to({'tl.uint64' if size == 8 else 'tl.uint32'}).to({wide}, bitcast=True)"
    return f"libdevice.popc({widened}).to(tl.uint8)"


@unary("signbit")
def signbit(w: Writer, e: Unary, x: str) -> str:
    """The float operand's sign bit (the node's dtype is the bool result's)."""
    width = "tl.int64" if e.x.dtype == "float64" else "tl.int32"
    return f"{x}.to({width}, bitcast=True) < 0"


@unary("bitcast")
def bitcast(w: Writer, e: Unary, x: str) -> str:
    """The operand's bits read as the result dtype (of the same width)."""
    return f"{x}.to({tl_dtype(e.dtype)}, bitcast=True)"
