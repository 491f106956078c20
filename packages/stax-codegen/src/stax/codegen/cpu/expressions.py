"""The CPU emitter's handler of each loop-IR expression kind (a ``KindTable``: a kind without
one fails when the table is built): reads of buffers, index values, constants, casts, selects,
and the unary and binary operators, looked up by name in ``registry``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir

from stax.ir.sizes import Size
from stax.loop import (
    Binary,
    Cast,
    Const,
    GuardedLoad,
    Index,
    IndirectLoad,
    KindTable,
    Load,
    Select,
    Ternary,
    Unary,
)

from .registry import Emitter, binary_emitter, ternary_emitter, unary_emitter
from .types import is_float, is_signed, memory_type, value_type


def _as_value(b: ir.IRBuilder, raw: ir.Value, dtype: str) -> ir.Value:
    """A loaded element as a value: a bool is stored as a byte and computed with as an i1."""
    return b.icmp_unsigned("!=", raw, ir.Constant(raw.type, 0)) if dtype == "bool" else raw


def load(em: Emitter, e: Load) -> ir.Value:
    """``buffer[index]``, or the value this iteration computed for that element already.

    A load from memory the kernel also stores over (``x[x < 0] = 0`` written in place) is
    frozen: LLVM's x86 back end turns ``store(select(m, v, load p), p)`` into a masked store,
    ``vmaskmovps``, microcoded on some AVX2 hosts: an AMD EPYC (znver3) ran the in-place select
    of 200K float32 in 146 us against 18 us with a plain store, and 3-8x slower at every size
    from 8K to 16M, changed elements or not. A freeze is no instruction; it only hides that the
    stored value may be the loaded one, so the vector store stays a plain store."""
    local = em.local.get(e.buffer)
    if local is not None and local[0] == e.index:
        return local[1]
    b = em.builder
    raw = b.load(b.gep(em.pointers[e.buffer], [em.index(e.index)]))
    return _as_value(b, freeze(b, raw) if e.buffer in em.rewritten else raw, e.dtype)


def freeze(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """LLVM's ``freeze`` of ``value`` (llvmlite's builder has none)."""
    frozen = ir.Instruction(b.block, value.type, "freeze", [value])
    b._insert(frozen)  # the builder's one way to place an instruction it has no method for
    return frozen


def guarded_load(em: Emitter, e: GuardedLoad) -> ir.Value:
    """``guard ? buffer[index] : 1`` with the load on a branch of its own: the index may be
    outside the buffer where the guard is false. LLVM if-converts this into a masked load
    when it vectorizes the loop. Where the guard is false a select discards whatever is
    computed from the stand-in (``stax.loop.context.guarded``); 1 rather than 0 keeps the usual
    work there (``v / norm``, ``sqrt``, ``log``) from raising the CPU flags a fast kernel reads
    (``0 / 0`` beside ``Q[:, j] = v / norm(v)`` sent every call to the exact kernels)."""
    b = em.builder
    guard = em.value(e.guard)
    typ = memory_type(e.dtype)
    # the address is computed before the branch (values cached for later uses must dominate
    # them); only the load is conditional
    address = b.gep(em.pointers[e.buffer], [em.index(e.index)])
    before = b.block
    reading = em.fn.append_basic_block("guarded_load")
    joined = em.fn.append_basic_block("guarded_done")
    b.cbranch(guard, reading, joined)
    b.position_at_end(reading)
    raw = b.load(address)
    b.branch(joined)
    b.position_at_end(joined)
    value = b.phi(typ)
    value.add_incoming(em.opaque(ir.Constant(typ, 0 if e.dtype == "bool" else 1)), before)
    value.add_incoming(raw, reading)
    return _as_value(b, value, e.dtype)


def indirect_load(em: Emitter, e: IndirectLoad) -> ir.Value:
    b = em.builder
    return _as_value(b, b.load(b.gep(em.pointers[e.buffer], [em.value(e.offset)])), e.dtype)


def index(em: Emitter, e: Index) -> ir.Value:
    """An affine index as an integer of the node's dtype."""
    b = em.builder
    at = em.coordinates(e.index)
    typ = value_type(e.dtype)
    if at.type.width == typ.width:
        return at
    return b.trunc(at, typ) if at.type.width > typ.width else b.sext(at, typ)


def cast(b: ir.IRBuilder, x: ir.Value, src: str, dst: str) -> ir.Value:
    """``x`` of dtype ``src`` as ``dst``, as NumPy's ``astype``."""
    to = value_type(dst)
    if src == dst:
        return x
    if dst == "bool":
        zero = ir.Constant(x.type, 0.0 if is_float(src) else 0)
        return b.fcmp_unordered("!=", x, zero) if is_float(src) else b.icmp_unsigned("!=", x, zero)
    if is_float(src) and is_float(dst):
        return b.fpext(x, to) if to.intrinsic_name == "f64" else b.fptrunc(x, to)
    if is_float(dst):
        return b.sitofp(x, to) if is_signed(src) else b.uitofp(x, to)
    if is_float(src):
        return b.fptosi(x, to) if is_signed(dst) else b.fptoui(x, to)
    if x.type.width == to.width:
        return x
    if x.type.width > to.width:
        return b.trunc(x, to)
    return b.sext(x, to) if is_signed(src) else b.zext(x, to)


def cast_expression(em: Emitter, e: Cast) -> ir.Value:
    """A cast; a bool becomes a number as a select of 1 and 0 with the constants hidden where
    the CPU's flags report events: LLVM rewrites ``uitofp(b) * inf`` as ``select(b, inf, 0 * inf)``
    and folds ``0 * inf`` (or ``1e308 * 10`` further down) at compile time, so the flag NumPy
    reports would never be raised. Elsewhere LLVM turns the select back into the cast."""
    x = em.value(e.x)
    if e.x.dtype != "bool" or e.dtype == "bool":
        return cast(em.builder, x, e.x.dtype, e.dtype)
    typ = value_type(e.dtype)
    one, zero = (1.0, 0.0) if is_float(e.dtype) else (1, 0)
    return em.builder.select(x, em.opaque(ir.Constant(typ, one)), em.opaque(ir.Constant(typ, zero)))


def select(em: Emitter, e: Select) -> ir.Value:
    # constant arms hidden where the CPU's flags report events (``fpchecks.opaque``)
    return em.builder.select(em.value(e.cond), em.opaque(em.value(e.a)),
                             em.opaque(em.value(e.b)))


def constant(em: Any, e: Const) -> ir.Value:
    """A constant; a size (a size-generic kernel's extent or count, issue 15) is the value the
    kernel computed at its entry, converted to the constant's type."""
    typ = value_type(e.dtype)
    if not isinstance(e.value, Size):
        return ir.Constant(typ, int(e.value) if e.dtype == "bool" else e.value)
    value = em.size(e.value)
    if isinstance(typ, ir.IntType):
        return value if typ.width == 64 else em.builder.trunc(value, typ)
    return em.builder.sitofp(value, typ)


#: each kind's value, ``(emitter, node) -> ir.Value``
EXPRESSIONS: KindTable[Callable[[Any, Any], ir.Value]] = KindTable("the CPU emitter", {
    Load: load,
    GuardedLoad: guarded_load,
    IndirectLoad: indirect_load,
    Index: index,
    Const: lambda em, e: constant(em, e),
    Cast: cast_expression,
    Unary: lambda em, e: unary_emitter(e.op)(em, e, em.value(e.x)),
    Binary: lambda em, e: binary_emitter(e.op)(em, e, em.value(e.a), em.value(e.b)),
    Ternary: lambda em, e: ternary_emitter(e.op)(em, e, em.value(e.a), em.value(e.b),
                                                 em.value(e.c)),
    Select: select,
})
