"""The Triton emitter's handler of each loop-IR expression kind (a ``KindTable``: a kind without
one fails when the table is built): reads of buffers (masked by the axes their address varies
along; guarded reads also by their guard), index values, typed constants, casts, selects, and the
unary and binary operators, looked up by name in ``registry``. Each returns the source of its
value; the writer assigns it to a name (``emit.KernelWriter.value``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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

from .registry import binary_emitter, ternary_emitter, unary_emitter
from .source import tl_dtype

W = Any  # the kernel writer (``emit.KernelWriter``)


def read(w: W, buffer: str, address: str, axes: frozenset[str], guard: str | None = None) -> str:
    """``tl.load`` of ``buffer`` at ``address`` where the lanes' axes are in range (and the
    guard holds): a masked-off lane reads nothing and gets 0. A buffer of no elements has no
    address to read (an empty axis's stride is 0): only masked-off lanes read it, and get 0."""
    if buffer in w.spec.empty:
        return f"tl.zeros({'[XBLOCK, 1]' if w.two_d else '[XBLOCK]'}, {tl_dtype(w.spec.dtypes[buffer])})"
    full = axes | (w.axes_of(guard) if guard is not None else frozenset())
    pointer = w.broadcast(f"{w.spec.pointers[buffer]} + ({address})", axes, full)
    mask = w.mask(full)
    if guard is not None:
        mask = guard if mask is None else f"{mask} & {guard}"
    hint = w.eviction(full)
    return f"tl.load({pointer}{hint})" if mask is None else f"tl.load({pointer}, {mask}, other=0{hint})"


def load(w: W, e: Load) -> str:
    """``buffer[index]``, or the register holding it already (``KernelWriter.held_value``)."""
    held = w.held_value(e.buffer, e.index)
    if held is not None:
        return held
    w.reads_memory(e.buffer)
    address, axes = w.index(e.index)
    name = w.assign(read(w, e.buffer, address, axes), axes=axes)
    w.remember_load(e.buffer, e.index, name)
    return name


def guarded_load(w: W, e: GuardedLoad) -> str:
    """``guard ? buffer[index] : 0``: the address may be outside the buffer where the guard
    is false; the load is masked there."""
    guard = w.value(e.guard)
    w.reads_memory(e.buffer)
    address, axes = w.index(e.index)
    return read(w, e.buffer, address, axes, guard)


def indirect_load(w: W, e: IndirectLoad) -> str:
    offset = w.value(e.offset)
    w.reads_memory(e.buffer)
    return read(w, e.buffer, offset, w.axes_of(offset))


def index(w: W, e: Index) -> str:
    """An affine index as an integer of the node's dtype."""
    text, axes = w.index(e.index)
    if not axes:
        return w.const(e.index.const, e.dtype)
    return f"({text}).to({tl_dtype(e.dtype)})"


def cast(w: W, e: Cast) -> str:
    """``x`` as NumPy's ``astype``: to bool, ``x != 0`` (NaN is true); otherwise Triton's
    conversion (a float out of an integer's range, or NaN, converts otherwise than NumPy's
    undefined C cast: saturated, NaN to 0)."""
    x = w.value(e.x)
    src, dst = e.x.dtype, e.dtype
    if src == dst:
        return x
    if dst == "bool":
        return f"{x} != {w.const(0, src)}"
    return f"{x}.to({tl_dtype(dst)})"


def select(w: W, e: Select) -> str:
    return f"tl.where({w.value(e.cond)}, {w.value(e.a)}, {w.value(e.b)})"


def constant(w: W, e: Const) -> str:
    return w.const(e.value, e.dtype)


#: each kind's source, ``(writer, node) -> str``
EXPRESSIONS: KindTable[Callable[[Any, Any], str]] = KindTable("the Triton emitter", {
    Load: load,
    GuardedLoad: guarded_load,
    IndirectLoad: indirect_load,
    Index: index,
    Const: constant,
    Cast: cast,
    Unary: lambda w, e: unary_emitter(e.op)(w, e, w.value(e.x)),
    Binary: lambda w, e: binary_emitter(e.op)(w, e, w.value(e.a), w.value(e.b)),
    Ternary: lambda w, e: ternary_emitter(e.op)(w, e, w.value(e.a), w.value(e.b), w.value(e.c)),
    Select: select,
})

__all__ = ["EXPRESSIONS"]
