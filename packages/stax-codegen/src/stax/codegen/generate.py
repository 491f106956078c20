"""Loop IR -> compiled artifact: schedule and plan buffers (``program_plan.py``), then emit one
LLVM function per kernel (a ``cuda`` target's Triton kernels: ``triton/generate.py``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from llvmlite import ir

from stax.ir.sizes import Size, active_env, is_symbolic
from stax.loop import ExternCall, Load, LoopProgram, Pointwise, index_width

from .artifact import EVENTS_BUFFER, BufferPlan, ExternPlan, KernelArtifact, KernelPlan
from .cpu.costs import inlined_functions
from .cpu.emit import KernelSpec, emit_kernel
from .cpu.fpevents import flags_exact, float_events, has_events, underflow_unseen, underflows_late
from .cpu.host import host_identity
from .cpu.jit import PRECISE_SUFFIX, array_data_offset
from .cpu.nests import column_block
from .cpu.parallel_work import NEVER
from .cpu.same_kernels import alias_lines, kernel_key
from .cpu.target import cpu_target
from .cpu.vmath.trig32 import short_reductions
from .nesting import NestPlan, plain_order, rows_outermost
from .program_plan import (
    buffer_plans,
    check_kernel_budget,
    extern_plan,
    kernel_args,
    output_plans,
    plan_program,
    traffic,
)
from .scheduler import Group
from .target import Target
from .triton.generate import generate_triton
from .version import CODEGEN_VERSION


@dataclass(frozen=True)
class CodegenOptions:
    #: work (elements visited x cost units per element, ``cpu.costs``: a unit is about 25 ps of
    #: one thread) below which a kernel runs on the calling thread only; None: the target's
    #: ``parallel_work`` (the CPU's measured on the host, ``cpu/parallel_work.py``)
    parallel_threshold: int | None = None


def generate(program: LoopProgram, options: CodegenOptions | None = None,
             target: Target | None = None,
             nests: Mapping[tuple[str, ...], NestPlan] | None = None) -> KernelArtifact:
    """Build the ``stax.kernels/1`` artifact for ``program`` on ``target`` (default: the host
    CPU's, ``cpu_target()``: LLVM IR for this process's CPU; a ``cuda`` target's is Triton
    source, ``triton/generate.py``). ``nests`` replaces the scheduler's loop nest of the kernels
    computing the given buffers (``KernelArtifact.nests`` of a document, as recorded or edited);
    ``ValueError`` when one is not legal for its kernel."""
    options = options or CodegenOptions()
    target = target or cpu_target()
    if target.device == "cuda":
        return generate_triton(program, target, nests)
    _check_emitter(target)
    plan = plan_program(program, nests, target.phased_columns, transient=True,
                        extern_results=True)
    if program.late_reports and not target.late_reports:
        raise ValueError(f"{program.name}: late kernels that report their own events "
                         f"(LoopProgram.late_reports) need a target whose kernels know one "
                         f"operation's events exactly; lower with this target's loop_options")
    groups, storage, discard = plan.groups, plan.storage, plan.discard
    unstored = discard | frozenset(plan.row_scratch)  # no argument, no traffic
    identity = target.identity
    module = ir.Module(name=program.name)
    module.triple = identity.triple
    # every kernel again, float arithmetic with exact checks, compiled only when a call needs them
    # (``cpu/fpevents.py``); only float tests are inexact, integer division events are not
    precise = ir.Module(name=f"{program.name}{PRECISE_SUFFIX}")
    precise.triple = identity.triple
    dtypes = dict(plan.dtypes)
    dtypes[EVENTS_BUFFER] = "int32"
    nbytes = plan.nbytes
    kernels: list[KernelPlan] = []
    externs: list[ExternPlan] = []
    steps: list[str] = []
    emitted_as: dict[object, str] = {}  # kernel key -> the kernel emitted with that code
    functions = 0  # transcendental evaluations they inline (``kernel_budget``)
    aliases: list[tuple[str, str, int]] = []
    trig_checked = short_reductions(program.trig_limits)
    inputs = {b.name for b in program.inputs}
    shapes = {b.name: tuple(b.shape) for b in (*program.inputs, *program.buffers)}
    symbolic = any(is_symbolic(n) for shape in shapes.values() for n in shape)
    floats = False  # some kernel does float arithmetic that may report events
    # some kernel may underflow without reporting it, or a constant underflowed at capture
    unseen = program.constant_underflow
    # every kernel's spec first, the budget checked as they come, before LLVM runs: an
    # unrolled loop past ``kernel_budget`` emitted its first 64 kernels (a second of a DFT's
    # 60 coefficients) before the 65th refused the program
    # (group, (spec, the kernel emitted with its code) or None for a NumPy step, args, late,
    # reporting)
    specs: list[tuple[Group, Any, tuple[str, ...], bool, bool]] = []
    externs_seen = 0
    for group in groups:
        if group.extern is not None:
            specs.append((group, None, (), False, False))
            externs_seen += 1
            continue
        name = f"kernel_{len(specs) - externs_seen}"
        args = kernel_args(group, unstored)
        if symbolic:  # an input giving each size its buffers do not have as a dimension
            args = _with_size_sources(args, shapes, program.inputs)
        # a kernel writing over an argument runs once the call stands: its events are the
        # program's own, already decided (``LoopProgram.overwrites``), or its own to report
        # after it wrote, as NumPy's in-place ufunc (``late_reports``); one pointer for both
        late = {n.name: program.overwrites[n.name] for n in group.nodes
                if n.name in program.overwrites}
        reporting = bool(late) and all(n in program.late_reports for n in late)
        events = EVENTS_BUFFER if has_events(group.nodes) and (not late or reporting) else None
        same = {n.name: storage.in_place[n.name] for n in group.nodes if n.name in storage.in_place}
        same.update(late)
        spec = KernelSpec(name, tuple(group.nodes), group.nest, args + ((events,) if events else ()), dtypes,
                          same, events, discard=discard & {n.name for n in group.nodes},
                          row_scratch={n.name: plan.row_scratch[n.name] for n in group.nodes
                                       if n.name in plan.row_scratch},
                          trig_checked=trig_checked,
                          owned=frozenset(a for a in args if a in storage.storage),
                          callers=frozenset(a for a in args if a in inputs),
                          shapes={a: shapes[a] for a in args if a in shapes} if symbolic else {},
                          vector_bits=identity.tuned_bits,
                          flag_categories=reporting or (events is not None and flags_exact(group.nodes)),
                          late_reports=reporting)
        emitted = emitted_as.setdefault(kernel_key(spec), name)
        if emitted == name:
            functions += inlined_functions(group.nodes)
            check_kernel_budget(len(emitted_as), functions)
        specs.append((group, (spec, emitted), args, bool(late), reporting))
    for group, made, args, late, reporting in specs:
        if made is None:
            externs.append(extern_plan(group.extern))
            steps.append(group.extern.name)
            continue
        spec, emitted = made
        name = spec.name
        if emitted == name:
            emit_kernel(module, spec, array_data_offset())
            emit_kernel(precise, replace(spec, precise=True), array_data_offset())
        else:  # the same code as an earlier kernel (an unrolled loop's steps): its alias
            aliases.append((name, emitted, len(spec.args)))
        floats = floats or (float_events(group.nodes) and (not late or reporting))
        # a reporting late kernel's underflow too: a precise rerun's kernels do not see it
        unseen = unseen or (underflows_late(group.nodes) if late else
                            underflow_unseen(group.nodes, identity.triple))
        kernels.append(replace(_plan(name, group, args, nbytes, options, spec.events, target,
                                     unstored, dtypes),
                               copies=None if late else _copied_input(group, program)))
        steps.append(name)
    buffers = buffer_plans(plan)
    # a NumPy step reports its floating-point events (a Python operator on NumPy integer scalars
    # its overflow) into the call's events buffer (``errstate.recording``), and the call declines
    # as for kernels' events: NumPy's eager run then reports them from the user's line, once
    reports = any(EVENTS_BUFFER in k.args for k in kernels) or bool(externs)
    if reports:
        buffers.append(BufferPlan(EVENTS_BUFFER, (1,), "int32", (1,), "events"))
    alias_text = alias_lines(aliases)
    # where kernels were split over the pool from (``KernelArtifact.__str__`` says it)
    described = {**identity.to_json(), "parallel_work": _threshold(options, target)}
    env = active_env()  # a size-generic plan: its symbols and every guard of its compile
    sizes = {"symbols": {name: [i.low, i.high, i.hint] for name, i in env.symbols.items()},
             "guards": [g.to_json() for g in env.guards]} if symbolic and env is not None else {}
    return KernelArtifact(program.name, described, CODEGEN_VERSION,
                          str(module) + alias_text, buffers, kernels, list(program.input_slots),
                          program.input_tree, output_plans(program), program.output_tree,
                          [asdict(d) for d in plan.decisions], externs, steps, storage,
                          dict(program.checks), str(precise) + alias_text if floats else None, unseen,
                          overwrites=dict(program.overwrites), sizes=sizes,
                          late_reports={k: list(v) for k, v in program.late_reports.items()},
                          event_reports={k: list(v) for k, v in program.event_reports.items()})


def _check_emitter(target: Target) -> None:
    """The CPU emitter (``cpu/emit.py``) makes code for this process's CPU only: its exact
    products follow the host's FMA and the JIT compiles for the host."""
    if target.device != "cpu":
        raise ValueError(f"no emitter for device {target.device!r} (only 'cpu' and 'cuda')")
    if target.identity != host_identity():
        raise ValueError(f"the CPU emitter makes code for this host ({host_identity().cpu}, "
                         f"{host_identity().triple}), not for {target.identity.cpu}, "
                         f"{target.identity.triple}")


def _cost(group: Group, target: Target) -> int:
    """Cost units (the target's cost model; on the CPU about 25 ps of one thread each) of the
    whole kernel: each node's cost per element times the elements it visits (a row's sum and
    the sigmoid of it, one a row, are not both charged for every element of the row)."""
    total = 0
    for node in group.nodes:
        if isinstance(node, ExternCall):
            continue
        visits = math.prod(node.ranges) * math.prod(node.reduction_ranges)
        total += visits * max(target.element_cost(node.data.body), 1)
    return max(total, 1)


#: bytes a kernel reads and writes from which it is split over the pool whatever its work: two
#: threads stream memory beyond a core's caches faster than one, where a stream in the caller's
#: cache gains nothing or loses (``costs.work`` counts no loads). AMD EPYC, 2 vCPUs (1 MiB L2
#: a core), interleaved in one process: ``2 * x + 1`` float32 4 MB moved 47 -> 34 us split,
#: ``x -= m`` float64 3.2 MB 26 either way, ``x /= norm(x)`` float32 1.6 MB 32 serial, 58 split
SPLIT_BYTES = 3 << 20


def worth_splitting(cost: int, moved: int, threshold: Any) -> bool:
    """Whether a kernel of ``cost`` units moving ``moved`` bytes goes to the thread pool, at the
    target's ``threshold`` of work (``never`` as a huge one: nothing split)."""
    if not isinstance(threshold, int):
        return False
    return cost >= threshold or (moved >= SPLIT_BYTES and threshold < NEVER)


def _threshold(options: CodegenOptions, target: Target) -> int:
    """The work from which a kernel is split over the thread pool: the options', else the
    target's (measured on the host, ``cpu/parallel_work.py``)."""
    return options.parallel_threshold if options.parallel_threshold is not None \
        else target.parallel_work


def _with_size_sources(args: tuple[str, ...], shapes: Mapping[str, tuple[Any, ...]],
                       inputs: Any) -> tuple[str, ...]:
    """``args`` and, for each size symbol none of them has as a dimension, the first input that
    has it: a size-generic kernel reads its sizes from its arrays (``KernelEmitter.size``; a
    full mean's division by the count is a kernel of 0-d buffers)."""
    def bare(shape: tuple[Any, ...]) -> set[str]:
        return {next(iter(n.symbols)) for n in shape
                if isinstance(n, Size) and len(n.symbols) == 1 and n.same(Size.symbol(
                    next(iter(n.symbols))))}
    have = set().union(*(bare(shapes.get(a, ())) for a in args))
    extra: list[str] = []
    for b in inputs:
        missing = bare(tuple(b.shape)) - have
        if missing and b.name not in args:
            extra.append(b.name)
            have |= missing
    return args + tuple(extra)


def _copied_input(group: Group, program: LoopProgram) -> str | None:
    """The input ``group`` copies element for element into the one buffer it computes, at the
    same layout (``KernelPlan.copies``), if that is all it does."""
    if len(group.nodes) != 1 or group.extern is not None:
        return None
    node = group.nodes[0]
    body = node.data.body
    if node.updates is not None or node.store_offset is not None or \
            not isinstance(node.data, Pointwise) or type(body) is not Load:
        return None
    source = next((b for b in program.inputs if b.name == body.buffer), None)
    if source is None or (source.shape, source.dtype, source.strides) != \
            (node.shape, node.dtype, node.strides) or body.index != node.store_index:
        return None
    return source.name


def _plan(name: str, group: Group, args: tuple[str, ...], nbytes: dict[str, int],
          options: CodegenOptions, events: str | None, target: Target,
          discard: frozenset[str], dtypes: dict[str, str]) -> KernelPlan:
    first = group.nodes[0]
    work = math.prod(first.ranges) * math.prod(first.reduction_ranges)
    outer = first.ranges[0] if first.ranges else 1
    if group.nest is not None and group.nest.kind == "plain" and first.ranges:
        outer = first.ranges[plain_order(group.nodes)[0]]  # its loops may be interchanged
    if group.nest is not None:  # a columns nest over one axis splits it in blocks of columns
        outer = -(-outer // column_block(group.nest))
    computes = tuple(n.name for n in group.nodes)
    read, written = traffic(group, args, nbytes, discard)
    # a scatter or rerolled updates run in order on one thread (``ComputedBuffer.ordered``),
    # but rerolled updates a row at a time split by rows (``nesting.plain_order``)
    in_order = any(n.ordered or n.store_offset is not None for n in group.nodes) and \
        not rows_outermost(group.nodes)
    cost = _cost(group, target)
    moved = _touched(group, args, read + written, dtypes)
    per_call = is_symbolic(cost) or is_symbolic(moved)
    if per_call:  # decided per call, from its sizes (``instantiate.py``)
        parallel = not in_order
    else:
        parallel = outer > 1 and not in_order and \
            worth_splitting(cost, moved, _threshold(options, target))
    bits = max(index_width(n) for n in group.nodes)
    nest = group.nest.plan if group.nest is not None else None
    return KernelPlan(name, args + ((events,) if events else ()), computes, outer, work, parallel,
                      read, written, bits, nest, cost=cost if per_call else None)


def _touched(group: Group, args: tuple[str, ...], moved: Any, dtypes: dict[str, str]) -> Any:
    """The bytes the kernel reads and writes, at most an element of each of its arrays per
    element it visits: ``traffic`` counts whole arguments, and ``x[:16] * 2`` of a large ``x``
    touches 16 of them."""
    visits = sum(math.prod(n.ranges) * math.prod(n.reduction_ranges) for n in group.nodes)
    per_visit = sum(np.dtype(dtypes[a]).itemsize for a in args if a in dtypes)
    if is_symbolic(visits) or is_symbolic(moved) or not per_visit:
        return moved
    return min(moved, visits * per_visit)
