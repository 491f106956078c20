"""The floating-point event checks emitted into kernels (``fpevents.py`` says what an event
is and which values a fast kernel tests): the kernel emitter inherits ``FloatEvents``. A fast
kernel clears and reads the CPU's exception flags (x86-64 MXCSR) and ORs ``bits(v - v)`` of the
values it tests; a precise kernel checks every operation exactly; both report into the kernel's
int32 events buffer, once per chunk, atomically."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
from llvmlite import ir

from stax.loop import ComputedBuffer, Expr, Select, postorder
from stax.loop.bits import fmax_operands

from .fpevents import (
    ACCUMULATION,
    DIVIDE,
    I32,
    INVALID,
    MAYBE,
    MXCSR_EVENTS,
    MXCSR_TINY,
    MXCSR_UNDERFLOW,
    OVERFLOW,
    ROUTINE_VALUE,
    TIE,
    Events,
    accumulates_floats,
    clear_mxcsr_flags,
    events_of,
    fast_tests,
    flag_bits,
    infinite_operand_tests,
    kept_operations,
    lane_guards,
    read_mxcsr,
    reads_flags,
    self_tests,
    underflow_unseen,
)
from .types import is_float, is_signed
from .types import value_type as value_type_of


def _empty_asm(builder: ir.IRBuilder, v: ir.Value, constraints: str) -> ir.Value:
    """``v`` through an empty inline asm: the same bits, which LLVM can no longer see."""
    call = builder.call(ir.InlineAsm(ir.FunctionType(v.type, [v.type]), "", constraints), [v])
    call.attributes.add("nounwind")
    call.attributes.add("readnone")
    return call


#: loops shorter than this (known) may run in vectors with padding lanes (``short_loop_seen``):
#: LLVM's widest vectors hold 16 float32
PADDED_BELOW = 16


class FloatEvents:
    """The checks, as methods of the kernel emitter: ``precise`` selects the kernel kind,
    ``events`` is the int32 buffer's name (None: the kernel reports nothing)."""

    builder: ir.IRBuilder
    fn: ir.Function
    pointers: dict[str, ir.Value]
    memo: dict[object, ir.Value]

    def events_start(self, events: str | None, precise: bool,
                      nodes: Sequence[ComputedBuffer], categories: bool = False) -> None:
        """At the kernel's start (before it reads any data). A fast kernel on x86-64 with float
        arithmetic reads the CPU's exception flags (``flags``): it clears them here if set.
        ``categories``: the flags are reported as their categories (``KernelSpec.flag_categories``)."""
        self.events = events
        self.precise = precise
        self.real_lanes: ir.Value | None = None  # where the value emitted is real (``lanes_of``)
        self._lane_guards: dict[int, tuple[Expr, ...]] = {}
        self._tests: set[int] = set()
        self._infinite_operands: set[int] = set()  # ``infinite_operand_tests``
        self._self_tests: set[int] = set()  # ``self_tests``
        self._totals: set[str] = set()
        self._bits: ir.Value | None = None          # alloca i32: exact bits
        self._opaque_constants: dict[str, ir.Value] = {}
        self._finite: dict[int, ir.Value] = {}      # alloca per float width: OR of bits(v - v)
        self._compared: set[int] = set()
        self._kept: dict[int, ir.Value] = {}        # alloca per float width: XOR of bits(v)
        self._loop = ""  # the loop whose accumulators those are (``loop_accumulators``): names
        self.flags = events is not None and not precise and \
            reads_flags(nodes, self.fn.module.triple)
        self.categories = categories and self.flags
        # underflow from the flags: exactly NumPy's where the operations are single IEEE ones
        self.underflow = self.flags and not underflow_unseen(nodes, self.fn.module.triple)
        if events is None:
            return
        b = self.builder
        self._bits = b.alloca(I32, name="fp_events")
        b.store(ir.Constant(I32, 0), self._bits)
        if self.flags:
            self._mxcsr_slot = b.alloca(I32, name="mxcsr")
            raised = b.and_(self._mxcsr(), ir.Constant(I32, MXCSR_EVENTS | MXCSR_UNDERFLOW))
            with b.if_then(b.icmp_unsigned("!=", raised, ir.Constant(I32, 0)), likely=False):
                clear_mxcsr_flags(b, self._mxcsr_slot)
            self._barrier()

    def opaque(self, v: ir.Value) -> ir.Value:
        """A float constant hidden from LLVM's constant folding, in fast kernels that read the
        CPU's flags. A constant arm of a select (a padding's zeros, a masked or concatenated
        constant) would otherwise be folded with another constant at compile time — 0 * inf
        becomes a NaN constant — and the CPU would never raise the flag NumPy reports. An empty
        asm per constant, in the entry block (it dominates every use; loops stay vectorizable)."""
        if not self.flags:
            return v
        return self.hide(v)

    def hide(self, v: ir.Value) -> ir.Value:
        """A constant through an empty asm in the entry block (once per constant): the same
        value, which LLVM can no longer fold (``opaque``; a reduction's identity, ``accumulators``)."""
        if not isinstance(v, ir.Constant):
            return v
        key = f"{v.type} {v.constant!r}"
        hidden = self._opaque_constants.get(key)
        if hidden is not None:
            return hidden
        entry = ir.IRBuilder(self.fn.entry_basic_block)
        entry.position_at_start(self.fn.entry_basic_block)
        if isinstance(v.type, ir.FloatType | ir.DoubleType):
            hidden = _empty_asm(entry, v, "=x,0")
        elif isinstance(v.type, ir.IntType) and v.type.width == 1:  # bool (cast to float later)
            hidden = entry.trunc(_empty_asm(entry, entry.zext(v, ir.IntType(8)), "=r,0"), v.type)
        elif isinstance(v.type, ir.IntType):  # an integer converted to float later
            hidden = _empty_asm(entry, v, "=r,0")
        else:
            return v
        self._opaque_constants[key] = hidden
        return hidden

    def _barrier(self) -> None:
        """No memory access moves across this point. The flags are read before the kernel's
        first load and after its last store: every operation whose result reaches memory is
        in between (LLVM may move arithmetic, not the loads and stores it depends on)."""
        asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), "", "~{memory}", side_effect=True)
        self.builder.call(asm, [])

    def _mxcsr(self) -> ir.Value:
        return read_mxcsr(self.builder, self._mxcsr_slot)

    def events_plan(self, nodes: Sequence[ComputedBuffer], spills: dict[str, list[str]]) -> None:
        if self.events is not None and not self.precise:
            self._tests, self._totals = fast_tests(nodes, spills, self.flags)
            self._infinite_operands = infinite_operand_tests(nodes)
            self._self_tests = self_tests(nodes)
            self._compared = kept_operations(nodes) if self.flags else set()

    def lanes_of(self, e: Expr) -> ir.Value | None:
        """Where ``e`` is the value of something NumPy computes: the guards of the guarded
        loads it reads (``fpevents.lane_guards``) all true; None: everywhere. Its events are
        reported there alone (a column written into zeros: ``0 / 0`` beside it is no event)."""
        guards = lane_guards(e, self._lane_guards)
        mask = None
        for guard in guards:
            value = self.value(guard)
            mask = value if mask is None else self.builder.and_(mask, value)
        return mask

    def _report(self, cond: ir.Value, bits: int | ir.Value) -> None:
        """OR ``bits`` into the chunk's events where ``cond`` holds (on the real lanes)."""
        b = self.builder
        if self.real_lanes is not None:
            cond = b.and_(cond, self.real_lanes)
        value = bits if isinstance(bits, ir.Value) else ir.Constant(I32, bits)
        add = b.select(cond, value, ir.Constant(I32, 0))
        b.store(b.or_(b.load(self._bits), add), self._bits)

    def keep_for_events(self, node: ComputedBuffer) -> None:
        """A value computed only for its events (``KernelSpec.discard``), which is never stored.
        A precise kernel's checks use every operation that may report, so those stay. A fast
        kernel that reads the CPU's flags needs the operations themselves, which nothing else
        would keep: the float values where the computation ends (the value itself, or the
        float operands of the integer or bool operations it ends in) are tested for being
        finite, as a stored value would be (``fast_tests``), so LLVM keeps them, and every
        operation they depend on, with the flags they raise."""
        if self.events is None or self.precise:
            return
        root = node.data.body
        ends = [root] if is_float(root.dtype) else [
            c for e in postorder(root) if not is_float(e.dtype) for c in e.children()
            if is_float(c.dtype) and any(events_of(n) is not None for n in postorder(c))]
        for e in dict.fromkeys(ends):
            if id(e) not in self._tests:
                self._test_finite(self.memo[id(e)])

    def _test_finite(self, v: ir.Value) -> None:
        """Fast kernels: note whether ``v`` is finite. ``v - v`` is +0.0 (all bits zero) for a
        finite ``v`` and NaN otherwise, so ``acc |= bits(v - v)`` stays 0 exactly when every
        tested value is finite: two instructions, and an integer OR is all the loop carries.
        Measured alternatives: an OR of ``isnan(v - v)`` takes twice the instructions;
        ``max(acc, v - v)`` made a reduction 4x slower (latency of LLVM's NaN-propagating
        maximum); ``acc += v * 0`` needs ``reassoc`` to vectorize, under which LLVM rewrote
        ``(x * c) * 0`` as ``x * (c * 0)`` and lost the overflow it was to see."""
        b = self.builder
        if self.real_lanes is not None:  # a stand-in lane's value is not judged
            v = b.select(self.real_lanes, v, ir.Constant(v.type, 0.0))
        slot, bits = self._accumulator(self._finite, v, "fp_nonfinite")
        b.store(b.or_(b.load(slot), b.bitcast(b.fsub(v, v), bits)), slot)

    def _keep(self, v: ir.Value) -> None:
        """Fast kernels: make ``v`` be computed (``kept_operations``) without judging it:
        ``acc ^= bits(v)``, one instruction, and ``acc`` goes to an empty asm at the exit."""
        b = self.builder
        slot, bits = self._accumulator(self._kept, v, "fp_kept")
        b.store(b.xor(b.load(slot), b.bitcast(v, bits)), slot)

    def loop_accumulators(self, var: str) -> tuple[Any, ...]:
        """Before a loop's body: fresh accumulators for it, the enclosing ones returned (to
        ``merge_accumulators``). A loop's values start from zero at each entry, so a vectorized
        inner loop's horizontal reduction is not on a chain across the outer iterations: with
        one accumulator for the whole kernel, each row waited for the previous row's reduction
        (``Y = X * 2; Y[:, 3] = 0`` on (4000, 16) float64: ~25 cycles a row, 0.43x NumPy)."""
        saved = self._finite, self._kept, self._loop
        self._finite, self._kept, self._loop = {}, {}, f"_{var}"
        return saved

    def merge_accumulators(self, saved: tuple[Any, ...], before: ir.Block) -> None:
        """After a loop (the builder after it): its accumulators zeroed in ``before`` (the
        block that enters it) and combined into the enclosing ones, which are back."""
        inner = self._finite, self._kept
        self._finite, self._kept, self._loop = saved
        b = self.builder
        after = b.block
        for slots, outer, combine, name in ((inner[0], saved[0], b.or_, "fp_nonfinite"),
                                            (inner[1], saved[1], b.xor, "fp_kept")):
            for slot in slots.values():
                b.position_before(before.terminator)
                b.store(ir.Constant(slot.type.pointee, 0), slot)
                b.position_at_end(after)
                target = self._slot(outer, slot.type.pointee, name)
                b.store(combine(b.load(target), b.load(slot)), target)

    def _accumulator(self, slots: dict[int, ir.Value], v: ir.Value, name: str
                     ) -> tuple[ir.Value, ir.IntType]:
        """The integer slot of ``v``'s width in ``slots`` (made zero in the entry block on first
        use), and that integer type."""
        bits = ir.IntType(64 if isinstance(v.type, ir.DoubleType) else 32)
        return self._slot(slots, bits, name), bits

    def _slot(self, slots: dict[int, ir.Value], bits: ir.IntType, name: str) -> ir.Value:
        """The slot of integers ``bits`` in ``slots``, made zero in the entry block on first use."""
        slot = slots.get(bits.width)
        if slot is None:
            b = self.builder
            with b.goto_entry_block():
                b.position_at_start(self.fn.entry_basic_block)
                slot = slots[bits.width] = b.alloca(bits, name=f"{name}{bits.width}{self._loop}")
                b.store(ir.Constant(bits, 0), slot)
        return slot

    def _class(self, v: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(isnan(v), isfinite(v)), computed once per value."""
        got = self.memo.get(("fp_class", id(v)))
        if got is None or got[0] is not v:
            b = self.builder
            fabs = self.fn.module.declare_intrinsic("llvm.fabs", [v.type])
            finite = b.fcmp_ordered("<", b.call(fabs, [v]), ir.Constant(v.type, float("inf")))
            got = self.memo[("fp_class", id(v))] = (v, b.fcmp_unordered("uno", v, v), finite)
        return got[1], got[2]

    def _check(self, spec: Events, result: ir.Value, operands: Sequence[ir.Value]) -> None:
        """Precise kernels: report the events ``spec`` allows of ``result`` from ``operands``."""
        b = self.builder
        floats = [(i, o) for i, o in enumerate(operands) if isinstance(o.type, ir.FloatType |
                                                                        ir.DoubleType)]
        if spec.nan:
            nan = b.fcmp_unordered("uno", result, result)
            if spec.nan != "any":
                for _, o in floats:
                    nan = b.and_(nan, b.not_(self._class(o)[0]))
            self._report(nan, INVALID)
        if spec.inf:
            fabs = self.fn.module.declare_intrinsic("llvm.fabs", [result.type])
            big = b.fcmp_ordered("==", b.call(fabs, [result]),
                                 ir.Constant(result.type, float("inf")))
            for i, o in floats:
                if spec.finite_operands is None or i in spec.finite_operands:
                    big = b.and_(big, self._class(o)[1])
            bits: int | ir.Value = spec.inf
            if spec.zero_operand is not None:
                divisor = operands[spec.zero_operand]
                bits = b.select(b.fcmp_ordered("==", divisor, ir.Constant(divisor.type, 0.0)),
                                ir.Constant(I32, spec.inf), ir.Constant(I32, spec.otherwise))
            self._report(big, bits)
        if spec.difference:
            a, c = operands
            fabs = self.fn.module.declare_intrinsic("llvm.fabs", [a.type])
            big = b.fcmp_ordered("==", b.call(fabs, [b.fsub(a, c)]), ir.Constant(a.type, float("inf")))
            self._report(b.and_(big, b.and_(self._class(a)[1], self._class(c)[1])), OVERFLOW)

    def ordered(self, symbol: str, a: ir.Value, c: ir.Value) -> ir.Value:
        """``a symbol c``, false where either is NaN, without raising the CPU's invalid flag in a
        kernel that reads the flags (``flags``). The vector compares LLVM selects for ``<``,
        ``<=``, ``>``, ``>=`` (``vcmpltpd``, ``vcmpnlepd``: signaling predicates) raise invalid
        for a NaN operand, which the fast kernel cannot tell from a real event: every call over
        NaN data ran again with the precise kernels (8 elements: 0.35 -> 7.5 us). Here no such
        compare sees a NaN: two variables become 0.0 where either is NaN (``ord``, a quiet
        compare) before they are compared; against a constant, ``a``'s bits are compared as an
        integer (``_ordered_constant``), since LLVM folds the first form back into the plain
        compare when one side is a constant. ``==``, ``!=``, ``ord`` and ``uno`` are quiet.
        Measured (float32 (64, 128), L1-resident, whole call): ``np.maximum(x + w, 0) * 2``
        summed +6%, ``np.clip(x * 2, 0, 1)`` +45%, ``((x * 2) < w).sum()`` +55%; memory-bound
        loops unchanged. LLVM's quiet compare (``constrained.fcmp``) stops vectorization; an
        integer order for two variables (the bits, reversed between negatives, with ``!=`` of
        the floats) took 16% more than the form here."""
        b = self.builder
        if not self.flags or symbol not in ("<", "<=", ">", ">="):
            return b.fcmp_ordered(symbol, a, c)
        if isinstance(a, ir.Constant) and not isinstance(c, ir.Constant):
            symbol, a, c = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[symbol], c, a
        if isinstance(c, ir.Constant):
            return self._ordered_constant(symbol, a, float(c.constant))  # an int 0 is +0.0
        ordered = b.fcmp_ordered("ord", a, c)
        zero = ir.Constant(a.type, 0.0)
        result = b.fcmp_ordered(symbol, b.select(ordered, a, zero), b.select(ordered, c, zero))
        return result if symbol in ("<", ">") else b.and_(result, ordered)

    def _ordered_constant(self, symbol: str, a: ir.Value, k: float) -> ir.Value:
        """``a symbol k`` for a constant ``k`` from ``a``'s bits as an integer: floats of one
        sign are in the order of their bits, signed for those above a positive ``k`` (every
        negative is below), unsigned and reversed for those below a negative ``k`` (every
        positive is above); a zero ``k`` counts as the zero on the other side of it. ``ord``
        takes out NaN, whose bits sort anywhere."""
        b = self.builder
        if k != k:
            return ir.Constant(ir.IntType(1), 0)
        dtype = "float64" if isinstance(a.type, ir.DoubleType) else "float32"
        bits = ir.IntType(64 if dtype == "float64" else 32)
        x = b.bitcast(a, bits)

        def bits_of(v: float) -> ir.Constant:
            return ir.Constant(bits, int(np.array(v, dtype).view(f"i{bits.width // 8}")))
        if symbol in (">", "<="):  # a > k
            strict = b.icmp_signed(">", x, bits_of(abs(k))) if k >= 0 else \
                b.icmp_unsigned("<", x, bits_of(k))
        else:  # a < k
            strict = b.icmp_signed("<", x, bits_of(k)) if k > 0 else \
                b.icmp_unsigned(">", x, bits_of(-abs(k)))
        ordered = b.fcmp_ordered("ord", a, a)
        return b.and_(strict if symbol in ("<", ">") else b.not_(strict), ordered)

    def _tie_check(self, x: ir.Value, y: ir.Value) -> None:
        """An fmax/fmin select of ``x`` and ``y``: report ``TIE`` where they tie with different
        bits (``x == y`` or both NaN, quiet compares)."""
        b = self.builder
        bits = ir.IntType(64 if isinstance(x.type, ir.DoubleType) else 32)
        tie = b.or_(b.fcmp_ordered("==", x, y),
                    b.and_(b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y)))
        differ = b.icmp_unsigned("!=", b.bitcast(x, bits), b.bitcast(y, bits))
        self._report(b.and_(tie, differ), TIE)

    def after_value(self, e: Expr, v: ir.Value, operands: Sequence[ir.Value]) -> None:
        """The checks on a freshly computed loop-IR value."""
        if self.events is None:
            return
        if isinstance(e, Select):
            if fmax_operands(e) is not None:
                self._tie_check(operands[1], operands[2])
            return
        spec = events_of(e)
        if self.precise:
            if spec is not None:
                self._check(spec, v, operands)
            return
        if id(e) in self._tests:
            self._test_finite(v)
        elif id(e) in self._compared:
            self._keep(v)
        if id(e) in self._infinite_operands:  # ``sin(x)``: x = +-inf is its event, NaN none
            b = self.builder
            x = operands[0]
            fabs = self.fn.module.declare_intrinsic("llvm.fabs", [x.type])
            infinite = ir.Constant(x.type, float("inf"))
            self._test_finite(b.select(b.fcmp_ordered("==", b.call(fabs, [x]), infinite),
                                       infinite, ir.Constant(x.type, 0.0)))
        if id(e) in self._self_tests:  # ``exp(x)``: finite where no operand is NaN
            b = self.builder
            own = getattr(v, ROUTINE_VALUE, None)  # a NaN-shielded routine's (functions.py)
            if own is not None:
                v = own  # computed from stand-ins where an operand is NaN: finite there
            else:
                ordered = [b.fcmp_ordered("ord", x, x) for x in operands
                           if isinstance(x.type, (ir.DoubleType, ir.FloatType))]
                if ordered:
                    v = b.select(functools.reduce(b.and_, ordered), v, ir.Constant(v.type, 0.0))
            self._test_finite(v)
        if spec is not None and spec.difference:  # finite results, events all the same
            self._test_finite(self.builder.fsub(*operands))

    def after_step(self, node: ComputedBuffer, total: ir.Value, acc: ir.Value, x: ir.Value
                    ) -> None:
        """Precise kernels: a step ``total = acc op x`` of a float sum or product."""
        if self.events is not None and self.precise and accumulates_floats(node):
            self._check(ACCUMULATION, total, (acc, x))

    # -- a reduction's accumulation, in precise kernels ------------------------------------------
    # Checking each step ``acc op x`` reads the accumulator inside the loop, which stops LLVM
    # from vectorizing the reduction (measured: example 1.1 60x slower). Instead the loop also
    # accumulates the finite values alone and notes which special values it met (+inf, -inf,
    # zero), reductions of their own; after it, the events are those of the finite values'
    # total (it overflowed: overflow; NaN, from opposite overflows: and invalid) and of the
    # special values (inf - inf, inf * 0: invalid).
    _POSITIVE_INF, _NEGATIVE_INF, _ZERO = 1, 2, 4

    def _tracked(self, node: ComputedBuffer) -> bool:
        return self.events is not None and self.precise and accumulates_floats(node)

    def track_start(self, node: ComputedBuffer) -> None:
        if not self._tracked(node):
            return
        b = self.builder
        typ = value_type_of(node.dtype)
        slots = getattr(self, "_track_slots", None)
        if slots is None:
            slots = self._track_slots = {}
        if node.name not in slots:
            with b.goto_entry_block():
                b.position_at_start(self.fn.entry_basic_block)
                slots[node.name] = (b.alloca(typ, name=f"fp_finite_{node.name}"),
                                    b.alloca(I32, name=f"fp_special_{node.name}"))
        finite, special = slots[node.name]
        product = node.data.reduction_type == "prod"
        b.store(ir.Constant(typ, 1.0 if product else 0.0), finite)
        b.store(ir.Constant(I32, 0), special)

    def track_step(self, node: ComputedBuffer, x: ir.Value) -> None:
        if not self._tracked(node):
            return
        b = self.builder
        finite, special = self._track_slots[node.name]
        product = node.data.reduction_type == "prod"
        is_finite = self._class(x)[1]
        value = b.select(is_finite, x, ir.Constant(x.type, 1.0 if product else 0.0))
        step = b.fmul if product else b.fadd
        b.store(step(b.load(finite), value, flags=("reassoc",)), finite)
        inf = ir.Constant(x.type, float("inf"))
        seen = b.or_(b.select(b.fcmp_ordered("==", x, inf), ir.Constant(I32, self._POSITIVE_INF),
                              ir.Constant(I32, 0)),
                     b.select(b.fcmp_ordered("==", x, b.fneg(inf)),
                              ir.Constant(I32, self._NEGATIVE_INF), ir.Constant(I32, 0)))
        if product:
            seen = b.or_(seen, b.select(b.fcmp_ordered("==", x, ir.Constant(x.type, 0.0)),
                                        ir.Constant(I32, self._ZERO), ir.Constant(I32, 0)))
        b.store(b.or_(b.load(special), seen), special)

    def track_finish(self, node: ComputedBuffer, total: ir.Value) -> None:
        if not self._tracked(node):
            return
        b = self.builder
        finite_slot, special_slot = self._track_slots[node.name]
        finite, special = b.load(finite_slot), b.load(special_slot)
        zero = ir.Constant(I32, 0)

        def has(bit: int) -> ir.Value:
            return b.icmp_unsigned("!=", b.and_(special, ir.Constant(I32, bit)), zero)
        nan, is_finite = self._class(finite)
        overflowed = b.not_(is_finite)
        infinite = b.or_(has(self._POSITIVE_INF), has(self._NEGATIVE_INF))
        if node.data.reduction_type == "prod":
            invalid = b.or_(nan, b.and_(b.or_(infinite, overflowed), has(self._ZERO)))
        else:
            invalid = b.or_(nan, b.or_(b.and_(has(self._POSITIVE_INF), has(self._NEGATIVE_INF)),
                                       b.and_(overflowed, infinite)))
        self._report(overflowed, OVERFLOW)
        self._report(invalid, INVALID)
        del total

    def after_total(self, node: ComputedBuffer, total: ir.Value) -> None:
        """Fast kernels: a float sum or product where it is stored (each step of a column
        reduction or a scan, else the end): an event on the way leaves it infinite or NaN."""
        if self.events is not None and not self.precise and node.name in self._totals:
            self._test_finite(total)

    def short_loop_seen(self, extent: Any) -> None:
        """A loop of ``extent`` iterations is emitted. Below ``PADDED_BELOW`` (known), LLVM may
        compute it in vectors wider than its elements (two float32 divisions as four, the
        padding lanes 0 / 0: x86 has no 64-bit float vector), raising flags for values NumPy
        never computes; such a kernel's flags then say ``MAYBE`` (the precise kernels decide)
        instead of their categories (``X[:, :, :3] / Y[:, :, 1:4]`` warned "invalid value
        encountered in divide" where NumPy does not: a probe)."""
        if self.categories and isinstance(extent, int) and 1 < extent < PADDED_BELOW:
            self.categories = False

    def events_finish(self) -> None:
        """At the kernel's exit: OR the chunk's events into the buffer, if any."""
        if self.events is None:
            return
        b = self.builder
        bits = b.load(self._bits)
        if self.flags:
            self._barrier()
            mxcsr = self._mxcsr()
            raised = b.and_(mxcsr, ir.Constant(I32, MXCSR_EVENTS))
            if self.categories:
                bits = b.or_(bits, flag_bits(b, mxcsr))
            else:
                bits = b.or_(bits, b.select(b.icmp_unsigned("!=", raised, ir.Constant(I32, 0)),
                                            ir.Constant(I32, MAYBE), ir.Constant(I32, 0)))
            if self.underflow:
                bits = b.or_(bits, flag_bits(b, mxcsr, MXCSR_TINY))
        for slot in self._kept.values():  # consumed where LLVM cannot see what for
            sink = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [slot.type.pointee]), "", "r",
                                side_effect=True)
            b.call(sink, [b.load(slot)])
        for slot in self._finite.values():
            # through an empty asm: JumpThreading unfolds the select below into a branch on a
            # frozen condition, and InstCombine moves a freeze of the accumulator's loop-exit
            # value into the loop, where the vectorizer no longer sees a reduction
            # (mandelbrot_real's rows ran scalar)
            nonfinite = b.icmp_unsigned("!=", _empty_asm(b, b.load(slot), "=r,0"),
                                        ir.Constant(slot.type.pointee, 0))
            bits = b.or_(bits, b.select(nonfinite, ir.Constant(I32, MAYBE), ir.Constant(I32, 0)))
        with b.if_then(b.icmp_unsigned("!=", bits, ir.Constant(I32, 0)), likely=False):
            b.atomic_rmw("or", self.pointers[self.events], bits, "monotonic")

    def integer_division_events(self, a: ir.Value, c: ir.Value, op: str, dtype: str) -> None:
        """Integer ``a // c`` and ``a % c``: divide by zero where ``c == 0``; ``MIN // -1``
        overflows (NumPy warns for both, in every kernel kind)."""
        if self.events is None:
            return
        b = self.builder
        self._report(b.icmp_unsigned("==", c, ir.Constant(c.type, 0)), DIVIDE)
        if op == "floordiv" and is_signed(dtype):
            smallest = ir.Constant(a.type, -(1 << (a.type.width - 1)))
            self._report(b.and_(b.icmp_signed("==", a, smallest),
                                b.icmp_signed("==", c, ir.Constant(c.type, -1))), OVERFLOW)
