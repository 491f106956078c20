"""The CPU's loop nests, one method per kind the scheduler records (``nesting.py``: plain, rows,
columns, tiled, scan), emitted through the kernel emitter (``KernelEmitter`` inherits them). Which
kind a kernel takes is its plan's decision (``KernelSpec.nest``); these build it as told.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from llvmlite import ir

from stax.ir.sizes import is_symbolic
from stax.loop import (
    Affine,
    ComputedBuffer,
    Index,
    IndirectLoad,
    Load,
    Pointwise,
    Reduction,
    Scan,
    postorder,
    rvar,
    xvar,
)

from ..nesting import Nest, per_row_phases, plain_order, row_axes
from .fpevents import accumulates_floats
from .registry import accumulator, scan_step
from .row_jam import jammed_rows
from .row_prefetch import prefetch_next_row
from .types import I64, value_type

#: an innermost loop of at most this many iterations is emitted unrolled
UNROLLED = 2
#: a plain or row nest's innermost loop shorter than one vector of ``VECTOR_BYTES`` whose body
#: tests its index (``out[:, k] = ...`` column by column: selects on the column) or reads
#: nothing (a fill) is emitted unrolled, up to ``SHORT_LOOP`` iterations and while the unrolled
#: body stays under ``UNROLLED_NODES`` expression nodes. Such a loop over 3, 4 or 10 columns is
#: too short for LLVM to vectorize (it would need runtime overlap checks, or scatters across
#: rows), while unrolled its column tests fold away and the row loop vectorizes (a 4-column
#: design matrix with a sin column: 5x; a one-hot zero fill: 7x). A short loop of plain loads
#: stays a loop: unrolled, the row loop's loads become interleaved groups (exp of a
#: (100000, 4) array: 1.3x slower).
SHORT_LOOP = 16
UNROLLED_NODES = 512
VECTOR_BYTES = 64
#: a columns nest's accumulators, per reduction: one block of columns on the kernel's stack;
#: over one kept axis, threads take whole blocks (two threads reading neighbouring lines of
#: every row each fetched both: the hardware prefetches lines in pairs)
COLUMN_BLOCK_BYTES = 4096


def column_block(nest: Nest) -> int:
    """The columns a columns nest of reductions over one kept axis computes per block, and the
    unit of its threads' split (its start and stop count blocks); 1 for every other nest."""
    first = nest.nodes[0]
    if nest.kind != "columns" or isinstance(first.data, Scan) or len(first.ranges) != 1:
        return 1
    return _block_width(nest.nodes)


def _block_width(nodes: Sequence[ComputedBuffer]) -> int:
    """The columns of one block: ``COLUMN_BLOCK_BYTES`` of the widest result."""
    return max(1, COLUMN_BLOCK_BYTES // max(np.dtype(n.dtype).itemsize for n in nodes))


def short_loop(nodes: Sequence[ComputedBuffer], inner: str | None = None) -> int:
    """The longest innermost loop to unroll around ``nodes`` (a phase of pointwise nodes);
    ``inner``: the innermost loop's variable (default the last)."""
    if not nodes[0].ranges or not all(isinstance(n.data, Pointwise) for n in nodes):
        return UNROLLED
    inner = inner or xvar(len(nodes[0].ranges) - 1)
    expressions = [e for n in nodes for e in postorder(n.data.body)]
    tests = any(isinstance(e, Index) and inner in dict(e.index.terms) for e in expressions)
    fills = not any(isinstance(e, (Load, IndirectLoad)) for e in expressions)
    if not (tests or fills):
        return UNROLLED
    widest = max(np.dtype(n.dtype).itemsize for n in nodes)
    return max(UNROLLED, min(SHORT_LOOP, UNROLLED_NODES // max(len(expressions), 1),
                             VECTOR_BYTES // widest - 1))


def _merged_extent(nodes: Sequence[ComputedBuffer]) -> int | None:
    """The iterations of a plain nest of element-wise nodes whose loops can run as one, or None.
    They can when every index the nodes store or load at moves along the nest in C order, each
    loop's coefficient the last one's times the extents inside it (``c * (x0 * n1 + x1)``):
    the nest is then one run of ``x_last``. Short rows otherwise cost a loop of a few vectors
    per row, or LLVM unrolled the short row loop and vectorized across rows with run-time checks
    (``X * 2.0`` on (2000, 32) float64: 63 us, 4x NumPy's 16). Not for indices the body reads as
    numbers (``Index``), computed positions, ordered or scatter nodes, or sizes unknown at
    compile time. An ``Index`` (``Y[:, 3] = 0``: a select on the column) reads the loop
    variables themselves, each from the one counter (``KernelEmitter.coordinates``): an
    unsigned division and remainder by constants, which LLVM vectorizes in 32 bits, so only
    where the nest's iterations fit them (rows of 9 or 15 float64 otherwise ran a vector and
    a scalar tail a row, or unrolled, gathered across rows: 0.2-0.3x NumPy)."""
    ranges = nodes[0].ranges
    if len(ranges) < 2 or any(type(n) is not int for n in ranges) or \
            not all(isinstance(n.data, Pointwise) and n.ranges == ranges and not n.ordered and
                    n.store_offset is None for n in nodes):
        return None
    inside = [int(np.prod(ranges[d + 1:], dtype=np.int64)) for d in range(len(ranges))]
    names = [xvar(d) for d in range(len(ranges))]

    def row_major(index: object) -> bool:
        last = index.coefficient(names[-1])
        return all(index.coefficient(v) == last * n for v, n in zip(names, inside))

    total = int(np.prod(ranges, dtype=np.int64))
    for node in nodes:
        if not row_major(node.store_index):
            return None
        for e in postorder(node.data.body):
            if isinstance(e, IndirectLoad) or (isinstance(e, Index) and not _int32_index(
                    e.index, ranges, total)) or (isinstance(e, Load) and not row_major(e.index)):
                return None
    return total


def _merged_parts_extent(nodes: Sequence[ComputedBuffer]) -> int | None:
    """``_merged_extent`` for a complex value's nest (its last range the two parts, which each
    index reads as a constant or a variable of its own): the iterations of the loops before the
    parts run as one, the parts' two iterations inside it. A 2-D complex ``np.where`` ran a row
    loop of 120 elements 80 times, 2.5x the flat array's time."""
    ranges = nodes[0].ranges
    if len(ranges) < 3 or ranges[-1] != 2 or any(type(n) is not int for n in ranges) or \
            not all(isinstance(n.data, Pointwise) and n.ranges == ranges and not n.ordered and
                    n.store_offset is None for n in nodes):
        return None
    outer = ranges[:-1]
    inside = [int(np.prod(outer[d + 1:], dtype=np.int64)) for d in range(len(outer))]
    names, part = [xvar(d) for d in range(len(outer))], xvar(len(outer))

    def row_major(index: Affine) -> bool:
        last = index.coefficient(names[-1])
        return all(index.coefficient(v) == last * n for v, n in zip(names, inside))
    for node in nodes:
        if not row_major(node.store_index):
            return None
        for e in postorder(node.data.body):  # (an ``Index`` of the part alone: which one)
            if isinstance(e, IndirectLoad) or (isinstance(e, Load) and not row_major(e.index)) \
                    or (isinstance(e, Index) and set(dict(e.index.terms)) - {part}):
                return None
    return int(np.prod(outer, dtype=np.int64))


def _int32_index(index: Affine, ranges: Sequence[int], total: int) -> bool:
    """Whether ``coordinates`` computes the ``Index`` ``index`` exactly in 32 bits over the
    merged nest: integer coefficients, and every value it takes (and the counter) an int32
    (``np.arange(10**10, ...)[None, :] + x`` came out wrapped; a review)."""
    if total >= 2 ** 31 or any(type(c) is not int
                               for c in (index.const, *dict(index.terms).values())):
        return False
    extents = {xvar(d): n for d, n in enumerate(ranges)}  # (every partial sum within this
    # bound: so is every value)
    return abs(index.const) + sum(abs(c) * (extents[v] - 1) for v, c in index.terms) < 2 ** 31


class LoopShapes:
    """The loop nests, as methods of the kernel emitter: ``NESTS`` maps each kind to its own."""

    def build_nest(self, nest: Nest) -> None:
        build = NESTS.get(nest.kind)
        if build is None:
            raise ValueError(f"no CPU loop nest {nest.kind!r} (it has {', '.join(NESTS)})")
        build(self, nest)

    def coordinates(self, expr: Affine) -> ir.Value:
        """``expr`` (an ``Index``'s) at the loop variables' values: in a merged nest (one loop
        over a C-order nest, ``nests._merged_extent``), where the others are 0 and the last
        counts every element, each variable is the counter's quotient by the extents inside
        it, modulo its own (in 32 bits there: unsigned, by constants)."""
        ranges = self.merged
        if ranges is None:
            return self.index(expr)
        b, typ = self.builder, ir.IntType(32)
        flat = b.trunc(self.vars[xvar(len(ranges) - 1)], typ) if self.index_bits == 64 else \
            self._var(xvar(len(ranges) - 1))
        inside = 1
        values: dict[str, ir.Value] = {}
        for d in reversed(range(len(ranges))):
            v = flat if inside == 1 else b.udiv(flat, ir.Constant(typ, inside))
            values[xvar(d)] = v if d == 0 else b.urem(v, ir.Constant(typ, ranges[d]))
            inside *= ranges[d]
        total: ir.Value = ir.Constant(typ, expr.const)
        for var, coeff in expr.terms:
            term = values[var] if coeff == 1 else b.mul(values[var], ir.Constant(typ, coeff))
            total = b.add(total, term)
        return total if self.index_bits == 32 else b.sext(total, self.index_type)

    def plain_nest(self, nest: Nest) -> None:
        """The loops in order, ``x0`` split across threads (once, on the thread given ``[0, 1)``,
        without loops)."""
        (nodes,) = nest.phases

        def body(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
            self.phase(nodes)
            return []
        if (merged := _merged_extent(nodes)) is not None:
            # one loop over the whole nest, bound to the last variable, the others 0: every
            # index reads c * (x0 * n1 * ... + x_last) = c * x_last (``_merged_extent``)
            ranges = nodes[0].ranges
            for d in range(len(ranges) - 1):
                self.vars[xvar(d)] = ir.Constant(I64, 0)
            inner = ir.Constant(I64, int(np.prod(ranges[1:], dtype=np.int64)))
            b = self.builder
            self.merged = ranges  # (an ``Index`` reads the variables: ``coordinates``)
            self.loop(xvar(len(ranges) - 1), b.mul(self.start, inner), b.mul(self.stop, inner),
                      [], body, extent=merged)
            self.merged = None
        elif (merged := _merged_parts_extent(nodes)) is not None:
            # the same over a complex value's elements, their two parts inside the one loop
            ranges, m = nodes[0].ranges, len(nodes[0].ranges) - 2
            for d in range(m):
                self.vars[xvar(d)] = ir.Constant(I64, 0)
            inner = ir.Constant(I64, int(np.prod(ranges[1:m + 1], dtype=np.int64)))
            b = self.builder
            self.loop(xvar(m), b.mul(self.start, inner), b.mul(self.stop, inner), [],
                      lambda _: self.nest([ranges[-1]], lambda d: xvar(m + 1), [], body),
                      extent=merged)
        elif (rows := self.rows_to_jam(nodes)) > 1:
            self.jammed_nest(nodes, rows)
        elif nodes[0].ranges:
            order = plain_order(nodes)  # the loops, outermost first (maybe interchanged)
            self.nest([nodes[0].ranges[d] for d in order], lambda d: xvar(order[d]), [], body,
                      split=True, unrolled=short_loop(nodes, xvar(order[-1])))
        else:
            self.once(lambda: body([]))

    def rows_to_jam(self, nodes: Sequence[ComputedBuffer]) -> int:
        """How many rows of the phase ``nodes`` to reduce together (``row_jam.py``)."""
        return jammed_rows(nodes, self.lanes, self.precise,
                           any(n.name in self.spills for n in nodes))

    def jammed_nest(self, nodes: Sequence[ComputedBuffer], rows: int) -> None:
        """Row reductions (a plain nest's, or a row nest's one phase before what reads its
        rows), ``rows`` consecutive rows of the innermost kept loop reduced together
        (``row_jam.py``), the rest of the range one by one; the outermost loop over the
        thread's ``[start, stop)``."""
        ranges = nodes[0].ranges
        last = len(ranges) - 1
        var = xvar(last)
        # 64-bit indices: 32-bit ones are sign-extended at every load, and LLVM packed the
        # rows' index arithmetic into vectors only to extract each index again
        self.index_bits, self.index_type = 64, I64

        def row_loops(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
            b = self.builder
            low = self.start if last == 0 else ir.Constant(I64, 0)
            high = self.stop if last == 0 else self.size(ranges[last])
            step = ir.Constant(I64, rows)
            whole = b.add(low, b.mul(b.sdiv(b.sub(high, low), step), step), name="jammed_end")

            def together(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
                self.memo, self.local = {}, {}
                self.reductions(nodes, rows=rows)
                return []

            def alone(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
                self.phase(nodes)
                return []
            self.loop(var, low, whole, [], together, step=rows, extent=ranges[last])
            self.loop(var, whole, high, [], alone, extent=ranges[last])
            return []
        if last == 0:
            row_loops([])
        else:
            self.nest(ranges[:last], xvar, [], row_loops, split=True)

    def row_nest(self, nest: Nest) -> None:
        """One row at a time, the phases in order inside it: a later phase reads what an
        earlier one stored for this row, while the row is still in cache (row fusion, §7). A
        row is one index of the leading axes every phase keeps alike and reads back only within
        (``nesting.row_axes``: a softmax over the last axis of (8, 8, 512, 512) has rows of 512
        elements, not of 8 x 512 x 512), x0 split across threads, the other row axes looped
        inside it. Element-wise phases at the end that compute one value per row
        (``sigmoid(X @ w) - y`` after the row's sum) run after the rows, over the thread's rows
        at once: inside the row loop they were scalar code, one ``exp`` a row."""
        count = row_axes(nest)
        after = per_row_phases(nest, count)
        phases = nest.phases[:len(nest.phases) - after]
        per_row = nest.phases[len(nest.phases) - after:]
        row_ranges = nest.phases[0][0].ranges[1:count]  # the row axes looped inside x0

        def row(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
            self.row_scratch_at_row(count)
            for at, phase in enumerate(phases):
                if at == 1:  # the first phase has read this row: ask for the next one
                    prefetch_next_row(self, phases[0], count)
                def body(_: Sequence[ir.Value], phase: Sequence[ComputedBuffer] = phase
                         ) -> Sequence[ir.Value]:
                    self.phase(phase)
                    return []
                self.nest(phase[0].ranges[count:], lambda d: xvar(d + count), [], body,
                          unrolled=short_loop(phase))
            return []

        def rows_of(each: Callable[[Sequence[ir.Value]], Sequence[ir.Value]]
                    ) -> Callable[[Sequence[ir.Value]], Sequence[ir.Value]]:
            if not row_ranges:
                return each
            return lambda _: (self.nest(row_ranges, lambda d: xvar(d + 1), [], each), [])[1]
        rows = nest.phases[0][0].ranges[0]  # all of them (a thread runs some)
        jam = self.rows_to_jam(phases[0]) \
            if count == 1 and len(phases) == 1 and not self._scratch else 1
        if jam > 1:  # one reduction phase (a product and what reads its rows after): jammed
            self.jammed_nest(phases[0], jam)
        else:
            self.loop(xvar(0), self.start, self.stop, [], rows_of(row), extent=rows)
        if per_row:
            self.loop(xvar(0), self.start, self.stop, [], rows_of(
                lambda _: ([self.phase(phase) for phase in per_row], [])[1]), extent=rows)

    def phase(self, nodes: Sequence[ComputedBuffer]) -> None:
        """One phase's nodes at the current position of the enclosing loops."""
        self.memo = {}
        self.local = {}
        if isinstance(nodes[0].data, Reduction):
            self.reductions(nodes)
        else:
            self.pointwise(nodes)

    def columns_nest(self, nest: Nest) -> None:
        first = nest.nodes[0]
        if isinstance(first.data, Scan):
            self.scan(first, columns=True)
        else:
            self.column_phases(nest.phases)

    def scan_nest(self, nest: Nest) -> None:
        ((node,),) = nest.phases
        self.scan(node, columns=False)

    def tiled_nest(self, nest: Nest) -> None:
        """Element-wise work that reads one operand across its memory order (``x.T + y``): the
        last two loops in ``tile`` x ``tile`` blocks, so the lines the strided operand brings in
        are used by the whole block before they leave the cache (the outermost of the two may be
        the threads' split ``[start, stop)``)."""
        b = self.builder
        (nodes,) = nest.phases
        ranges = nodes[0].ranges
        a, c = len(ranges) - 2, len(ranges) - 1
        tile = ir.Constant(I64, nest.tile)

        def within(var: str, high: ir.Value) -> tuple[ir.Value, ir.Value]:
            first = self.vars[f"{var}_block"]
            end = b.add(first, tile)
            return first, b.select(b.icmp_signed("<", end, high), end, high)

        def tile_body() -> None:
            self.memo = {}
            self.local = {}
            self.pointwise(nodes)

        def over_last_two(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
            # for each block of rows, for each block of columns: the rows, then the columns
            low_a = self.start if a == 0 else ir.Constant(I64, 0)
            high_a = self.stop if a == 0 else self.size(ranges[a])
            high_c = self.size(ranges[c])

            def columns_of_block(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
                first_a, last_a = within(xvar(a), high_a)
                first_c, last_c = within(xvar(c), high_c)
                self.loop(xvar(a), first_a, last_a, [], lambda _: (
                    self.loop(xvar(c), first_c, last_c, [], lambda _: (tile_body(), [])[1]), [])[1])
                return []

            def row_blocks(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
                self.loop(f"{xvar(c)}_block", ir.Constant(I64, 0), high_c, [], columns_of_block,
                          step=nest.tile)
                return []
            self.loop(f"{xvar(a)}_block", low_a, high_a, [], row_blocks, step=nest.tile)
            return []
        if a == 0:
            over_last_two([])
        else:
            self.nest(ranges[:a], xvar, [], over_last_two, split=True)

    def column_phases(self, phases: Sequence[Sequence[ComputedBuffer]]) -> None:
        """Reductions whose contiguous axis is kept (``x.sum(0)`` of a C-ordered matrix): the
        loops interchanged, so the innermost loop runs along memory over the kept axis, and the
        accumulators are a block of ``COLUMN_BLOCK_BYTES`` on the kernel's stack —
        ``acc[j] = acc[j] op x[i, j]`` row after row, as NumPy does — stored to the result once
        the rows are done. Accumulating in the result itself, two threads whose columns meet
        inside a cache line took the line from each other at every row (a column sum of
        (16384, 256) float32 ran 5x slower on two threads than on one). Several phases (a
        column's mean, then the squared deviations from it) run one after the other over the
        same block of columns, a later phase loading what an earlier one stored; element-wise
        phases run once over the block."""
        b = self.builder
        ranges = phases[0][0].ranges
        last = len(ranges) - 1
        nodes = [n for phase in phases for n in phase]
        width = _block_width(nodes)
        block = ir.Constant(I64, width)
        private = {}
        with b.goto_entry_block():
            for node in nodes:
                if isinstance(node.data, Reduction):
                    private[node.name] = b.alloca(value_type(node.dtype), block,
                                                  name=f"{node.name}_acc")
                    # whole vectors: a row's store of a vector that straddles two lines is not
                    # forwarded to the next row's load of it (a stall per vector and row)
                    private[node.name].align = VECTOR_BYTES
        first = f"{xvar(last)}_block"

        # all columns one block: constant bounds, so LLVM may keep the accumulators of a few
        # columns in registers across the rows (64 float32 columns: four vectors)
        # (a dynamic width takes the general form, right for every width: no guard)
        whole = not is_symbolic(ranges[last]) and ranges[last] <= width
        bound = [self.size(ranges[last])]  # the columns' end (a thread's, over blocks)

        def over_block(body: Callable[[], None]) -> None:
            low, end = self.vars[first], bound[0]
            if not whole:
                stop = b.add(low, block)
                end = b.select(b.icmp_signed("<", stop, end), stop, end)
            self.loop(xvar(last), low, end, [], self.fresh(body))

        def slot(node: ComputedBuffer) -> ir.Value:
            return b.gep(private[node.name], [b.sub(self.vars[xvar(last)], self.vars[first])])

        def initialize(nodes: Sequence[ComputedBuffer]) -> None:
            for node in nodes:
                b.store(accumulator(node.data.reduction_type).identity(self, node)[0], slot(node))

        def accumulate(nodes: Sequence[ComputedBuffer]) -> None:
            self.in_order = True  # no ``reassoc``: the accumulators may live in registers
            for node in nodes:
                pointer = slot(node)
                step = accumulator(node.data.reduction_type).step
                total, = step(self, node, [b.load(pointer)], self.value(node.data.body), True)
                self.after_total(node, total)
                b.store(total, pointer)
            self.in_order = False

        def finish(nodes: Sequence[ComputedBuffer]) -> None:
            for node in nodes:
                self.store(node, b.load(slot(node)))

        def element_wise(nodes: Sequence[ComputedBuffer]) -> None:
            self.local = {}
            self.pointwise(nodes)
            self.local = {}

        def columns(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
            outer_memo = self.memo
            for nodes in phases:
                self.memo = dict(outer_memo)
                if not isinstance(nodes[0].data, Reduction):
                    over_block(lambda nodes=nodes: element_wise(nodes))
                    continue
                over_block(lambda nodes=nodes: initialize(nodes))
                self.nest(nodes[0].reduction_ranges, rvar, [],
                          lambda _, nodes=nodes: (over_block(lambda: accumulate(nodes)), [])[1])
                over_block(lambda nodes=nodes: finish(nodes))
            self.memo = outer_memo
            return []

        def rows(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
            self.memo = {}
            if whole:  # the one block (a split over blocks gives a thread [0, 1) or nothing)
                if last == 0:
                    self.once(lambda: (self.vars.__setitem__(first, ir.Constant(I64, 0)),
                                       columns([])))
                else:
                    self.vars[first] = ir.Constant(I64, 0)
                    columns([])
                return []
            low = ir.Constant(I64, 0)
            if last == 0:  # the threads' split counts blocks (``column_block``)
                low, stop = b.mul(self.start, block), b.mul(self.stop, block)
                bound[0] = b.select(b.icmp_signed("<", stop, bound[0]), stop, bound[0])
            self.loop(first, low, bound[0], [], columns, step=width)
            return []
        if last == 0:
            rows([])
        else:
            self.nest(ranges[:last], xvar, [], rows, split=True)

    def scan(self, node: ComputedBuffer, columns: bool) -> None:
        """A running sum or product, in order along r0 (no ``reassoc``: NumPy's order, NumPy's
        bits); the first element is the body's value itself (so -0.0 survives). Along rows it
        carries the total in a register; interchanged (``columns``: ``cumsum(axis=0)`` of a C
        matrix) each step reads the previous step's output row, so the inner loop runs along the
        last kept axis, in memory order, and vectorizes."""
        b = self.builder
        ranges, extent = node.ranges, node.data.scan_range
        r0 = rvar(0)
        last = xvar(len(ranges) - 1) if ranges else None
        combine = scan_step(node.data.scan_type)

        def step(previous: ir.Value, value: ir.Value) -> ir.Value:
            first = b.icmp_signed("==", self.vars[r0], ir.Constant(I64, 0))
            total = combine(self, node.dtype, previous, value)
            total = b.select(first, value, total)
            if accumulates_floats(node) and self.events is not None:  # ``fpevents``; at r0 = 0 the
                # total is the value itself, and ``previous`` means nothing
                if self.precise:
                    unused = b.select(first, ir.Constant(total.type, 0.0), previous)
                    self.after_step(node, total, unused, value)
                self.after_total(node, total)
            return total

        if not columns:
            def row(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
                self.memo = {}

                def scan(acc: Sequence[ir.Value]) -> Sequence[ir.Value]:
                    outer_memo = self.memo
                    self.memo = dict(outer_memo)
                    total = step(acc[0], self.value(node.data.body))
                    self.store(node, total)
                    self.memo = outer_memo
                    return [total]
                self.loop(r0, ir.Constant(I64, 0), self.size(extent),
                          [ir.Constant(value_type(node.dtype), 0)], scan)  # unused at r0 = 0
                return []
            if ranges:
                self.nest(ranges, xvar, [], row, split=True)
            else:
                self.once(lambda: row([]))
            return

        stride = node.store_index.coefficient(r0)

        def element() -> None:
            here = b.gep(self.pointers[node.name], [self.index(node.store_index)])
            before = b.gep(here, [b.neg(self.size(stride))])
            first = b.icmp_signed("==", self.vars[r0], ir.Constant(I64, 0))
            previous = b.load(b.select(first, here, before))  # row 0 reads itself, unused
            self.store(node, step(previous, self.value(node.data.body)))

        def rows(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
            self.memo = {}
            low = self.start if len(ranges) == 1 else ir.Constant(I64, 0)
            high = self.stop if len(ranges) == 1 else self.size(ranges[-1])
            self.loop(r0, ir.Constant(I64, 0), self.size(extent), [],
                      lambda _: (self.loop(last, low, high, [], self.fresh(element)), [])[1])
            return []
        if len(ranges) == 1:
            rows([])
        else:
            self.nest(ranges[:-1], xvar, [], rows, split=True)


#: each nest kind's emitter (``nesting.NEST_KINDS``)
NESTS: dict[str, Callable[[LoopShapes, Nest], None]] = {
    "plain": LoopShapes.plain_nest, "rows": LoopShapes.row_nest, "columns": LoopShapes.columns_nest,
    "tiled": LoopShapes.tiled_nest, "scan": LoopShapes.scan_nest,
}
