"""The state of one op-graph-to-loops lowering, and the helpers every lowering rule builds with.

Each op-graph value becomes a ``Lazy``: its shape, dtype and a *loader* that, given an index
expression per dimension, returns the expression computing that element. A pointwise op's loader
calls its operands' loaders, so composing loaders inlines producers into consumers: lowering is
element-wise fusion (spec §6.3). Only what must live in memory is realized as a
``ComputedBuffer`` (§6.6): reductions (their consumers read them back) and the function's outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from stax.ir import GraphProgram, Node, TensorMeta, UnsupportedError, contiguous_strides, dense_strides
from stax.ir.sizes import Size, is_symbolic, same_size

from .expr import (
    Binary,
    Cast,
    Const,
    Expr,
    GuardedLoad,
    Index,
    IndirectLoad,
    Load,
    Select,
    Unary,
    rewrite,
)
from .index import Affine, linear_index
from .ir import ComputedBuffer, ExternCall, InputBuffer, Pointwise, Reduction, rvar, xvar
from .options import TRIG_REDUCTION_LIMIT, LoopOptions

Loader = Callable[[tuple[Affine, ...]], Expr]
#: a complex dtype's parts, and back
PARTS_OF = {"complex64": "float32", "complex128": "float64"}
COMPLEX_OF = {part: whole for whole, part in PARTS_OF.items()}


def part_strides(strides: tuple[int, ...]) -> tuple[int, ...]:
    """A complex array's strides (in elements) counted in parts, with the part's own stride."""
    return (*(2 * s for s in strides), 1)
#: the dtype of index arithmetic in expressions (``Index``)
INDEX = "int64"


def scalar_constant(value: Any, dtype: str) -> Expr:
    """A scalar operand (a Python or NumPy number) as ``dtype``. A finite float that overflows
    in that cast (``x *= 1e308`` of float32) stays its own double and is cast in the kernel:
    NumPy reports "overflow encountered in cast" on every call, so the event belongs to each
    call (a narrowing cast reports it, ``fpevents``), not once to the compile that folded it."""
    target = np.dtype(dtype)
    if isinstance(value, Size):  # a size the function read (``x / x.shape[0]``): a Python int
        if target.kind not in "iuf":
            raise TypeError(f"a size as a {dtype} constant")
        if target.kind in "iu" and not value <= np.iinfo(target).max:  # a guard: in range
            raise TypeError(f"a size past the range of {dtype}")
        return Const(value, dtype)  # the kernel computes it at entry and converts it
    if target.kind == "f" and isinstance(value, (float, np.floating)):
        source = np.asarray(value).dtype
        if source.itemsize > target.itemsize and np.isfinite(value):
            with np.errstate(over="ignore"):
                narrowed = target.type(value)
            if not np.isfinite(narrowed):
                return Cast(Const(float(value), source.name), dtype)
    if target.kind == "f" and target.itemsize < 8 and isinstance(value, int) and \
            not isinstance(value, bool) and abs(value) < 2 ** 1024:
        with np.errstate(over="ignore"):  # ``a * 10**40`` of float32: the same, from a double
            narrowed = target.type(float(value))
        if not np.isfinite(narrowed):
            return Cast(Const(float(value), "float64"), dtype)
    if target.kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(target)
        if not info.min <= value <= info.max:  # NumPy took it (np.where(c, int8, 300)): wrapped
            if not -2 ** 63 <= value < 2 ** 64:  # past NumPy's own conversion: its error
                raise UnsupportedError(f"the Python int {value} in a {dtype} operation")
            bits = 8 * target.itemsize  # (2**63 .. 2**64 - 1 as uint64 does)
            wrapped = value % (1 << bits)
            return Const(wrapped - (1 << bits) if target.kind == "i" and
                         wrapped >= 1 << (bits - 1) else wrapped, dtype)
    return Const(target.type(value).item(), dtype)


@dataclass(frozen=True)
class Lazy:
    shape: tuple[int, ...]
    dtype: str
    loader: Loader
    buffer: str | None = None  # set when the value lives in memory (input or realized)
    #: how its elements lie in a buffer's memory: (buffer, element offset, strides); set for
    #: buffers and for views of them
    memory: tuple[str, int, tuple[int, ...]] | None = None
    #: a complex value as its parts (``complex_values``): ``shape`` ends with a dimension of 2
    #: (real, imaginary), ``dtype`` is the parts' float dtype, and ``memory`` counts parts
    parts: bool = False


#: reductions that may be split (associative; argmax/argmin carry an index and are not)
SPLITTABLE = frozenset({"sum", "prod", "max", "min"})


def output_strides(meta: TensorMeta) -> tuple[int, ...]:
    """The layout eager NumPy gave this value, when it is dense; otherwise row-major.

    NumPy keeps the input's memory order for element-wise results (``x.T + 1`` is F-ordered), and
    a compiled function returns the same layout.
    """
    return dense_strides(tuple(meta.shape), tuple(meta.strides))


def pointwise_buffer(name: str, lazy: Lazy, strides: tuple[int, ...]) -> ComputedBuffer:
    """Buffer ``name`` computing the (real) pointwise value ``lazy`` at layout ``strides``, its
    loops in the buffer's memory order (x0 over the largest stride, the last loop along memory),
    as NumPy iterates: an F-ordered result is written along its columns, not across them."""
    order = sorted(range(len(lazy.shape)), key=lambda d: -abs(strides[d]))
    index = [Affine()] * len(lazy.shape)
    for position, d in enumerate(order):
        index[d] = Affine.var(xvar(position))
    ranges = tuple(lazy.shape[d] for d in order)
    return ComputedBuffer(name, lazy.shape, lazy.dtype, strides, linear_index(index, strides),
                          Pointwise(ranges, lazy.loader(tuple(index))))


class LoopLowering:
    """One lowering in progress: the op graph's values so far (``values``), the buffers made
    (``inputs``, ``buffers``), the checks that send a call to NumPy, the node being lowered
    (for errors) and the backend's ``options``."""

    def __init__(self, program: GraphProgram, options: LoopOptions) -> None:
        self.program = program
        self.options = options
        self.inputs: list[InputBuffer] = []
        self.buffers: list[ComputedBuffer | ExternCall] = []
        self.values: dict[Node, Lazy] = {}
        self.node: Node | None = None
        self.checks: dict[str, str] = {}  # bool buffers that must be False, and what it means
        #: computed buffer -> the node whose lowering made it: a node that owns its buffer and
        #: has one reader may have that reader update it in place (``building.lower_setitem``)
        self.made_by: dict[str, Node | None] = {}
        #: an assignment lowered as a select -> how many selects deep its chain is
        self.select_chain: dict[Node, int] = {}
        #: an assignment -> how many assignments its chain makes from it on (``updates.py``)
        self.chain_ahead: dict[Node, int] = {}
        #: float dtype -> the limit its sin/cos/tan arguments are checked below (``trig_range_check``)
        self.trig_limits: dict[str, float] = {}

    def unsupported(self, what: str) -> UnsupportedError:
        node = self.node
        return UnsupportedError(what, node=node.name if node else None,
                                source=node.source if node else None)

    def native(self, dtype: str) -> bool:
        """Whether kernels compute in ``dtype`` (the backend's ``LoopOptions.dtypes``)."""
        return dtype in self.options.dtypes

    @staticmethod
    def stored(name: str, shape: tuple[int, ...], dtype: str, strides: tuple[int, ...]) -> Lazy:
        """The value in buffer ``name`` with layout ``strides``."""
        def load(index: tuple[Affine, ...]) -> Expr:
            return Load(name, linear_index(index, strides), dtype)
        return Lazy(shape, dtype, load, name, (name, 0, strides))

    def operand(self, value: Any, shape: tuple[int, ...], dtype: str) -> Loader:
        """A loader for ``value`` broadcast to ``shape`` and cast to ``dtype``."""
        if isinstance(value, Node):
            lazy = self.values[value]
            if not self.native(lazy.dtype):
                raise self.unsupported(f"dtype {lazy.dtype} is not compiled natively yet")
            broadcast = self.operand_of(lazy, shape, lazy.loader)
            if np.dtype(lazy.dtype).kind == "f" and np.dtype(dtype).kind in "iu":
                # ``np.sum(x, dtype=np.uint8)`` of floats: a value outside the type's range
                # has no defined conversion (LLVM's is poison: -2.5 gave 254 in scalar code,
                # 0 in vector code); checked as ``astype`` is
                return checked_float_to_int(self, shape, lazy.dtype, dtype, broadcast).loader

            def load(index: tuple[Affine, ...]) -> Expr:
                expr = broadcast(index)
                return expr if expr.dtype == dtype else Cast(expr, dtype)
            return load
        const = scalar_constant(value, dtype)
        return lambda index: const

    def operand_of(self, lazy: Lazy, shape: tuple[int, ...], loader: Loader) -> Loader:
        """``loader`` over ``lazy``'s (keepdims) shape, broadcast to ``shape``. A value with more
        dimensions than ``shape`` (assignment: ``y[0] = v`` with ``v`` of shape (1, 1, 4)) has
        leading length-1 dimensions, which NumPy drops."""
        offset = len(shape) - len(lazy.shape)
        if offset < 0:
            if any(n != 1 for n in lazy.shape[:-offset]):
                raise self.unsupported(f"a value of shape {lazy.shape} broadcast to {shape}")
            extra = (Affine(),) * -offset
            inner = loader
            loader = lambda index: inner((*extra, *index))  # noqa: E731
            lazy = Lazy(lazy.shape[-offset:], lazy.dtype, loader)
            offset = 0
        # a length 1 read at index 0 is right for any length it is broadcast to, 1 included:
        # a dynamic one is not asked about
        broadcast = tuple(not same_size(src, dst) and src == 1 and (is_symbolic(dst) or dst != 1)
                          for src, dst in zip(lazy.shape, shape[offset:]))

        def load(index: tuple[Affine, ...]) -> Expr:
            return loader(tuple(Affine() if b else i for b, i in zip(broadcast, index[offset:])))
        return load

    def realize(self, lazy: Lazy, strides: tuple[int, ...], owner: Node | None = None) -> Lazy:
        """Write a pointwise value to a new buffer with layout ``strides``. The loops run in the
        buffer's memory order (x0 over the largest stride, the last loop along memory), as NumPy
        iterates: an F-ordered result is written along its columns, not across them. ``owner``:
        the node whose value this is, when not the node being lowered (``made_by``). A complex
        value's parts (``lazy.parts``, ``strides`` those of the complex array) are written to a
        complex buffer, each element's two parts side by side."""
        if lazy.parts:
            return self._realize_parts(lazy, strides, owner)
        name = f"buf{len(self.buffers)}"
        self.buffers.append(pointwise_buffer(name, lazy, strides))
        self.made_by[name] = owner if owner is not None else self.node
        return self.stored(name, lazy.shape, lazy.dtype, strides)

    def _realize_parts(self, lazy: Lazy, strides: tuple[int, ...], owner: Node | None) -> Lazy:
        shape, dtype = lazy.shape[:-1], COMPLEX_OF[lazy.dtype]
        parts = part_strides(strides)
        order = sorted(range(len(lazy.shape)), key=lambda d: -abs(parts[d]))  # the part last
        index = [Affine()] * len(lazy.shape)
        for position, d in enumerate(order):
            index[d] = Affine.var(xvar(position))
        name = f"buf{len(self.buffers)}"
        self.buffers.append(ComputedBuffer(name, shape, dtype, tuple(strides),
                                           linear_index(index, parts),
                                           Pointwise(tuple(lazy.shape[d] for d in order),
                                                     lazy.loader(tuple(index)))))
        self.made_by[name] = owner if owner is not None else self.node
        return self.stored_parts(name, shape, lazy.dtype, parts)

    @staticmethod
    def stored_parts(name: str, shape: tuple[int, ...], dtype: str, parts: tuple[int, ...],
                     offset: int = 0, view: bool = False) -> Lazy:
        """The parts (of float ``dtype``) of the complex value of ``shape`` in buffer ``name``,
        laid out with strides ``parts`` counted in parts (the last one 1) from part ``offset``;
        ``view``: a view of the buffer's value, not the value itself."""
        def load(index: tuple[Affine, ...]) -> Expr:
            return Load(name, linear_index(index, parts) + offset, dtype)
        return Lazy((*shape, 2), dtype, load, None if view or offset else name,
                    (name, offset, parts), parts=True)

    def owned(self, node: Node) -> Lazy | None:
        """``node``'s value when it lies in a computed buffer of its own, whole and unshared:
        made while lowering ``node`` itself (not a view of another value's buffer), read by
        ``node``'s users alone."""
        lazy = self.values[node]
        if lazy.memory is None or self.made_by.get(lazy.memory[0]) is not node:
            return None
        buffer, offset, strides = lazy.memory
        made = self.buffers[int(buffer[3:])] if buffer.startswith("buf") else None
        if offset != 0 or not isinstance(made, ComputedBuffer) or made.name != buffer or \
                (made.shape, made.strides) != (lazy.shape, strides):
            return None
        return lazy

    def reduce(self, node: Node, x: Lazy, axes: tuple[int, ...], keepdims: bool,
               reduction_type: str) -> Lazy:
        meta = node.tensor
        return self.reduce_values(self.operand(node.args[0], x.shape, meta.dtype), x.shape, axes,
                                  keepdims, reduction_type, meta.dtype, output_strides(meta))

    def reduce_values(self, loader: Loader, shape: tuple[int, ...], axes: tuple[int, ...],
                      keepdims: bool, reduction_type: str, dtype: str,
                      layout: tuple[int, ...] | None = None) -> Lazy:
        """Realize the reduction of ``loader``'s values (already in ``dtype``) over ``axes``;
        ``layout``: the strides NumPy gave the result (it keeps an F-ordered operand's order:
        ``a.max(axis=1)`` of an F-ordered (5, 6, 7) array is F-ordered), else row-major."""
        split = self._split(loader, shape, axes, keepdims, reduction_type, dtype)
        if split is not None:
            return split
        kept = [d for d in range(len(shape)) if d not in axes]
        index: list[Affine] = [Affine()] * len(shape)
        for i, d in enumerate(kept):
            index[d] = Affine.var(xvar(i))
        for j, d in enumerate(axes):
            index[d] = Affine.var(rvar(j))
        out_dims = [d for d in range(len(shape)) if keepdims or d not in axes]
        out_shape = tuple(shape[d] if d in kept else 1 for d in out_dims)
        strides = layout if layout is not None and len(layout) == len(out_shape) else \
            contiguous_strides(out_shape)
        store = linear_index((index[d] if d in kept else Affine() for d in out_dims), strides)
        name = f"buf{len(self.buffers)}"
        data = Reduction(tuple(shape[d] for d in kept), tuple(shape[d] for d in axes),
                         reduction_type, loader(tuple(index)))
        self.buffers.append(ComputedBuffer(name, out_shape, dtype, strides, store, data))
        self.made_by[name] = self.node
        return self.stored(name, out_shape, dtype, strides)

    def split_chunks(self, total: int) -> int | None:
        """How many chunks a split 1-D reduction of ``total`` elements has: the most, up to
        ``options.split_chunks``, that divide it (no masking) into chunks of a multiple of
        ``options.split_align`` elements, if one of at least a quarter as many chunks does; else
        the most that divide it; ``None`` if none does. A chunk of another length ends in a
        scalar tail: 200,000 elements as 64 chunks of 3125 spent half of a 21 us sum of clipped
        values in 64 tails of 53 elements; as 50 chunks of 4000, none."""
        most, align = self.options.split_chunks, self.options.split_align
        aligned = next((k for k in range(most, max(most // 4, 2) - 1, -1)
                        if total % (k * align) == 0), None)
        return aligned or next((k for k in range(most, 1, -1) if total % k == 0), None)

    def _split(self, loader: Loader, shape: tuple[int, ...], axes: tuple[int, ...],
               keepdims: bool, reduction_type: str, dtype: str) -> Lazy | None:
        """A long reduction to one value becomes two (spec §6.5, split reductions): partial
        results over chunks — an outer loop the threads share — then their combination. Sums also
        round better in two levels. Several dimensions split along the first; one dimension into a
        chunk count that divides its length (no masking)."""
        total = 1
        for d in axes:
            total *= shape[d]
        if len(axes) != len(shape) or total < self.options.split_min or \
                reduction_type not in SPLITTABLE:
            return None
        if len(shape) >= 2:
            partial = self.reduce_values(loader, shape, tuple(range(1, len(shape))), False,
                                         reduction_type, dtype)
        else:
            chunks = self.split_chunks(total)
            if chunks is None:
                return None
            size = total // chunks

            def chunked(index: tuple[Affine, ...]) -> Expr:
                return loader((index[0] * size + index[1],))
            partial = self.reduce_values(chunked, (chunks, size), (1,), False, reduction_type,
                                         dtype)
        combined = self.reduce_values(partial.loader, partial.shape, (0,), False,
                                      reduction_type, dtype)
        if not keepdims:
            return combined
        return Lazy((1,) * len(shape), dtype, lambda i: combined.loader(()))


def guarded(e: Expr, guard: Expr) -> Expr:
    """``e`` with every load made a guarded load (shared subexpressions stay shared): for a
    value read only where ``guard`` holds (a select discards it elsewhere). A computed offset
    (``IndirectLoad``: a reshape of a transposed view) may leave its buffer where the guard is
    false too: it reads element 0 there and its value is 0, like a guarded load's, so neither
    memory outside the buffer nor an event of a discarded element's arithmetic is ever seen."""
    def guard_load(n: Expr) -> Expr | None:
        if type(n) is Load:
            return GuardedLoad(n.buffer, n.index, n.dtype, guard)
        if type(n) is IndirectLoad:
            offset = Select(guard, guarded(n.offset, guard), Const(0, n.offset.dtype),
                            n.offset.dtype)
            return Select(guard, IndirectLoad(n.buffer, n.dtype, offset), Const(0, n.dtype),
                          n.dtype)
        return None
    return rewrite(e, guard_load)


def index_compare(op: str, index: Affine, bound: int) -> Expr:
    return Binary(op, Index(index, INDEX), Const(bound, INDEX), "bool")


def all_of(conditions: list[Expr]) -> Expr:
    total = conditions[0]
    for c in conditions[1:]:
        total = Binary("and", total, c, "bool")
    return total


def checked_float_to_int(ctx: LoopLowering, shape: tuple[int, ...], src: str, dtype: str,
                         x: Loader) -> Lazy:
    """Floats ``x`` truncated to the integer ``dtype`` where the value fits (C's and NumPy's
    conversion), with a check flagging NaN or a value outside the type's range: NumPy's
    answer there (its C compiler's, and "invalid value encountered in cast") comes from its
    own call, as the call runs eagerly."""
    info = np.iinfo(dtype)
    # truncation toward zero: an unsigned type takes (-1, 2^bits); a signed one, conservatively,
    # [-2^(bits-1), 2^(bits-1))
    low = Const(float(info.min) if info.min < 0 else -1.0, src)
    high = Const(float(info.max) + 1.0, src)
    at_least = "ge" if info.min < 0 else "gt"

    def fits(i: tuple[Affine, ...]) -> Expr:  # false for NaN
        v = x(i)
        return Binary("and", Binary(at_least, v, low, "bool"), Binary("lt", v, high, "bool"),
                      "bool")

    check = ctx.reduce_values(lambda i: negation(fits(i)), shape, tuple(range(len(shape))), False,
                              "max", "bool")
    ctx.checks[check.buffer] = f"a float cast to {dtype} is NaN or outside its range"
    zero = Const(0.0, src)
    # the conversion sees only values that fit (LLVM's fptosi of any other is poison)
    return Lazy(shape, dtype, lambda i: Cast(Select(fits(i), x(i), zero, src), dtype))


def negation(condition: Expr) -> Expr:
    """``not condition`` of a bool expression (the loop IR's ``not`` is ``xor`` with True)."""
    return Binary("xor", condition, Const(True, "bool"), "bool")


def float_predicate(op: str, v: Expr) -> Expr:
    """isnan, isinf, isfinite or signbit of the float ``v``, exactly."""
    if op == "isnan":
        return Binary("ne", v, v, "bool")
    if op == "signbit":
        return Unary("signbit", v, "bool")
    magnitude = Unary("abs", v, v.dtype)
    return Binary("eq" if op == "isinf" else "lt", magnitude, Const(float("inf"), v.dtype), "bool")


def trig_range_check(ctx: LoopLowering, shape: tuple[int, ...], dtype: str, x: Loader,
                     limit: float) -> None:
    """Flags a finite sin/cos/tan argument ``x`` (of ``shape`` and float ``dtype``) at or beyond
    ``limit`` (``LoopOptions.trig_reduction_limit``): such a call runs as NumPy."""
    bound = Const(limit, dtype)

    def too_large(i: tuple[Affine, ...]) -> Expr:
        magnitude = Unary("abs", x(i), dtype)
        return Binary("and", Binary("ge", magnitude, bound, "bool"),
                      Binary("lt", magnitude, Const(float("inf"), dtype), "bool"), "bool")
    check = ctx.reduce_values(too_large, shape, tuple(range(len(shape))), False, "max", "bool")
    ctx.trig_limits[dtype] = max(limit, ctx.trig_limits.get(dtype, limit))  # one limit per target
    ctx.checks[check.buffer] = ("a sin/cos/tan argument beyond 2^23 pi/2 (the fast reduction's "
                                "range)" if limit == TRIG_REDUCTION_LIMIT else
                                f"a sin/cos/tan argument of magnitude {limit!r} or more (beyond the "
                                "kernels' argument reduction)")
