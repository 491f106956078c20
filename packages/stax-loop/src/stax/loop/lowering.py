"""Lowering of the op graph to loop IR by function composition (spec §6.3).

Each op-graph value becomes a ``Lazy``: its shape, dtype and a *loader* that, given an index
expression per dimension, returns the expression computing that element. A pointwise op's loader
calls its operands' loaders, so composing loaders inlines producers into consumers: lowering is
element-wise fusion. Only what must live in memory is realized as a ``ComputedBuffer`` (§6.6):
reductions (their consumers read them back) and the function's outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from stax.ir import (
    GraphProgram,
    Node,
    Opcode,
    TensorMeta,
    UnsupportedError,
    contiguous_strides,
    get_op,
)
from stax.ir.lower import rebase_view

from .expr import Binary, Cast, Const, Expr, Load, Select, Unary
from .index import Affine, linear_index
from .ir import (
    BufferRef,
    ComputedBuffer,
    ExternCall,
    InputBuffer,
    LoopProgram,
    OutputRef,
    Pointwise,
    Reduction,
    Scan,
    rvar,
    xvar,
)

Loader = Callable[[tuple[Affine, ...]], Expr]

#: dtypes the loop layer lowers; float16 waits for a checked rounding story in codegen.
LOOP_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                         "uint64", "float32", "float64"})
#: ops whose rules handle the other dtypes themselves (a view of a float16 value is NumPy's view
#: of its buffer); the rest run as their NumPy reference there
OWN_DTYPE_RULES = frozenset({"extern", "argmax", "argmin", "view"})


@dataclass(frozen=True)
class Lazy:
    shape: tuple[int, ...]
    dtype: str
    loader: Loader
    buffer: str | None = None  # set when the value lives in memory (input or realized)
    #: how its elements lie in a buffer's memory: (buffer, element offset, strides); set for
    #: buffers and for views of them
    memory: tuple[str, int, tuple[int, ...]] | None = None


@dataclass(frozen=True)
class Reuse:
    """What a backend's materialization policy sees of a pointwise value with several readers
    (§6.6): the expression computing one element, its dtype, its element count, how many element
    reads its users make in all (a broadcast reads each element many times), and whether it is a
    result of the function (then its buffer is written anyway)."""

    expr: Expr
    dtype: str
    numel: int
    reads: int
    output: bool


#: a backend's answer to "keep this value in memory rather than recompute it per reader?"
MaterializePolicy = Callable[[Reuse], bool]


class LoopLowering:
    def __init__(self, program: GraphProgram, materialize: MaterializePolicy | None = None) -> None:
        self.program = program
        self.materialize = materialize
        self.inputs: list[InputBuffer] = []
        self.buffers: list[ComputedBuffer] = []
        self.values: dict[Node, Lazy] = {}
        self.node: Node | None = None
        self.checks: dict[str, str] = {}  # bool buffers that must be False, and what it means

    def unsupported(self, what: str) -> UnsupportedError:
        node = self.node
        return UnsupportedError(what, node=node.name if node else None,
                                source=node.source if node else None)

    # -- driver --------------------------------------------------------------------------------
    def run(self) -> LoopProgram:
        for node in self.program.graph.nodes:
            self.node = node
            if node.op is Opcode.PLACEHOLDER:
                self.values[node] = self._input(node)
            elif node.op is Opcode.CALL_FUNCTION:
                rule = LOWERINGS.get(node.target)
                if rule is None:
                    raise self.unsupported(f"op {node.target!r} has no loop lowering yet")
                if node.target not in OWN_DTYPE_RULES and not self._native_dtypes(node):
                    rule = _op_as_extern  # NumPy computes it: dtypes kernels do not handle yet
                self.values[node] = rule(self, node)
                if self.materialize is not None:
                    self._consider_materializing(node)
            elif node.op is not Opcode.OUTPUT:
                raise self.unsupported(f"opcode {node.op.value} in an op graph")
        self.node = None
        outputs = [self._output(v) for v in self.program.outputs]
        names = [b.name for b in (*self.inputs, *self.buffers)]
        assert len(names) == len(set(names)), f"duplicate buffer names in {names}"
        return LoopProgram(self.program.name, self.inputs, list(self.program.inputs),
                           self.program.input_tree, self.buffers, outputs,
                           self.program.output_tree, dict(self.checks))

    def _consider_materializing(self, node: Node) -> None:
        """Realize a pointwise value now when the backend's policy prefers memory to recomputing
        it in every reader (several users, a broadcast, an output others read too)."""
        lazy = self.values[node]
        meta = node.tensor
        if lazy.buffer is not None or meta is None or lazy.dtype not in LOOP_DTYPES:
            return
        numel = int(np.prod(lazy.shape))
        reads, output = 0, False
        for user in node.users:
            if user.op is Opcode.OUTPUT:
                output = True
                continue
            shape = user.tensor.shape if user.tensor is not None else lazy.shape
            if lazy.shape and lazy.shape[-1] == 1 and shape and shape[-1] > 1:
                reads += numel  # broadcast along the innermost loop: invariant there, computed once
            else:
                reads += max(numel, int(np.prod(shape)))
        if reads <= numel and not (output and reads):
            return  # one reader reading each element once: inlining is free
        index = tuple(Affine.var(xvar(d)) for d in range(len(lazy.shape)))
        if self.materialize(Reuse(lazy.loader(index), lazy.dtype, numel, reads, output)):
            self.node = node
            self.values[node] = self.realize(lazy, output_strides(meta))

    def _native_dtypes(self, node: Node) -> bool:
        """Whether the result and every array operand have dtypes kernels compute in."""
        metas = [node.tensor, *(a.tensor for a in node.args if isinstance(a, Node))]
        return all(m is not None and m.dtype in LOOP_DTYPES for m in metas)

    def _input(self, node: Node) -> Lazy:
        meta = node.tensor  # any dtype: extern calls take them all; kernels check what they load
        if meta is None:  # an object only extern calls use (a np.random.Generator)
            meta = TensorMeta((), "object", ())
        buf = InputBuffer(node.target, meta.shape, meta.dtype, meta.strides)
        self.inputs.append(buf)
        return self._stored(buf.name, meta.shape, meta.dtype, meta.strides)

    @staticmethod
    def _stored(name: str, shape: tuple[int, ...], dtype: str, strides: tuple[int, ...]) -> Lazy:
        def load(index: tuple[Affine, ...]) -> Expr:
            return Load(name, linear_index(index, strides), dtype)
        return Lazy(shape, dtype, load, name, (name, 0, strides))

    def _output(self, value: Any) -> OutputRef:
        if not isinstance(value, Node):
            return OutputRef(const=value)
        lazy = self.values[value]
        meta = value.tensor
        if lazy.buffer is None:
            self.node = value
            lazy = self.realize(lazy, output_strides(meta))
            self.values[value] = lazy
        return OutputRef(buffer=lazy.buffer, scalar=meta.scalar)

    # -- helpers used by the rules ---------------------------------------------------------------
    def operand(self, value: Any, shape: tuple[int, ...], dtype: str) -> Loader:
        """A loader for ``value`` broadcast to ``shape`` and cast to ``dtype``."""
        if isinstance(value, Node):
            lazy = self.values[value]
            if lazy.dtype not in LOOP_DTYPES:
                raise self.unsupported(f"dtype {lazy.dtype} is not compiled natively yet")
            broadcast = self.operand_of(lazy, shape, lazy.loader)

            def load(index: tuple[Affine, ...]) -> Expr:
                expr = broadcast(index)
                return expr if expr.dtype == dtype else Cast(expr, dtype)
            return load
        const = Const(np.dtype(dtype).type(value).item(), dtype)
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
        broadcast = tuple(src == 1 and dst != 1 for src, dst in zip(lazy.shape, shape[offset:]))

        def load(index: tuple[Affine, ...]) -> Expr:
            return loader(tuple(Affine() if b else i for b, i in zip(broadcast, index[offset:])))
        return load

    def realize(self, lazy: Lazy, strides: tuple[int, ...]) -> Lazy:
        """Write a pointwise value to a new buffer with layout ``strides``. The loops run in the
        buffer's memory order (x0 over the largest stride, the last loop along memory), as NumPy
        iterates: an F-ordered result is written along its columns, not across them."""
        order = sorted(range(len(lazy.shape)), key=lambda d: -abs(strides[d]))
        index = [Affine()] * len(lazy.shape)
        for position, d in enumerate(order):
            index[d] = Affine.var(xvar(position))
        ranges = tuple(lazy.shape[d] for d in order)
        name = f"buf{len(self.buffers)}"
        self.buffers.append(ComputedBuffer(name, lazy.shape, lazy.dtype, strides,
                                           linear_index(index, strides),
                                           Pointwise(ranges, lazy.loader(tuple(index)))))
        return self._stored(name, lazy.shape, lazy.dtype, strides)

    def reduce(self, node: Node, x: Lazy, axes: tuple[int, ...], keepdims: bool,
               reduction_type: str) -> Lazy:
        meta = node.tensor
        return self.reduce_values(self.operand(node.args[0], x.shape, meta.dtype), x.shape, axes,
                                  keepdims, reduction_type, meta.dtype)

    def reduce_values(self, loader: Loader, shape: tuple[int, ...], axes: tuple[int, ...],
                      keepdims: bool, reduction_type: str, dtype: str) -> Lazy:
        """Realize the reduction of ``loader``'s values (already in ``dtype``) over ``axes``."""
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
        strides = contiguous_strides(out_shape)
        store = linear_index((index[d] if d in kept else Affine() for d in out_dims), strides)
        name = f"buf{len(self.buffers)}"
        data = Reduction(tuple(shape[d] for d in kept), tuple(shape[d] for d in axes),
                         reduction_type, loader(tuple(index)))
        self.buffers.append(ComputedBuffer(name, out_shape, dtype, strides, store, data))
        return self._stored(name, out_shape, dtype, strides)


    def _split(self, loader: Loader, shape: tuple[int, ...], axes: tuple[int, ...],
               keepdims: bool, reduction_type: str, dtype: str) -> Lazy | None:
        """A long reduction to one value becomes two (spec §6.5, split reductions): partial
        results over chunks — an outer loop the threads share — then their combination. Sums also
        round better in two levels. Several dimensions split along the first; one dimension into a
        chunk count that divides its length (no masking)."""
        total = 1
        for d in axes:
            total *= shape[d]
        if len(axes) != len(shape) or total < SPLIT_MIN or reduction_type not in SPLITTABLE:
            return None
        if len(shape) >= 2:
            partial = self.reduce_values(loader, shape, tuple(range(1, len(shape))), False,
                                         reduction_type, dtype)
        else:
            chunks = next((k for k in range(SPLIT_CHUNKS, 1, -1) if total % k == 0), None)
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


#: reductions that may be split (associative; argmax/argmin carry an index and are not)
SPLITTABLE = frozenset({"sum", "prod", "max", "min"})
SPLIT_MIN = 1 << 16
SPLIT_CHUNKS = 64


def output_strides(meta: TensorMeta) -> tuple[int, ...]:
    """The layout eager NumPy gave this value, when it is dense; otherwise row-major.

    NumPy keeps the input's memory order for element-wise results (``x.T + 1`` is F-ordered), and
    a compiled function returns the same layout.
    """
    order = sorted(range(meta.ndim), key=lambda d: -meta.strides[d])
    dense = [0] * meta.ndim
    step = 1
    for d in reversed(order):
        dense[d] = step
        step *= meta.shape[d]
    if all(meta.shape[d] == 1 or dense[d] == meta.strides[d] for d in range(meta.ndim)):
        return tuple(dense)
    return contiguous_strides(meta.shape)


# -- per-op rules --------------------------------------------------------------------------------

Rule = Callable[[LoopLowering, Node], Lazy]
LOWERINGS: dict[str, Rule] = {}

#: On bool, NumPy's add/mul/maximum/minimum are logical or/and.
_BOOL_FORMS = {"add": "or", "mul": "and", "maximum": "or", "minimum": "and"}


#: |a / b| below which the quotient's truncation is off by at most one (then corrected), so
#: fmod(a, b) = fma(-n, b, a) is exact; a larger (or overflowing) quotient fails the call's check
#: (NumPy runs it)
FMOD_EXACT_QUOTIENT = {"float32": 2.0 ** 22, "float64": 2.0 ** 51}


def _float_divmod(ctx: LoopLowering, op: str, meta: Any, a: Loader, b: Loader) -> Lazy:
    """NumPy's float floor division and remainder (npy_divmod: from the exact fmod, the
    remainder takes the divisor's sign, the quotient is snapped to an integer). fmod is exact
    here for quotients below FMOD_EXACT_QUOTIENT; a check buffer flags larger ones, and such a
    call runs eagerly."""
    dtype = meta.dtype
    limit = Const(FMOD_EXACT_QUOTIENT[dtype], dtype)

    def too_large(i: tuple[Affine, ...]) -> Expr:
        # an infinite quotient counts too when it only overflowed (a finite dividend over a
        # tiny divisor: 1 % 5e-324 is 0.0, not -inf); an infinite dividend or a zero divisor
        # give NumPy's NaN in the kernel
        quotient = Unary("abs", Binary("truediv", a(i), b(i), dtype), dtype)
        inf = Const(float("inf"), dtype)
        return Binary("and", Binary("ge", quotient, limit, "bool"),
                      Binary("and", Binary("lt", Unary("abs", a(i), dtype), inf, "bool"),
                             Binary("ne", b(i), Const(0.0, dtype), "bool"), "bool"), "bool")
    check = ctx.reduce_values(too_large, meta.shape, tuple(range(len(meta.shape))), False, "max",
                              "bool")
    ctx.checks[check.buffer] = "a quotient is too large for an exact fmod"
    name = "py_floordiv" if op == "floordiv" else "py_mod"
    return Lazy(meta.shape, dtype, lambda i: Binary(name, a(i), b(i), dtype))


def _binary(op: str) -> Rule:
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        a = ctx.operand(node.args[0], meta.shape, meta.dtype)
        b = ctx.operand(node.args[1], meta.shape, meta.dtype)
        if op in ("floordiv", "mod") and np.dtype(meta.dtype).kind == "f":
            return _float_divmod(ctx, op, meta, a, b)
        if op in ("floordiv", "mod") and np.dtype(meta.dtype).kind not in "iu":
            return _op_as_extern(ctx, node)
        name = _BOOL_FORMS.get(op, op) if meta.dtype == "bool" else op
        if meta.dtype == "bool" and name == op:
            raise ctx.unsupported(f"{op} on bool")
        return Lazy(meta.shape, meta.dtype, lambda i: Binary(name, a(i), b(i), meta.dtype))
    return lower


for _op in ("add", "sub", "mul", "truediv", "maximum", "minimum", "floordiv", "mod", "hypot",
            "pow", "arctan2", "logaddexp", "logaddexp2"):
    LOWERINGS[_op] = _binary(_op)


def _compare(op: str) -> Rule:
    """Comparisons compute in the operands' common dtype (NEP 50: a Python scalar takes the
    array's dtype) and produce bool."""
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        operands = node.args
        common = np.result_type(*(v.tensor.np_dtype if isinstance(v, Node) else v
                                  for v in operands)).name
        if common not in LOOP_DTYPES:
            raise ctx.unsupported(f"comparison in dtype {common}")
        for value in operands:
            if isinstance(value, int) and not isinstance(value, bool) and not _fits(value, common):
                raise ctx.unsupported(f"comparison with the Python int {value}, which {common} "
                                      "cannot hold")
        a = ctx.operand(operands[0], meta.shape, common)
        b = ctx.operand(operands[1], meta.shape, common)
        return Lazy(meta.shape, "bool", lambda i: Binary(op, a(i), b(i), "bool"))
    return lower


def _fits(value: int, dtype: str) -> bool:
    kind = np.dtype(dtype).kind
    if kind == "b":
        return value in (0, 1)
    if kind in "iu":
        info = np.iinfo(dtype)
        return info.min <= value <= info.max
    return kind in "fc"


for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
    LOWERINGS[_op] = _compare(_op)


def _neg(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    if meta.dtype == "bool":
        raise ctx.unsupported("neg on bool")
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: Unary("neg", x(i), meta.dtype))


def _reduction(kind: str) -> Rule:
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        x = ctx.values[node.args[0]]
        return ctx.reduce(node, x, tuple(node.kwargs["axis"]), node.kwargs["keepdims"], kind)
    return lower


_sum = _reduction("sum")


#: float64 sin, cos and tan are computed natively for |x| below this (2^23 pi/2, the range of
#: the kernels' fast argument reduction, ARCHITECTURE.md §4); a check buffer flags larger
#: finite arguments, and such a call runs as NumPy
TRIG_REDUCTION_LIMIT = 2.0 ** 23 * np.pi / 2
_TRIG = frozenset({"sin", "cos", "tan"})


def _trig_range_check(ctx: LoopLowering, meta: Any, x: Loader) -> None:
    limit = Const(TRIG_REDUCTION_LIMIT, meta.dtype)

    def too_large(i: tuple[Affine, ...]) -> Expr:
        magnitude = Unary("abs", x(i), meta.dtype)
        return Binary("and", Binary("ge", magnitude, limit, "bool"),
                      Binary("lt", magnitude, Const(float("inf"), meta.dtype), "bool"), "bool")
    check = ctx.reduce_values(too_large, meta.shape, tuple(range(len(meta.shape))), False, "max",
                              "bool")
    ctx.checks[check.buffer] = "a sin/cos/tan argument beyond 2^23 pi/2 (the fast reduction's range)"


def _unary(op: str) -> Rule:
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        x = ctx.operand(node.args[0], meta.shape, meta.dtype)
        if meta.dtype == "bool" and op == "abs":
            return Lazy(meta.shape, meta.dtype, x)
        if meta.dtype == "bool" or (op != "abs" and np.dtype(meta.dtype).kind != "f"):
            return _op_as_extern(ctx, node)
        if op in _TRIG and meta.dtype == "float64":
            _trig_range_check(ctx, meta, x)
        return Lazy(meta.shape, meta.dtype, lambda i: Unary(op, x(i), meta.dtype))
    return lower


def _where(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    cond = ctx.operand(node.args[0], meta.shape, "bool")
    a = ctx.operand(node.args[1], meta.shape, meta.dtype)
    b = ctx.operand(node.args[2], meta.shape, meta.dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: Select(cond(i), a(i), b(i), meta.dtype))


def _cast(ctx: LoopLowering, node: Node) -> Lazy:
    """Casts from floats to integers run as NumPy: NaN and out-of-range values have no LLVM
    meaning (poison), and NumPy's answer is what the contract is."""
    meta = node.tensor
    src = node.args[0].tensor.dtype if isinstance(node.args[0], Node) else meta.dtype
    if np.dtype(src).kind == "f" and np.dtype(meta.dtype).kind in "iu":
        return _extern_call(ctx, node, "astype", True, (node.args[0], meta.dtype), {})
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    return Lazy(meta.shape, meta.dtype, x)


def _extern(ctx: LoopLowering, node: Node) -> Lazy:
    attrs = node.kwargs
    return _extern_call(ctx, node, attrs["fn"], attrs["method"], node.args, attrs["call_kwargs"])


def _op_as_extern(ctx: LoopLowering, node: Node) -> Lazy:
    """An op in dtypes the kernels do not handle (float16...) runs as its NumPy reference."""
    if get_op(node.target).kind.value == "reduction":
        kwargs = dict(node.kwargs)
        if node.target in ("argmax", "argmin"):  # NumPy takes one axis or None there
            ndim = len(ctx.values[node.args[0]].shape)
            axes = kwargs["axis"]
            kwargs["axis"] = None if len(axes) == ndim and ndim != 1 else axes[0]
        return _extern_call(ctx, node, f"numpy.{node.target}", False, node.args, kwargs)
    return _extern_call(ctx, node, f"numpy.{get_op(node.target).reference.__name__}", False,
                        node.args, {})


def _extern_call(ctx: LoopLowering, node: Node, target: str, method: bool, call_args: Any,
                 call_kwargs: Any) -> Lazy:
    """Operands of a NumPy call must be arrays in memory: realize pointwise values first. NumPy
    gets each operand in the layout capture saw, as some calls read the memory order
    (``ravel(order="K")``, ``flatten("A")``): a buffer the loops wrote in another layout (a
    reduction of an F-ordered array is written row-major) is copied into that layout first."""
    def operand(value: Any) -> Any:
        if isinstance(value, Node):
            lazy, meta = ctx.values[value], value.tensor
            if lazy.buffer is None or (meta is not None and not _same_layout(lazy.memory[2], meta)):
                lazy = ctx.values[value] = ctx.realize(lazy, output_strides(meta))
            return BufferRef(lazy.buffer)
        if isinstance(value, (tuple, list)):
            return type(value)(operand(v) for v in value)
        if isinstance(value, dict):
            return {k: operand(v) for k, v in value.items()}
        if isinstance(value, slice):
            return value
        return value

    args, kwargs = operand(call_args), operand(call_kwargs)  # may realize buffers
    name = f"buf{len(ctx.buffers)}"
    sequence = node.meta.get("sequence")
    meta = node.tensor if sequence is None else TensorMeta((), "object", ())
    effect = None
    if node.effectful:  # a draw: it advances the generator it is called on (``ExternCall.effect``)
        effect = args[0].name if method and args and isinstance(args[0], BufferRef) else target
    ctx.buffers.append(ExternCall(name, target, method, args, kwargs, meta.shape, meta.dtype,
                                  meta.strides, meta.scalar, sequence, effect))
    return ctx._stored(name, meta.shape, meta.dtype, meta.strides)


def _same_layout(strides: tuple[int, ...], meta: TensorMeta) -> bool:
    """Whether a buffer with ``strides`` lays out a value as capture saw it (``meta.strides``),
    or, where capture's layout was not dense, as the dense layout the loops give it instead:
    length-1 dimensions aside."""
    def significant(s: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(t for t, n in zip(s, meta.shape) if n != 1)
    return significant(strides) in (significant(meta.strides), significant(output_strides(meta)))


def _mean(ctx: LoopLowering, node: Node) -> Lazy:
    """The sum, accumulated in the result dtype as NumPy does, divided by the count."""
    x = ctx.values[node.args[0]]
    axes = tuple(node.kwargs["axis"])
    total = ctx.reduce(node, x, axes, node.kwargs["keepdims"], "sum")
    count = 1
    for d in axes:
        count *= x.shape[d]
    dtype = node.tensor.dtype
    n = Const(np.dtype(dtype).type(count).item(), dtype)
    return Lazy(total.shape, dtype, lambda i: Binary("truediv", total.loader(i), n, dtype))


def _layer_norm(ctx: LoopLowering, node: Node) -> Lazy:
    """layer_norm as loops: mean and variance reductions (kept two-pass, each summing in the
    dtype NumPy's mean uses) and one element-wise pass; a one-pass Welford kernel can replace the
    two reductions without changing the op."""
    meta = node.tensor
    x_node, w_node, b_node = node.args
    if meta.dtype not in ("float32", "float64") or not isinstance(x_node, Node):
        return _library_call(ctx, node)
    dtype, shape = meta.dtype, meta.shape
    axes = tuple(range(len(shape) - node.kwargs["normalized_ndim"], len(shape)))
    count = 1
    for d in axes:
        count *= shape[d]
    n = Const(float(count), dtype)
    x = ctx.operand(x_node, shape, dtype)
    total = ctx.reduce_values(x, shape, axes, True, "sum", dtype)
    mean = ctx.operand_of(total, shape, lambda i: Binary("truediv", total.loader(i), n, dtype))

    def centered(i: tuple[Affine, ...]) -> Expr:
        return Binary("sub", x(i), mean(i), dtype)

    squares = ctx.reduce_values(lambda i: _square(centered(i), dtype), shape, axes, True, "sum",
                                dtype)
    var = ctx.operand_of(squares, shape, lambda i: Binary("truediv", squares.loader(i), n, dtype))
    eps = Const(float(np.dtype(dtype).type(node.kwargs["eps"])), dtype)
    w = ctx.operand(w_node, shape, dtype) if w_node is not None else None
    b = ctx.operand(b_node, shape, dtype) if b_node is not None else None

    def out(i: tuple[Affine, ...]) -> Expr:
        y: Expr = Binary("truediv", centered(i),
                         Unary("sqrt", Binary("add", var(i), eps, dtype), dtype), dtype)
        if w is not None:
            y = Binary("mul", y, w(i), dtype)
        if b is not None:
            y = Binary("add", y, b(i), dtype)
        return y
    return Lazy(shape, dtype, out)


def _square(e: Expr, dtype: str) -> Expr:
    return Binary("mul", e, e, dtype)


def _library_call(ctx: LoopLowering, node: Node) -> Lazy:
    """A whole operator the backend runs as its library function ``stax.ops.<op>``: in the basis
    (spec §4.8), so it is not decomposed; its kernel arrives with the loop issue."""
    attrs = tuple(node.kwargs[a] for a in get_op(node.target).attrs)
    return _extern_call(ctx, node, f"stax.ops.{node.target}", False, (*node.args, *attrs), {})


def _any_all(kind: str) -> Rule:
    """any/all: the max/min of the values as bools (logical or/and)."""
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        x = ctx.values[node.args[0]]
        loader = ctx.operand(node.args[0], x.shape, "bool")
        return ctx.reduce_values(loader, x.shape, tuple(node.kwargs["axis"]),
                                 node.kwargs["keepdims"], kind, "bool")
    return lower


def _var(std: bool) -> Rule:
    """var/std as NumPy computes them: the mean (sum / n), then the sum of squared deviations
    divided by n - ddof, in the result dtype; std is its square root."""
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        dtype = meta.dtype
        x_lazy = ctx.values[node.args[0]]
        if dtype not in ("float32", "float64"):
            return _op_as_extern(ctx, node)
        shape, axes = x_lazy.shape, tuple(node.kwargs["axis"])
        count = 1
        for d in axes:
            count *= shape[d]
        x = ctx.operand(node.args[0], shape, dtype)
        squares = _welford_merge(ctx, x, shape, dtype) if _long_full_reduction(shape, axes) \
            else _squared_deviations(ctx, x, shape, axes, dtype)
        dof = Const(float(max(count - node.kwargs["ddof"], 0)), dtype)
        keep = node.kwargs["keepdims"]

        def value(i: tuple[Affine, ...]) -> Expr:
            full = list(i) if keep else _insert_axes(i, axes, len(shape))
            v: Expr = Binary("truediv", squares.loader(tuple(full)), dof, dtype)
            return Unary("sqrt", v, dtype) if std else v
        return Lazy(meta.shape, dtype, value)
    return lower


def _squared_deviations(ctx: LoopLowering, x: Loader, shape: tuple[int, ...],
                        axes: tuple[int, ...], dtype: str) -> Lazy:
    """sum((x - mean)^2) over ``axes`` (kept as size 1), the mean from a first reduction: NumPy's
    two passes. In a row kernel both passes read the row while it is in cache."""
    count = 1
    for d in axes:
        count *= shape[d]
    total = ctx.reduce_values(x, shape, axes, True, "sum", dtype)
    n = Const(float(count), dtype)
    mean = ctx.operand_of(total, shape, lambda i: Binary("truediv", total.loader(i), n, dtype))

    def squared(i: tuple[Affine, ...]) -> Expr:
        d = Binary("sub", x(i), mean(i), dtype)
        return Binary("mul", d, d, dtype)
    return ctx.reduce_values(squared, shape, axes, True, "sum", dtype)


def _long_full_reduction(shape: tuple[int, ...], axes: tuple[int, ...]) -> bool:
    count = 1
    for d in axes:
        count *= shape[d]
    return len(axes) == len(shape) and count >= SPLIT_MIN and (
        len(shape) >= 2 or any(count % k == 0 for k in range(SPLIT_CHUNKS, 1, -1)))


def _welford_merge(ctx: LoopLowering, x: Loader, shape: tuple[int, ...], dtype: str) -> Lazy:
    """sum((x - mean)^2) over all of a long array in one pass over memory (spec §6.5): the
    array as rows (the first axis, or chunks of a 1-D array), each row's sum and squared
    deviations from its own mean in one row kernel while the row is in cache, then the rows'
    results merged — M2 = sum_c M2_c + n_c (mean_c - mean)^2, Welford's (Chan's) combination of
    partial moments, which never forms the cancelling sum(x^2) - n mean^2."""
    count = 1
    for extent in shape:
        count *= extent
    if len(shape) >= 2:
        rows_shape, inner = shape, tuple(range(1, len(shape)))
        rows = x
    else:
        chunks = next(k for k in range(SPLIT_CHUNKS, 1, -1) if count % k == 0)
        rows_shape, inner = (chunks, count // chunks), (1,)

        def rows(index: tuple[Affine, ...]) -> Expr:
            return x((index[0] * rows_shape[1] + index[1],))
    per_row = count // rows_shape[0]
    m2_rows = _squared_deviations(ctx, rows, rows_shape, inner, dtype)  # (rows, 1, ...)
    sums = ctx.reduce_values(rows, rows_shape, inner, False, "sum", dtype)  # (rows,)
    row_mean = lambda i: Binary("truediv", sums.loader(i), Const(float(per_row), dtype), dtype)  # noqa: E731
    total = ctx.reduce_values(sums.loader, sums.shape, (0,), True, "sum", dtype)  # (1,)
    mean = Binary("truediv", total.loader((Affine(),)), Const(float(count), dtype), dtype)
    ones = (Affine(),) * (len(rows_shape) - 1)

    def merged(i: tuple[Affine, ...]) -> Expr:
        d = Binary("sub", row_mean(i), mean, dtype)
        spread = Binary("mul", Const(float(per_row), dtype), Binary("mul", d, d, dtype), dtype)
        return Binary("add", m2_rows.loader((i[0], *ones)), spread, dtype)
    m2 = ctx.reduce_values(merged, sums.shape, (0,), False, "sum", dtype)  # ()
    return Lazy((1,) * len(shape), dtype, lambda i: m2.loader(()))


def _insert_axes(index: tuple[Affine, ...], axes: tuple[int, ...], ndim: int) -> list[Affine]:
    """An index over a keepdims=False result, as an index of the keepdims=True shape."""
    it = iter(index)
    return [Affine() if d in axes else next(it) for d in range(ndim)]


def _arg(kind: str) -> Rule:
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        x = ctx.values[node.args[0]]
        if x.dtype not in LOOP_DTYPES:
            return _op_as_extern(ctx, node)
        loader = ctx.operand(node.args[0], x.shape, x.dtype)
        axes = tuple(node.kwargs["axis"])
        return ctx.reduce_values(loader, x.shape, axes, node.kwargs["keepdims"], kind, "int64")
    return lower


def _view(ctx: LoopLowering, node: Node) -> Lazy:
    """Read the operand's memory through the view's affine map. The map holds for the operand's
    layout in the op graph (its meta strides); a buffer of another layout (a reduction or a
    materialized value written row-major where NumPy's result was F-ordered) is read through the
    map rebased to the buffer's layout, or, where the view is not affine in the operand's elements,
    through a copy in the layout the map was measured on."""
    meta = node.tensor
    source = node.args[0]
    measured = tuple(source.tensor.strides)
    lazy = ctx.values[source]
    if lazy.memory is None:  # an element-wise value: give it memory in NumPy's layout first
        lazy = ctx.values[source] = ctx.realize(lazy, output_strides(source.tensor))
    buffer, base, strides = lazy.memory
    mapped = rebase_view(node.kwargs["offset"], node.kwargs["strides"], meta.shape,
                         source.tensor.shape, measured, strides)
    if mapped is None:
        if output_strides(source.tensor) != measured:
            raise ctx.unsupported("a view of a value whose layout the loops do not reproduce")
        # a copy in the measured layout: the map holds there
        lazy = ctx.values[source] = ctx.realize(lazy, measured)
        buffer, base, strides = lazy.memory
        mapped = (node.kwargs["offset"], tuple(node.kwargs["strides"]))
    offset, view_strides = base + mapped[0], mapped[1]
    if meta.dtype not in LOOP_DTYPES:  # NumPy makes the view (of the operand's own buffer)
        if lazy.buffer is None or base != 0:
            raise ctx.unsupported(f"a view of a {meta.dtype} value that is not a buffer")
        return _extern_call(ctx, node, "stax.ops.view", False,
                            (source, offset, view_strides, meta.shape), {})

    def load(index: tuple[Affine, ...]) -> Expr:
        return Load(buffer, linear_index(index, view_strides) + offset, meta.dtype)
    return Lazy(meta.shape, meta.dtype, load, None, (buffer, offset, view_strides))


def _scan(kind: str) -> Rule:
    """cumsum/cumprod along ``axis``: the other axes are x variables, the scanned one r0; the
    body (the operand, producers inlined) is cast to the result dtype first, as NumPy does."""
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        axis, shape, dtype = node.kwargs["axis"], meta.shape, meta.dtype
        if dtype == "bool" or dtype not in LOOP_DTYPES:
            return _op_as_extern(ctx, node)
        x = ctx.operand(node.args[0], shape, dtype)
        kept = [d for d in range(len(shape)) if d != axis]
        index = [Affine()] * len(shape)
        for i, d in enumerate(kept):
            index[d] = Affine.var(xvar(i))
        index[axis] = Affine.var(rvar(0))
        strides = output_strides(meta)
        name = f"buf{len(ctx.buffers)}"
        data = Scan(tuple(shape[d] for d in kept), shape[axis], kind, x(tuple(index)))
        ctx.buffers.append(ComputedBuffer(name, shape, dtype, strides,
                                          linear_index(index, strides), data))
        return ctx._stored(name, shape, dtype, strides)
    return lower


LOWERINGS["cumsum"] = _scan("sum")
LOWERINGS["cumprod"] = _scan("prod")
LOWERINGS["view"] = _view
LOWERINGS["argmax"] = _arg("argmax")
LOWERINGS["argmin"] = _arg("argmin")
LOWERINGS["mean"] = _mean
LOWERINGS["prod"] = _reduction("prod")
LOWERINGS["any"] = _any_all("max")
LOWERINGS["all"] = _any_all("min")
LOWERINGS["var"] = _var(std=False)
LOWERINGS["std"] = _var(std=True)
LOWERINGS["max"] = _reduction("max")
LOWERINGS["min"] = _reduction("min")
LOWERINGS["where"] = _where
LOWERINGS["cast"] = _cast
for _op in ("abs", "sqrt", "floor", "ceil", "trunc", "rint", "exp", "log", "tanh", "sin", "cos",
            "log2", "log10", "log1p", "expm1", "exp2", "sinh", "cosh", "cbrt", "arctan", "arcsin",
            "arccos", "arcsinh", "arccosh", "arctanh", "tan"):
    LOWERINGS[_op] = _unary(_op)
LOWERINGS["layer_norm"] = _layer_norm
LOWERINGS["neg"] = _neg
LOWERINGS["extern"] = _extern
LOWERINGS["sum"] = _sum


def lower_opgraph(program: GraphProgram, materialize: MaterializePolicy | None = None
                  ) -> LoopProgram:
    """Lower a ``stax.opgraph/1`` program to a ``stax.loopir/1`` program. Pointwise values are
    inlined into every reader unless ``materialize`` (a backend's cost model) says otherwise."""
    return LoopLowering(program, materialize).run()


from . import bits, building  # noqa: E402, F401  (they register their rules in LOWERINGS)
