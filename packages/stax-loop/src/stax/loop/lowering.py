"""Lowering of the op graph to loop IR (spec §6.3): the walk over the op graph's nodes, each
lowered by its op's rule (``registry.LOWERINGS``), with the backend's materialization policy
consulted for values several readers share.

The rules live in modules by family (``elementwise``, ``reductions``, ``views``, ``externs``,
``bits``, ``building``), the state they share and their helpers in ``context``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stax.ir import GraphProgram, Node, Opcode, TensorMeta
from stax.ir.shape_env import LOWERING_SOURCE
from stax.ir.sizes import active_env, hint, product

from .complex_values import as_parts, complex_native, involves_complex, is_complex, lower_complex
from .context import Lazy, LoopLowering, output_strides
from .expr import Expr
from .externs import op_as_extern
from .index import Affine
from .ir import InputBuffer, LoopProgram, OutputRef, xvar
from .options import DEFAULT_OPTIONS, LoopOptions
from .overwrites import finals, recomputed, write_over
from .registry import LOWERINGS, OWN_DTYPE_RULES
from .reroll import reroll_updates
from .split_producers import align_with_split_reductions
from .unused import drop_silent, keep_for_events, reports

__all__ = ["LOWERINGS", "LoopOptions", "MaterializePolicy", "Reuse", "lower_opgraph"]


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


def lower_opgraph(program: GraphProgram, materialize: MaterializePolicy | None = None,
                  options: LoopOptions = DEFAULT_OPTIONS) -> LoopProgram:
    """Lower a ``stax.opgraph/1`` program to a ``stax.loopir/1`` program. Pointwise values are
    inlined into every reader unless ``materialize`` (a backend's cost model) says otherwise;
    ``options`` are the backend's dtypes and numeric limits."""
    token = LOWERING_SOURCE.set(None)
    try:
        return _lowered(program, materialize, options)
    finally:
        LOWERING_SOURCE.reset(token)


def _lowered(program: GraphProgram, materialize: MaterializePolicy | None,
             options: LoopOptions) -> LoopProgram:
    ctx = LoopLowering(program, options)
    events_only: list[str] = []  # buffers of unused values, kept for their events (unused.py)
    depth: dict[Node, int] = {}  # ops since the last value in memory, per unrealized value
    updated = finals(ctx)  # final values of arguments the late kernels write over
    for node in program.graph.nodes:
        ctx.node = node
        LOWERING_SOURCE.set(node.source)  # (a size decision's line: ``shape_env._site``)
        if node.op is Opcode.PLACEHOLDER:
            ctx.values[node] = _input(ctx, node)
        elif node.op is Opcode.CALL_FUNCTION:
            rule = LOWERINGS.get(node.target)
            if involves_complex(node):
                rule = lower_complex  # pairs of floats, or NumPy's call
            elif rule is None:
                raise ctx.unsupported(f"op {node.target!r} has no loop lowering yet")
            elif (node.target not in OWN_DTYPE_RULES and not _native_dtypes(ctx, node)) or \
                    (options.ops is not None and node.target not in options.ops):
                rule = op_as_extern  # NumPy computes it: dtypes or an op the kernels lack
            first = len(ctx.buffers)
            ctx.values[node] = rule(ctx, node)
            if node.events_only and not node.users:
                events_only += keep_for_events(ctx, node, first)
            if materialize is not None:
                _consider_materializing(ctx, node, materialize, updated.get(node))
            _bound_depth(ctx, node, depth)
        elif node.op is not Opcode.OUTPUT:
            raise ctx.unsupported(f"opcode {node.op.value} in an op graph")
    overwrites, twins, late_reports = write_over(ctx, updated)
    events_only += twins
    ctx.node = None
    outputs = [_output(ctx, v) for v in program.outputs]
    names = [b.name for b in (*ctx.inputs, *ctx.buffers)]
    assert len(names) == len(set(names)), f"duplicate buffer names in {names}"
    kept = [*(o.buffer for o in outputs if o.buffer is not None), *events_only]
    buffers, events_only = drop_silent(reroll_updates(ctx.buffers, kept, ctx.checks),
                                       events_only, outputs, ctx.checks)
    buffers = align_with_split_reductions(buffers)
    env = active_env()  # a size-generic compile: the symbols its sizes are written in
    sizes = {name: [info.low, info.high, info.hint] for name, info in env.symbols.items()} \
        if env is not None else {}
    return LoopProgram(program.name, ctx.inputs, list(program.inputs), program.input_tree,
                       buffers, outputs, program.output_tree, dict(ctx.checks), events_only,
                       dict(ctx.trig_limits), overwrites, sizes,
                       {late: report for late, report in late_reports.items()
                        if any(b.name == late for b in buffers)},
                       event_reports(program), bool(program.info.get("constant_underflow")))


def event_reports(program: Any) -> dict[str, list[Any]]:
    """``LoopProgram.event_reports``: the capture's ``event_sources``, unless the function ran
    under its own ``np.errstate`` (which the caller's state at a later call does not decide) or
    updates an argument: a report that raises (``"raise"``, a warnings filter ``"error"``)
    comes before the call writes the arguments, where eager NumPy may have written one before
    the operation that raised (``x += 1; np.log(x)``): such calls decline, and NumPy runs them."""
    if program.info.get("sets_errstate") or program.writeback:
        return {}
    return {str(k): list(v) for k, v in program.info.get("event_sources", {}).items()}


def _consider_materializing(ctx: LoopLowering, node: Node, materialize: MaterializePolicy,
                            argument: str | None = None) -> None:
    """Realize a pointwise value now when the backend's policy prefers memory to recomputing
    it in every reader (several users, a broadcast, an output others read too). ``argument``:
    the input whose final value ``node`` is; a late kernel recomputing it over the argument
    (``overwrites.py``) is one more reader, and the value is no output of the program."""
    lazy = ctx.values[node]
    meta = node.tensor
    if lazy.buffer is not None or meta is None or not ctx.native(lazy.dtype):
        return
    numel = hint(product(lazy.shape))  # a cost: the traced sizes stand for a dynamic one's
    if numel == 0:
        # nothing to compute, but inlined into each read its expression is built once per read:
        # along a chain of values read several times each (binary lifting's positions, 3 reads
        # a step) the expression grows exponentially (np.searchsorted of 1000 points on an
        # empty array took 25 s to compile). An empty buffer costs nothing to keep.
        if sum(user.args.count(node) for user in node.users if user.op is not Opcode.OUTPUT) > 1:
            _realize_now(ctx, node, lazy)
        return
    reads, output = 0, False
    for user in node.users:
        if user.op is Opcode.OUTPUT:
            output = True
            continue
        shape = user.tensor.shape if user.tensor is not None else lazy.shape
        if user.target == "setitem" and user.args[0] is not node:
            region = [len(range(*(hint(v) for v in e[1:]))) for e in user.kwargs["key"] if e[0] == "slice"]
            reads += max(numel, hint(product(region)))  # once per element of the region
        elif lazy.shape and hint(lazy.shape[-1]) == 1 and shape and hint(shape[-1]) > 1:
            reads += numel  # broadcast along the innermost loop: invariant there, computed once
        else:
            reads += max(numel, hint(product(shape)))
    late = recomputed(ctx, lazy, argument) if output and argument is not None else None
    if late is not None:  # a late kernel reads it, and a twin for its events where it has any
        output, reads = False, reads + numel * (2 if reports(late) else 1)
    if reads <= numel and not (output and reads):
        return  # one reader reading each element once: inlining is free
    index = tuple(Affine.var(xvar(d)) for d in range(len(lazy.shape)))
    if materialize(Reuse(lazy.loader(index), lazy.dtype, numel, reads, output)):
        _realize_now(ctx, node, lazy)


def _realize_now(ctx: LoopLowering, node: Node, lazy: Lazy) -> None:
    """``node``'s value computed into a buffer of its own, which its readers load."""
    ctx.node = node
    ctx.values[node] = ctx.realize(lazy, output_strides(node.tensor))


def _bound_depth(ctx: LoopLowering, node: Node, depth: dict[Node, int]) -> None:
    """Realize an element-wise value once its expression is ``options.max_depth`` ops deep."""
    lazy = ctx.values[node]
    if lazy.buffer is not None or node.tensor is None:
        return
    d = 1 + max((depth.get(a, 0) for a in node.inputs), default=0)
    if d > ctx.options.max_depth and ctx.native(lazy.dtype):
        _realize_now(ctx, node, lazy)
        return
    depth[node] = d


def _native_dtypes(ctx: LoopLowering, node: Node) -> bool:
    """Whether the result and every array operand have dtypes kernels compute in."""
    metas = [node.tensor, *(a.tensor for a in node.args if isinstance(a, Node))]
    return all(m is not None and ctx.native(m.dtype) for m in metas)


def _input(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor  # any dtype: extern calls take them all; kernels check what they load
    if meta is None:  # an object only extern calls use (a np.random.Generator)
        meta = TensorMeta((), "object", ())
    buf = InputBuffer(node.target, meta.shape, meta.dtype, meta.strides)
    ctx.inputs.append(buf)
    lazy = ctx.stored(buf.name, meta.shape, meta.dtype, meta.strides)
    if meta.dtype != "object" and is_complex(meta.dtype) and complex_native(ctx, meta.dtype):
        return as_parts(lazy, meta.dtype)
    return lazy


def _output(ctx: LoopLowering, value: Any) -> OutputRef:
    if not isinstance(value, Node):
        return OutputRef(const=value)
    lazy = ctx.values[value]
    meta = value.tensor
    if lazy.buffer is None:
        ctx.node = value
        lazy = ctx.realize(lazy, output_strides(meta))
        ctx.values[value] = lazy
    return OutputRef(buffer=lazy.buffer, scalar=meta.scalar)
