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
from .program import GraphProgram
from .shape_env import ShapeEnv
from .size_rules import broadcast_shapes, shape_rules
from .sizes import Size, concrete, holds_size, parse_size
from .view_sizes import View, reshape_target, view_rules

__all__ = ["broadcast_shapes", "symbolic_strides", "symbolize"]

#: calls whose result may be a view of their first operand, and the rule that writes it in sizes
_VIEW_RULES = view_rules()
_RESHAPES = frozenset({"method:reshape", "numpy.reshape", "method:ravel", "numpy.ravel",
                       "method:flatten"})
#: node metadata that records numbers derived from the traced sizes (a shape a gate read, a
#: sequence's length): such a node keeps the graph exact
_CONCRETE_META = ("shape_gated", "sequence")


def target_name(node: Node) -> str:
    return f"method:{node.target}" if node.op is Opcode.CALL_METHOD else str(node.target)


def symbolize(program: GraphProgram, dynamic: Mapping[int, Sequence[int]], env: ShapeEnv,
              shape_read: frozenset[str] = frozenset(),
              size_symbols: Mapping[str, Sequence[Any]] | None = None,
              dims_read: Mapping[str, Sequence[int]] | None = None) -> str | None:
    """Give ``program``'s metadata symbolic sizes, in place: for flat input ``i``, its dimensions
    ``dynamic[i]`` become new symbols of ``env``. None when done, else why the graph stays
    exact (the program may then be left half rewritten: symbolize a copy). ``shape_read``:
    names of nodes whose shape the function read in Python and decided something from;
    ``size_symbols``: the capture's symbols of the sizes it read and followed (``{"s0": [node,
    dim]}``), which the nodes' ``size_args`` are written in; ``dims_read``: of the nodes of
    ``shape_read``, those read only in some dimensions, and which (the others: all)."""
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
    rules = shape_rules()
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
        if any(key in node.meta for key in _CONCRETE_META):
            return f"{node.name}: {target}() has a result whose shape was read as numbers"
        sized = False
        if node.meta.get("size_args"):  # arguments computed from shapes the function read
            why = _put_sizes(node, size_symbols or {}, shapes)
            if why is not None:
                return f"{node.name}: {why}"
            sized = holds_size((node.args, node.kwargs))  # (of dynamic dimensions)
        operands = [shapes[a] for a in _array_operands(node)]
        if node.meta.get("view") is not None:  # where the view lies, in sizes
            rule = _VIEW_RULES.get(target)
            view: View | None = rule(node, operands[0]) if rule is not None and operands and \
                isinstance(node.args[0], Node) else None
            if view is None:
                return f"{node.name}: {target}() returns a view without a size rule for " \
                       "its layout"
            shapes[node], views[node] = view
            continue
        if not sized and not any(_symbolic(m.shape) for m in operands):
            # a fresh result of operands whose shapes are numbers (``np.arange(8.0)``, a
            # product with a weight): its shape is the same at every size
            shape = node.tensor.shape
        elif target in _RESHAPES:  # a reshape NumPy made as a copy: a fresh row-major array
            shape = reshape_target(node, operands[0])
        else:
            rule = rules.get(target)
            shape = rule(node, operands) if rule is not None else None
        if shape is None:
            return f"{node.name}: no size rule for {target}()"
        meta = node.tensor
        if concrete(shape) != meta.shape:
            return f"{node.name}: the size rule of {target}() gave {shape}, capture saw " \
                   f"{meta.shape}"
        shapes[node] = _with_shape(meta, shape)
    for node, meta in shapes.items():
        if node.name not in shape_read:
            continue
        read = (dims_read or {}).get(node.name)
        dims = meta.shape if read is None else [meta.shape[d] for d in read if d < meta.ndim]
        if _symbolic(tuple(dims)):
            return f"{node.name}: the function reads its shape in Python, which depends on " \
                   "the dynamic sizes"
    for node, meta in shapes.items():
        node.meta["tensor"] = meta
    for node, view in views.items():
        node.meta["view"] = view
    return None


def _put_sizes(node: Node, size_symbols: Mapping[str, Sequence[Any]],
               shapes: Mapping[Node, TensorMeta]) -> str | None:
    """Replace the ints capture recorded for sizes the function computed from shapes by their
    expressions in the symbolic shapes (``x.reshape(n, -1)`` with ``n = x.shape[0]``)."""
    by_name = {n.name: n for n in shapes}
    args, kwargs = node.args, node.kwargs
    for path, text in node.meta["size_args"]:
        size, values = parse_size(text), {}
        for name in size.symbols if isinstance(size, Size) else ():
            origin = size_symbols.get(name)
            source = by_name.get(origin[0]) if origin else None
            if source is None:
                return f"a size read from a value the graph no longer holds ({text})"
            values[name] = shapes[source].shape[int(origin[1])]
        value = size.evaluate(values) if isinstance(size, Size) else size
        where, *rest = path
        if where == "args":
            args = replaced_argument(args, rest, value)
        else:
            kwargs = replaced_argument(kwargs, rest, value)
    node.set_args(args, kwargs)
    return None


def replaced_argument(container: Any, path: Sequence[Any], value: Any) -> Any:
    """``container`` with the item at ``path`` (indices, keys, a slice's part) replaced."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(container, slice):
        parts = {"start": container.start, "stop": container.stop, "step": container.step}
        parts[head] = replaced_argument(parts[head], rest, value)
        return slice(parts["start"], parts["stop"], parts["step"])
    if isinstance(container, dict):
        return {**container, head: replaced_argument(container[head], rest, value)}
    items = list(container)
    items[head] = replaced_argument(items[head], rest, value)
    return type(container)(items)


def _symbolic(shape: tuple[Any, ...]) -> bool:
    return any(isinstance(n, Size) for n in shape)


def _array_operands(node: Node) -> list[Node]:
    """The array nodes among a call's arguments, in order, those of a list or tuple argument
    (``np.concatenate([a, b])``) included."""
    out = []
    for a in (*node.args, *node.kwargs.values()):
        for item in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(item, Node) and item.tensor is not None:
                out.append(item)
    return out


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
