"""Loop lowering of the ``view`` op: transposes, slices, reshapes and broadcasts of a value read
its memory through an affine map; and of ``dynamic_slice``, a slice whose start is a traced
integer (a lifted loop's block ``x[i * bs:(i + 1) * bs]``): the same map from a start read at
run time, so the reads stay consecutive."""

from __future__ import annotations

from stax.ir import Node, rebase_view

from .context import INDEX, Lazy, LoopLowering, output_strides
from .expr import Binary, Cast, Const, Expr, Index, IndirectLoad, Load, Select, postorder
from .externs import extern_call
from .index import Affine, linear_index
from .ir import xvar
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
    if lazy.memory is None:
        axes = _axes_read(node, measured) if _of_indices_alone(lazy) else None
        if axes is not None:  # ``np.arange(n)[:, None]``, ``np.zeros(n)`` broadcast: recomputed
            return Lazy(meta.shape, meta.dtype, lambda index: lazy.loader(tuple(
                index[v] if v is not None else Affine.of(0) for v in axes)))
        # an element-wise value: give it memory in NumPy's layout first
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


def _of_indices_alone(lazy: Lazy) -> bool:
    """Whether ``lazy`` computes each element from its position and constants alone, with
    arithmetic no dearer than a load (an ``arange``, a ``full``, ``np.eye``'s test): cheaper
    recomputed in every read of a view than written once and read back, and a kernel less."""
    if lazy.parts:
        return False
    index = tuple(Affine.var(xvar(d)) for d in range(len(lazy.shape)))
    return all(isinstance(e, (Index, Const, Cast, Select)) or
               (isinstance(e, Binary) and e.op in _CHEAP)
               for e in postorder(lazy.loader(index)))


_CHEAP = frozenset({"add", "sub", "mul", "eq", "ne", "lt", "le", "gt", "ge", "and", "or",
                    "bitwise_and", "bitwise_or", "logical_and", "logical_or"})


def _axes_read(node: Node, measured: tuple[int, ...]) -> tuple[int | None, ...] | None:
    """Per axis of the view's operand, the view's axis that walks it whole (None: an axis of one
    element), where the view only broadcasts and permutes its operand's axes (offset 0, each
    stride 0 or one of the operand's); else None."""
    shape, strides = node.tensor.shape, node.kwargs["strides"]
    source = node.args[0].tensor.shape
    if node.kwargs["offset"] != 0 or any(type(v) is not int for v in (
            *shape, *strides, *source, *measured)):  # (a size-generic version's: as before)
        return None
    axes: list[int | None] = [None] * len(source)
    for v, (extent, stride) in enumerate(zip(shape, strides)):
        if stride == 0 or extent == 1:
            continue
        found = [d for d, (e, s) in enumerate(zip(source, measured))
                 if s == stride and e == extent and e != 1]
        if len(found) != 1 or axes[found[0]] is not None:
            return None
        axes[found[0]] = v
    if any(a is None and e != 1 for a, e in zip(axes, source)):
        return None
    return tuple(axes)


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
