"""Loop nests other than the plain one, chosen by where memory runs (spec §6-8): column
reductions and scans with interchanged loops (the result row accumulates along memory), and
tiles for element-wise work that reads an operand across its memory order. The predicates decide
from the loop IR; the methods emit through the kernel emitter (``KernelEmitter`` inherits them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

from stax.loop import ComputedBuffer, Pointwise, Reduction, affine_loads, rvar, xvar

from .registry import accumulator, scan_step
from .types import I64, is_float, value_type


def is_arg(node: ComputedBuffer) -> bool:
    return node.data.reduction_type in ("argmax", "argmin")



TILE = 16  # measured on 2048^2 float32 transposes: 16 beats 32 and 64 (set conflicts of power-of-two rows)


def transposed(nodes: Sequence[ComputedBuffer]) -> bool:
    """Element-wise nodes over at least two large axes where some load runs along memory on the
    second-to-last loop and strides on the last one: worth tiling (``tiled_nest``)."""
    first = nodes[0]
    if not isinstance(first.data, Pointwise) or len(first.ranges) < 2 or \
            min(first.ranges[-2:]) < 2 * TILE:
        return False
    a, c = xvar(len(first.ranges) - 2), xvar(len(first.ranges) - 1)
    for node in nodes:
        for ld in affine_loads(node.data.body):
            if abs(ld.index.coefficient(a)) == 1 and abs(ld.index.coefficient(c)) > 1:
                return True
        if abs(node.store_index.coefficient(a)) == 1 and abs(node.store_index.coefficient(c)) > 1:
            return True
    return False


def columnwise(nodes: Sequence[ComputedBuffer]) -> bool:
    """Reductions that read memory contiguously along their last kept axis and with a stride
    along the reduced ones: their loops are better interchanged (``column_nest``)."""
    first = nodes[0]
    if not isinstance(first.data, Reduction) or not first.ranges or not first.reduction_ranges:
        return False
    if any(is_arg(n) or n.dtype == "bool" or n.data.body.dtype == "bool" for n in nodes):
        return False
    last = xvar(len(first.ranges) - 1)
    if first.ranges[-1] < 4:
        return False
    contiguous = strided = False
    for node in nodes:
        if abs(node.store_index.coefficient(last)) != 1:
            return False
        for ld in affine_loads(node.data.body):
            step = abs(ld.index.coefficient(last))
            if step > 1:
                return False
            contiguous |= step == 1
            strided |= any(abs(ld.index.coefficient(rvar(j))) > 1
                           for j in range(len(first.reduction_ranges)))
    return contiguous and strided



class LoopShapes:
    """The interchanged and tiled loop nests, as methods of the kernel emitter."""

    def tiled_nest(self, nodes: Sequence[ComputedBuffer]) -> None:
        """Element-wise work that reads one operand across its memory order (``x.T + y``): the
        last two loops in TILE x TILE blocks, so the lines the strided operand brings in are
        used by the whole block before they leave the cache (the outermost of the two may be the
        threads' split ``[start, stop)``)."""
        b = self.builder
        ranges = nodes[0].ranges
        a, c = len(ranges) - 2, len(ranges) - 1
        tile = ir.Constant(I64, TILE)

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
            high_a = self.stop if a == 0 else ir.Constant(I64, ranges[a])
            high_c = ir.Constant(I64, ranges[c])

            def columns_of_block(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
                first_a, last_a = within(xvar(a), high_a)
                first_c, last_c = within(xvar(c), high_c)
                self.loop(xvar(a), first_a, last_a, [], lambda _: (
                    self.loop(xvar(c), first_c, last_c, [], lambda _: (tile_body(), [])[1]), [])[1])
                return []

            def row_blocks(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
                self.loop(f"{xvar(c)}_block", ir.Constant(I64, 0), high_c, [], columns_of_block,
                          step=TILE)
                return []
            self.loop(f"{xvar(a)}_block", low_a, high_a, [], row_blocks, step=TILE)
            return []
        if a == 0:
            over_last_two([])
        else:
            self.nest(ranges[:a], xvar, [], over_last_two, split=True)

    def column_nest(self, nodes: Sequence[ComputedBuffer]) -> None:
        """Reductions whose contiguous axis is kept (``x.sum(0)`` of a C-ordered matrix): the
        loops interchanged, so the innermost loop runs along memory over the kept axis and the
        result buffer itself holds the accumulators — ``out[j] = out[j] op x[i, j]`` row after
        row, as NumPy does — instead of walking each column with a stride."""
        ranges, reduction_ranges = nodes[0].ranges, nodes[0].reduction_ranges
        last = len(ranges) - 1

        def over_last(body: Callable[[], None]) -> None:
            low = self.start if last == 0 else ir.Constant(I64, 0)
            high = self.stop if last == 0 else ir.Constant(I64, ranges[last])
            self.loop(xvar(last), low, high, [], self.fresh(body))

        def initialize() -> None:
            for node in nodes:
                self.store(node, accumulator(node.data.reduction_type).identity(self, node)[0])

        def accumulate() -> None:
            for node in nodes:
                pointer = self.builder.gep(self.pointers[node.name], [self.index(node.store_index)])
                step = accumulator(node.data.reduction_type).step
                total, = step(self, node, [self.builder.load(pointer)], self.value(node.data.body),
                              True)
                self.after_total(node, total)
                self.builder.store(total, pointer)

        def rows(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
            self.memo = {}
            over_last(initialize)
            self.nest(reduction_ranges, rvar, [], lambda _: (over_last(accumulate), [])[1])
            return []
        if last == 0:
            rows([])
        else:
            self.nest(ranges[:last], xvar, [], rows, split=True)

    def scan_nest(self, node: ComputedBuffer) -> None:
        """A running sum or product, in order along r0 (no ``reassoc``: NumPy's order, NumPy's
        bits); the first element is the body's value itself (so -0.0 survives). Along rows it
        carries the total in a register; when the scanned axis is strided and the last kept axis
        contiguous (``cumsum(axis=0)`` of a C matrix) the loops are interchanged and each step
        reads the previous step's output row, so the inner loop runs along memory and vectorizes."""
        b = self.builder
        ranges, extent = node.ranges, node.data.scan_range
        r0 = rvar(0)
        last = xvar(len(ranges) - 1) if ranges else None
        columns = last is not None and abs(node.store_index.coefficient(last)) == 1 and \
            abs(node.store_index.coefficient(r0)) > 1 and ranges[-1] >= 4
        combine = scan_step(node.data.scan_type)

        def step(previous: ir.Value, value: ir.Value) -> ir.Value:
            first = b.icmp_signed("==", self.vars[r0], ir.Constant(I64, 0))
            total = combine(b, node.dtype, previous, value)
            total = b.select(first, value, total)
            if is_float(node.dtype) and self.events is not None:  # ``fpevents``; at r0 = 0 the
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
                self.loop(r0, ir.Constant(I64, 0), ir.Constant(I64, extent),
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
            before = b.gep(here, [ir.Constant(I64, -stride)])
            first = b.icmp_signed("==", self.vars[r0], ir.Constant(I64, 0))
            previous = b.load(b.select(first, here, before))  # row 0 reads itself, unused
            self.store(node, step(previous, self.value(node.data.body)))

        def rows(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
            self.memo = {}
            low = self.start if len(ranges) == 1 else ir.Constant(I64, 0)
            high = self.stop if len(ranges) == 1 else ir.Constant(I64, ranges[-1])
            self.loop(r0, ir.Constant(I64, 0), ir.Constant(I64, extent), [],
                      lambda _: (self.loop(last, low, high, [], self.fresh(element)), [])[1])
            return []
        if len(ranges) == 1:
            rows([])
        else:
            self.nest(ranges[:-1], xvar, [], rows, split=True)

