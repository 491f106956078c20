"""Triton source for one fused kernel (spec §9), following the loop nest the plan chose.

A kernel is one ``@triton.jit`` function over the buffers it reads and writes (one pointer each,
in ``args`` order) and its block sizes (``XBLOCK``, and ``R0_BLOCK`` where it has an inner
axis). Sizes are literals: a plan is made for one shape. Each program instance computes
``XBLOCK`` consecutive elements of the kernel's outer iteration space (flattened, ``xindex``;
the loop variables ``x0, x1, ...`` are its quotients and remainders), masked at the ragged end
(``xmask``):

- ``plain`` element-wise kernels are 1-D: ``xindex`` is a vector of ``XBLOCK`` elements.
- ``tiled`` element-wise kernels (``x.T + y``: an operand read across its memory order) are 2-D:
  one tile a program, ``XBLOCK`` rows of the leading axes by ``R0_BLOCK`` elements of the last.
  Each load of the tile is coalesced along its own contiguous axis; Triton moves values between
  the two layouts through shared memory.
- reductions (``plain`` and ``columns``) are 2-D: ``xindex`` is ``XBLOCK`` x 1 and the reduced
  elements, flattened, run along ``r0_index`` (1 x ``R0_BLOCK``). *Persistent* when the reduced
  extent fits one block: the whole row is loaded and reduced at once; *looped* otherwise:
  ``for r0_offset in range(0, r0_numel, R0_BLOCK)`` accumulates lane-wise accumulators that are
  reduced once after the loop (``reductions.py``). A ``columns`` nest differs only in its block
  shape (``launch.py``: wide in the kept axis, which runs along memory).
- ``rows`` kernels run their phases in order for ``XBLOCK`` rows (a row: an index of the leading
  axes every phase keeps, ``rows.py``): each phase persistent or looped over its own inner
  extent, a reduction keeping axes beyond the row in a loop over them. A value an earlier phase
  computed is taken from registers when it is there for the element a later phase reads (the
  reduction's result of the row; the whole row of a persistent phase); otherwise the later
  phase reads memory after a
  ``tl.debug_barrier()`` (the same program wrote it: CUDA makes a block's global writes visible
  to the block after the barrier).
- ``scan`` nests (and a scan's ``columns`` nest): ``scans.py``, per row or, for a few long
  rows, across programs with a decoupled look-back.

Every value is assigned to a ``tmpN``; the writer records which of the block's axes it varies
along (``x``, ``r``) so loads get the mask of exactly those axes and reductions see full blocks.
What each expression kind becomes is ``expressions.py``; operators ``registry.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stax.ir.sizes import is_symbolic
from stax.loop import Affine, ComputedBuffer, Expr, Reduction, Scan, loads, rvar, xvar

from ..nesting import Nest
from ..rowshare import Spill
from . import rules
from .expressions import EXPRESSIONS
from .launch import Blocks
from .reductions import reduction_kind
from .rows import PhaseShape, row_axes
from .scans import scan_kernel
from .source import UNREAD, constant, drop_unread, loads_first, number, tl_dtype

#: the modules whose emitters the tables hold (imported for their registrations)
EMITTER_MODULES = rules.EMITTER_MODULES
#: the nest kinds (``nesting.NEST_KINDS``) this emitter builds
NESTS = ("plain", "tiled", "columns", "rows", "scan")
#: the shape of a value varying along these axes of a 2-D block
SHAPES = {frozenset({"x"}): "[XBLOCK, 1]", frozenset({"r"}): "[1, R0_BLOCK]",
          frozenset({"x", "r"}): "[XBLOCK, R0_BLOCK]"}
MASKS = {frozenset({"x"}): "xmask", frozenset({"r"}): "r0_mask",
         frozenset({"x", "r"}): "mask"}
NO_AXES: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TritonKernelSpec:
    """What to emit: the kernel's nest as the plan chose it, its arguments, dtypes, index width
    and block shape."""

    name: str
    nest: Nest
    args: tuple[str, ...]          # buffer names, in argument order
    pointers: dict[str, str]       # buffer name -> its pointer parameter
    dtypes: dict[str, str]
    index_bits: int
    blocks: Blocks
    discard: frozenset[str] = frozenset()
    #: buffers of no elements: never read (only lanes masked off could), so never addressed
    empty: frozenset[str] = frozenset()
    #: a scan across programs: its look-back scratch buffer (``scans.py``), the last argument
    scratch: str | None = None
    #: L2 eviction hints on the loads of 2-D kernels (``KernelWriter.eviction``)
    hints: bool = False
    #: buffers it computes that no other step, output or check reads: stored only where a later
    #: phase reads them back from memory (``source.drop_unread``; a row's mean and variance
    #: stay in registers: 2% of layer norm's time on an H200, gpu-notes.md run 5)
    unread: frozenset[str] = frozenset()


@dataclass
class Held:
    """A value in registers: buffer element ``key`` (an index in canonical variables), assigned
    to ``name`` in the region ``region``."""

    key: Any
    name: str
    region: int


@dataclass
class Region:
    """The loop variables of the code being written and how to spell them."""

    names: dict[str, str]        # loop variable -> source name ("0" for an extent-1 axis)
    axes: dict[str, frozenset[str]]  # loop variable -> block axes it varies along
    canon: dict[str, str]        # loop variable -> canonical name (the same element in any phase)
    layout: Any                  # what else the canonical names depend on


class KernelWriter:
    def __init__(self, spec: TritonKernelSpec) -> None:
        self.spec = spec
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0
        self.axes: dict[str, frozenset[str]] = {}   # value name -> block axes it varies along
        self.memo: dict[Any, str] = {}  # id(expr) or source text -> name
        self.held: dict[str, Held] = {}
        #: elements of buffers this kernel does not write, already loaded: (buffer, key) -> Held
        self.loaded: dict[tuple[str, Any], Held] = {}
        #: spilled row values kept in registers only (``row_kernel``): never read from memory
        self.unstored: set[str] = set()
        self.read_back: set[str] = set()            # buffers read from memory (``reads_memory``)
        self.open: list[int] = [0]                  # the regions the current line is inside
        self.regions = 0
        self.region = Region({}, {}, {}, None)
        self.computed: set[str] = set()             # buffers stored so far
        self.phase_computes: set[str] = set()
        self.barrier = False                        # the current phase reads what one before stored
        self.two_d = False
        self.helpers: set[str] = set()              # helper functions the kernel calls

    # -- writing -------------------------------------------------------------------------------
    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def assign(self, text: str, hint: str = "tmp", axes: frozenset[str] | None = None) -> str:
        """``text`` assigned to a fresh name; it varies along ``axes`` (default: along every
        axis of the values it names, which the caller knows better where it can)."""
        name = f"{hint}{self.counter}"
        self.counter += 1
        self.line(f"{name} = {text}")
        self.axes[name] = self._axes_of(text) if axes is None else axes
        return name

    def _axes_of(self, text: str) -> frozenset[str]:
        found: set[str] = set()
        for token in _names(text):
            found |= self.axes.get(token, NO_AXES)
        return frozenset(found)

    def const(self, value: Any, dtype: str) -> str:
        return constant(value, dtype)

    def full(self, value: Any, dtype: str) -> str:
        """A whole 2-D block of ``value`` (an accumulator's start)."""
        return f"tl.full([XBLOCK, R0_BLOCK], {number(value, dtype)}, {tl_dtype(dtype)})"

    def helper(self, name: str) -> str:
        """Call a helper function of the module (``reductions.HELPERS``) by its name."""
        self.helpers.add(name)
        return name

    # -- values --------------------------------------------------------------------------------
    def value(self, expr: Expr) -> str:
        """The name holding ``expr`` here. The same source text computed again in the same
        region (the same value: expressions are pure, and a region never reads what it stores)
        is the name computed first: common subexpressions of the loop IR's trees, which share
        no nodes (``(x - m) * (x - m)``), are computed once."""
        found = self.memo.get(id(expr))
        if found is None:
            text = EXPRESSIONS.handler(type(expr))(self, expr)
            if _is_name(text) and text in self.axes:
                found = text
            else:
                found = self.memo.get(text)
                if found is None:
                    found = self.memo[text] = self.assign(text)
            self.memo[id(expr)] = found
        return found

    def axes_of(self, name: str) -> frozenset[str]:
        return self._axes_of(name)

    def index(self, expr: Affine) -> tuple[str, frozenset[str]]:
        """An affine element index as source, and the axes it varies along."""
        parts: list[str] = []
        axes: set[str] = set()
        for var, coeff in expr.terms:
            name = self.region.names[var]
            if name == "0":
                continue
            axes |= self.region.axes[var]
            if is_symbolic(coeff):  # a size-generic stride: its expression
                term = f"({coeff}) * {name}"
            else:
                term = name if coeff == 1 else f"{coeff} * {name}" if coeff > 0 \
                    else f"-{-coeff} * {name}"
            parts.append(term)
        if is_symbolic(expr.const):
            parts.append(f"({expr.const})")
        elif expr.const or not parts:
            parts.append(str(expr.const))
        text = " + ".join(parts).replace("+ -", "- ")
        return text, frozenset(axes)

    def key(self, expr: Affine) -> Any:
        """Which element ``expr`` names, in terms that agree across the phases of a kernel: an
        inner axis by its position (``@0``...) in the phase's inner extent, which with the block
        layout decides which lane holds which element."""
        canon = self.region.canon
        terms = tuple(sorted((canon[v], c) for v, c in expr.terms if self.region.names[v] != "0"))
        inner = any(name.startswith("@") for name, _ in terms)
        return terms, expr.const, self.region.layout if inner else None

    def eviction(self, axes: frozenset[str]) -> str:
        """The L2 hint of a load in a 2-D kernel: what every program reads (a weight, along the
        row only) stays (``evict_last``); what one program reads once (its rows) goes first."""
        if not self.two_d or not self.spec.hints:
            return ""
        return ', eviction_policy="evict_last"' if "x" not in axes else ', eviction_policy="evict_first"'

    def mask(self, axes: frozenset[str]) -> str | None:
        if not self.two_d:
            return "xmask" if axes else None
        return MASKS.get(axes)

    def broadcast(self, text: str, axes: frozenset[str], to: frozenset[str]) -> str:
        """``text`` (varying along ``axes``) as a block varying along ``to``."""
        if axes == to or not to:
            return text
        shape = SHAPES[to] if self.two_d else "[XBLOCK]"
        return f"tl.broadcast_to({text}, {shape})"

    def held_value(self, buffer: str, index: Affine) -> str | None:
        """The register holding ``buffer[index]`` here, if any: computed by this kernel, or
        loaded already (a row a persistent phase read, read again by the next)."""
        key = self.key(index)
        held = self.held.get(buffer) or self.loaded.get((buffer, key))
        if held is not None and held.region in self.open and held.key == key:
            return held.name
        return None

    def remember_load(self, buffer: str, index: Affine, name: str) -> None:
        if not self._writes(buffer):
            self.loaded[(buffer, self.key(index))] = Held(self.key(index), name, self.open[-1])

    def _writes(self, buffer: str) -> bool:
        nest = self.spec.nest
        return any(n.name == buffer for n in nest.nodes) or any(s.buffer == buffer for s in nest.shares)

    def reads_memory(self, buffer: str) -> None:
        """A read of ``buffer`` from memory: one this kernel writes must have been stored by an
        earlier phase, then read after a barrier (``rows``); any other is a race."""
        self.read_back.add(buffer)
        if buffer in self.unstored:
            raise NotImplementedError(f"Triton kernel {self.spec.name}: the row value kept in "
                                      f"{buffer} is read where its register is not")
        if buffer not in self.computed and buffer not in self.phase_computes:
            return
        if buffer in self.phase_computes or self.spec.nest.kind != "rows":
            raise NotImplementedError(
                f"Triton kernel {self.spec.name}: {buffer} is read at an element other than the "
                "one this program computes (the plan needs it computed by another program)")
        self.barrier = True

    def store(self, buffer: str, index: Affine, value: str, axes: frozenset[str]) -> None:
        """``buffer[index] = value`` where the block's ``axes`` are in range."""
        address, address_axes = self.index(index)
        pointer = self.broadcast(f"{self.spec.pointers[buffer]} + ({address})", address_axes, axes)
        mask = self.mask(axes)
        mark = f"{UNREAD}{buffer}{UNREAD}" if buffer in self.spec.unread else ""
        self.line(f"{mark}tl.store({pointer}, {value}{f', {mask}' if mask else ''})")
        self.phase_computes.add(buffer)
        self.unstored.discard(buffer)

    # -- kernels -------------------------------------------------------------------------------
    def emit(self) -> str:
        nest = self.spec.nest
        first = nest.nodes[0]
        if isinstance(first.data, Scan) and nest.kind in ("scan", "columns"):
            body = self.scan_kernel
        elif nest.kind == "plain" and not isinstance(first.data, Reduction | Scan):
            body = self.pointwise_kernel
        elif nest.kind == "tiled" and not isinstance(first.data, Reduction | Scan):
            body = self.tiled_kernel
        elif nest.kind in ("plain", "columns") and isinstance(first.data, Reduction):
            body = self.reduction_kernel
        elif nest.kind == "rows":
            body = self.row_kernel
        else:
            raise NotImplementedError(f"Triton kernel {self.spec.name}: no {nest.kind} nest of "
                                      f"{type(first.data).__name__} nodes")
        self.two_d = body != self.pointwise_kernel
        body()
        self.lines = drop_unread(self.lines, self.read_back)
        return self.source()

    def source(self) -> str:
        spec = self.spec
        scratch = [spec.pointers[spec.scratch]] if spec.scratch is not None else []
        params = [spec.pointers[a] for a in spec.args] + scratch + ["XBLOCK: tl.constexpr"]
        if self.two_d:
            params.append("R0_BLOCK: tl.constexpr")
        nest = spec.nest
        what = ", ".join(n.name for n in nest.nodes if n.name not in spec.discard)
        head = [f"def {spec.name}({', '.join(params)}):",
                f"    # computes {what}: {nest.kind} nest, {spec.blocks.describe()}"]
        return "\n".join(["@triton.jit", *head, *self.lines]) + "\n"

    def outer(self, ranges: Sequence[int], column: bool, program: str | None = None) -> None:
        """The program's block of the outer iteration space (the ``program``-th, default the
        program id's) and its loop variables."""
        numel = math.prod(ranges)
        pid = "tl.program_id(0)" if self.spec.index_bits == 32 else "tl.program_id(0).to(tl.int64)"
        self.line(f"xnumel = {numel}")
        self.line(f"xoffset = {program or pid} * XBLOCK")
        self.line(f"xindex = xoffset + tl.arange(0, XBLOCK){'[:, None]' if column else ''}")
        if not is_symbolic(numel) and numel and numel % self.spec.blocks.xblock == 0:
            # every block whole: no mask to compute (a size's extent: masked)
            self.line(f"xmask = tl.full({'[XBLOCK, 1]' if column else '[XBLOCK]'}, True, tl.int1)")
        else:
            self.line("xmask = xindex < xnumel")
        self.axes.update(xindex=frozenset({"x"}), xmask=frozenset({"x"}))
        if column:
            arange = "tl.arange(0, R0_BLOCK)[None, :]"
            if self.spec.index_bits == 64:
                arange += ".to(tl.int64)"
            self.line(f"r0_base = {arange}")
            self.axes["r0_base"] = frozenset({"r"})
        self.region = Region({}, {}, {}, "outer")
        self.decompose(ranges, "xindex", [xvar(i) for i in range(len(ranges))], frozenset({"x"}),
                       [xvar(i) for i in range(len(ranges))])

    def decompose(self, ranges: Sequence[int], flat: str, variables: Sequence[str],
                  axes: frozenset[str], canon: Sequence[str], suffix: str = "") -> None:
        """Define ``variables`` as the row-major coordinates of the flat index ``flat`` over
        ``ranges`` (an extent-1 axis is the constant 0), spelled with ``suffix``."""
        for i, (var, extent) in enumerate(zip(variables, ranges)):
            stride = math.prod(ranges[i + 1:])
            self.region.canon[var] = canon[i]
            self.region.axes[var] = axes
            if isinstance(extent, int) and extent == 1:  # (a size may be 1: indexed as any)
                self.region.names[var] = "0"
                continue
            unit = isinstance(stride, int) and stride == 1  # (a size's stride: divided)
            text = flat if unit else f"{flat} // {stride}"
            if i > 0:  # the outermost needs no remainder: past its extent the lane is masked
                text = f"{flat} % {extent}" if unit else f"({text}) % {extent}"
            self.line(f"{var}{suffix} = {text}")
            self.axes[var + suffix] = axes
            self.region.names[var] = var + suffix

    def scan_kernel(self) -> None:
        scan_kernel(self)

    def pointwise_kernel(self) -> None:
        (nodes,) = self.spec.nest.phases
        self.outer(nodes[0].ranges, column=False)
        self.region.layout = "1d"
        for node in nodes:
            if node.name in self.spec.discard:
                continue  # computed for its floating-point events only: none are reported here
            v = self.value(node.data.body)
            self.store(node.name, node.store_index, v, frozenset({"x"}))
            self.held[node.name] = Held(self.key(node.store_index), v, 0)
        self.lines = loads_first(self.lines)  # every load in flight before the arithmetic

    def tiled_kernel(self) -> None:
        """One element-wise tile a program: ``XBLOCK`` rows of the leading axes (``xindex``) by
        ``R0_BLOCK`` elements of the last (``r0_index``), the program id split into the two."""
        (nodes,) = self.spec.nest.phases
        ranges = nodes[0].ranges
        cols = ranges[-1]
        tiles = (cols + self.spec.blocks.r0_block - 1) // self.spec.blocks.r0_block
        pid = "tl.program_id(0)" if self.spec.index_bits == 32 else "tl.program_id(0).to(tl.int64)"
        self.line(f"r0_tile = {pid} % {tiles}")
        self.outer(ranges[:-1], column=True, program=f"({pid} // {tiles})")
        self.line(f"# compute {', '.join(n.name for n in nodes if n.name not in self.spec.discard)} "
                  f"in tiles of XBLOCK x R0_BLOCK")
        self.region.layout = ("tile", cols)
        self.inner_block((cols,), [xvar(len(ranges) - 1)], ["@0"], "r0_tile * R0_BLOCK + r0_base")
        both = frozenset({"x", "r"})
        for node in nodes:
            if node.name not in self.spec.discard:
                self.store(node.name, node.store_index, self.value(node.data.body), both)

    def reduction_kernel(self) -> None:
        (nodes,) = self.spec.nest.phases
        self.outer(nodes[0].ranges, column=True)
        reduced = nodes[0].reduction_ranges
        self.phase(nodes, reduced, [rvar(j) for j in range(len(reduced))], ())

    def row_kernel(self) -> None:
        """The phases in order for each of the program's ``XBLOCK`` rows, a row being one index
        of the leading axes every phase keeps alike (``row_axes``: the first, x0, at least). A
        reduction phase keeping further axes of its own (``y.sum(1)`` beside ``y.sum(2)``) runs
        over them in a loop, one reduction of the rows per kept index, as the CPU's row nest
        does."""
        nest = self.spec.nest
        count = row_axes(nest)
        self.outer(nest.nodes[0].ranges[:count], column=True)
        spills: dict[str, list[Spill]] = {}
        for spill in nest.shares:
            spills.setdefault(spill.reduction, []).append(spill)
        shapes: list[PhaseShape] = []
        for phase in nest.phases:
            first = phase[0]
            if isinstance(first.data, Reduction):
                inner = first.reduction_ranges
                shapes.append(PhaseShape(tuple(inner), [rvar(j) for j in range(len(inner))],
                                         tuple(first.ranges[count:]), count))
            else:
                inner = first.ranges[count:]
                shapes.append(PhaseShape(tuple(inner), [xvar(count + i) for i in range(len(inner))],
                                         (), count))
        kept = self.registers_only(shapes)
        for phase, shape in zip(nest.phases, shapes):
            self.phase(phase, shape.inner, shape.variables, tuple(spills.items()), kept, shape)

    def registers_only(self, shapes: list[PhaseShape]) -> set[str]:
        """The shared row values (``rowshare``) never stored: their reduction phase and every
        phase reading them are persistent over the same inner extent (and keep no axes of their
        own), so each read finds the value in its register, and the later node stores the element
        itself."""
        nest = self.spec.nest
        where = {n.name: i for i, phase in enumerate(nest.phases) for n in phase}
        persistent = [fits(math.prod(s.inner), self.spec.blocks.r0_block) and not s.kept
                      for s in shapes]
        kept = set()
        for spill in nest.shares:
            at = where[spill.reduction]
            readers = [i for i, phase in enumerate(nest.phases)
                       if any(ld.buffer == spill.buffer for n in phase
                              for ld in loads(n.data.body))]
            if persistent[at] and all(i > at and persistent[i] and shapes[i].inner == shapes[at].inner
                                      for i in readers):
                kept.add(spill.buffer)
        return kept

    def kept_loop(self, shape: PhaseShape) -> None:
        """Open a loop over the axes a reduction phase keeps beyond the row (their flat index
        ``x_kept``), defining their variables (scalars: every lane of the block has the same)."""
        self.line(f"for x_kept in range(0, {math.prod(shape.kept)}):")
        self.depth += 1
        self.regions += 1
        self.open.append(self.regions)
        flat = "x_kept"
        if self.spec.index_bits == 64:  # (``range`` counts in 32 bits)
            flat = self.assign("tl.cast(x_kept, tl.int64)", "xk", NO_AXES)
        count = len(shape.kept)
        # spelled apart (``x1_kept``): a loop's scalar must not reassign a block defined before
        # the loop (a variable the loop carries keeps its type)
        self.decompose(shape.kept, flat, [xvar(shape.first + i) for i in range(count)], NO_AXES,
                       [f"#{i}" for i in range(count)], "_kept")

    # -- phases --------------------------------------------------------------------------------
    def phase(self, nodes: Sequence[ComputedBuffer], inner: Sequence[int],
              variables: Sequence[str], spills: tuple[tuple[str, list[Spill]], ...],
              kept: set[str] = frozenset(), shape: PhaseShape | None = None) -> None:
        """One phase over the inner extent of each of the program's rows: persistent when it
        fits one block, else looped; inside a loop over the axes it keeps beyond the row, if
        any (``shape.kept``)."""
        numel = math.prod(inner)
        persistent = fits(numel, self.spec.blocks.r0_block)
        reducing = isinstance(nodes[0].data, Reduction)
        names = ", ".join(n.name for n in nodes if n.name not in self.spec.discard)
        how = "persistent" if persistent else "looped"
        each = f" for each of {math.prod(shape.kept)} kept" if shape is not None and shape.kept else ""
        self.line(f"# {'reduce' if reducing else 'compute'} {names} over {numel} "
                  f"({how}){each}{'' if reducing else ' per row'}")
        start = len(self.lines)
        depth = self.depth
        self.barrier = False
        self.phase_computes = set()
        outer_memo = self.memo
        self.memo = dict(outer_memo)
        base = dict(self.region.names), dict(self.region.axes), dict(self.region.canon)
        canon = [f"@{i}" for i in range(len(variables))]
        self.region.layout = ("row", tuple(inner), persistent)
        shares = dict(spills)
        kinds = [reduction_kind(n.data.reduction_type) for n in nodes] if reducing else []
        accumulators: list[list[str]] = []
        if shape is not None and shape.kept:
            self.kept_loop(shape)
        if persistent and not (inner or reducing):  # one element a row: no inner block
            self.phase_body(nodes, kinds, None, shares, persistent=True, axes=frozenset({"x"}))
        elif persistent:
            self.inner_block(inner, variables, canon, "r0_base")
            self.phase_body(nodes, kinds, None, shares, persistent=True, kept=kept)
        else:
            accumulators = [kind.start(self, n) for n, kind in zip(nodes, kinds)]
            self.line(f"for r0_offset in range(0, {numel}, R0_BLOCK):")
            self.depth += 1
            self.regions += 1
            self.open.append(self.regions)
            self.inner_block(inner, variables, canon, "r0_offset + r0_base")
            self.phase_body(nodes, kinds, accumulators, shares, persistent=False)
            self.open.pop()
            self.depth -= 1
            for node, kind, accs in zip(nodes, kinds, accumulators):
                self.finish(node, kind.final(self, node, accs, None, None))
        if self.depth > depth:  # the loop over kept axes
            self.open.pop()
            self.depth = depth
        self.region.names, self.region.axes, self.region.canon = (dict(b) for b in base)
        self.memo = outer_memo
        if self.barrier:
            self.lines.insert(start, "    " * self.depth + "tl.debug_barrier()  # the earlier "
                              "phases' stores are visible to this one")
        self.computed |= self.phase_computes

    def inner_block(self, inner: Sequence[int], variables: Sequence[str], canon: Sequence[str],
                    start: str) -> None:
        numel = math.prod(inner)
        self.line(f"r0_index = {start}")
        if not is_symbolic(numel) and numel and numel % self.spec.blocks.r0_block == 0:
            self.line("r0_mask = tl.full([1, R0_BLOCK], True, tl.int1)")
        else:
            self.line(f"r0_mask = r0_index < {numel}")
        self.line("mask = xmask & r0_mask")
        r = frozenset({"r"})
        self.axes.update(r0_index=r, r0_mask=r, mask=frozenset({"x", "r"}))
        self.decompose(inner, "r0_index", variables, r, canon)

    def phase_body(self, nodes: Sequence[ComputedBuffer], kinds: list[Any],
                   accumulators: list[list[str]] | None, shares: dict[str, list[Spill]],
                   persistent: bool, kept: set[str] = frozenset(),
                   axes: frozenset[str] = frozenset({"x", "r"})) -> None:
        """The nodes of a phase in the block: element-wise ones stored where the block's ``axes``
        are in range, reductions accumulated or reduced."""
        both = frozenset({"x", "r"})
        region = self.open[-1]
        if not kinds:
            for node in nodes:
                if node.name in self.spec.discard:
                    continue
                v = self.value(node.data.body)
                self.store(node.name, node.store_index, v, axes)
                if persistent:
                    self.held[node.name] = Held(self.key(node.store_index), v, region)
            return
        for i, (node, kind) in enumerate(zip(nodes, kinds)):
            v = self.value(node.data.body)
            for spill in shares.get(node.name, ()):
                if spill.buffer in kept:
                    self.unstored.add(spill.buffer)
                else:
                    self.store(spill.buffer, spill.index, v, both)
                if persistent:
                    self.held[spill.buffer] = Held(self.key(spill.index), v, region)
            if accumulators is None:
                self.finish(node, kind.final(self, node, [v], "mask", "r0_index"))
            else:
                updated = kind.update(self, node, accumulators[i], v, "mask", "r0_index")
                for acc, new in zip(accumulators[i], updated):
                    self.line(f"{acc} = {new}")

    def finish(self, node: ComputedBuffer, total: str) -> None:
        """Store a reduction's result (``XBLOCK`` x 1) and keep it for the phases after."""
        name = self.assign(f"({total}).to({tl_dtype(node.dtype)})", "red", frozenset({"x"}))
        self.store(node.name, node.store_index, name, frozenset({"x"}))
        self.held[node.name] = Held(self.key(node.store_index), name, self.open[-1])


def fits(numel: Any, block: int) -> bool:
    """Whether an inner extent fits one block (a persistent phase); a size's never does, so the
    phase loops over it, which is right at every size (issue 15)."""
    return not is_symbolic(numel) and numel <= block


def _names(text: str) -> list[str]:
    out, word = [], ""
    for ch in text + " ":
        if ch.isalnum() or ch == "_":
            word += ch
        else:
            if word and not word[0].isdigit():
                out.append(word)
            word = ""
    return out


def _is_name(text: str) -> bool:
    return text.isidentifier()


def emit_kernel(spec: TritonKernelSpec) -> tuple[str, set[str], frozenset[str]]:
    """The kernel's source, the helper functions it calls and the buffers of ``spec.unread`` it
    does not store."""
    writer = KernelWriter(spec)
    text = writer.emit()
    return text, writer.helpers, spec.unread - writer.read_back


__all__ = ["EMITTER_MODULES", "NESTS", "TritonKernelSpec", "emit_kernel"]
