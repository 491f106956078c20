"""Loop lowering of the ``view`` op: transposes, slices, reshapes and broadcasts of a value read
its memory through an affine map; and of ``dynamic_slice``, a slice whose start is a traced
integer (a lifted loop's block ``x[i * bs:(i + 1) * bs]``): the same map from a start read at
run time, so the reads stay consecutive."""

from __future__ import annotations

from stax.ir import Node, rebase_view

from .context import INDEX, Lazy, LoopLowering, output_strides
from .expr import Binary, Cast, Const, Expr, Index, IndirectLoad, Load, Select
from .externs import extern_call
from .index import Affine, linear_index
from .registry import lowers


@lowers("view", any_dtype=True)
def lower_view(ctx: LoopLowering, node: Node) -> Lazy:
    """Read the operand's memory through the view's affine map. The map holds for the operand's
    layout in the op graph (its meta strides); a buffer of another layout (a reduction or a
    materialized value written row-major where NumPy's result was F-ordered) is read through the
    map rebased to the buffer's layout, or, where the view is not affine in the operand's elements,
    through a copy in the layout the map was measured on."""
    meta = node.tensor
    source = node.args[0]
    measured = tuple(source.tensor.strides)
    lazy = ctx.values[source]
    if lazy.memory is None and node.kwargs["offset"] == 0 and \
            tuple(meta.shape) == tuple(source.tensor.shape) and \
            all(n == 1 or s == t for n, s, t in zip(meta.shape, node.kwargs["strides"],
                                                    source.tensor.strides)) and \
            ctx.native(meta.dtype):
        return lazy  # the value itself (``v[()]``, ``v[...]``): no memory needed
    if lazy.memory is None:  # an element-wise value: give it memory in NumPy's layout first
        lazy = ctx.values[source] = ctx.realize(lazy, output_strides(source.tensor), source)
    buffer, base, strides = lazy.memory
    mapped = rebase_view(node.kwargs["offset"], node.kwargs["strides"], meta.shape,
                         source.tensor.shape, measured, strides)
    if mapped is None:
        if output_strides(source.tensor) != measured:
            raise ctx.unsupported("a view of a value whose layout the loops do not reproduce")
        # a copy in the measured layout: the map holds there
        lazy = ctx.values[source] = ctx.realize(lazy, measured, source)
        buffer, base, strides = lazy.memory
        mapped = (node.kwargs["offset"], tuple(node.kwargs["strides"]))
    offset, view_strides = base + mapped[0], mapped[1]
    if not ctx.native(meta.dtype):  # NumPy makes the view (of the operand's own buffer)
        if lazy.buffer is None or base != 0:
            raise ctx.unsupported(f"a view of a {meta.dtype} value that is not a buffer")
        return extern_call(ctx, node, "stax.ops.view", False,
                           (source, offset, view_strides, meta.shape), {})

    def load(index: tuple[Affine, ...]) -> Expr:
        return Load(buffer, linear_index(index, view_strides) + offset, meta.dtype)
    return Lazy(meta.shape, meta.dtype, load, None, (buffer, offset, view_strides))


@lowers("dynamic_slice")
def lower_dynamic_slice(ctx: LoopLowering, node: Node) -> Lazy:
    """``x`` along ``axis`` from ``start`` (clamped into ``[0, extent - length]``, as the op
    defines: nothing outside x is read) for ``length`` elements: x's own memory at offset
    ``start * stride`` plus the affine map of the other positions."""
    meta = node.tensor
    source, start_node = node.args
    axis, length = node.kwargs["axis"], node.kwargs["length"]
    lazy = ctx.values[source]
    if lazy.memory is None:  # an element-wise value: give it memory in NumPy's layout first
        lazy = ctx.values[source] = ctx.realize(lazy, output_strides(source.tensor), source)
    buffer, base, strides = lazy.memory
    top = lazy.shape[axis] - length
    if not isinstance(top, int):
        raise ctx.unsupported("a slice at a traced start of an array of symbolic size")
    start = ctx.operand(start_node, (), INDEX)(())
    low = Select(Binary("lt", start, Const(0, INDEX), "bool"), Const(0, INDEX), start, INDEX)
    clamped = Select(Binary("gt", low, Const(top, INDEX), "bool"), Const(top, INDEX), low, INDEX)
    shift = Binary("mul", clamped, Const(strides[axis], INDEX), INDEX)

    def load(index: tuple[Affine, ...]) -> Expr:
        offset = Binary("add", shift, Index(linear_index(index, strides) + base, INDEX), INDEX)
        value: Expr = IndirectLoad(buffer, lazy.dtype, offset)
        return value if lazy.dtype == meta.dtype else Cast(value, meta.dtype)
    return Lazy(meta.shape, meta.dtype, load)
