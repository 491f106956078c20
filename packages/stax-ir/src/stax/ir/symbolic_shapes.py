"""A capture graph's shapes in size symbols (issue 15, docs/dynamic-shapes.md).

Capture traces at the sizes of the call; a size-generic version needs every value's shape as an
expression of the dynamic dimensions of the arguments. ``symbolize`` rewrites the metadata of
a capture graph: each dynamic dimension of an argument becomes a symbol of the active
``ShapeEnv`` (dimensions of equal sizes one symbol: a call must then have them equal, as under
torch.compile's duck sizing) and each node's shape is recomputed from its operands' by the
NumPy rule of its call (broadcasting, a reduction's axes, a matrix product), the relations a
rule needs (two broadcast sizes equal) recorded as guards. Strides follow NumPy's layouts
written in the sizes.

Only graphs whose every call has a rule here are made generic: a call without one, a data gate,
a lifted loop or a shape the Python code read (``tracer.shape_read``: the code may have decided
something from it) keeps the exact-size version, with the reason returned. The rest of the
pipeline then works on ``Size`` dimensions, and every decision it takes from one is a guard
(``stax.ir.sizes``), so a rule missing downstream costs genericity, never a wrong result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .graph import Node, Opcode
from .meta import TensorMeta
from .ops import OPS, OpKind, capture_targets_of, elementwise_ops
from .program import GraphProgram
from .shape_env import ShapeEnv
from .sizes import Size, concrete

_EXTRA_ELEMENTWISE = frozenset({
    "operator.pow", "numpy.power", "numpy.float_power", "numpy.square", "numpy.where",
    "numpy.clip", "method:clip", "method:astype", "numpy.maximum", "numpy.minimum",
})
_MATMUL = frozenset({"operator.matmul", "numpy.matmul"})
_TRANSPOSE = frozenset({"numpy.transpose", "method:transpose"})
#: node metadata that records numbers derived from the traced sizes (a view's offset and
#: strides in its base, a shape a gate read): such a node keeps the graph exact
_CONCRETE_META = ("view", "shape_gated", "sequence")


def _elementwise_targets() -> frozenset[str]:
    return capture_targets_of(elementwise_ops()) | _EXTRA_ELEMENTWISE


def _reduction_targets() -> frozenset[str]:
    return capture_targets_of(frozenset(n for n, op in OPS.items()
                                        if op.kind is OpKind.REDUCTION))


def target_name(node: Node) -> str:
    return f"method:{node.target}" if node.op is Opcode.CALL_METHOD else str(node.target)


def symbolize(program: GraphProgram, dynamic: Mapping[int, Sequence[int]], env: ShapeEnv,
              shape_read: frozenset[str] = frozenset()) -> str | None:
    """Give ``program``'s metadata symbolic sizes, in place: for flat input ``i``, its dimensions
    ``dynamic[i]`` become new symbols of ``env``. None when done, else why the graph stays
    exact (nothing is changed then). ``shape_read``: names of nodes whose shape the function
    read in Python."""
    if program.gates or program.replay is not None:
        return "the function has data gates"
    if program.writeback:
        return "the function updates arguments in place"
    # ``inputs`` name each placeholder by its target (an attribute's path: ``self.w``)
    placeholders = {str(n.target): n for n in program.graph.nodes if n.op is Opcode.PLACEHOLDER}
    shapes: dict[Node, TensorMeta] = {}
    by_size: dict[int, Size] = {}  # duck sizing, as torch.compile's: equal sizes, one symbol
    for i, name in enumerate(program.inputs):
        if name is None or i not in dynamic:
            continue
        node = placeholders[name]
        meta = node.tensor
        dims = list(meta.shape)
        for d in dynamic[i]:
            n = meta.shape[d]
            if n not in by_size:
                by_size[n] = env.new_symbol(n, f"inputs[{i}].shape[{d}]")
            dims[d] = by_size[n]
        shapes[node] = _with_shape(meta, tuple(dims))
    elementwise, reductions = _elementwise_targets(), _reduction_targets()
    views: dict[Node, dict[str, Any]] = {}
    for node in program.graph.nodes:
        if node.op is Opcode.PLACEHOLDER:
            shapes.setdefault(node, node.tensor)
            continue
        if node.op is Opcode.OUTPUT:
            continue
        if node.op not in (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD) or node.tensor is None:
            return f"{node.name}: a {node.op.value} node"
        target = target_name(node)
        operands = [shapes[a] for a in _array_operands(node)]
        if target in _TRANSPOSE and node.meta.get("view") is not None:
            view = _transposed(node, operands)
            if view is None:
                return f"{node.name}: a transpose of a form without a size rule"
            meta, node_view = view
            shapes[node] = meta
            views[node] = node_view
            continue
        if any(key in node.meta for key in _CONCRETE_META):  # where a view lies, in numbers
            return f"{node.name}: {target}() returns a view (its layout is not written in sizes yet)"
        if target in elementwise:
            shape = broadcast_shapes([m.shape for m in operands])
        elif target in reductions:
            shape = _reduced(node, operands)
        elif target in _MATMUL:
            shape = _matmul(operands)
        else:
            shape = None
        if shape is None:
            return f"{node.name}: no size rule for {target}()"
        meta = node.tensor
        if concrete(shape) != meta.shape:
            return f"{node.name}: the size rule of {target}() gave {shape}, capture saw " \
                   f"{meta.shape}"
        shapes[node] = _with_shape(meta, shape)
    for node, meta in shapes.items():
        if node.name in shape_read and _symbolic(meta.shape):
            return f"{node.name}: the function reads its shape in Python, which depends on " \
                   "the dynamic sizes"
    for node, meta in shapes.items():
        node.meta["tensor"] = meta
    for node, view in views.items():
        node.meta["view"] = view
    return None


def _symbolic(shape: tuple[Any, ...]) -> bool:
    return any(isinstance(n, Size) for n in shape)


def _array_operands(node: Node) -> list[Node]:
    return [a for a in (*node.args, *node.kwargs.values())
            if isinstance(a, Node) and a.tensor is not None]


def broadcast_shapes(shapes: Sequence[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    """NumPy's broadcast of ``shapes``, with sizes: a symbol against 1 is the symbol, two
    symbols must be equal (a guard)."""
    if not shapes:
        return ()
    rank = max(len(s) for s in shapes)
    out = []
    for d in range(rank):
        size: Any = 1
        for s in shapes:
            k = d - (rank - len(s))
            if k < 0:
                continue
            n = s[k]
            if isinstance(n, int) and n == 1:
                continue
            if isinstance(size, int) and size == 1:
                size = n
            elif not n == size:  # a decision: a guard that they are equal
                return None
        out.append(size)
    return tuple(out)


def _axis_argument(node: Node) -> Any:
    if "axis" in node.kwargs:
        return node.kwargs["axis"]
    return node.args[1] if len(node.args) > 1 else None  # f(x, axis) and x.f(axis) alike


def _reduced(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    if len(operands) != 1 or {"out", "where", "initial"} & set(node.kwargs):
        return None
    shape = operands[0].shape
    axis = _axis_argument(node)
    keep = bool(node.kwargs.get("keepdims", False))
    if axis is None:
        axes = set(range(len(shape)))
    elif isinstance(axis, int):
        axes = {axis % len(shape)} if shape else set()
    elif isinstance(axis, tuple) and all(isinstance(a, int) for a in axis):
        axes = {a % len(shape) for a in axis}
    else:
        return None
    if node.target in ("argmax", "argmin", "numpy.argmax", "numpy.argmin") and \
            not isinstance(axis, int) and axis is not None:
        return None
    return tuple(1 if d in axes else n for d, n in enumerate(shape) if keep or d not in axes)


def _transposed(node: Node, operands: list[TensorMeta]
                ) -> tuple[TensorMeta, dict[str, Any]] | None:
    """``x.T``, ``np.transpose(x, axes)``: the operand's shape and strides permuted, a view at
    offset 0 of the operand's memory (the view metadata capture recorded, in sizes)."""
    if len(operands) != 1:
        return None
    base, meta = operands[0], node.tensor
    axes = node.kwargs.get("axes", node.args[1] if len(node.args) > 1 else None)
    if len(node.args) > 2:  # x.transpose(1, 0)
        axes = node.args[1:]
    order = tuple(reversed(range(base.ndim))) if axes is None else tuple(axes)
    if sorted(a % max(base.ndim, 1) for a in order) != list(range(base.ndim)):
        return None
    order = tuple(a % base.ndim for a in order)
    shape = tuple(base.shape[a] for a in order)
    strides = tuple(base.strides[a] for a in order)
    view = node.meta["view"]
    if view.get("offset") != 0 or concrete(strides) != tuple(view["strides"]) or \
            concrete(shape) != meta.shape:
        return None
    return (TensorMeta(shape, meta.dtype, strides, meta.device, meta.scalar),
            {**view, "strides": list(strides), "base_strides": list(base.strides)})


def _matmul(operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    if len(operands) != 2 or operands[0].ndim != 2 or operands[1].ndim != 2:
        return None
    (m, k), (k2, n) = operands[0].shape, operands[1].shape
    if not k == k2:
        return None
    return (m, n)


def _with_shape(meta: TensorMeta, shape: tuple[Any, ...]) -> TensorMeta:
    return TensorMeta(shape, meta.dtype, symbolic_strides(shape, meta.shape, meta.strides),
                      meta.device, meta.scalar)


def symbolic_strides(shape: tuple[Any, ...], sizes: tuple[int, ...],
                     strides: tuple[int, ...]) -> tuple[Any, ...]:
    """``strides`` (of an array of ``sizes``) written in ``shape``'s sizes as definition 2.2
    does: from the smallest stride out, a stride equal to the inner dimension's stride times
    its size is that product; any other stays a number (a step, a broadcast's 0)."""
    out: list[Any] = list(strides)
    order = sorted((d for d in range(len(sizes)) if sizes[d] > 1),
                   key=lambda d: (abs(strides[d]), d))
    inner: int | None = None
    for d in order:
        if inner is not None and strides[d] != 0 and \
                strides[d] == strides[inner] * sizes[inner]:
            out[d] = out[inner] * shape[inner]
        inner = d
    return tuple(out)
