"""Loop lowerings of the array-building ops: concatenate, stack, constant pad, roll, tril/triu,
full, arange and eye — element-wise maps over the result's index.

Each output element comes from one operand element chosen by its position, so these are loaders
like any other and fuse with their producers and consumers. A piece that covers only part of
the result is read with guarded loads (every load in its expression reads only where the piece
lies; elsewhere the value is 0 and a select discards it), so no index leaves its buffer.
"""

from __future__ import annotations

import math

from stax.ir import Node
from stax.ir.sizes import Size, product

from .complex_values import as_parts, complex_lowers
from .context import (
    INDEX,
    PARTS_OF,
    Lazy,
    Loader,
    LoopLowering,
    all_of,
    guarded,
    index_compare,
    output_strides,
    scalar_constant,
)
from .expr import Binary, Cast, Const, Expr, Index, IndirectLoad, Select
from .externs import extern_call, op_as_extern
from .index import Affine, linear_index
from .intervals import buffer_intervals, integer_interval
from .ir import ComputedBuffer, xvar
from .registry import lowers

#: pieces beyond which a concatenation or stack is NumPy's call: each element of its kernel
#: selects among all the pieces, so compile time and the work per element grow with their count
#: (600 columns stacked took 12 s to compile, and deeper expressions than Python recurses into)
MAX_PIECES = 32


def _many_pieces(ctx: LoopLowering, node: Node) -> Lazy | None:
    if len(node.args) <= MAX_PIECES:
        return None
    return extern_call(ctx, node, f"numpy.{node.target}", False, (list(node.args),),
                       {"axis": node.kwargs["axis"]})


@lowers("concatenate")
def lower_concatenate(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    axis, dtype = node.kwargs["axis"], meta.dtype
    many = _many_pieces(ctx, node)
    if many is not None:
        return many
    pieces: list[tuple[int, int, Loader]] = []
    offset = 0
    for value in node.args:
        extent = value.tensor.shape[axis]
        shape = tuple(extent if d == axis else n for d, n in enumerate(meta.shape))
        pieces.append((offset, extent, ctx.operand(value, shape, dtype)))
        offset += extent

    def load(i: tuple[Affine, ...]) -> Expr:
        result: Expr | None = None
        for start, extent, loader in reversed(pieces):
            if extent == 0:
                continue
            moved = tuple(ix + (-start) if d == axis else ix for d, ix in enumerate(i))
            if len(pieces) == 1:
                return loader(moved)
            inside = all_of([index_compare("ge", i[axis], start),
                             index_compare("lt", i[axis], start + extent)])
            value = guarded(loader(moved), inside)
            result = value if result is None else Select(inside, value, result, dtype)
        return result if result is not None else Const(0, dtype)
    return Lazy(meta.shape, dtype, load)


@lowers("stack")
def lower_stack(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    axis, dtype = node.kwargs["axis"], meta.dtype
    many = _many_pieces(ctx, node)
    if many is not None:
        return many
    shape = tuple(n for d, n in enumerate(meta.shape) if d != axis)
    loaders = [ctx.operand(value, shape, dtype) for value in node.args]
    if not loaders:  # np.array([]): an empty result, whose elements nothing reads
        return Lazy(meta.shape, dtype, lambda i: Const(0, dtype))

    def load(i: tuple[Affine, ...]) -> Expr:
        inner = tuple(ix for d, ix in enumerate(i) if d != axis)
        result: Expr | None = None
        for k in reversed(range(len(loaders))):
            if len(loaders) == 1:
                return loaders[0](inner)
            here = index_compare("eq", i[axis], k)
            value = guarded(loaders[k](inner), here)
            result = value if result is None else Select(here, value, result, dtype)
        assert result is not None
        return result
    return Lazy(meta.shape, dtype, load)


@lowers("pad")
def lower_pad(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    dtype, widths = meta.dtype, node.kwargs["pad_width"]
    source = node.args[0]
    x = ctx.operand(source, source.tensor.shape, dtype)
    fill = scalar_constant(node.kwargs["value"], dtype)

    def load(i: tuple[Affine, ...]) -> Expr:
        conditions = []
        for d, (before, _) in enumerate(widths):
            extent = source.tensor.shape[d]
            if before:
                conditions.append(index_compare("ge", i[d], before))
            if before + extent < meta.shape[d]:
                conditions.append(index_compare("lt", i[d], before + extent))
        moved = tuple(ix + (-before) for ix, (before, _) in zip(i, widths))
        if not conditions:
            return x(moved)
        inside = all_of(conditions)
        return Select(inside, guarded(x(moved), inside), fill, dtype)
    return Lazy(meta.shape, dtype, load)


@lowers("roll")
def lower_roll(ctx: LoopLowering, node: Node) -> Lazy:
    """out[i] = x[i - s] for i >= s, x[i - s + n] below (s = shift mod n along the axis)."""
    meta = node.tensor
    if node.kwargs["axis"] is None:
        return _flat_roll(ctx, node)
    axis, dtype = node.kwargs["axis"], meta.dtype
    n = meta.shape[axis]
    shift = _start_over(node.kwargs["shift"], n)
    x = ctx.operand(node.args[0], meta.shape, dtype)

    def load(i: tuple[Affine, ...]) -> Expr:
        if isinstance(shift, int) and shift == 0:
            return x(i)
        if isinstance(shift, Size):  # compared as an index expression: constants are ints
            later = index_compare("ge", i[axis] + (-shift), 0)
            early = index_compare("lt", i[axis] + (-shift), 0)
        else:
            later = index_compare("ge", i[axis], shift)
            early = index_compare("lt", i[axis], shift)
        tail = guarded(x(tuple(ix + (-shift) if d == axis else ix for d, ix in enumerate(i))), later)
        head = guarded(x(tuple(ix + (n - shift) if d == axis else ix for d, ix in enumerate(i))),
                        early)
        return Select(later, tail, head, dtype)
    return Lazy(meta.shape, dtype, load)


def _start_over(shift: int, n: int | Size) -> int | Size:
    """``shift % n``: where along the axis the rolled result starts over from x's first
    element. For a size ``n``, a shift smaller than it in magnitude (a guard) is ``shift`` or
    ``n + shift``, an expression; a larger one specializes ``n`` (a remainder by a size)."""
    if isinstance(n, Size):
        if shift == 0:
            return 0
        if abs(shift) < n:
            return shift if shift > 0 else n + shift
    return shift % n if n else 0


@lowers("tril", "triu")
def lower_triangle(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    k = node.kwargs["k"]
    keep_below = node.target == "tril"

    def load(i: tuple[Affine, ...]) -> Expr:
        diagonal = i[-1] + i[-2] * -1  # column - row
        keep = index_compare("le" if keep_below else "ge", diagonal, k)
        return Select(keep, x(i), Const(0, meta.dtype), meta.dtype)
    return Lazy(meta.shape, meta.dtype, load)


@lowers("full")
def lower_full(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    if not ctx.native(meta.dtype):
        return op_as_extern(ctx, node)
    value = scalar_constant(node.kwargs["value"], meta.dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: value)


@lowers("arange")
def lower_arange(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    start, step, dtype = node.kwargs["start"], node.kwargs["step"], meta.dtype

    def load(i: tuple[Affine, ...]) -> Expr:
        return Cast(Index(i[0] * step + start, INDEX), dtype)
    return Lazy(meta.shape, dtype, load)


@lowers("eye")
def lower_eye(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    dtype, k = meta.dtype, node.kwargs["k"]

    def load(i: tuple[Affine, ...]) -> Expr:
        on = index_compare("eq", i[1] + i[0] * -1, k)
        return Select(on, Const(1, dtype), Const(0, dtype), dtype)
    return Lazy(meta.shape, dtype, load)




def _in_memory(ctx: LoopLowering, value: Node, user: Node) -> Lazy:
    """``value`` as elements in a buffer's memory (an input, a view of one, a realized result),
    written to a new buffer first if it is only an expression: for reads at computed offsets."""
    lazy = ctx.values[value]
    if lazy.memory is None:
        ctx.node = value
        lazy = ctx.realize(lazy, output_strides(value.tensor))
        ctx.values[value] = lazy
        ctx.node = user
    assert lazy.memory is not None
    return lazy


def _c_strides(shape: tuple[int, ...]) -> list[int]:
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def _index_value(value: int | Size) -> Expr:
    """An index quantity: a constant, or a size read at run time (an index expression)."""
    return Index(Affine.of(value), INDEX) if isinstance(value, Size) else Const(value, INDEX)


def _flat_read(lazy: Lazy, flat: Expr, dtype: str) -> Expr:
    """Element ``flat`` (C order) of a value in memory: its coordinates are the flat index's
    floor quotients and remainders by the extents, read at the offset they give."""
    buffer, origin, strides = lazy.memory
    offset: Expr = _index_value(origin)
    step: int | Size = 1
    for d in range(len(lazy.shape) - 1, -1, -1):
        extent = lazy.shape[d]
        coordinate = flat if isinstance(step, int) and step <= 1 else \
            Binary("floordiv", flat, _index_value(step), INDEX)
        if d > 0:
            coordinate = Binary("mod", coordinate, _index_value(extent), INDEX)
        offset = Binary("add", offset, Binary("mul", coordinate, _index_value(strides[d]), INDEX),
                        INDEX)
        step *= extent
    value: Expr = IndirectLoad(buffer, lazy.dtype, offset)
    return value if lazy.dtype == dtype else Cast(value, dtype)


@lowers("reshape")
def lower_reshape(ctx: LoopLowering, node: Node) -> Lazy:
    """A C-order reshape NumPy copies: output element i (flat, C order) is operand element i,
    read at computed offsets in the operand's memory (realized first if it is an expression)."""
    meta = node.tensor
    lazy = _in_memory(ctx, node.args[0], node)
    out_strides = _c_strides(meta.shape)
    return Lazy(meta.shape, meta.dtype,
                lambda i: _flat_read(lazy, Index(linear_index(i, out_strides), INDEX), meta.dtype))


def _flat_roll(ctx: LoopLowering, node: Node) -> Lazy:
    """np.roll without an axis: the flattened (C order) array rolled, in the input's shape:
    out.flat[f] = x.flat[f - s], or x.flat[f - s + n] for f < s."""
    meta = node.tensor
    lazy = _in_memory(ctx, node.args[0], node)
    n = product(meta.shape)
    shift = _start_over(node.kwargs["shift"], n)
    out_strides = _c_strides(meta.shape)

    def load(i: tuple[Affine, ...]) -> Expr:
        flat = linear_index(i, out_strides)
        if isinstance(shift, Size) or isinstance(n, Size):  # index expressions, in sizes
            wrapped: Expr = Select(index_compare("lt", flat + (-shift), 0),
                                   Index(flat + (n - shift), INDEX),
                                   Index(flat + (-shift), INDEX), INDEX)
            return _flat_read(lazy, wrapped, meta.dtype)
        back = Binary("sub", Index(flat, INDEX), Const(shift, INDEX), INDEX)
        wrapped = Select(Binary("lt", Index(flat, INDEX), Const(shift, INDEX), "bool"),
                         Binary("add", back, Const(n, INDEX), INDEX), back, INDEX)
        return _flat_read(lazy, wrapped, meta.dtype)
    return Lazy(meta.shape, meta.dtype, load)




def _in_bounds(ctx: LoopLowering, indices: Loader, shape: tuple[int, ...], extent: int) -> bool:
    """Whether every position is in ``[-extent, extent)`` by construction (clamped: the
    interval analysis proves it, through the buffers computed so far), so the gather needs no
    check."""
    index = tuple(Affine.var(xvar(d)) for d in range(len(shape)))
    made = {b.name: b for b in ctx.buffers if isinstance(b, ComputedBuffer)}
    bounds = integer_interval(indices(index), {xvar(d): n for d, n in enumerate(shape)},
                              buffer_intervals(made))
    return bounds is not None and -extent <= bounds[0] and bounds[1] < extent


@lowers("take")
def lower_take(ctx: LoopLowering, node: Node) -> Lazy:
    """x[indices] / np.take along ``axis``: out[i..., j...] = x[..., indices[i...], ...]. A
    negative index counts from the end; an index out of bounds is clamped for the read (nothing
    outside x is touched) and reported by a check buffer (``any`` over the indices), so the
    call runs eagerly and NumPy raises its IndexError."""
    meta = node.tensor
    lazy = _in_memory(ctx, node.args[0], node)
    return Lazy(meta.shape, meta.dtype, _taken(ctx, node, lazy, meta.dtype))


@complex_lowers("take")
def _complex_take(ctx: LoopLowering, node: Node) -> Lazy:
    """``z[i]`` of a complex array at a run-time position: ``lower_take``'s reads of both parts
    of each element (the parts' view of the array: its strides counted in parts, the part's own
    last, which the load's index carries)."""
    meta, x_node = node.tensor, node.args[0]
    if meta.dtype != x_node.tensor.dtype:
        return op_as_extern(ctx, node)
    dtype = PARTS_OF[meta.dtype]
    parts = as_parts(_in_memory(ctx, x_node, node), meta.dtype)
    return Lazy((*meta.shape, 2), dtype, _taken(ctx, node, parts, dtype), parts=True)


def _taken(ctx: LoopLowering, node: Node, lazy: Lazy, dtype: str) -> Loader:
    """The loader of ``take``'s value from ``lazy`` (elements in memory), with the check of
    its positions."""
    i_node = node.args[1]
    axis = node.kwargs["axis"]
    buffer, origin, strides = lazy.memory
    extent = lazy.shape[axis]
    i_shape = tuple(i_node.tensor.shape)
    indices = ctx.operand(i_node, i_shape, INDEX)

    def wrapped(k: Expr) -> Expr:
        return Select(Binary("lt", k, Const(0, INDEX), "bool"),
                      Binary("add", k, Const(extent, INDEX), INDEX), k, INDEX)

    # the check: any index outside [-extent, extent)
    def outside(i: tuple[Affine, ...]) -> Expr:
        k = indices(i)
        low = Binary("lt", k, Const(-extent, INDEX), "bool")
        return Binary("or", low, Binary("ge", k, Const(extent, INDEX), "bool"), "bool")
    if extent == 0 and math.prod(i_shape):
        return op_as_extern(ctx, node)  # every index is out of bounds: NumPy's error at once
    if math.prod(i_shape) and not _in_bounds(ctx, indices, i_shape, extent):
        check = ctx.reduce_values(outside, i_shape, tuple(range(len(i_shape))), False, "max",
                                  "bool")
        ctx.checks[check.buffer] = "an index is out of bounds"

    def load(i: tuple[Affine, ...]) -> Expr:
        before, picked, after = i[:axis], i[axis:axis + len(i_shape)], i[axis + len(i_shape):]
        k = wrapped(indices(tuple(picked)))
        clamped = Select(Binary("lt", k, Const(0, INDEX), "bool"), Const(0, INDEX), k, INDEX)
        clamped = Select(Binary("ge", clamped, Const(extent, INDEX), "bool"),
                         Const(max(extent - 1, 0), INDEX), clamped, INDEX)
        rest = Affine() + origin
        for d, ix in zip((*range(axis), *range(axis + 1, len(lazy.shape))), (*before, *after)):
            rest = rest + ix * strides[d]
        offset = Binary("add", Binary("mul", clamped, Const(strides[axis], INDEX), INDEX),
                        Index(rest, INDEX), INDEX)
        value: Expr = IndirectLoad(buffer, lazy.dtype, offset)
        return value if lazy.dtype == dtype else Cast(value, dtype)
    return load




@lowers("take_const")
def lower_take_const(ctx: LoopLowering, node: Node) -> Lazy:
    """x[[i, j, ...]] with constant, in-bounds positions along the first axis: each output row
    reads its row of x, the position picked by a select over the output index (affine loads)."""
    meta = node.tensor
    positions = node.kwargs["indices"]
    source = node.args[0]
    x = ctx.operand(source, tuple(source.tensor.shape), meta.dtype)

    def load(i: tuple[Affine, ...]) -> Expr:
        result: Expr | None = None
        for k in reversed(range(len(positions))):
            row = x((Affine() + positions[k], *i[1:]))
            if result is None:
                result = row
                continue
            result = Select(index_compare("eq", i[0], k), row, result, meta.dtype)
        assert result is not None
        return result
    return Lazy(meta.shape, meta.dtype, load)


