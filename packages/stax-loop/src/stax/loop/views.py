"""Loop lowering of the ``view`` op: transposes, slices, reshapes and broadcasts of a value read
its memory through an affine map."""

from __future__ import annotations

from stax.ir import Node, rebase_view

from .context import Lazy, LoopLowering, output_strides
from .expr import Expr, Load
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
