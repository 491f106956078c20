"""Loop IR -> a CUDA artifact: the plan every target shares (``program_plan.py``: fusion, loop
nests, step order, storage), each kernel emitted as a Triton function (``emit.py``) with its
launch (``launch.py``), all of them one source module (``KernelArtifact.triton_source``)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import Any

import numpy as np

from stax.ir.sizes import active_env, hint, is_symbolic
from stax.loop import LoopProgram, Reduction, Scan, index_width

from ..artifact import BufferPlan, ExternPlan, KernelArtifact, KernelPlan, Launch
from ..nesting import Nest, NestPlan
from ..program_plan import (
    ProgramPlan,
    buffer_plans,
    extern_plan,
    kernel_args,
    output_plans,
    plan_program,
    traffic,
)
from ..scheduler import Group
from ..target import Target
from ..version import CODEGEN_VERSION
from .emit import TritonKernelSpec, emit_kernel
from .launch import (
    Blocks,
    LaunchPolicy,
    cdiv,
    choose_blocks,
    lookback_blocks,
    spread_rows,
    tile_blocks,
)
from .reductions import HELPERS as REDUCTION_HELPERS
from .rows import kept_loops, row_axes
from .scans import HELPERS as SCAN_HELPERS
from .scans import clear_source, lookback_words
from .source import HEADER, identifier
from .split import split_columns
from .target import triton_target

INT32_MAX = 2 ** 31 - 1
HELPERS = {**REDUCTION_HELPERS, **SCAN_HELPERS}
#: the block of a kernel clearing a look-back scan's flags
CLEAR_XBLOCK = 1024


def generate_triton(program: LoopProgram, target: Target | None = None,
                    nests: Mapping[tuple[str, ...], NestPlan] | None = None,
                    policy: LaunchPolicy | None = None,
                    configs: Mapping[str, Blocks] | None = None) -> KernelArtifact:
    """The ``stax.kernels/1.5`` artifact of ``program`` for CUDA: Triton source and launches
    (``policy``: block sizes, ``launch.py``; ``configs``: the block shape of a kernel by its
    name, ``kernel_0``..., instead of the policy's, as the autotuner tries them).
    ``NotImplementedError`` names a kernel, nest or operation this emitter cannot make yet: the
    caller runs the program another way."""
    target = target or triton_target()
    if target.device != "cuda":
        raise ValueError(f"the Triton emitter makes code for CUDA, not for {target.device!r}")
    policy = policy or LaunchPolicy()
    # buffers written over arguments are outputs here, which the caller copies back: a kernel
    # run after the call's checks would be one more launch for what the copy does
    program = split_columns(replace(program, overwrites={}), policy, nests)
    plan = plan_program(program, nests)
    taken: set[str] = set()
    pointers = {name: identifier(name, taken) + "_ptr" for name in plan.dtypes}
    kernels: list[KernelPlan] = []
    externs: list[ExternPlan] = []
    steps: list[str] = []
    sources: list[str] = []
    helpers: set[str] = set()
    scratch: list[BufferPlan] = []
    for group in plan.groups:
        call = group.extern
        if call is not None:
            externs.append(extern_plan(call))
            steps.append(call.name)
            continue
        nest = group.nest
        assert nest is not None
        name = f"kernel_{len(steps) - len(externs) - len(scratch)}"  # clearing kernels aside
        args = kernel_args(group, plan.discard)
        xnumel, inner = extents(nest)
        if is_symbolic(inner) and nest.kind not in ("rows", "plain", "columns"):
            raise NotImplementedError(f"{name}: a size-generic inner extent ({inner}) of a "
                                      f"{nest.kind} nest")
        # the blocks of a size-generic kernel: for many rows (a columns nest: columns enough
        # for a few hundred programs, as a split's slices grow with the size)
        planned = planning_extent(xnumel, columns=nest.kind == "columns")
        inner = None if inner is None else planning_extent(inner) if is_symbolic(inner) else inner
        lookback = None if is_symbolic(xnumel) else lookback_of(nest, xnumel, inner, policy)
        blocks = (configs or {}).get(name) or lookback or \
            (tile_blocks(planned, inner, policy) if nest.kind == "tiled" and inner is not None else
             choose_blocks(planned, inner, nest.kind == "columns", policy, widest(args, plan.dtypes)))
        if name not in (configs or {}) and nest.kind == "rows" and kept_loops(nest):
            blocks = spread_rows(blocks, planned, policy)
        bits = max(index_width(n) for n in group.nodes)
        if xnumel + blocks.xblock > INT32_MAX or (inner or 0) + blocks.r0_block > INT32_MAX:
            bits = 64  # a masked lane's index past the end must not wrap either
        flags = None
        if lookback is not None:
            assert inner is not None and blocks.xblock == 1
            words = xnumel * math.ceil(inner / blocks.r0_block) * (lookback_words(nest.nodes[0].dtype) or 0)
            flags = f"{name}_flags"
            pointers[flags] = identifier(flags, taken) + "_ptr"
            scratch.append(BufferPlan(flags, (words,), "uint64", (1,), "intermediate"))
            clear = f"{name}_clear"
            sources.append(clear_source(clear, pointers[flags], words))
            kernels.append(KernelPlan(clear, (flags,), (flags,), words, words, words > CLEAR_XBLOCK, 0,
                                      8 * words, 32 if words < INT32_MAX // 2 else 64, None,
                                      Launch((math.ceil(words / CLEAR_XBLOCK),),
                                             (("XBLOCK", CLEAR_XBLOCK),), 4)))
            steps.append(clear)
        spec = TritonKernelSpec(name, nest, args, pointers, plan.dtypes, bits, blocks,
                                plan.discard & {n.name for n in group.nodes},
                                frozenset(a for a in args if plan.nbytes[a] == 0), flags,
                                policy.eviction_hints, unread(plan, group))
        text, used, unstored = emit_kernel(spec)
        symbols = size_parameters(text, program.sizes)
        text = with_size_parameters(text, name, symbols)
        sources.append(text)
        helpers |= used
        read, written = traffic(group, args, plan.nbytes, plan.discard | unstored)
        first = group.nodes[0]
        work = math.prod(first.ranges) * math.prod(first.reduction_ranges)
        launch = blocks.launch(xnumel)
        if nest.kind == "tiled" and inner is not None:  # a program per tile
            launch = Launch((cdiv(xnumel, blocks.xblock) * cdiv(inner, blocks.r0_block),),
                            launch.blocks, launch.num_warps)
        if flags is not None:  # a program per block of each row
            assert inner is not None
            launch = Launch((xnumel * math.ceil(inner / blocks.r0_block),), launch.blocks, launch.num_warps)
            args = (*args, flags)
        kernels.append(KernelPlan(name, args, tuple(n.name for n in group.nodes), xnumel, work,
                                  hint(launch.grid[0]) > 1, read, written, bits, nest.plan, launch,
                                  size_args=symbols))
        steps.append(name)
    source = "\n\n".join([f"# {program.name}: Triton kernels made by stax-codegen "
                          f"{CODEGEN_VERSION}\n{HEADER}", *[HELPERS[h] for h in sorted(helpers)],
                          *sources])
    return KernelArtifact(program.name, target.identity.to_json(), CODEGEN_VERSION, "",
                          buffer_plans(plan) + scratch, kernels, list(program.input_slots),
                          program.input_tree, output_plans(program), program.output_tree,
                          [asdict(d) for d in plan.decisions], externs, steps, plan.storage,
                          dict(program.checks), None, False, source, sizes=_sizes(program))


def _sizes(program: LoopProgram) -> dict[str, Any]:
    """A size-generic plan's symbols and every guard of its compile (``KernelArtifact.sizes``)."""
    env = active_env()
    if not program.sizes or env is None:
        return {}
    return {"symbols": {name: [i.low, i.high, i.hint] for name, i in env.symbols.items()},
            "guards": [g.to_json() for g in env.guards]}


#: the outer extent a size-generic kernel's blocks are chosen for (many rows: a small size
#: only masks more lanes)
PLANNING_EXTENT = 1 << 20
#: a columns nest's: its kept elements are columns, and across programs only; for a dynamic
#: count (the slices of a split column reduction, ``split.py``: 32 of 1024 columns at 4096
#: rows) blocks of 64 columns (two 128-byte sectors a row) that make 512 programs there and
#: more as it grows. Planned for ``PLANNING_EXTENT`` they were 1024 columns wide: 32 programs
#: at 4096 rows, 3.5x the exact kernel's time on an H200
COLUMNS_PLANNING_EXTENT = 1 << 15


def planning_extent(xnumel: Any, columns: bool = False) -> int:
    if not is_symbolic(xnumel):
        return xnumel
    return COLUMNS_PLANNING_EXTENT if columns else max(hint(xnumel), PLANNING_EXTENT)


def size_parameters(text: str, sizes: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The size symbols a kernel's source names (its run-time arguments)."""
    if not sizes:
        return ()
    words = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text))
    return tuple(sorted((name for name in sizes if name in words), key=lambda n: int(n[1:])))


def with_size_parameters(text: str, name: str, symbols: tuple[str, ...]) -> str:
    """The kernel's ``def`` line with its size symbols as arguments before the block sizes."""
    if not symbols:
        return text
    head = f"def {name}("
    at = text.index(head)
    end = text.index("XBLOCK: tl.constexpr", at)
    return text[:end] + "".join(f"{s}, " for s in symbols) + text[end:]


def unread(plan: ProgramPlan, group: Group) -> frozenset[str]:
    """The buffers ``group`` computes that no other step reads and no output or check names."""
    elsewhere = set().union(*(g.reads | g.after for g in plan.groups if g is not group))
    computed = {n.name for n in group.nodes}
    return frozenset(computed - elsewhere - plan.output_names - set(plan.program.checks) - plan.discard)


def lookback_of(nest: Nest, xnumel: int, inner: int | None, policy: LaunchPolicy) -> Blocks | None:
    """The block shape of a scan across programs (``scans.py``), or None where the nest scans
    per row: a ``scan`` nest of few long rows, in a dtype whose values a flag word holds."""
    first = nest.nodes[0]
    if nest.kind != "scan" or not isinstance(first.data, Scan) or inner is None or \
            first.data.scan_type not in ("sum", "prod") or lookback_words(first.dtype) is None:
        return None
    return lookback_blocks(xnumel, inner, policy)


def widest(args: tuple[str, ...], dtypes: Mapping[str, str]) -> int:
    """The largest item size of a kernel's buffers."""
    return max((np.dtype(dtypes[a]).itemsize for a in args), default=4)


def kernel_shapes(program: LoopProgram, nests: Mapping[tuple[str, ...], NestPlan] | None = None,
                  policy: LaunchPolicy | None = None) -> list[tuple[str, int, int | None, str, int]]:
    """Each kernel's name, outer extent, largest inner extent (``None``: 1-D), kind
    (``pointwise``, ``rows``, ``kept``, ``columns``, ``tiled`` or ``lookback``) and widest item
    size: what its launch is chosen from (``launch.candidates``)."""
    policy = policy or LaunchPolicy()
    plan = plan_program(split_columns(replace(program, overwrites={}), policy, nests), nests)
    found = []
    for group in plan.groups:
        if group.nest is not None:
            xnumel, inner = extents(group.nest)
            kind = "pointwise" if inner is None else group.nest.kind if group.nest.kind in \
                ("columns", "tiled") else "lookback" if lookback_of(group.nest, xnumel, inner, policy) \
                else "kept" if group.nest.kind == "rows" and kept_loops(group.nest) else "rows"
            itemsize = widest(kernel_args(group, plan.discard), plan.dtypes)
            found.append((f"kernel_{len(found)}", xnumel, inner, kind, itemsize))
    return found


def extents(nest: Nest) -> tuple[int, int | None]:
    """A kernel's outer extent (flattened: ``xnumel``) and its largest inner one (``None`` for a
    1-D element-wise kernel; a tiled one's last axis)."""
    first = nest.nodes[0]
    if nest.kind == "rows":  # rows of the leading axes every phase keeps (``rows.py``)
        count = row_axes(nest)
        inner = max(math.prod(p[0].reduction_ranges) if isinstance(p[0].data, Reduction)
                    else math.prod(p[0].ranges[count:]) for p in nest.phases)
        return math.prod(first.ranges[:count]), inner
    if isinstance(first.data, Reduction | Scan):
        return math.prod(first.ranges), math.prod(first.reduction_ranges)
    if nest.kind == "tiled":  # rows of the leading axes by the last
        return math.prod(first.ranges[:-1]), first.ranges[-1]
    return math.prod(first.ranges), None


__all__ = ["Blocks", "LaunchPolicy", "extents", "generate_triton", "kernel_shapes"]
