"""LLVM IR for one fused kernel, built with ``llvmlite.ir`` (spec §8).

A kernel is a loop nest shared by one or more buffers with the same iteration space: outer loops
over ``ranges`` (``x0`` split across threads through ``[start, stop)``), inner loops over
``reduction_ranges``. The innermost loop is written in scalar form with the accumulation's
``fadd`` marked ``reassoc`` — the only fast-math flag Stax ever sets — so LLVM's loop vectorizer
widens it to the host's vector width with several accumulators. User arithmetic carries no flags:
NaN, Inf and -0.0 behave as NumPy's.

Signature: ``void kernel(i8* obj0, ..., i8* objN, i64 start, i64 stop)`` where each ``obj`` is a
NumPy array object; the data pointer is read from the array struct (``ARRAY_DATA_OFFSET``), so the
caller passes arrays without converting them through ``.ctypes`` on every call.

This module is the scaffolding: loops, index arithmetic, stores, phases. What each
loop-IR expression becomes is ``expressions.py`` (per kind) and the operation tables
(``registry.py``), filled by the modules ``rules.py`` imports; the loop nests (as the
plan chose them) are ``nests.py``, floating-point event checks ``fpchecks.py``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llvmlite import ir

from stax.ir.sizes import Quotient, Size, hint, is_symbolic
from stax.loop import (
    Affine,
    Binary,
    Cast,
    ComputedBuffer,
    Expr,
    Load,
    Pointwise,
    Reduction,
    Select,
    Ternary,
    Unary,
    index_width,
    postorder,
    rvar,
    xvar,
)

from ..nesting import Nest, rows_outermost
from ..rowshare import Spill
from . import arg_blocks, pairwise, rules
from .alias_scopes import mark_alias_scopes
from .blocks import Restarted, Restarts, blocked
from .costs import work
from .expressions import EXPRESSIONS
from .fpchecks import FloatEvents
from .jit import array_dims_offset
from .loop_hints import (
    SEQUENTIAL_SUM,
    in_row_vectors,
    interleave_count,
    loop_id,
    masked_tail,
    short_loop,
)
from .nests import UNROLLED, VECTOR_BYTES, LoopShapes
from .registry import TWO_PASSES, accumulator
from .twin_skip import return_if_shrinking, scalar_factors
from .types import I1, I8P, I64, is_float, memory_type

#: the kinds whose values the floating-point checks look at (``fpevents``)
CHECKED_KINDS = frozenset({Unary, Binary, Ternary, Cast, Select})
#: the modules whose emitters the tables hold (imported for their registrations)
EMITTER_MODULES = rules.EMITTER_MODULES


@dataclass(frozen=True)
class KernelSpec:
    """What to emit: the buffers computed in one loop nest, the nest as the plan chose it, and
    every buffer the kernel touches."""

    name: str
    nodes: tuple[ComputedBuffer, ...]
    nest: Nest                     # how the loops are arranged (``nesting.py``)
    args: tuple[str, ...]          # buffer names, in argument order
    dtypes: dict[str, str]         # buffer name -> dtype
    in_place: dict[str, str] = field(default_factory=dict)  # output -> input it overwrites
    events: str | None = None  # the int32 buffer of floating-point events (``fpevents``)
    precise: bool = False      # the exact checks (else the fast kernel's finiteness tests)
    #: buffers computed only for their floating-point events (``LoopProgram.events_only``):
    #: never stored, not arguments (``fpchecks.keep_for_events``)
    discard: frozenset[str] = frozenset()
    #: float dtypes whose sin/cos/tan arguments the program checks to lie below the emitter's
    #: short reduction's limit (``LoopProgram.trig_limits``): those use it
    trig_checked: frozenset[str] = frozenset()
    #: buffers in blocks the plan allocates (``StoragePlan.storage``), which no other buffer of
    #: the kernel overlaps but one written in place over it (``alias_scopes.py``)
    owned: frozenset[str] = frozenset()
    callers: frozenset[str] = frozenset()  # the caller's arrays: they overlap no owned buffer
    #: a size-generic kernel's buffer shapes (issue 15): each size symbol is read from the
    #: dimension of an argument that is exactly it (``KernelEmitter.size``); empty otherwise
    shapes: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: buffers held one row at a time in a scratch row on the stack (``row_scratch.py``): not
    #: arguments; their elements per row
    row_scratch: dict[str, int] = field(default_factory=dict)
    #: the vector width the target tunes kernels for (``Identity.tuned_bits``): how long a run
    #: a float sum adds before starting a new block (``pairwise.block_elements``)
    vector_bits: int = 256
    #: a late kernel that reports its own events (``KernelArtifact.late_reports``): a fast one
    #: that reads the CPU's flags reports each flag as its category, not as ``MAYBE`` (the
    #: kernel is one IEEE operation, whose flags are NumPy's events; no precise rerun can follow)
    flag_categories: bool = False
    #: such a late kernel: its flags' categories are reported whatever its loops (no rerun)
    late_reports: bool = False


#: a kernel visiting at most this many elements is optimized for size (``minsize``)
TINY = 16


#: a load whose index steps by this many elements or fewer (more than one) along some loop is
#: one of a group LLVM loads as whole vectors and shuffles apart (a complex value's parts, the
#: columns of an (n, 3) array)
INTERLEAVED_STRIDE = 8


def interleaved_loads(nodes: Sequence[ComputedBuffer]) -> bool:
    """Whether a reduction of ``nodes`` loads with a stride of 2 to ``INTERLEAVED_STRIDE``
    elements along a loop, or an element-wise node along a loop inside its outermost. Such
    kernels index in 64 bits: with 32-bit indices (sign-extended at each load) LLVM's
    vectorizer did not see the loads as a group and gathered each lane (AMD EPYC, one thread:
    100,000 complex128 summed 76 -> 20 us, NumPy 27; ``np.abs(z).sum()`` of (1000, 100)
    complex128 160 -> 96 us, NumPy 108; ``a * b`` of (80, 120) complex64 9.0 -> 1.5 us, NumPy
    1.7). An element-wise kernel striding along its outermost loop (the range its callers
    split: a 1-D complex array) keeps 32-bit ones, which LLVM groups there: a 16-tap complex64
    FIR filter ran 10% slower with 64-bit indices."""
    def strided(n: ComputedBuffer, e: Any) -> bool:
        return isinstance(e, Load) and any(
            1 < abs(c) <= INTERLEAVED_STRIDE and (isinstance(n.data, Reduction) or v != xvar(0))
            for v, c in e.index.terms if isinstance(c, int))
    return any(strided(n, e) for n in nodes for e in postorder(n.data.body))


class KernelEmitter(LoopShapes, FloatEvents):
    def __init__(self, module: ir.Module, spec: KernelSpec, data_offset: int) -> None:
        self.spec = spec
        #: elements of the kernel's widest dtype a vector holds (``loop_hints.in_row_vectors``)
        self.lanes = max(1, spec.vector_bits // (8 * max(
            (np.dtype(spec.dtypes[a]).itemsize for a in spec.args
             if a in spec.dtypes and a != spec.events), default=1)))
        #: a merged nest's ranges while it is emitted (``coordinates``), else None
        self.merged: tuple[int, ...] | None = None
        #: an ordered update run a row at a time (``nesting.plain_order``), its iterations the
        #: innermost loop: never kept rolled to vectorize along it (it reads what the iteration
        #: before stored; unrolled, the value stays in a register: a 5000x9 Vandermonde matrix
        #: 31 -> 9 us, NumPy 38)
        self.serial_rows = rows_outermost(spec.nodes)
        fnty = ir.FunctionType(ir.VoidType(), [I8P] * len(spec.args) + [I64, I64])
        self.fn = ir.Function(module, fnty, spec.name)
        self.fn.attributes.add("nounwind")
        first = spec.nodes[0]
        visits = math.prod(first.ranges) * math.prod(first.reduction_ranges)
        if not is_symbolic(visits) and visits <= TINY and \
                all(isinstance(n.data, Pointwise) for n in spec.nodes):
            # a few elements: nothing to vectorize or unroll; LLVM optimizes such a function
            # in about half the time (an unrolled loop of 2-element ODE steps: 121 kernels).
            # Not a reduction: its float accumulation is reassociable, and the order LLVM picks
            # for size is not the one that gives NumPy's sums. Not a size-generic kernel, whose
            # traced sizes may be few (``x ** p`` traced at 7 elements ran 100,000 scalar pow
            # calls: 2.95 ms for NumPy's 0.10)
            self.fn.attributes.add("minsize")
            self.fn.attributes.add("optsize")
        *objs, self.start, self.stop = self.fn.args
        for obj, name in zip(objs, spec.args):
            obj.name = f"obj_{name}"
        self.objs = dict(zip(spec.args, objs))
        # a size-generic kernel reads its sizes in a block of their own before the entry
        # (``size``), which branches to it once the kernel is built
        self._sizes_block = self.fn.append_basic_block("sizes") if spec.shapes else None
        self._entry = self.fn.append_basic_block("entry")
        self.builder = ir.IRBuilder(self._entry)
        self._prefix = ir.IRBuilder(self._sizes_block or self._entry)
        self._sizes: dict[Any, ir.Value] = {}
        self.pointers = {name: self._data_pointer(obj, spec.dtypes[name], data_offset)
                         for obj, name in zip(objs, spec.args)}
        self._scratch = {name: self.builder.alloca(memory_type(spec.dtypes[name]),
                                                   ir.Constant(I64, elements), name=f"{name}_row")
                         for name, elements in spec.row_scratch.items()}
        for scratch in self._scratch.values():
            scratch.align = VECTOR_BYTES
        for out, over in spec.in_place.items():
            # one pointer for both: LLVM sees the load and the store of one element, not two
            # buffers it would have to check for overlap before vectorizing (a region update
            # that does not read the buffer it updates has only its own, the same memory)
            if over in self.pointers:
                self.pointers[out] = self.pointers[over]
        # buffers this kernel loads from and stores over: their loads are frozen (``load``)
        self.rewritten = {name for pair in spec.in_place.items() for name in pair}
        self.vars: dict[str, ir.Value] = {}
        # element indices in i32 when every one provably fits (spec §6.8), else i64; i64 where
        # a load strides by a few elements (``interleaved_loads``)
        self.index_bits = 64 if interleaved_loads(spec.nodes) else \
            max(index_width(n) for n in spec.nodes)
        self.index_type = ir.IntType(self.index_bits)
        self.memo: dict[object, ir.Value] = {}  # id(expr) or ("index", affine)
        # the element-wise work (``costs.work``) emitted inside the loop being built; -1 once
        # it holds another loop (then it is not the innermost); None outside every loop
        self.inner_work: int | None = None
        self.enclosing_iterations = 1  # of the loops around the one being built (0: unknown)
        self.local: dict[str, tuple[Affine, ir.Value]] = {}  # values computed in this iteration
        self.spills: dict[str, list[Spill]] = {}  # reduction -> values it also stores (rowshare)
        self.in_order = False  # reductions step without ``reassoc`` (``accumulators.py``)
        self.events_start(spec.events, spec.precise, spec.nodes, spec.flag_categories)

    def row_scratch_at_row(self, count: int) -> None:
        """Point each buffer held per row (``row_scratch.py``) at its scratch row for the row
        the first ``count`` loop variables give: the scratch less the row's first element, so
        the buffer's own store and load indices land in it."""
        b = self.builder
        for node in self.spec.nodes:
            scratch = self._scratch.get(node.name)
            if scratch is None:
                continue
            rows = {xvar(d) for d in range(count)}
            first = Affine(tuple((v, c) for v, c in node.store_index.terms if v in rows),
                           node.store_index.const)
            self.pointers[node.name] = b.gep(scratch, [b.neg(self.index(first))])

    def size(self, n: Any, typ: ir.IntType = I64) -> ir.Value:
        """A size as a value: an int as a constant; a size expression (a size-generic kernel,
        issue 15) computed once at the kernel's entry from the dimensions of the arrays it is
        passed, each symbol from an argument whose dimension is exactly that symbol."""
        if not isinstance(n, Size):
            return ir.Constant(typ, n)
        if self._sizes_block is None:
            raise ValueError(f"{self.spec.name}: a size {n} in a kernel given no shapes")
        self._prefix.position_at_end(self._sizes_block)
        value = self._sizes.get(n)
        if value is None:
            value = self._sizes[n] = self._polynomial(n)
        return value if typ.width == 64 else self._prefix.trunc(value, typ)

    def _polynomial(self, n: Size) -> ir.Value:
        b = self._prefix
        total: ir.Value | None = None
        for monomial, coefficient in n.terms:
            term: ir.Value = ir.Constant(I64, coefficient)
            for atom in monomial:
                term = b.mul(term, self._atom(atom))
            total = term if total is None else b.add(total, term)
        return total if total is not None else ir.Constant(I64, 0)

    def _atom(self, atom: Any) -> ir.Value:
        if not isinstance(atom, str):  # a floor quotient or remainder by a positive integer
            number = self.size(atom.numerator)
            divisor = ir.Constant(I64, atom.divisor)
            if isinstance(atom, Quotient):  # floor: sizes are never negative, so sdiv is floor
                return self._prefix.sdiv(number, divisor)
            return self._prefix.srem(number, divisor)
        value = self._sizes.get(atom)
        if value is not None:
            return value
        for name, shape in self.spec.shapes.items():
            for d, dim in enumerate(shape):
                if isinstance(dim, Size) and dim.same(Size.symbol(atom)) and name in self.objs:
                    b = self._prefix
                    slot = b.gep(self.objs[name], [ir.Constant(I64, array_dims_offset())])
                    dims = b.load(b.bitcast(slot, I64.as_pointer().as_pointer()))
                    value = b.load(b.gep(dims, [ir.Constant(I64, d)]), name=atom)
                    self._sizes[atom] = value
                    return value
        raise ValueError(f"{self.spec.name}: no argument has the size {atom} as a dimension")

    def _data_pointer(self, obj: ir.Value, dtype: str, offset: int) -> ir.Value:
        b = self.builder
        slot = b.bitcast(b.gep(obj, [ir.Constant(I64, offset)]), I8P.as_pointer())
        data = b.load(slot, name=f"{obj.name}_data")
        return b.bitcast(data, memory_type(dtype).as_pointer())

    # -- loops ---------------------------------------------------------------------------------
    def loop(self, var: str, low: ir.Value, high: ir.Value, carried: Sequence[ir.Value],
             body: Callable[[Sequence[ir.Value]], Sequence[ir.Value]], step: int = 1,
             extent: int | None = None) -> list[ir.Value]:
        """``for var in range(low, high, step)`` with loop-carried values; returns their final
        values. ``extent``: the loop's whole iteration count where a nest knows it (an
        innermost loop may then be given LLVM's interleave hint, ``loop_hints.py``)."""
        b = self.builder
        enclosing, self.inner_work = self.inner_work, 0
        if not self.spec.late_reports:  # (fpchecks: the flags' categories then not trusted)
            self.short_loop_seen(extent)
        around = self.enclosing_iterations
        self.enclosing_iterations = around * hint(extent) if extent is not None and around and \
            not is_symbolic(extent) else 0  # (a size-generic count: unknown)
        pre = b.block
        head = self.fn.append_basic_block(f"{var}_loop")
        done = self.fn.append_basic_block(f"{var}_done")
        b.cbranch(b.icmp_signed("<", low, high), head, done)
        b.position_at_end(head)
        iv = b.phi(I64, name=var)
        phis = [b.phi(c.type, name=f"{var}_acc{i}") for i, c in enumerate(carried)]
        iv.add_incoming(low, pre)
        for phi, init in zip(phis, carried):
            phi.add_incoming(init, pre)
        self.vars[var] = iv
        accumulators = self.loop_accumulators(var) if self.events is not None else None
        updated = list(body(phis))
        self.enclosing_iterations = around
        inside, self.inner_work = self.inner_work, enclosing if enclosing is None else -1
        nxt = b.add(iv, ir.Constant(I64, step), name=f"{var}_next")
        latch = b.block
        iv.add_incoming(nxt, latch)
        for phi, new in zip(phis, updated):
            phi.add_incoming(new, latch)
        branch = b.cbranch(b.icmp_signed("<", nxt, high), head, done)
        count = interleave_count(inside, extent) if not carried and step == 1 else 1
        # (loop_hints.py) a reduction of a few elements stays unrolled: LLVM then keeps
        # NumPy's sequential order, which a rolled loop it vectorizes does not
        # a short row of a vector or more stays rolled to vectorize along it, a reduction's
        # too (``in_row_vectors``: unrolled, LLVM summed 16 rows at a time by gathers)
        in_order = bool(carried) and extent is not None and hint(extent) < SEQUENTIAL_SUM
        # (a row nest's element-wise phases count as its reductions: all of a row of one vector
        # unrolled, LLVM vectorizes the row loop itself across rows)
        reduction = bool(carried) or self.spec.nest.kind != "plain"
        unroll = inside != -1 and (in_order or (not short_loop(extent, around) and (
            self.serial_rows or not in_row_vectors(extent, around, self.lanes,
                                                   reduction=reduction))))
        scalar = self.flags and masked_tail(extent, self.lanes)  # (``loop_hints.loop_id``;
        # an outer loop too: LLVM vectorizes it across short rows it unrolled)
        if count > 1 or not unroll or scalar:
            branch.set_metadata("llvm.loop", loop_id(self.fn.module, interleave=count,
                                                     unroll=unroll, vectorize=not scalar))
        b.position_at_end(done)
        results = []
        for init, new in zip(carried, updated):
            out = b.phi(init.type)
            out.add_incoming(init, pre)
            out.add_incoming(new, latch)
            results.append(out)
        if accumulators is not None:
            self.merge_accumulators(accumulators, pre)
        return results

    def nest(self, ranges: Sequence[int], prefix: Callable[[int], str], carried: Sequence[ir.Value],
             body: Callable[[Sequence[ir.Value]], Sequence[ir.Value]], split: bool = False,
             unrolled: int = UNROLLED, restarted: Restarts | None = None, block: int = 0
             ) -> list[ir.Value]:
        """Nested loops over ``ranges``; with ``split`` the outermost runs over ``[start, stop)``;
        an innermost loop of at most ``unrolled`` iterations as straight-line code.
        ``restarted(longer)``: the carried values restarted every ``block`` iterations of the
        innermost loop (``blocks.py``: float sums as a tree, arg reductions' extremes), given
        whether that loop is longer than a block; none: no blocks."""
        if not ranges:
            return list(body(carried))

        def level(d: int, values: Sequence[ir.Value]) -> Sequence[ir.Value]:
            if d == len(ranges):
                return body(values)
            parts = restarted(is_symbolic(ranges[d]) or ranges[d] > block) \
                if d == len(ranges) - 1 and restarted is not None else []
            if parts:
                return blocked(self, prefix(d), ranges[d], values, parts, block,
                               lambda v: level(d + 1, v))
            if d == len(ranges) - 1 and not values and not (split and d == 0) and \
                    not is_symbolic(ranges[d]) and ranges[d] <= unrolled:
                # a complex value's two parts (``stax.loop.complex_values``): straight-line
                # code, so the loop around it is the innermost one LLVM vectorizes (the parts'
                # loads and stores become interleaved groups)
                for at in range(ranges[d]):
                    self.vars[prefix(d)] = ir.Constant(I64, at)
                    body(values)
                return []
            low = self.start if split and d == 0 else ir.Constant(I64, 0)
            high = self.stop if split and d == 0 else self.size(ranges[d])
            return self.loop(prefix(d), low, high, values, lambda v: level(d + 1, v),
                             extent=ranges[d])
        return list(level(0, carried))

    def fresh(self, body: Callable[[], None]) -> Callable[[Sequence[ir.Value]], Sequence[ir.Value]]:
        """A loop body running ``body`` with a copy of the enclosing values (what it computes
        inside depends on the loop variable and must not leak out)."""
        outer_memo = self.memo

        def run(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
            self.memo = dict(outer_memo)
            body()
            self.memo = outer_memo
            return []
        return run

    def stack_array(self, typ: ir.Type, length: int) -> ir.Value:
        """A ``[length x typ]`` array on the kernel's stack, allocated once at its entry."""
        at = ir.IRBuilder(self._entry)
        at.position_at_start(self._entry)
        return at.alloca(ir.ArrayType(typ, length))

    def once(self, body: Callable[[], None]) -> None:
        """``body`` once, for a kernel without loops: only the thread given [0, 1) runs it."""
        b = self.builder
        guard = self.fn.append_basic_block("body")
        done = self.fn.append_basic_block("exit")
        b.cbranch(b.icmp_signed("<", self.start, self.stop), guard, done)
        b.position_at_end(guard)
        body()
        b.branch(done)
        b.position_at_end(done)

    # -- expressions ---------------------------------------------------------------------------
    def index(self, expr: Affine) -> ir.Value:
        cached = self.memo.get(("index", expr))
        if cached is None:
            cached = self.memo[("index", expr)] = self._index(expr)
        return cached

    def _index(self, expr: Affine) -> ir.Value:
        b = self.builder
        typ = self.index_type
        flags = ("nsw",) if self.index_bits == 32 else ()  # no overflow: proven by the ranges
        total: ir.Value = self.size(expr.const, typ)
        for var, coeff in expr.terms:
            v = self._var(var)
            term = v if isinstance(coeff, int) and coeff == 1 else \
                b.mul(v, self.size(coeff, typ), flags=flags)
            total = term if (isinstance(total, ir.Constant) and total.constant == 0) else \
                b.add(total, term, flags=flags)
        return total

    def _var(self, var: str) -> ir.Value:
        """A loop variable in the index type (loop counters themselves stay i64)."""
        if self.index_bits == 64:
            return self.vars[var]
        cached = self.memo.get(("var", var))
        if cached is None:
            cached = self.memo[("var", var)] = self.builder.trunc(self.vars[var], self.index_type)
        return cached

    def value(self, expr: Expr) -> ir.Value:
        cached = self.memo.get(id(expr))
        if cached is None:
            if self.events is None or type(expr) not in CHECKED_KINDS:
                cached = self.memo[id(expr)] = EXPRESSIONS.handler(type(expr))(self, expr)
                return cached
            # its events (an integer division's in its emitter, the rest after) where it is
            # real: each operand's emission sets its own lanes and puts these back
            outer = self.real_lanes
            self.real_lanes = self.lanes_of(expr)
            cached = self.memo[id(expr)] = EXPRESSIONS.handler(type(expr))(self, expr)
            self.after_value(expr, cached, [self.memo[id(c)] for c in expr.children()])
            self.real_lanes = outer
        return cached

    def store(self, node: ComputedBuffer, value: ir.Value) -> None:
        b = self.builder
        if node.dtype == "bool":
            value = b.zext(value, memory_type("bool"))
        at = self.index(node.store_index)
        if node.store_offset is not None:  # a scatter's computed position (int64 indices)
            at = b.add(at, self.value(node.store_offset))
        b.store(value, b.gep(self.pointers[node.name], [at]))

    # -- kernels -------------------------------------------------------------------------------
    def emit(self) -> ir.Function:
        """The kernel in the loop nest its plan chose (``KernelSpec.nest``, ``nests.py``)."""
        nest = self.spec.nest
        factors = scalar_factors(self.spec.nodes, self.spec.discard)
        if factors is not None:  # an events twin that may have nothing to report this call
            return_if_shrinking(self.fn, self.builder, self.pointers, factors)
        for spill in nest.shares:
            self.spills.setdefault(spill.reduction, []).append(spill)
        self.events_plan(nest.nodes,
                         {r: [sp.buffer for sp in spills] for r, spills in self.spills.items()})
        self.build_nest(nest)
        self.events_finish()
        self.builder.ret_void()
        if self._sizes_block is not None:
            self._prefix.position_at_end(self._sizes_block)
            self._prefix.branch(self._entry)
        mark_alias_scopes(self.fn, self.pointers, self.spec.owned, self.spec.callers)
        return self.fn

    def pointwise(self, nodes: Sequence[ComputedBuffer]) -> None:
        if self.inner_work is not None and self.inner_work >= 0:
            self.inner_work += sum(work(node.data.body, loads=True) for node in nodes)
        for node in nodes:
            v = self.value(node.data.body)
            if node.name in self.spec.discard:
                self.keep_for_events(node)
            else:
                self.store(node, v)
            self.local[node.name] = (node.store_index, v)

    def reductions(self, nodes: Sequence[ComputedBuffer], rows: int = 1) -> None:
        """Reductions over one nest: the accumulators carried through the reduced loops (an
        arg reduction carries its best value and index), stored after them. ``rows``: the
        innermost kept loop's variable is the first of that many consecutive rows, each reduced
        with its own accumulators in the one pass (``row_jam.py``)."""
        # an arg reduction carries its extreme here, its index is found after (``first_index``)
        shadow = arg_blocks.shadows(nodes)  # a max beside an argmax: its pass one
        accumulators = [arg_blocks.SHADOW if i in shadow else TWO_PASSES[n.data.reduction_type]
                        if n.data.reduction_type in TWO_PASSES
                        else accumulator(n.data.reduction_type) for i, n in enumerate(nodes)]
        b = self.builder
        row_var = xvar(len(nodes[0].ranges) - 1) if rows > 1 else None
        first_row = self.vars.get(row_var) if row_var is not None else None
        # each row's variable and what was computed for it outside the reduced loops
        copies = [(first_row if r == 0 else b.add(first_row, ir.Constant(I64, r),
                                                  name=f"{row_var}_{r}"),
                   self.memo if r == 0 else {}) for r in range(rows)]
        inits: list[ir.Value] = []
        for n, acc in zip(nodes, accumulators):
            inits += acc.identity(self, n)
        for n in nodes:
            self.track_start(n)
        per_row = len(inits)

        def at_row(r: int) -> None:
            if row_var is not None:
                self.vars[row_var] = copies[r][0]

        def inner(accs: Sequence[ir.Value]) -> Sequence[ir.Value]:
            out: list[ir.Value] = []
            for r in range(rows):
                at_row(r)
                self.memo = dict(copies[r][1])  # loop-invariant values reused, nothing inner
                position = r * per_row
                for n, acc in zip(nodes, accumulators):
                    x = self.value(n.data.body)
                    for spill in self.spills.get(n.name, ()):
                        self.builder.store(x, self.builder.gep(self.pointers[spill.buffer],
                                                               [self.index(spill.index)]))
                    # a float accumulator is a reduction LLVM vectorizes: checked apart
                    # (fpevents)
                    out += acc.step(self, n, accs[position:position + acc.carried], x, False)
                    self.track_step(n, x)
                    position += acc.carried
            return out

        # float sums in NumPy's accuracy class: blocks summed as a tree (``pairwise.py``); an
        # arg reduction's extreme per block, the block holding it read again (``arg_blocks.py``)
        starts = list(itertools.accumulate([0] + [a.carried for a in accumulators]))
        summed = [] if self.in_order else \
            [(p, n) for p, n in zip(starts, nodes)
             if n.data.reduction_type == "sum" and is_float(n.dtype)]
        args = [(p, n) for p, n in zip(starts, nodes) if n.data.reduction_type in TWO_PASSES]
        assert rows == 1 or not args, "row_jam takes no arg reduction: its blocks are row 0's"
        block = min([pairwise.block_elements(n.dtype, self.spec.vector_bits) for _, n in summed]
                    + [pairwise.block_elements(n.data.body.dtype, self.spec.vector_bits)
                       for _, n in args], default=0)
        inner_var = rvar(len(nodes[0].reduction_ranges) - 1)
        if nodes[0].reduction_ranges and not is_symbolic(nodes[0].reduction_ranges[-1]):
            block = min(block, nodes[0].reduction_ranges[-1])  # a short run: one block

        def restarted(longer: bool) -> list[Restarted]:
            parts = [arg_blocks.restart(self, n, p, inner_var) for p, n in args]
            if longer and summed:
                sums = [r * per_row + p for r in range(rows) for p, _ in summed]
                parts.append(pairwise.cascade(self, [inits[s % per_row] for s in sums], sums))
            return parts
        finals = self.nest(nodes[0].reduction_ranges, rvar, inits * rows, inner,
                           restarted=restarted if block else None, block=block)
        for r in range(rows):
            at_row(r)
            self.memo = copies[r][1]
            position = r * per_row
            for i, (node, acc) in enumerate(zip(nodes, accumulators)):
                total = acc.result(self, finals[position:position + acc.carried])
                if i in shadow:
                    at = r * per_row + starts[shadow[i]]
                    total = arg_blocks.extreme_of(self, finals[at:at + 3])
                elif node.data.reduction_type in TWO_PASSES:
                    total = arg_blocks.first_index(self, node, total, block)
                self.track_finish(node, total)
                self.after_total(node, total)
                self.store(node, total)
                position += acc.carried
        self.memo = copies[0][1]
        if row_var is not None:
            self.vars[row_var] = first_row


def emit_kernel(module: ir.Module, spec: KernelSpec, data_offset: int) -> ir.Function:
    return KernelEmitter(module, spec, data_offset).emit()


__all__ = ["I1", "KernelSpec", "emit_kernel"]
