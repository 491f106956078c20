"""Lowering to NumPy calls between kernels (``ExternCall``): the ``extern`` op, whole operators
run as library functions, and any op in a form the kernels do not compute (its NumPy
reference), which is how every rule declines rather than compute a different result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stax.ir import Node, TensorMeta, get_op, scatter_key

from .compaction import selection
from .containers import fold
from .context import Lazy, LoopLowering, output_strides
from .ir import BufferRef, ExternCall
from .registry import lowers


@lowers("extern", any_dtype=True)
def lower_extern(ctx: LoopLowering, node: Node) -> Lazy:
    attrs = node.kwargs
    compacted = selection(ctx, node)  # a[m] of a vector: a prefix sum and a scatter
    if compacted is not None:
        return compacted
    return extern_call(ctx, node, attrs["fn"], attrs["method"], node.args, attrs["call_kwargs"])


def _key(entries: tuple[tuple[Any, ...], ...]) -> tuple[Any, ...]:
    """A ``setitem`` key as the index NumPy takes: its slices are ``slice.indices`` triples, whose
    stop -1 with step -1 means "through element 0" (``None`` in a slice, not the last element)."""
    return tuple(slice(e[1], None if e[2] < 0 else e[2], e[3]) if e[0] == "slice" else e[1]
                 for e in entries)


def _scatter_index(n: Node) -> tuple[Any, ...]:
    indices = tuple(n.args[1:1 + n.kwargs["count"]])
    axes = n.kwargs.get("axes")
    return indices if axes is None else scatter_key(len(n.args[0].tensor.shape), indices, axes)


def _scattered(n: Node) -> tuple[Any, ...]:
    """A scatter's (x, index, value) as ``ufunc.at`` takes them."""
    count = n.kwargs["count"]
    return (n.args[0], _scatter_index(n),
            n.args[1 + count] if len(n.args) > 1 + count else n.kwargs["scalar"])


#: the NumPy call computing an op whose reference is not the NumPy function of its name, from
#: its node: (target, method, args, kwargs), as ``extern_call`` takes them
NUMPY_CALLS: dict[str, Callable[[Node], tuple[str, bool, tuple[Any, ...], dict[str, Any]]]] = {
    "cast": lambda n: ("astype", True, (n.args[0], n.kwargs["dtype"]), {}),
    "cumsum": lambda n: ("numpy.cumsum", False, n.args, {"axis": n.kwargs["axis"],
                                                         "dtype": n.kwargs["dtype"]}),
    "cumprod": lambda n: ("numpy.cumprod", False, n.args, {"axis": n.kwargs["axis"],
                                                           "dtype": n.kwargs["dtype"]}),
    "cummax": lambda n: ("numpy.maximum.accumulate", False, n.args,
                         {"axis": n.kwargs["axis"], "dtype": n.kwargs["dtype"]}),
    "cummin": lambda n: ("numpy.minimum.accumulate", False, n.args,
                         {"axis": n.kwargs["axis"], "dtype": n.kwargs["dtype"]}),
    "concatenate": lambda n: ("numpy.concatenate", False, (tuple(n.args),),
                              {"axis": n.kwargs["axis"]}),
    "stack": lambda n: ("numpy.stack", False, (tuple(n.args),), {"axis": n.kwargs["axis"]}),
    "pad": lambda n: ("numpy.pad", False, (n.args[0], n.kwargs["pad_width"]),
                      {"constant_values": n.kwargs["value"]}),
    "reshape": lambda n: ("numpy.reshape", False, (n.args[0], n.kwargs["shape"]), {}),
    "take": lambda n: ("numpy.take", False, n.args, {"axis": n.kwargs["axis"]}),
    "decline_if": lambda n: ("stax.ops.decline_if", False, (*n.args, n.kwargs["why"]), {}),
    "python_pow": lambda n: ("stax.functional.python_pow", False, n.args, {}),
    "dynamic_slice": lambda n: ("stax.ops.dynamic_slice", False,
                                (*n.args, n.kwargs["axis"], n.kwargs["length"]), {}),
    "take_const": lambda n: ("numpy.take", False, (n.args[0], list(n.kwargs["indices"])),
                             {"axis": n.kwargs["axis"]}),
    "roll": lambda n: ("numpy.roll", False, (n.args[0], n.kwargs["shift"]),
                       {"axis": n.kwargs["axis"]}),
    "scatter": lambda n: ("stax.functional.add_at" if n.kwargs["accumulate"] else
                          "stax.functional.setitem", False, _scattered(n), {}),
    "scatter_maximum": lambda n: ("stax.functional.maximum_at", False, _scattered(n), {}),
    "scatter_minimum": lambda n: ("stax.functional.minimum_at", False, _scattered(n), {}),
    "setitem": lambda n: ("stax.functional.setitem", False,
                          (n.args[0], _key(n.kwargs["key"]),
                           n.args[1] if len(n.args) > 1 else n.kwargs["scalar"]), {}),
    "tril": lambda n: ("numpy.tril", False, (n.args[0], n.kwargs["k"]), {}),
    "triu": lambda n: ("numpy.triu", False, (n.args[0], n.kwargs["k"]), {}),
    "full": lambda n: ("numpy.full", False, (n.kwargs["shape"], n.kwargs["value"],
                                             n.kwargs["dtype"]), {}),
    "arange": lambda n: ("numpy.arange", False, (n.kwargs["start"], n.kwargs["start"] +
                                                 n.kwargs["step"] * n.kwargs["n"],
                                                 n.kwargs["step"]), {"dtype": n.kwargs["dtype"]}),
    "eye": lambda n: ("numpy.eye", False, (n.kwargs["n"], n.kwargs["m"], n.kwargs["k"]),
                      {"dtype": n.kwargs["dtype"]}),
}
#: ops that are one part of a NumPy function's tuple result: the function, and the part
NUMPY_PARTS = {"frexp_mantissa": ("numpy.frexp", 0), "frexp_exponent": ("numpy.frexp", 1)}


def op_as_extern(ctx: LoopLowering, node: Node) -> Lazy:
    """The op computed by NumPy: in dtypes the kernels do not handle (float16...), or in a form
    its rule leaves to NumPy."""
    op = node.target
    if get_op(op).kind.value == "reduction":
        kwargs = dict(node.kwargs)
        if op in ("argmax", "argmin"):  # NumPy takes one axis or None there
            ndim = node.args[0].tensor.ndim
            axes = kwargs["axis"]
            kwargs["axis"] = None if len(axes) == ndim and ndim != 1 else axes[0]
        if op == "mean" and kwargs.get("dtype") == node.args[0].tensor.dtype == "float16":
            kwargs["dtype"] = None  # NumPy's own choice: summed in float32; float16 asked for
            # explicitly sums in float16 (the mean of 7 x 16000 was inf)
        return extern_call(ctx, node, f"numpy.{op}", False, node.args, kwargs)
    if get_op(op).kind.value == "composite":
        return library_call(ctx, node)
    if op in NUMPY_CALLS:
        return extern_call(ctx, node, *NUMPY_CALLS[op](node))
    if op in NUMPY_PARTS:
        function, part = NUMPY_PARTS[op]
        parts = extern_call(ctx, node, function, False, node.args, {}, sequence=2)
        return extern_call(ctx, node, "operator.getitem", False, (BufferRef(parts.buffer), part), {})
    return extern_call(ctx, node, f"numpy.{get_op(op).reference.__name__}", False, node.args, {})


def library_call(ctx: LoopLowering, node: Node) -> Lazy:
    """A whole operator the backend runs as its library function ``stax.ops.<op>``: in the basis
    (spec §4.8), so it is not decomposed; its kernel arrives with the loop issue."""
    attrs = tuple(node.kwargs[a] for a in get_op(node.target).attrs)
    return extern_call(ctx, node, f"stax.ops.{node.target}", False, (*node.args, *attrs), {})


def extern_call(ctx: LoopLowering, node: Node, target: str, method: bool, call_args: Any,
                call_kwargs: Any, sequence: int | None = None) -> Lazy:
    """Operands of a NumPy call must be arrays in memory: realize pointwise values first. NumPy
    gets each operand in the layout capture saw, as some calls read the memory order
    (``ravel(order="K")``, ``flatten("A")``): a buffer the loops wrote in another layout (a
    reduction of an F-ordered array is written row-major) is copied into that layout first.
    ``sequence``: the call returns that many arrays (else as the node's meta says)."""
    def operand(value: Any) -> Any:
        if not isinstance(value, Node):
            return value
        lazy, meta = ctx.values[value], value.tensor
        if lazy.parts:
            return BufferRef(_complex_operand(ctx, value, lazy))
        # never for a NumPy scalar: ``x[1]`` of a 1-D array is a copy, and the call's result
        # (``np.atleast_1d(x[1])``) must not see a later update of ``x`` (found by a probe)
        if lazy.buffer is None and lazy.memory is not None and meta is not None and \
                same_layout(lazy.memory[2], meta) and not meta.scalar:
            return BufferRef(_view_operand(ctx, meta, *lazy.memory))
        if lazy.buffer is None or (meta is not None and not same_layout(lazy.memory[2], meta)):
            lazy = ctx.values[value] = ctx.realize(lazy, output_strides(meta), value)
        return BufferRef(lazy.buffer)

    args, kwargs = fold(call_args, operand), fold(call_kwargs, operand)  # may realize buffers
    name = f"buf{len(ctx.buffers)}"
    if sequence is None:
        sequence = node.meta.get("sequence")
    meta = node.tensor if sequence is None else TensorMeta((), "object", ())
    effect = None
    if node.effectful:  # a draw: it advances the generator it is called on (``ExternCall.effect``)
        effect = args[0].name if method and args and isinstance(args[0], BufferRef) else target
    ctx.buffers.append(ExternCall(name, target, method, args, kwargs, meta.shape, meta.dtype,
                                  meta.strides, meta.scalar, sequence, effect, node.source))
    return ctx.stored(name, meta.shape, meta.dtype, meta.strides)


def _view_operand(ctx: LoopLowering, meta: Any, buffer: str, offset: int,
                  strides: tuple[int, ...]) -> str:
    """A view of a buffer (at element ``offset``, ``strides``) in the layout capture saw
    (``Xn.T`` of ``Xn @ Xn.T``; a complex value's parts), made by NumPy instead of copied: one
    memory for both operands lets NumPy's product take its symmetric path (syrk), and a copy
    costs a pass over the operand."""
    name = f"buf{len(ctx.buffers)}"
    ctx.buffers.append(ExternCall(name, "stax.ops.view", False,
                                  (BufferRef(buffer), offset, strides, tuple(meta.shape)), {},
                                  tuple(meta.shape), meta.dtype, strides))
    return name


def _complex_operand(ctx: LoopLowering, value: Node, lazy: Lazy) -> str:
    """The buffer NumPy gets for a complex value (``complex_values``): its own buffer, a view
    of the complex buffer its parts lie in (NumPy picks its loop by the layout: a reversed
    complex64 operand makes other products), or the value written to a buffer."""
    meta = value.tensor
    if lazy.memory is not None:
        buffer, offset, parts = lazy.memory
        if parts[-1] == 1 and offset % 2 == 0 and all(s % 2 == 0 for s in parts[:-1]):
            strides = tuple(s // 2 for s in parts[:-1])
            if lazy.buffer is not None and same_layout(strides, meta):
                return buffer
            return _view_operand(ctx, meta, buffer, offset // 2, strides)
    lazy = ctx.values[value] = ctx.realize(lazy, output_strides(meta), value)
    return lazy.buffer


def same_layout(strides: tuple[int, ...], meta: TensorMeta) -> bool:
    """Whether a buffer with ``strides`` lays out a value as capture saw it (``meta.strides``),
    or, where capture's layout was not dense, as the dense layout the loops give it instead:
    length-1 dimensions aside."""
    def agrees(other: tuple[int, ...]) -> bool:  # a length asked only where strides differ
        return all(a == b or n == 1 for a, b, n in zip(strides, other, meta.shape))
    return len(strides) == len(meta.shape) and (agrees(meta.strides) or
                                                agrees(output_strides(meta)))
