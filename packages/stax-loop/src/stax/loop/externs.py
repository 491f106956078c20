"""Lowering to NumPy calls between kernels (``ExternCall``): the ``extern`` op, whole operators
run as library functions, and any op in a form the kernels do not compute (its NumPy
reference), which is how every rule declines rather than compute a different result."""

from __future__ import annotations

from typing import Any

from stax.ir import Node, TensorMeta, get_op

from .containers import fold
from .context import Lazy, LoopLowering, output_strides
from .ir import BufferRef, ExternCall
from .registry import lowers


@lowers("extern", any_dtype=True)
def lower_extern(ctx: LoopLowering, node: Node) -> Lazy:
    attrs = node.kwargs
    return extern_call(ctx, node, attrs["fn"], attrs["method"], node.args, attrs["call_kwargs"])


def op_as_extern(ctx: LoopLowering, node: Node) -> Lazy:
    """The op run as its NumPy reference: dtypes the kernels do not handle (float16...), or a
    form its rule leaves to NumPy."""
    if get_op(node.target).kind.value == "reduction":
        kwargs = dict(node.kwargs)
        if node.target in ("argmax", "argmin"):  # NumPy takes one axis or None there
            ndim = len(ctx.values[node.args[0]].shape)
            axes = kwargs["axis"]
            kwargs["axis"] = None if len(axes) == ndim and ndim != 1 else axes[0]
        return extern_call(ctx, node, f"numpy.{node.target}", False, node.args, kwargs)
    return extern_call(ctx, node, f"numpy.{get_op(node.target).reference.__name__}", False,
                       node.args, {})


def library_call(ctx: LoopLowering, node: Node) -> Lazy:
    """A whole operator the backend runs as its library function ``stax.ops.<op>``: in the basis
    (spec §4.8), so it is not decomposed; its kernel arrives with the loop issue."""
    attrs = tuple(node.kwargs[a] for a in get_op(node.target).attrs)
    return extern_call(ctx, node, f"stax.ops.{node.target}", False, (*node.args, *attrs), {})


def extern_call(ctx: LoopLowering, node: Node, target: str, method: bool, call_args: Any,
                call_kwargs: Any) -> Lazy:
    """Operands of a NumPy call must be arrays in memory: realize pointwise values first. NumPy
    gets each operand in the layout capture saw, as some calls read the memory order
    (``ravel(order="K")``, ``flatten("A")``): a buffer the loops wrote in another layout (a
    reduction of an F-ordered array is written row-major) is copied into that layout first."""
    def operand(value: Any) -> Any:
        if not isinstance(value, Node):
            return value
        lazy, meta = ctx.values[value], value.tensor
        if lazy.buffer is None or (meta is not None and not same_layout(lazy.memory[2], meta)):
            lazy = ctx.values[value] = ctx.realize(lazy, output_strides(meta))
        return BufferRef(lazy.buffer)

    args, kwargs = fold(call_args, operand), fold(call_kwargs, operand)  # may realize buffers
    name = f"buf{len(ctx.buffers)}"
    sequence = node.meta.get("sequence")
    meta = node.tensor if sequence is None else TensorMeta((), "object", ())
    effect = None
    if node.effectful:  # a draw: it advances the generator it is called on (``ExternCall.effect``)
        effect = args[0].name if method and args and isinstance(args[0], BufferRef) else target
    ctx.buffers.append(ExternCall(name, target, method, args, kwargs, meta.shape, meta.dtype,
                                  meta.strides, meta.scalar, sequence, effect))
    return ctx.stored(name, meta.shape, meta.dtype, meta.strides)


def same_layout(strides: tuple[int, ...], meta: TensorMeta) -> bool:
    """Whether a buffer with ``strides`` lays out a value as capture saw it (``meta.strides``),
    or, where capture's layout was not dense, as the dense layout the loops give it instead:
    length-1 dimensions aside."""
    def significant(s: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(t for t, n in zip(s, meta.shape) if n != 1)
    return significant(strides) in (significant(meta.strides), significant(output_strides(meta)))
