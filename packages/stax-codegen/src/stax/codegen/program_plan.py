"""The half of ``generate`` every target shares: which buffers share a kernel and in which loop
nest (the scheduler), the order of the steps and the storage of the buffers (``storage_plan``),
and the plans of buffers, NumPy steps and outputs the artifact records. A target's generator
(``generate.py`` for the CPU's LLVM, ``triton/generate.py`` for CUDA's Triton) takes a
``ProgramPlan`` and emits one kernel per group; it decides nothing structural.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from stax.ir import UnsupportedError
from stax.loop import ComputedBuffer, ExternCall, LoopProgram, Pointwise, node_loads
from stax.loop.ir import encode_operands

from .artifact import BufferPlan, ExternPlan
from .extern_results import writes_into_storage
from .nesting import NestPlan, choose_nest, nest_as
from .row_scratch import row_scratch_buffers
from .scheduler import FusionDecision, Group, schedule
from .storage_plan import StoragePlan, order_steps, plan_storage
from .transient import transient_buffers


@dataclass
class ProgramPlan:
    """A loop program scheduled: its groups in step order (each kernel's with its nest), the
    fusion decisions, the storage plan, and what every target's emitter asks of the buffers."""

    program: LoopProgram
    groups: list[Group]
    decisions: list[FusionDecision]
    storage: StoragePlan
    #: buffers never stored: computed only for their floating-point events (``discarded``), or
    #: read only by their own kernel at the element it computes (``transient.py``)
    discard: frozenset[str]
    output_names: set[str]
    dtypes: dict[str, str]     # every input's and buffer's dtype
    nbytes: dict[str, int]     # every input's and buffer's size in bytes
    #: buffers a row kernel holds one row at a time, with a row's elements (``row_scratch.py``):
    #: no storage, no argument, but stored and loaded (unlike ``discard``'s)
    row_scratch: dict[str, int] = field(default_factory=dict)


#: a plan of more steps is not compiled: each costs a launch per call and seconds to compile in
#: all, which is what a Python loop unrolled at capture makes (one kernel per iteration's
#: reduction); eager NumPy runs such a program faster
MAX_STEPS = 256


class TooManySteps(UnsupportedError):
    """A program of more than ``MAX_STEPS`` steps, or of more distinct kernels than a
    ``kernel_budget`` allows (a caller may capture again with the function's loops lifted:
    ``stax.runtime.api``)."""


#: distinct kernels a CPU program may compile within ``kernel_budget`` (LLVM takes 6-14 ms
#: each: an unrolled loop whose steps differ in their offsets compiled 402 in 2.7 s)
KERNEL_BUDGET = 64
_budget: contextvars.ContextVar[int | None] = contextvars.ContextVar("stax_kernel_budget",
                                                                    default=None)


@contextmanager
def kernel_budget(limit: int = KERNEL_BUDGET) -> Iterator[None]:
    """Programs generated in this block raise ``TooManySteps`` past ``limit`` distinct
    kernels, before compiling the rest (the caller has a cheaper program to try)."""
    token = _budget.set(limit)
    try:
        yield
    finally:
        _budget.reset(token)


def check_kernel_budget(distinct: int, functions: int = 0) -> None:
    """``TooManySteps`` when ``distinct`` kernels, or ``functions`` inlined function evaluations
    in them, pass the active ``kernel_budget``."""
    limit = _budget.get()
    if limit is not None and distinct > limit:
        raise TooManySteps(f"the program would compile more than {limit} distinct kernels (a "
                           "Python loop unrolled at capture, its steps differing in offsets)")
    if limit is not None and functions > FUNCTION_BUDGET:
        raise TooManyFunctions(f"the program's kernels would inline more than "
                               f"{FUNCTION_BUDGET} evaluations of functions (a Python loop "
                               "unrolled at capture)")


class TooManyFunctions(TooManySteps):
    """Past ``FUNCTION_BUDGET``: the program compiles, slowly; lifted, its loops must run
    compiled to be worth it (``stax.runtime.recapture``)."""


#: evaluations of transcendental functions (``sin``, ``exp``...) the kernels of a program may
#: inline within ``kernel_budget``: each is a few dozen vector instructions, in fast and precise
#: kernels, and LLVM's time grows faster than the kernel (an Euler loop of ``np.sin`` unrolled
#: 200 times: 8.7 s to a first call; lifted, 0.17 s, and as fast a call). At 48, 20 Fourier
#: coefficients (a ``cos`` and a ``sin`` each, 40 evaluations fused into one kernel) took 1.7 s
#: to a first call, lifted 0.56 s (73 us a call against 54 unrolled, NumPy 505); 12 damped steps
#: of ``sin`` and ``exp`` on 64 elements 1.04 s, lifted 0.17 s (18 us a call against 5, NumPy
#: 39; on 100,000 elements the lifted loop is faster: 3.5 ms against 4.3). AMD EPYC (Zen 5)
FUNCTION_BUDGET = 16


def _too_many(program: LoopProgram, what: str) -> UnsupportedError:
    return TooManySteps(
        f"the program would compile to {what} (more than {MAX_STEPS}: a Python loop unrolled at "
        "capture, an iteration's work in kernels of its own)",
        hint="it runs eagerly, faster than that many launches; STAX_LOGS=loops says why a loop "
        "was unrolled instead of lifted into one step (a loop over range(), np.ndindex or an "
        "array's rows with a plain body lifts)")


def plan_program(program: LoopProgram,
                 nests: Mapping[tuple[str, ...], NestPlan] | None = None,
                 phased_columns: bool = False, transient: bool = False,
                 extern_results: bool = False) -> ProgramPlan:
    """Schedule ``program``; ``nests`` replaces the scheduler's loop nest of the kernels computing
    the given buffers (``ValueError`` when one is not legal for its kernel); ``phased_columns``
    is the target's (``Target.phased_columns``); ``transient``: buffers only their own kernel
    reads, at the element it computes, are not stored (``transient.py``; the CPU's emitter
    holds them); ``extern_results``: NumPy steps that take ``out=`` write into the plan's
    storage (``extern_results.py``; the CPU's executable passes it). ``UnsupportedError`` for a
    program of more than ``MAX_STEPS`` steps."""
    if len(program.buffers) > 4 * MAX_STEPS:
        raise _too_many(program, f"{len(program.buffers)} buffers")
    # buffers written over updated arguments run last, each in a kernel of its own, after the
    # call's checks and events are decided (``LoopProgram.overwrites``)
    late = [b for b in program.buffers if b.name in program.overwrites]
    early = replace(program, buffers=[b for b in program.buffers if b.name not in
                                      program.overwrites]) if late else program
    groups, decisions = schedule(early, phased_columns)
    if len(groups) + len(late) > MAX_STEPS:
        raise _too_many(program, f"{len(groups) + len(late)} kernels and NumPy steps")
    last = [Group.of(b) for b in late]
    for group in last:
        group.nest = choose_nest(group.nodes, phased_columns)
    for group in groups + last:
        plan = (nests or {}).get(tuple(n.name for n in group.nodes))
        if plan is not None:
            group.nest = nest_as(group.nodes, plan)
    output_names = {o.buffer for o in program.outputs if o.buffer is not None}
    kept = output_names | set(program.checks)  # read after the last step: never reused
    discard = discarded(program)
    scratch: dict[str, int] = {}
    if transient:
        discard |= transient_buffers(groups + last, kept | set(program.overwrites), discard)
        scratch = row_scratch_buffers(groups + last, kept | set(program.overwrites), discard)
    sizes = {b.name: 0 if b.name in discard or b.name in scratch else
             math.prod(b.shape) * np.dtype(b.dtype).itemsize
             for b in (*program.inputs, *program.buffers)}
    groups = order_steps(groups, sizes, kept) + last
    into = frozenset(b.name for b in program.buffers if isinstance(b, ExternCall) and
                     b.name not in kept and writes_into_storage(b)) if extern_results \
        else frozenset()
    storage = plan_storage(groups, {b.name: b for b in program.buffers}, sizes, kept,
                           discard | frozenset(program.overwrites) | frozenset(scratch), into,
                           rows_in_place=transient)
    dtypes = {b.name: b.dtype for b in (*program.inputs, *program.buffers)}
    nbytes = {b.name: math.prod(b.shape) * np.dtype(b.dtype).itemsize
              for b in (*program.inputs, *program.buffers)}
    return ProgramPlan(program, groups, decisions, storage, discard, output_names, dtypes, nbytes,
                       scratch)


def discarded(program: LoopProgram) -> frozenset[str]:
    """The element-wise buffers computed only for their floating-point events
    (``LoopProgram.events_only``): their kernels compute them without storing them
    (``KernelSpec.discard``), so they are no kernel's argument and get no storage."""
    only = set(program.events_only)
    return frozenset(b.name for b in program.buffers if b.name in only
                     and isinstance(b, ComputedBuffer) and isinstance(b.data, Pointwise))


def kernel_args(group: Group, discard: frozenset[str]) -> tuple[str, ...]:
    """The buffers a group's kernel reads, then those it writes, each once, in first-use order;
    none in ``discard`` (never stored: a transient one's readers take its value as computed)."""
    names: dict[str, None] = {}
    for node in group.nodes:
        for ld in node_loads(node):
            if ld.buffer not in discard:
                names.setdefault(ld.buffer, None)
    for node in group.nodes:
        if node.name not in discard:
            names.setdefault(node.name, None)
    return tuple(names)


def extern_plan(call: ExternCall) -> ExternPlan:
    return ExternPlan(call.name, call.target, call.method, encode_operands(call.args),
                      encode_operands(call.kwargs), call.shape, call.dtype, call.strides,
                      call.scalar, call.sequence, call.source)


def buffer_plans(plan: ProgramPlan) -> list[BufferPlan]:
    """Every input and every stored buffer, with its role."""
    program = plan.program
    buffers = [BufferPlan(b.name, b.shape, b.dtype, b.strides, "input") for b in program.inputs]
    buffers += [BufferPlan(b.name, b.shape, b.dtype, b.strides,
                           "extern" if isinstance(b, ExternCall)
                           else "overwrite" if b.name in program.overwrites
                           else "output" if b.name in plan.output_names else "intermediate")
                for b in program.buffers if b.name not in plan.discard]
    return buffers


def output_plans(program: LoopProgram) -> list[dict[str, Any]]:
    return [{"buffer": o.buffer, "scalar": o.scalar} if o.buffer is not None
            else {"const": o.const} for o in program.outputs]


def traffic(group: Group, args: tuple[str, ...], nbytes: dict[str, int],
            discard: frozenset[str]) -> tuple[int, int]:
    """The bytes a group's kernel reads (its arguments it does not compute) and writes."""
    computes = tuple(n.name for n in group.nodes)
    read = sum(nbytes[a] for a in args if a not in computes)
    written = sum(_stored_bytes(n, nbytes) for n in group.nodes if n.name not in discard)
    return read, written


def _stored_bytes(node: ComputedBuffer, nbytes: dict[str, int]) -> int:
    """A buffer's bytes, or a region update's: the elements its loops reach."""
    if node.updates is None:
        return nbytes[node.name]
    return math.prod(node.ranges) * np.dtype(node.dtype).itemsize
