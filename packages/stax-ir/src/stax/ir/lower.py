"""Lowering of the capture graph (Python calls) to the op graph (canonical ops), spec §4–5.

Each capture target (``operator.add``, ``numpy.add``, method ``sum``, ``stax.nn.relu``...) has one
rule here that emits canonical ops. Dtype and shape come from the mixed-mode metadata recorded at
capture time (the eager result on the example inputs), so NumPy's NEP 50 promotion is decided by
NumPy itself and never re-derived. A target without a rule, or a call with arguments a rule does
not handle, raises ``UnsupportedError`` naming the node and the user's source line.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import UnsupportedError
from .graph import Graph, Node, Opcode, map_nodes, mark_events_only
from .meta import TensorMeta
from .ops import NN_FUNCTIONS, comparison_ops
from .program import OPGRAPH_SCHEMA, GraphProgram

Rule = Callable[["LoweringContext", Node, tuple[Any, ...], dict[str, Any]], Any]


class NotNative(Exception):
    """Raised by a rule for a form of its call it does not lower (``np.add(x, y, dtype=...)``):
    the call then runs as an extern NumPy call."""

RULES: dict[tuple[str, str], Rule] = {}


def rule(*keys: str) -> Callable[[Rule], Rule]:
    """Register a rule for ``"function:<target>"`` / ``"method:<name>"`` keys."""
    def register(fn: Rule) -> Rule:
        for key in keys:
            kind, _, target = key.partition(":")
            RULES[(kind, target)] = fn
        return fn
    return register


class LoweringContext:
    def __init__(self) -> None:
        self.graph = Graph("op")
        self.current: Node | None = None

    def emit(self, op: str, operands: tuple[Any, ...], attrs: dict[str, Any] | None = None,
             meta: TensorMeta | None = None, name: str | None = None) -> Node:
        assert self.current is not None
        info: dict[str, Any] = {"tensor": meta or self.current.tensor}
        if self.current.source:
            info["source"] = self.current.source
        if "sequence" in self.current.meta and meta is None:  # several results, as an extern
            info = {"sequence": self.current.meta["sequence"], "source": self.current.source}
        if self.current.effectful:  # a draw stays one, through every later layer
            info["random"] = True
        return self.graph.call_function(op, tuple(operands), attrs or {}, name=name or op, meta=info)

    def unsupported(self, what: str, hint: str | None = None) -> UnsupportedError:
        assert self.current is not None
        return UnsupportedError(what, node=self.current.name, source=self.current.source, hint=hint)


def describe(node: Node) -> str:
    return f"method .{node.target}()" if node.op is Opcode.CALL_METHOD else f"{node.target}()"


def lower_capture(capture: GraphProgram) -> GraphProgram:
    """Lower a ``stax.capture/1`` program to a ``stax.opgraph/1`` program."""
    ctx = LoweringContext()
    env: dict[Node, Any] = {}
    live = _live_nodes(capture.graph)
    for node in capture.graph.nodes:
        ctx.current = node
        if node not in live:
            continue  # computes only data gates: the replay subgraph (extracted at capture) has it
        if node.op is Opcode.PLACEHOLDER:
            env[node] = ctx.graph.placeholder(node.target, dict(node.meta))
            continue
        if node.op is Opcode.OUTPUT:
            ctx.graph.output(map_nodes(node.args[0], env.__getitem__))
            continue
        if node.tensor is None and "sequence" not in node.meta:
            raise ctx.unsupported(f"{describe(node)} produced no array value at capture")
        kind = "method" if node.op is Opcode.CALL_METHOD else "function"
        args = map_nodes(node.args, env.__getitem__)
        kwargs = map_nodes(node.kwargs, env.__getitem__)
        fn = RULES.get((kind, node.target))
        try:
            if fn is None or node.effectful:  # a draw runs as NumPy's own call
                raise NotNative
            env[node] = fn(ctx, node, args, kwargs)
        except NotNative:
            env[node] = _extern(ctx, node, args, kwargs)
        if node.events_only:  # unused, kept for its floating-point events (passes/dce.py)
            mark_events_only(env[node])
    return GraphProgram(OPGRAPH_SCHEMA, capture.name, ctx.graph, list(capture.inputs),
                        capture.input_tree, capture.output_tree, dict(capture.info),
                        writeback=list(capture.writeback))


#: Functions whose result shape depends on the data, not only on the input shapes: their traced
#: shape would be wrong for other data, so they cannot be planned ahead.
DATA_DEPENDENT_SHAPES = frozenset({
    "numpy.unique", "numpy.unique_values", "numpy.unique_counts", "numpy.unique_inverse",
    "numpy.unique_all", "numpy.flatnonzero", "numpy.argwhere", "numpy.extract", "numpy.compress",
    "numpy.trim_zeros", "numpy.setdiff1d", "numpy.intersect1d", "numpy.union1d", "numpy.setxor1d",
    "numpy.bincount", "numpy.nonzero", "numpy.histogram_bin_edges", "method:nonzero",
    "method:compress",
})


def data_dependent_shape(node: Node) -> bool:
    """Whether the shape of this capture node's result depends on data, not only on shapes
    (``x[mask]``, ``np.unique``...). Capture makes such a shape a data gate ("shape_gated")."""
    name = f"method:{node.target}" if node.op is Opcode.CALL_METHOD else node.target
    if name in DATA_DEPENDENT_SHAPES:
        return True
    if node.target == "numpy.repeat" and _has_node(node.args[1:]):
        return True
    return node.target == "operator.getitem" and _has_bool_index(node.args[1])


def _native_form(node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """How a call without a rule still compiles natively, if it does: ``take`` (a gather by an
    integer array), ``take_const`` (a short constant list of positions), ``reshape`` (a C-order
    reshape NumPy made as a copy). Views are decided apart (``_read_natively``): whether NumPy's
    own view object is needed depends on the view's users."""
    if node.target == "operator.getitem" and node.op is not Opcode.CALL_METHOD and len(args) == 2:
        if _gatherable(args[0], args[1]):
            return "take"
        if _constant_indices(args) is not None:
            return "take_const"
    if node.meta.get("view") is None and _copying_reshape(node, args, kwargs):
        return "reshape"
    return None


def _extern(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """A call without a native rule runs as NumPy inside the compiled program (an extern node),
    unless it has a native form (``_native_form``). A result whose shape depends on the data must
    have that shape gated at capture. A view of its first operand that the function does not
    return becomes a ``view`` op: an affine read of the operand's memory, so no call is made; a
    returned view stays NumPy's own view object."""
    method = node.op is Opcode.CALL_METHOD
    view = node.meta.get("view")
    if node.target == "operator.getitem" and len(args) == 2 and isinstance(args[0], tuple) and \
            isinstance(args[1], int):
        return args[0][args[1]]  # one result of a call a multi-result rule lowered natively
    if view is not None and isinstance(args[0], Node) and args[0].tensor is not None and \
            _read_natively(node):
        base = args[0].tensor
        mapped = rebase_view(view["offset"], view["strides"], node.tensor.shape, base.shape,
                             view.get("base_strides", base.strides), base.strides)
        if mapped is not None:  # else NumPy's call reads the operand, whatever its layout
            return ctx.emit("view", (args[0],), {"offset": mapped[0], "strides": mapped[1],
                                                 "shape": node.tensor.shape}, name=node.target)
    form = _native_form(node, args, kwargs)
    if form == "take":
        return ctx.emit("take", (args[0], args[1]), {"axis": 0})
    if form == "take_const":
        return ctx.emit("take_const", (args[0],), {"axis": 0, "indices": _constant_indices(args)})
    if form == "reshape":
        return ctx.emit("reshape", (args[0],), {"shape": tuple(node.tensor.shape)})
    if data_dependent_shape(node) and not node.meta.get("shape_gated"):
        raise ctx.unsupported(f"{describe(node)}: its result's shape depends on the data")
    return ctx.emit("extern", args, {"fn": node.target, "method": method, "call_kwargs": kwargs},
                    name=node.target)


def rebase_view(offset: int, strides: Sequence[int], shape: Sequence[int],
                base_shape: Sequence[int], measured: Sequence[int], layout: Sequence[int]
                ) -> tuple[int, tuple[int, ...]] | None:
    """A view's affine map (element ``offset`` and ``strides`` into its base's memory), measured
    on the base laid out with strides ``measured``, for the same base laid out with ``layout``;
    None when the view is not affine in the base's elements (a reshape across dimensions).

    A view map is a statement about memory, so it holds only for the layout it was measured on:
    row 0 of an F-ordered (3, 4) array is offset 0, stride 3, but offset 0, stride 1 in a
    row-major copy. The map is rebased through the base's element indices: the element at the
    view's origin, and the index step along each view dimension, found by decomposing the memory
    positions; the steps are accepted only when every element the view reaches is then inside
    the base (no carry from one base dimension into the next), so the rebased map reads the same
    elements exactly."""
    strides = tuple(int(s) for s in strides)
    if tuple(measured) == tuple(layout):
        return int(offset), strides
    if any(n == 0 for n in shape):
        return 0, (0,) * len(shape)
    origin = _element_at(offset, base_shape, measured)
    if origin is None:
        return None
    low, high = list(origin), list(origin)
    rebased = []
    for n, stride in zip(shape, strides):
        if n == 1:
            rebased.append(0)
            continue
        step = _element_at(offset + stride, base_shape, measured)
        if step is None:
            return None
        move = [b - a for a, b in zip(origin, step)]
        for d, m in enumerate(move):
            if m > 0:
                high[d] += (n - 1) * m
            else:
                low[d] += (n - 1) * m
        rebased.append(sum(m * t for m, t in zip(move, layout)))
    if any(lo < 0 or hi >= extent for lo, hi, extent in zip(low, high, base_shape)):
        return None
    return sum(j * t for j, t in zip(origin, layout)), tuple(rebased)


def _element_at(position: int, shape: Sequence[int], strides: Sequence[int]) -> list[int] | None:
    """An element index of an array of ``shape`` with ``strides`` whose memory position is
    ``position`` (elements from element 0), or None when this greedy search finds none."""
    index = [0] * len(shape)
    for d in sorted(range(len(shape)), key=lambda d: -abs(strides[d])):
        if shape[d] > 1 and strides[d] != 0:
            index[d] = min(max(position // strides[d], 0), shape[d] - 1)
            position -= index[d] * strides[d]
    return index if position == 0 else None


RESHAPES = frozenset({("method", "reshape"), ("method", "ravel"), ("method", "flatten"),
                      ("function", "numpy.reshape"), ("function", "numpy.ravel")})


def _copying_reshape(node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """A C-order reshape, ravel or flatten whose result NumPy made as a copy (the operand's
    layout does not allow a view): computed natively by reading the operand at the positions
    the flat index gives."""
    kind = "method" if node.op is Opcode.CALL_METHOD else "function"
    if (kind, node.target) not in RESHAPES or not args or not isinstance(args[0], Node) or \
            args[0].tensor is None or node.tensor is None:
        return False
    order = kwargs.get("order", "C")
    if node.target in ("numpy.reshape", "reshape") and len(args) > 2 and kind == "function":
        order = args[2]
    if node.target in ("flatten", "ravel", "numpy.ravel"):  # order may be positional there
        if len(args) > 2:
            return False
        if len(args) == 2:
            order = args[1]
    return order == "C" and set(kwargs) <= {"order", "shape", "newshape"}


def _read_natively(node: Node) -> bool:
    """Whether every user of a view compiles natively (so none needs NumPy's view object): not
    the output, not an extern call — views of views are followed."""
    for user in node.users:
        if user.op is Opcode.OUTPUT:
            return False
        kind = "method" if user.op is Opcode.CALL_METHOD else "function"
        if (kind, user.target) in RULES or _native_form(user, user.args, user.kwargs):
            continue
        if user.meta.get("view") is not None and user.args and user.args[0] is node and \
                _read_natively(user):
            continue
        return False
    return True


def _has_node(value: Any) -> bool:
    found: list[Node] = []
    map_nodes(value, found.append)
    return bool(found)


def _has_bool_index(key: Any) -> bool:
    found: list[Node] = []
    map_nodes(key, found.append)
    return any(n.tensor is not None and n.tensor.dtype == "bool" for n in found)


def _live_nodes(graph: Graph) -> set[Node]:
    """Placeholders and every node the outputs, an effectful node (a draw) or a node kept for
    its floating-point events depend on."""
    live = set(graph.placeholders)
    pending = [graph.output_node, *(n for n in graph.nodes if n.effectful or n.events_only)]
    while pending:
        node = pending.pop()
        if node not in live or node.op is Opcode.PLACEHOLDER:
            live.add(node)
            pending.extend(n for n in node.inputs if n not in live)
    return live


# -- operands ------------------------------------------------------------------------------------

_SCALAR_TYPES = (bool, int, float, np.bool_, np.integer, np.floating)


def _operand(ctx: LoweringContext, value: Any) -> Any:
    if isinstance(value, Node) or isinstance(value, _SCALAR_TYPES):
        return value
    raise NotNative


def _no_ufunc_kwargs(ctx: LoweringContext, kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise NotNative


def _pointwise(op: str) -> Rule:
    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        if set(kwargs) == {"dtype"} and op not in comparison_ops():
            # a ufunc's dtype= computes in that dtype: NumPy casts the operands first
            dtype = np.dtype(kwargs["dtype"]).name
            if dtype != node.tensor.dtype:
                raise NotNative
            return ctx.emit(op, tuple(_cast_to(ctx, _operand(ctx, a), dtype) for a in args))
        _no_ufunc_kwargs(ctx, kwargs)
        return ctx.emit(op, tuple(_operand(ctx, a) for a in args))
    return lower


def _cast_to(ctx: LoweringContext, value: Any, dtype: str) -> Any:
    if not isinstance(value, Node) or value.tensor.dtype == dtype:
        return value
    meta = TensorMeta(value.tensor.shape, dtype, value.tensor.strides)
    return ctx.emit("cast", (value,), {"dtype": dtype}, meta=meta)


def _ufunc_reduce(op: str) -> Rule:
    """``np.add.reduce`` and friends: the reduction op (their axis defaults to 0)."""
    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        params = _bind(lambda array, axis=0, dtype=None, out=None, keepdims=False: None, args,
                       kwargs)
        params.setdefault("axis", 0)
        params["a"] = params.pop("array")
        return _lower_reduction(ctx, node, op, params)
    return lower


def _ufunc_accumulate(op: str) -> Rule:
    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        params = _bind(lambda array, axis=0, dtype=None, out=None: None, args, kwargs)
        x = params["array"]
        if not isinstance(x, Node) or x.tensor is None or params.get("out") is not None or \
                x.tensor.ndim == 0:
            raise NotNative
        axis = _int(params.get("axis", 0)) % x.tensor.ndim
        return ctx.emit(op, (x,), {"axis": axis, "dtype": node.tensor.dtype})
    return lower


def _copy(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """A new array with the same values (its layout is the one NumPy gave, measured at capture)."""
    if len(args) != 1 or set(kwargs) - {"order"} or not isinstance(args[0], Node):
        raise NotNative
    return ctx.emit("cast", (args[0],), {"dtype": node.tensor.dtype})


rule("function:operator.add", "function:numpy.add")(_pointwise("add"))
rule("function:operator.sub", "function:numpy.subtract")(_pointwise("sub"))
rule("function:operator.mul", "function:numpy.multiply")(_pointwise("mul"))
rule("function:operator.truediv", "function:numpy.true_divide",
     "function:numpy.divide")(_pointwise("truediv"))
rule("function:operator.floordiv", "function:numpy.floor_divide")(_pointwise("floordiv"))
rule("function:operator.mod", "function:numpy.remainder", "function:numpy.mod")(_pointwise("mod"))


def _result_metas(node: Node) -> list[TensorMeta]:
    """The array metadata of each result of a multi-result call, from its getitem users (capture
    makes one per result)."""
    metas: dict[int, TensorMeta] = {}
    for user in node.users:
        if user.target == "operator.getitem" and len(user.args) == 2 and \
                isinstance(user.args[1], int) and user.tensor is not None:
            metas[user.args[1]] = user.tensor
    if sorted(metas) != list(range(node.meta.get("sequence", 0))):
        raise NotNative
    return [metas[i] for i in sorted(metas)]


@rule("function:numpy.divmod")
def _divmod(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
            kwargs: dict[str, Any]) -> tuple[Node, Node]:
    """(x // y, x % y) as two native ops (the getitem users pick them)."""
    if len(args) != 2 or kwargs:
        raise NotNative
    quotient, remainder = _result_metas(node)
    x, y = (_operand(ctx, a) for a in args)
    return (ctx.emit("floordiv", (x, y), meta=quotient), ctx.emit("mod", (x, y), meta=remainder))


@rule("function:numpy.modf")
def _modf(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> tuple[Node, Node]:
    """(fraction, integral part), both with the sign of x: x - trunc(x) is exact; an infinite x
    has fraction +-0.0, a NaN gives NaN twice."""
    if len(args) != 1 or kwargs or not isinstance(args[0], Node):
        raise NotNative
    fraction_meta, integral_meta = _result_metas(node)
    if np.dtype(integral_meta.dtype).kind != "f":
        raise NotNative
    x = args[0]
    integral = ctx.emit("trunc", (x,), meta=integral_meta)
    rest = ctx.emit("sub", (x, integral), meta=fraction_meta)
    infinite = ctx.emit("isinf", (x,),
                        meta=TensorMeta(fraction_meta.shape, "bool", fraction_meta.strides))
    rest = ctx.emit("where", (infinite, 0.0, rest), meta=fraction_meta)
    return (ctx.emit("copysign", (rest, x), meta=fraction_meta), integral)


@rule("function:numpy.frexp")
def _frexp(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> tuple[Node, Node]:
    """(mantissa, exponent) from the float's bits (stax.loop.bits)."""
    if len(args) != 1 or kwargs or not isinstance(args[0], Node):
        raise NotNative
    mantissa, exponent = _result_metas(node)
    return (ctx.emit("frexp_mantissa", (args[0],), meta=mantissa),
            ctx.emit("frexp_exponent", (args[0],), meta=exponent))


@rule("function:numpy.fmod")
def _fmod(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """C's fmod for floats: the remainder of |x| by |y| (floored and truncated agree on
    non-negative operands) with the sign of x; inf, NaN and zero divisors as NumPy's (NaN, or x
    for an infinite divisor). Integer fmod runs as NumPy."""
    if len(args) != 2 or kwargs or np.dtype(node.tensor.dtype).kind != "f":
        raise NotNative
    x, y = (_operand(ctx, a) for a in args)
    magnitudes = [ctx.emit("abs", (v,)) if isinstance(v, Node) else abs(v) for v in (x, y)]
    remainder = ctx.emit("mod", tuple(magnitudes))
    return ctx.emit("copysign", (remainder, x))
for _op, _targets in (
        ("bitwise_and", ("operator.and_", "numpy.bitwise_and")),
        ("bitwise_or", ("operator.or_", "numpy.bitwise_or")),
        ("bitwise_xor", ("operator.xor", "numpy.bitwise_xor")),
        ("left_shift", ("operator.lshift", "numpy.left_shift", "numpy.bitwise_left_shift")),
        ("right_shift", ("operator.rshift", "numpy.right_shift", "numpy.bitwise_right_shift")),
        ("invert", ("operator.invert", "numpy.invert", "numpy.bitwise_not",
                    "numpy.bitwise_invert")),
        ("positive", ("operator.pos", "numpy.positive")),
        *((_name, (f"numpy.{_name}",)) for _name in (
            "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf",
            "isfinite", "signbit", "sign", "copysign", "fmax", "fmin", "heaviside",
            "reciprocal"))):
    rule(*(f"function:{t}" for t in _targets))(_pointwise(_op))
rule("function:numpy.maximum")(_pointwise("maximum"))
rule("function:numpy.minimum")(_pointwise("minimum"))
rule("function:operator.neg", "function:numpy.negative")(_pointwise("neg"))
for _op, _ufunc in (("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                    ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal")):
    rule(f"function:operator.{_op}", f"function:numpy.{_ufunc}")(_pointwise(_op))


# -- arguments of NumPy signatures ---------------------------------------------------------------

def _bind(reference: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        return inspect.signature(reference).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        raise NotNative from None


def _int(value: Any) -> int:
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise NotNative


def _scalar(value: Any) -> Any:
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return value.item() if isinstance(value, np.generic) else value
    raise NotNative


rule("method:copy", "function:numpy.copy")(_copy)


@rule("function:numpy.conjugate", "function:numpy.conj", "method:conjugate", "method:conj")
def _conjugate(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Node:
    """The conjugate of a real array is a copy of it (complex arrays are not compiled)."""
    if len(args) != 1 or kwargs or not isinstance(args[0], Node) or args[0].tensor is None or \
            np.dtype(args[0].tensor.dtype).kind == "c":
        raise NotNative
    return ctx.emit("cast", (args[0],), {"dtype": node.tensor.dtype})
rule("function:numpy.add.reduce")(_ufunc_reduce("sum"))
rule("function:numpy.multiply.reduce")(_ufunc_reduce("prod"))
rule("function:numpy.maximum.reduce")(_ufunc_reduce("max"))
rule("function:numpy.minimum.reduce")(_ufunc_reduce("min"))
rule("function:numpy.add.accumulate")(_ufunc_accumulate("cumsum"))
rule("function:numpy.multiply.accumulate")(_ufunc_accumulate("cumprod"))


@rule("function:stax.functional.setitem")
def _setitem(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Node:
    """``x[key] = value`` (functionalized at capture): a mask of x's shape with a scalar is a
    ``where``; basic keys of slices with step +-1 and integers (Ellipsis expanded) are a
    ``setitem`` op; anything else runs as NumPy."""
    if len(args) != 3 or kwargs or not isinstance(args[0], Node) or args[0].tensor is None:
        raise NotNative
    x, key, value = args
    meta = x.tensor
    scalar = isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating))
    if not scalar and not (isinstance(value, Node) and value.tensor is not None):
        raise NotNative
    kind = np.dtype(meta.dtype).kind
    source_kind = np.dtype(type(value) if scalar and not isinstance(value, np.generic) else
                           (value.dtype if scalar else value.tensor.dtype)).kind
    if kind in "iub" and source_kind == "f":
        raise NotNative  # float -> integer assignment: NumPy's cast of NaN and large values
    if isinstance(key, Node):  # x[mask] = scalar
        if not scalar or key.tensor is None or key.tensor.dtype != "bool" or \
                tuple(key.tensor.shape) != tuple(meta.shape):
            raise NotNative
        return ctx.emit("where", (key, _scalar(value), x))
    entries = _basic_key(key, meta.shape)
    operands = (x,) if scalar else (x, value)
    return ctx.emit("setitem", operands, {"key": entries,
                                          "scalar": _scalar(value) if scalar else None})


def _basic_key(key: Any, shape: tuple[int, ...]) -> tuple[tuple[Any, ...], ...]:
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise NotNative
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (len(shape) - len(items) + 1)
    items += [slice(None)] * (len(shape) - len(items))
    if len(items) != len(shape):
        raise NotNative
    entries: list[tuple[Any, ...]] = []
    for item, extent in zip(items, shape):
        if isinstance(item, slice):
            if not all(v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool))
                       for v in (item.start, item.stop, item.step)):
                raise NotNative
            start, stop, step = item.indices(extent)
            if step not in (1, -1):
                raise NotNative
            entries.append(("slice", start, stop, step))
        elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            if not -extent <= item < extent:
                raise NotNative
            entries.append(("int", int(item) % extent))
        else:
            raise NotNative
    return tuple(entries)


@rule("function:numpy.take")
def _take(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    params = _bind(lambda a, indices, axis=None, out=None, mode="raise": None, args, kwargs)
    x, indices = params["a"], params["indices"]
    if not _gatherable(x, indices) or params.get("out") is not None or \
            params.get("mode", "raise") != "raise" or params.get("axis") is None:
        raise NotNative
    return ctx.emit("take", (x, indices), {"axis": _int(params["axis"]) % x.tensor.ndim})


def _constant_indices(args: tuple[Any, ...]) -> tuple[int, ...] | None:
    """``x[[0, 2, -1]]``: a short list of Python ints, all in bounds (NumPy raises otherwise,
    and does so eagerly), normalized to non-negative positions."""
    if len(args) != 2 or not isinstance(args[0], Node) or args[0].tensor is None or \
            not args[0].tensor.ndim or not isinstance(args[1], list) or not 0 < len(args[1]) <= 64:
        return None
    extent = args[0].tensor.shape[0]
    if not all(isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) and
               -extent <= k < extent for k in args[1]):
        return None
    return tuple(int(k) % extent for k in args[1])


def _gatherable(x: Any, indices: Any) -> bool:
    return isinstance(x, Node) and x.tensor is not None and x.tensor.ndim >= 1 and \
        isinstance(indices, Node) and indices.tensor is not None and \
        np.dtype(indices.tensor.dtype).kind in "iu"


def _nan_reduction(kind: str) -> Rule:
    """np.nansum/nanprod/nanmax/nanmin/nanmean as NumPy defines them: NaNs replaced by the
    reduction's identity (max/min: a slice of only NaNs gives NaN; mean: the sum over the
    count of numbers, NaN for none), composed of native ops."""
    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        params = _bind(lambda a, axis=None, dtype=None, out=None, keepdims=False: None, args,
                       kwargs)
        x = params["a"]
        if not isinstance(x, Node) or x.tensor is None or params.get("out") is not None or \
                np.dtype(x.tensor.dtype).kind != "f" or np.dtype(node.tensor.dtype).kind != "f":
            raise NotNative
        if kind in ("max", "min") and params.get("dtype") is not None:
            raise NotNative
        ndim, meta = x.tensor.ndim, x.tensor
        axis = params.get("axis")
        axes = tuple(range(ndim)) if axis is None else tuple(
            sorted(_int(a) % ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))))
        keepdims = bool(params.get("keepdims", False))
        bool_meta = TensorMeta(meta.shape, "bool", meta.strides)
        missing = ctx.emit("isnan", (x,), meta=bool_meta)
        fill = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[kind]
        numbers = ctx.emit("where", (missing, fill, x), meta=meta)
        attrs: dict[str, Any] = {"axis": axes, "keepdims": keepdims}
        if kind in ("sum", "prod"):
            return ctx.emit(kind, (numbers,), {**attrs, "dtype": node.tensor.dtype})
        if kind in ("max", "min"):
            extreme = ctx.emit(kind, (numbers,), attrs)
            none = ctx.emit("all", (missing,), attrs,
                            meta=TensorMeta(node.tensor.shape, "bool", node.tensor.strides))
            return ctx.emit("where", (none, np.nan, extreme))
        # mean: float(total) / count, computed as NumPy's _divide_by_count does (in float64 for
        # float32 data, then rounded), a slice of only NaNs giving 0 / 0 = NaN
        total_meta = TensorMeta(node.tensor.shape, node.tensor.dtype, node.tensor.strides)
        total = ctx.emit("sum", (numbers,), {**attrs, "dtype": node.tensor.dtype}, meta=total_meta)
        wide = TensorMeta(node.tensor.shape, "float64", node.tensor.strides)
        present = ctx.emit("logical_not", (missing,), meta=bool_meta)
        count = ctx.emit("sum", (present,), {**attrs, "dtype": "int64"},
                         meta=TensorMeta(node.tensor.shape, "int64", node.tensor.strides))
        quotient = ctx.emit("truediv", (_cast_to(ctx, total, "float64"),
                                        _cast_to(ctx, count, "float64")), meta=wide)
        return ctx.emit("cast", (quotient,), {"dtype": node.tensor.dtype})  # the call's own meta
    return lower


for _kind in ("sum", "prod", "max", "min", "mean"):
    rule(f"function:numpy.nan{_kind}")(_nan_reduction(_kind))


@rule("function:numpy.rad2deg", "function:numpy.degrees")
def _rad2deg(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Node:
    """float64: NumPy's loop is one multiplication by 180/pi (bit-exact so); its float32 loop
    rounds otherwise and runs as NumPy."""
    if len(args) != 1 or kwargs or node.tensor.dtype != "float64":
        raise NotNative
    return ctx.emit("mul", (_operand(ctx, args[0]), 180.0 / np.pi))
@rule("function:stax.nn.relu")
def _relu(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    (x,) = args
    return ctx.emit("maximum", (_operand(ctx, x), 0))


_NO_VALUE = getattr(np, "_NoValue", None)


def _reduction(op: str, reference: Any) -> Rule:
    signature = inspect.signature(reference)

    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        return _lower_reduction(ctx, node, op, signature.bind(*args, **kwargs).arguments)
    return lower


rule("function:numpy.sum", "method:sum")(_reduction("sum", np.sum))
rule("function:numpy.mean", "method:mean")(_reduction("mean", np.mean))
rule("function:numpy.max", "function:numpy.amax", "method:max")(_reduction("max", np.max))
rule("function:numpy.prod", "method:prod")(_reduction("prod", np.prod))
rule("function:numpy.argmax", "method:argmax")(_reduction("argmax", np.argmax))
rule("function:numpy.argmin", "method:argmin")(_reduction("argmin", np.argmin))
rule("function:numpy.any", "method:any")(_reduction("any", np.any))
rule("function:numpy.all", "method:all")(_reduction("all", np.all))
rule("function:numpy.var", "method:var")(_reduction("var", np.var))
rule("function:numpy.std", "method:std")(_reduction("std", np.std))
rule("function:numpy.min", "function:numpy.amin", "method:min")(_reduction("min", np.min))
rule("function:numpy.absolute", "function:operator.abs", "function:numpy.fabs")(_pointwise("abs"))
for _op in ("sqrt", "floor", "ceil", "trunc", "rint", "exp", "log", "tanh", "sin", "cos", "log2",
            "log10", "log1p", "expm1", "exp2", "sinh", "cosh", "cbrt", "hypot", "arctan", "arcsin",
            "arccos", "arcsinh", "arccosh", "arctanh", "tan", "arctan2", "logaddexp", "logaddexp2",
            "ldexp", "bitwise_count", "nextafter", "spacing"):
    rule(f"function:numpy.{_op}")(_pointwise(_op))


@rule("function:numpy.where")
def _where(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    if len(args) != 3 or kwargs:
        raise NotNative
    return ctx.emit("where", tuple(_operand(ctx, a) for a in args))


@rule("function:operator.pow", "function:numpy.power", "function:numpy.pow")
def _power(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """Constant exponents NumPy computes without pow(): 2 (a square), 0.5 (sqrt), -1 (a
    reciprocal) — bit-exact; integer exponents 3 and 4 by multiplication: exact for integers
    (wrapping as NumPy's), and for float32 in float64 rounded once — correctly rounded, so within
    1 ulp of NumPy's powf (which is not); any other float power by the kernels' pow (float64
    within 1 ulp of the exact result, as NumPy's libm call)."""
    if len(args) != 2 or kwargs:
        raise NotNative
    dtype = node.tensor.dtype
    if not isinstance(args[0], Node) or \
            not isinstance(args[1], (int, float, np.integer, np.floating)) or \
            isinstance(args[1], (bool, np.bool_)):
        if dtype in ("float32", "float64"):
            return ctx.emit("pow", tuple(_operand(ctx, a) for a in args))
        raise NotNative
    x, e = args[0], float(args[1])
    floating = np.dtype(dtype).kind == "f"
    if e == 2.0:
        return ctx.emit("mul", (x, x))
    if e == 0.5 and floating:
        return ctx.emit("sqrt", (x,))
    if e == -1.0 and floating:
        return ctx.emit("truediv", (1, x))
    if e in (3.0, 4.0) and not floating:
        square = ctx.emit("mul", (x, x))
        return ctx.emit("mul", (square, x if e == 3.0 else square))
    if e in (3.0, 4.0) and dtype == "float32":
        wide = TensorMeta(node.tensor.shape, "float64", node.tensor.strides)
        x64 = ctx.emit("cast", (x,), {"dtype": "float64"}, meta=wide)
        square = ctx.emit("mul", (x64, x64), meta=wide)
        result = ctx.emit("mul", (square, x64 if e == 3.0 else square), meta=wide)
        return ctx.emit("cast", (result,), {"dtype": "float32"})
    if dtype in ("float32", "float64"):
        return ctx.emit("pow", (x, args[1]))
    raise NotNative


@rule("function:numpy.float_power")
def _float_power(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """float_power: pow in float64 (complex results run as NumPy)."""
    if len(args) != 2 or kwargs or node.tensor.dtype != "float64":
        raise NotNative
    operands = []
    for a in args:
        if isinstance(a, Node) and a.tensor.dtype != "float64":
            a = ctx.emit("cast", (a,), {"dtype": "float64"},
                         meta=TensorMeta(a.tensor.shape, "float64", a.tensor.strides))
        operands.append(_operand(ctx, a))
    return ctx.emit("pow", tuple(operands))


@rule("method:astype")
def _astype(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    if len(args) != 2 or kwargs or not isinstance(args[0], Node):
        raise NotNative  # order=, casting=, copy=... run as NumPy
    return ctx.emit("cast", (args[0],), {"dtype": node.tensor.dtype})


@rule("function:stax.nn.mse_loss")
def _mse_loss(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
    x, y = args
    if kwargs or not (isinstance(x, Node) and isinstance(y, Node)):
        raise NotNative
    return ctx.emit("mse_loss", (x, y))


@rule("function:stax.nn.layer_norm")
def _layer_norm(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Node:
    params = inspect.signature(NN_FUNCTIONS["stax.nn.layer_norm"]).bind(*args, **kwargs)
    params.apply_defaults()
    p = params.arguments
    shape = p["normalized_shape"]
    ndim = 1 if isinstance(shape, int) else len(tuple(shape))
    if not isinstance(p["x"], Node):
        raise NotNative
    return ctx.emit("layer_norm", (p["x"], p["weight"], p["bias"]),
                    {"normalized_ndim": ndim, "eps": float(p["eps"])})


def _scan(op: str, reference: Any) -> Rule:
    """cumsum/cumprod along one axis (``axis=None`` only for 1-D input: flattening other shapes
    runs as NumPy), accumulating in the result dtype NumPy chose."""
    signature = inspect.signature(reference)

    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        params = signature.bind(*args, **kwargs).arguments
        x = params.get("a")
        if not isinstance(x, Node) or x.tensor is None or params.get("out") is not None:
            raise NotNative
        ndim = x.tensor.ndim
        axis = params.get("axis")
        if axis is None and ndim == 1:
            axis = 0
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or ndim == 0:
            raise NotNative
        return ctx.emit(op, (x,), {"axis": int(axis) % ndim, "dtype": node.tensor.dtype})
    return lower


rule("function:numpy.cumsum", "method:cumsum")(_scan("cumsum", np.cumsum))
rule("function:numpy.cumprod", "method:cumprod")(_scan("cumprod", np.cumprod))


def _lower_reduction(ctx: LoweringContext, node: Node, op: str, params: dict[str, Any]) -> Node:
    x = params.get("a")
    if not isinstance(x, Node) or x.tensor is None:
        raise NotNative
    typed = op in ("sum", "mean", "prod", "var", "std")  # ops with a dtype= of their own
    for name in ("out", "initial", "where", "mean", "correction", "dtype" if not typed else "out"):
        if name in params and params[name] is not _NO_VALUE and params[name] is not None and \
                not (name == "where" and params[name] is True):
            raise NotNative
    ddof = params.get("ddof", 0)
    if not isinstance(ddof, (int, np.integer)) or isinstance(ddof, bool):
        raise NotNative
    ndim = x.tensor.ndim
    axis = params.get("axis")
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        if not all(isinstance(a, (int, np.integer)) for a in axes):
            raise NotNative
        axes = tuple(sorted(int(a) % ndim for a in axes)) if ndim else ()
    keepdims = params.get("keepdims", False)
    keepdims = False if keepdims is _NO_VALUE else bool(keepdims)
    attrs: dict[str, Any] = {"axis": axes, "keepdims": keepdims}
    if op in ("var", "std"):
        attrs["ddof"] = int(ddof)
    if typed:
        attrs["dtype"] = node.tensor.dtype
    return ctx.emit(op, (x,), attrs)


from . import lower_building  # noqa: E402, F401  (it registers the array-building rules)
