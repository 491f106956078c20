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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from llvmlite import ir

from stax.loop import (
    Affine,
    Binary,
    Cast,
    ComputedBuffer,
    Const,
    Expr,
    GuardedLoad,
    Index,
    IndirectLoad,
    Load,
    Reduction,
    Scan,
    Select,
    Unary,
    index_width,
    loads,
    rvar,
    xvar,
)

from ..rowshare import Spill, share_row_values
from . import vmath, vmath64
from .fpevents import FloatEvents
from .nests import LoopShapes, _columnwise, _is_arg, _transposed
from .types import I1, I8P, I64, is_float, is_signed, memory_type, value_type


def _phase_key(node: ComputedBuffer) -> tuple[bool, tuple[int, ...], tuple[int, ...]]:
    return isinstance(node.data, Reduction), node.ranges, node.reduction_ranges


def _phases(nodes: Sequence[ComputedBuffer]) -> list[list[ComputedBuffer]]:
    """Consecutive nodes with the same loop nest form one phase, unless a node needs a reduction
    of the phase being built (it must wait for the reduction to finish)."""
    phases: list[list[ComputedBuffer]] = []
    for node in nodes:
        current = phases[-1] if phases else None
        reads = {ld.buffer for ld in loads(node.data.body)}
        waits = current is not None and any(
            isinstance(n.data, Reduction) and n.name in reads for n in current)
        if current is not None and _phase_key(current[0]) == _phase_key(node) and not waits:
            current.append(node)
        else:
            phases.append([node])
    return phases


_PREDICATES = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


@dataclass(frozen=True)
class KernelSpec:
    """What to emit: the buffers computed in one loop nest, and every buffer the kernel touches."""

    name: str
    nodes: tuple[ComputedBuffer, ...]
    args: tuple[str, ...]          # buffer names, in argument order
    dtypes: dict[str, str]         # buffer name -> dtype
    in_place: dict[str, str] = field(default_factory=dict)  # output -> input it overwrites
    events: str | None = None  # the int32 buffer of floating-point events (``fpevents``)
    precise: bool = False      # the exact checks (else the fast kernel's finiteness tests)


class KernelEmitter(LoopShapes, FloatEvents):
    def __init__(self, module: ir.Module, spec: KernelSpec, data_offset: int) -> None:
        self.spec = spec
        fnty = ir.FunctionType(ir.VoidType(), [I8P] * len(spec.args) + [I64, I64])
        self.fn = ir.Function(module, fnty, spec.name)
        self.fn.attributes.add("nounwind")
        *objs, self.start, self.stop = self.fn.args
        for obj, name in zip(objs, spec.args):
            obj.name = f"obj_{name}"
        self.builder = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.pointers = {name: self._data_pointer(obj, spec.dtypes[name], data_offset)
                         for obj, name in zip(objs, spec.args)}
        for out, over in spec.in_place.items():
            # one pointer for both: LLVM sees the load and the store of one element, not two
            # buffers it would have to check for overlap before vectorizing
            self.pointers[out] = self.pointers[over]
        self.vars: dict[str, ir.Value] = {}
        # element indices in i32 when every one provably fits (spec §6.8), else i64
        self.index_bits = max(index_width(n) for n in spec.nodes)
        self.index_type = ir.IntType(self.index_bits)
        self.memo: dict[object, ir.Value] = {}  # id(expr) or ("index", affine)
        self.local: dict[str, tuple[Affine, ir.Value]] = {}  # values computed in this iteration
        self.spills: dict[str, list[Spill]] = {}  # reduction -> values it also stores (rowshare)
        self._events_start(spec.events, spec.precise, spec.nodes)

    def _data_pointer(self, obj: ir.Value, dtype: str, offset: int) -> ir.Value:
        b = self.builder
        slot = b.bitcast(b.gep(obj, [ir.Constant(I64, offset)]), I8P.as_pointer())
        data = b.load(slot, name=f"{obj.name}_data")
        return b.bitcast(data, memory_type(dtype).as_pointer())

    # -- loops ---------------------------------------------------------------------------------
    def loop(self, var: str, low: ir.Value, high: ir.Value, carried: Sequence[ir.Value],
             body: Callable[[Sequence[ir.Value]], Sequence[ir.Value]], step: int = 1
             ) -> list[ir.Value]:
        """``for var in range(low, high, step)`` with loop-carried values; returns their final
        values."""
        b = self.builder
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
        updated = list(body(phis))
        nxt = b.add(iv, ir.Constant(I64, step), name=f"{var}_next")
        latch = b.block
        iv.add_incoming(nxt, latch)
        for phi, new in zip(phis, updated):
            phi.add_incoming(new, latch)
        b.cbranch(b.icmp_signed("<", nxt, high), head, done)
        b.position_at_end(done)
        results = []
        for init, new in zip(carried, updated):
            out = b.phi(init.type)
            out.add_incoming(init, pre)
            out.add_incoming(new, latch)
            results.append(out)
        return results

    def nest(self, ranges: Sequence[int], prefix: Callable[[int], str], carried: Sequence[ir.Value],
             body: Callable[[Sequence[ir.Value]], Sequence[ir.Value]], split: bool = False
             ) -> list[ir.Value]:
        """Nested loops over ``ranges``; with ``split`` the outermost runs over ``[start, stop)``."""
        if not ranges:
            return list(body(carried))

        def level(d: int, values: Sequence[ir.Value]) -> Sequence[ir.Value]:
            if d == len(ranges):
                return body(values)
            low = self.start if split and d == 0 else ir.Constant(I64, 0)
            high = self.stop if split and d == 0 else ir.Constant(I64, ranges[d])
            return self.loop(prefix(d), low, high, values, lambda v: level(d + 1, v))
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
        total: ir.Value = ir.Constant(typ, expr.const)
        for var, coeff in expr.terms:
            v = self._var(var)
            term = v if coeff == 1 else b.mul(v, ir.Constant(typ, coeff), flags=flags)
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
            cached = self.memo[id(expr)] = self._emit(expr)
            if self.events is not None and isinstance(expr, Unary | Binary | Cast | Select):
                self._after_value(expr, cached, [self.memo[id(c)] for c in expr.children()])
        return cached

    def _emit(self, e: Expr) -> ir.Value:
        b = self.builder
        if isinstance(e, GuardedLoad):
            return self._guarded_load(e)
        if isinstance(e, IndirectLoad):
            raw = b.load(b.gep(self.pointers[e.buffer], [self.value(e.offset)]))
            return b.icmp_unsigned("!=", raw, ir.Constant(raw.type, 0)) if e.dtype == "bool" else raw
        if isinstance(e, Index):
            at = self.index(e.index)
            typ = value_type(e.dtype)
            if at.type.width == typ.width:
                return at
            return b.trunc(at, typ) if at.type.width > typ.width else b.sext(at, typ)
        if isinstance(e, Load):
            local = self.local.get(e.buffer)
            if local is not None and local[0] == e.index:
                return local[1]
            raw = b.load(b.gep(self.pointers[e.buffer], [self.index(e.index)]))
            return b.icmp_unsigned("!=", raw, ir.Constant(raw.type, 0)) if e.dtype == "bool" else raw
        if isinstance(e, Const):
            return ir.Constant(value_type(e.dtype), int(e.value) if e.dtype == "bool" else e.value)
        if isinstance(e, Cast):
            return self._cast(self.value(e.x), e.x.dtype, e.dtype)
        if isinstance(e, Unary) and e.op == "popcount":  # set bits of |x|, as NumPy's
            x = self.value(e.x)
            if is_signed(e.x.dtype):
                x = b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)),
                             b.sub(ir.Constant(x.type, 0), x), x)  # MIN wraps to itself: 1 bit
            count = b.call(self.fn.module.declare_intrinsic("llvm.ctpop", [x.type]), [x])
            return b.trunc(count, ir.IntType(8)) if x.type.width > 8 else count
        if isinstance(e, Unary) and e.op == "bitcast":
            return b.bitcast(self.value(e.x), value_type(e.dtype))
        if isinstance(e, Unary):
            return self._unary(e.op, self.value(e.x), e.dtype)
        if isinstance(e, Select):
            # constant arms hidden where the CPU's flags report events (FloatEvents._opaque)
            return b.select(self.value(e.cond), self._opaque(self.value(e.a)),
                            self._opaque(self.value(e.b)))
        if isinstance(e, Binary):
            if e.op in _PREDICATES:
                return self._compare(e.op, self.value(e.a), self.value(e.b), e.a.dtype)
            return self._binary(e.op, self.value(e.a), self.value(e.b), e.dtype)
        raise NotImplementedError(f"cannot emit {e!r}")

    def _guarded_load(self, e: GuardedLoad) -> ir.Value:
        """``guard ? buffer[index] : 0`` with the load on a branch of its own: the index may be
        outside the buffer where the guard is false. LLVM if-converts this into a masked load
        when it vectorizes the loop."""
        b = self.builder
        guard = self.value(e.guard)
        typ = memory_type(e.dtype)
        # the address is computed before the branch (values cached for later uses must dominate
        # them); only the load is conditional
        address = b.gep(self.pointers[e.buffer], [self.index(e.index)])
        before = b.block
        reading = self.fn.append_basic_block("guarded_load")
        joined = self.fn.append_basic_block("guarded_done")
        b.cbranch(guard, reading, joined)
        b.position_at_end(reading)
        raw = b.load(address)
        b.branch(joined)
        b.position_at_end(joined)
        value = b.phi(typ)
        value.add_incoming(self._opaque(ir.Constant(typ, 0)), before)
        value.add_incoming(raw, reading)
        return b.icmp_unsigned("!=", value, ir.Constant(typ, 0)) if e.dtype == "bool" else value

    def _binary(self, op: str, a: ir.Value, c: ir.Value, dtype: str) -> ir.Value:
        b = self.builder
        if op in ("maximum", "minimum"):
            if is_float(dtype):
                # NumPy: NaN in a wins, then NaN in b (b is returned), ties return b (signed zeros)
                wins = self._ordered(">" if op == "maximum" else "<", a, c)
                wins = b.or_(wins, b.fcmp_unordered("uno", a, a))
            else:
                cmp = b.icmp_signed if is_signed(dtype) else b.icmp_unsigned
                wins = cmp(">" if op == "maximum" else "<", a, c)
            return b.select(wins, a, c)
        if op == "or":
            return b.or_(a, c)
        if op == "and":
            return b.and_(a, c)
        if op == "xor":
            return b.xor(a, c)
        if op in ("shl", "shr"):
            return self._shift(op, a, c, dtype)
        if op == "copysign":
            fn = self.fn.module.declare_intrinsic("llvm.copysign", [a.type],
                                                  ir.FunctionType(a.type, [a.type] * 2))
            return b.call(fn, [a, c])
        if op in ("floordiv", "mod"):
            return self._floor_divmod(op, a, c, dtype)
        if op in ("py_floordiv", "py_mod"):
            return self._float_divmod(op, a, c)
        if op == "ldexp" and dtype == "float64":
            return vmath64.ldexp(b, self.fn.module, a, c)
        if op == "ldexp":  # float32 a, int64 c: exact in double, rounded once
            bound = ir.Constant(I64, 300)
            n = b.select(b.icmp_signed(">", c, bound), bound, c)
            n = b.select(b.icmp_signed("<", n, ir.Constant(I64, -300)), ir.Constant(I64, -300), n)
            scale = b.bitcast(b.shl(b.add(n, ir.Constant(I64, 1023)), ir.Constant(I64, 52)),
                              vmath.F64)
            return b.fptrunc(b.fmul(b.fpext(a, vmath.F64), scale), a.type)
        if dtype == "float64" and op in vmath64.BINARY:  # double-double steps, within 1 ulp
            return vmath64.BINARY[op](b, self.fn.module, a, c)
        if op in ("hypot", "pow", "arctan2", "logaddexp", "logaddexp2"):  # float32, in double
            fn = {"hypot": vmath.hypot_d, "pow": vmath.pow_d, "arctan2": vmath.atan2_d,
                  "logaddexp": vmath.logaddexp_d, "logaddexp2": vmath.logaddexp2_d}[op]
            wide = fn(b, self.fn.module, b.fpext(a, vmath.F64), b.fpext(c, vmath.F64))
            return b.fptrunc(wide, a.type)
        if is_float(dtype):
            return {"add": b.fadd, "sub": b.fsub, "mul": b.fmul, "truediv": b.fdiv}[op](a, c)
        return {"add": b.add, "sub": b.sub, "mul": b.mul}[op](a, c)

    def _shift(self, op: str, a: ir.Value, c: ir.Value, dtype: str) -> ir.Value:
        """NumPy's shifts: a count outside [0, bits) (compared unsigned, so negative counts too)
        gives 0, or -1 for a negative signed value shifted right (LLVM leaves it undefined)."""
        b = self.builder
        width = ir.Constant(a.type, a.type.width)
        inside = b.icmp_unsigned("<", c, width)
        safe = b.select(inside, c, ir.Constant(a.type, 0))
        if op == "shl":
            return b.select(inside, b.shl(a, safe), ir.Constant(a.type, 0))
        if is_signed(dtype):
            beyond = b.ashr(a, ir.Constant(a.type, a.type.width - 1))  # 0 or -1
            return b.select(inside, b.ashr(a, safe), beyond)
        return b.select(inside, b.lshr(a, safe), ir.Constant(a.type, 0))

    def _float_divmod(self, op: str, a: ir.Value, c: ir.Value) -> ir.Value:
        """NumPy's npy_divmod in the operands' precision. fmod first, exactly: n = trunc(a / c)
        is off by at most one for the quotients the call's check admits, a - n c is exact with a
        fused multiply-add, and an n one too large shows as a remainder of the wrong sign."""
        b = self.builder
        typ = a.type
        module = self.fn.module
        fn = lambda name, n: module.declare_intrinsic(name, [typ],  # noqa: E731
                                                      ir.FunctionType(typ, [typ] * n))
        fma, trunc, floor, fabs = fn("llvm.fma", 3), fn("llvm.trunc", 1), fn("llvm.floor", 1), \
            fn("llvm.fabs", 1)
        copysign = fn("llvm.copysign", 2)
        zero, one = ir.Constant(typ, 0.0), ir.Constant(typ, 1.0)
        inf, nan = ir.Constant(typ, float("inf")), ir.Constant(typ, float("nan"))
        n = b.call(trunc, [b.fdiv(a, c)])
        r = b.call(fma, [b.fneg(n), c, a])
        wrong_sign = b.and_(b.fcmp_ordered("!=", r, zero),
                            b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", a, zero)))
        r = b.select(wrong_sign, b.fadd(r, b.call(copysign, [b.call(fabs, [c]), a])), r)
        # C's fmod at the edges: a zero a keeps its sign, an infinite c leaves a finite a as is,
        # an infinite a, a zero c or a NaN gives NaN
        finite_a = b.fcmp_ordered("<", b.call(fabs, [a]), inf)
        r = b.select(b.fcmp_ordered("==", a, zero), a, r)
        r = b.select(b.and_(finite_a, b.fcmp_ordered("==", b.call(fabs, [c]), inf)), a, r)
        invalid = b.or_(b.xor(finite_a, ir.Constant(ir.IntType(1), 1)),
                        b.fcmp_unordered("==", c, zero))  # c == 0 or either is NaN
        mod = b.select(invalid, nan, r)
        # npy_divmod
        div = b.fdiv(b.fsub(a, mod), c)
        nonzero_mod = b.fcmp_unordered("!=", mod, zero)  # NaN counts as nonzero, as in C
        adjust = b.and_(nonzero_mod, b.xor(b.fcmp_ordered("<", c, zero),
                                           b.fcmp_ordered("<", mod, zero)))
        mod2 = b.select(adjust, b.fadd(mod, c), mod)
        div = b.select(adjust, b.fsub(div, one), div)
        mod2 = b.select(nonzero_mod, mod2, b.call(copysign, [zero, c]))
        snapped = b.call(floor, [div])
        snapped = b.select(b.fcmp_ordered(">", b.fsub(div, snapped), ir.Constant(typ, 0.5)),
                           b.fadd(snapped, one), snapped)
        floordiv = b.select(b.fcmp_unordered("!=", div, zero), snapped,
                            b.call(copysign, [zero, b.fdiv(a, c)]))
        by_zero = b.fcmp_ordered("==", c, zero)
        if op == "py_mod":
            return b.select(by_zero, mod, mod2)  # fmod's NaN
        return b.select(by_zero, b.fdiv(a, c), floordiv)

    def _floor_divmod(self, op: str, a: ir.Value, c: ir.Value, dtype: str) -> ir.Value:
        """Integer ``a // c`` or ``a % c`` as NumPy: the quotient rounded toward minus infinity,
        the remainder with the divisor's sign; 0 for both when ``c == 0``; ``MIN // -1`` wraps
        to MIN (remainder 0). The divisor is made safe before dividing (LLVM's division by zero
        or of MIN by -1 is undefined)."""
        b = self.builder
        typ = a.type
        zero, one = ir.Constant(typ, 0), ir.Constant(typ, 1)
        self._integer_division_events(a, c, op, dtype)
        by_zero = b.icmp_unsigned("==", c, zero)
        if not is_signed(dtype):
            safe = b.select(by_zero, one, c)
            value = b.udiv(a, safe) if op == "floordiv" else b.urem(a, safe)
            return b.select(by_zero, zero, value)
        by_minus_one = b.icmp_signed("==", c, ir.Constant(typ, -1))
        safe = b.select(b.or_(by_zero, by_minus_one), one, c)
        q, r = b.sdiv(a, safe), b.srem(a, safe)
        # truncation -> floor: a nonzero remainder whose sign differs from the divisor's
        adjust = b.and_(b.icmp_signed("!=", r, zero),
                        b.icmp_signed("<", b.xor(r, c), zero))
        if op == "floordiv":
            value = b.select(adjust, b.sub(q, one), q)
            value = b.select(by_minus_one, b.sub(zero, a), value)
        else:
            value = b.select(adjust, b.add(r, c), r)
            value = b.select(by_minus_one, zero, value)
        return b.select(by_zero, zero, value)

    def _unary(self, op: str, x: ir.Value, dtype: str) -> ir.Value:
        b = self.builder
        if op == "neg":
            return b.fneg(x) if is_float(dtype) else b.sub(ir.Constant(x.type, 0), x)
        if op == "signbit":  # the float operand's sign bit (dtype is the bool result's)
            bits = b.bitcast(x, ir.IntType(64 if x.type.intrinsic_name == "f64" else 32))
            return b.icmp_signed("<", bits, ir.Constant(bits.type, 0))
        if op == "abs" and not is_float(dtype):
            if not is_signed(dtype):
                return x
            return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)),
                            b.sub(ir.Constant(x.type, 0), x), x)  # wraps at INT_MIN, as NumPy
        if op == "exp" and dtype == "float32":
            return vmath.exp32(b, self.fn.module, x)
        if op == "log" and dtype == "float32":
            return vmath.log32(b, self.fn.module, x)
        if op == "tanh" and dtype == "float32":
            return vmath.tanh32(b, self.fn.module, x)
        if op == "tanh":
            return vmath.tanh64(b, self.fn.module, x)
        if dtype == "float64" and op in vmath64.UNARY:  # double-double steps, within 1 ulp
            return vmath64.UNARY[op](b, self.fn.module, x)
        if op in vmath.VIA_DOUBLE:  # float32: computed in double, rounded once
            return b.fptrunc(vmath.VIA_DOUBLE[op](b, self.fn.module, b.fpext(x, vmath.F64)), x.type)
        if op == "tan" and dtype == "float32":
            return vmath.tan32(b, self.fn.module, x)
        if op in ("sin", "cos") and dtype == "float32":
            return (vmath.sin32 if op == "sin" else vmath.cos32)(b, self.fn.module, x)
        if op in vmath.FUNCTIONS:  # computed in double, rounded once for float32
            module = self.fn.module
            wide = b.fpext(x, vmath.F64) if dtype == "float32" else x
            result = vmath.FUNCTIONS[op](b, module, wide)
            return b.fptrunc(result, x.type) if dtype == "float32" else result
        # correctly rounded IEEE operations: LLVM widens them to vector instructions, no libm
        name = {"abs": "llvm.fabs", "sqrt": "llvm.sqrt", "floor": "llvm.floor",
                "ceil": "llvm.ceil", "trunc": "llvm.trunc", "rint": "llvm.rint"}[op]
        fn = self.fn.module.declare_intrinsic(name, [x.type])
        return b.call(fn, [x])

    def _compare(self, op: str, a: ir.Value, c: ir.Value, dtype: str) -> ir.Value:
        b = self.builder
        symbol = _PREDICATES[op]
        if is_float(dtype):  # ordered, except != which is true when either side is NaN
            return b.fcmp_unordered(symbol, a, c) if op == "ne" else self._ordered(symbol, a, c)
        return (b.icmp_signed if is_signed(dtype) else b.icmp_unsigned)(symbol, a, c)

    def _cast(self, x: ir.Value, src: str, dst: str) -> ir.Value:
        b = self.builder
        to = value_type(dst)
        if src == dst:
            return x
        if dst == "bool":
            zero = ir.Constant(x.type, 0.0 if is_float(src) else 0)
            return b.fcmp_unordered("!=", x, zero) if is_float(src) else b.icmp_unsigned("!=", x, zero)
        if is_float(src) and is_float(dst):
            return b.fpext(x, to) if to.intrinsic_name == "f64" else b.fptrunc(x, to)
        if is_float(dst):
            return b.sitofp(x, to) if is_signed(src) else b.uitofp(x, to)
        if is_float(src):
            return b.fptosi(x, to) if is_signed(dst) else b.fptoui(x, to)
        if x.type.width == to.width:
            return x
        if x.type.width > to.width:
            return b.trunc(x, to)
        return b.sext(x, to) if is_signed(src) else b.zext(x, to)

    def store(self, node: ComputedBuffer, value: ir.Value) -> None:
        b = self.builder
        if node.dtype == "bool":
            value = b.zext(value, memory_type("bool"))
        b.store(value, b.gep(self.pointers[node.name], [self.index(node.store_index)]))

    # -- kernels -------------------------------------------------------------------------------
    def emit(self) -> ir.Function:
        nodes = self.spec.nodes
        ranges = nodes[0].ranges
        split = bool(ranges)

        def phase_body(phase: Sequence[ComputedBuffer]) -> None:
            self.memo = {}
            self.local = {}
            if isinstance(phase[0].data, Reduction):
                self._reductions(phase)
            else:
                self._pointwise(phase)

        def outer_body(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
            phase_body(nodes)
            return []

        phases = _phases(nodes)
        if split and len(phases) > 1 and not isinstance(nodes[0].data, Scan):
            phases, spills = share_row_values(phases)
            for spill in spills:
                self.spills.setdefault(spill.reduction, []).append(spill)
        self._events_plan([n for phase in phases for n in phase],
                          {r: [sp.buffer for sp in spills] for r, spills in self.spills.items()})
        if isinstance(nodes[0].data, Scan):
            self._scan(nodes[0])
        elif split and len(phases) == 1 and _columnwise(nodes):
            self._column_reductions(nodes)
        elif split and len(phases) == 1 and _transposed(nodes):
            self._tiled(nodes)
        elif split and len(phases) > 1:
            # one row at a time (x0), the phases in order inside it: a later phase reads what an
            # earlier one stored for this row, while the row is still in cache (row fusion, §7)
            def row(_: Sequence[ir.Value]) -> Sequence[ir.Value]:
                for phase in phases:
                    inner = phase[0].ranges[1:]

                    def body(_: Sequence[ir.Value], phase: Sequence[ComputedBuffer] = phase
                             ) -> Sequence[ir.Value]:
                        phase_body(phase)
                        return []
                    self.nest(inner, lambda d: xvar(d + 1), [], body)
                return []
            self.loop(xvar(0), self.start, self.stop, [], row)
        elif split:
            self.nest(ranges, xvar, [], outer_body, split=True)
        else:
            self.once(lambda: outer_body([]))
        self._events_finish()
        self.builder.ret_void()
        return self.fn

    def _pointwise(self, nodes: Sequence[ComputedBuffer]) -> None:
        for node in nodes:
            v = self.value(node.data.body)
            self.store(node, v)
            self.local[node.name] = (node.store_index, v)

    def _reductions(self, nodes: Sequence[ComputedBuffer]) -> None:
        inits: list[ir.Value] = []
        for n in nodes:  # an arg reduction carries (best value, its index), the others one value
            inits += self._arg_identity(n) if _is_arg(n) else [self._identity(n)]
        outer_memo = self.memo
        for n in nodes:
            self._track_start(n)

        def inner(accs: Sequence[ir.Value]) -> Sequence[ir.Value]:
            self.memo = dict(outer_memo)  # loop-invariant values may be reused, nothing inner
            out: list[ir.Value] = []
            position = 0
            for n in nodes:
                x = self.value(n.data.body)
                for spill in self.spills.get(n.name, ()):
                    self.builder.store(x, self.builder.gep(self.pointers[spill.buffer],
                                                           [self.index(spill.index)]))
                if _is_arg(n):
                    out += self._arg_accumulate(n, accs[position], accs[position + 1], x)
                    position += 2
                else:  # the accumulator is a reduction LLVM vectorizes: checked apart (fpevents)
                    out.append(self._accumulate(n, accs[position], x, checked=False))
                    self._track_step(n, x)
                    position += 1
            return out

        finals = self.nest(nodes[0].reduction_ranges, rvar, inits, inner)
        self.memo = outer_memo
        position = 0
        for node in nodes:
            if _is_arg(node):
                self.store(node, finals[position + 1])
                position += 2
            else:
                self._track_finish(node, finals[position])
                self._after_total(node, finals[position])
                self.store(node, finals[position])
                position += 1

    def _arg_identity(self, node: ComputedBuffer) -> list[ir.Value]:
        dtype = node.data.body.dtype
        typ = value_type(dtype)
        if dtype == "bool":
            first = ir.Constant(typ, 0 if node.data.reduction_type == "argmax" else 1)
        elif is_float(dtype):
            first = ir.Constant(typ, float("-inf") if node.data.reduction_type == "argmax"
                                else float("inf"))
        else:
            info = np.iinfo(dtype)
            first = ir.Constant(typ, int(info.min if node.data.reduction_type == "argmax"
                                         else info.max))
        return [first, ir.Constant(I64, 0)]

    def _arg_accumulate(self, node: ComputedBuffer, best: ir.Value, where: ir.Value,
                        x: ir.Value) -> list[ir.Value]:
        """NumPy's rule: the first index of the extreme value, and a NaN beats every number (the
        first NaN wins)."""
        b = self.builder
        dtype = node.data.body.dtype
        greater = node.data.reduction_type == "argmax"
        if is_float(dtype):
            better = b.fcmp_ordered(">" if greater else "<", x, best)
            nan_first = b.and_(b.fcmp_unordered("uno", x, x), b.fcmp_ordered("ord", best, best))
            better = b.or_(better, nan_first)
        else:
            cmp = b.icmp_signed if is_signed(dtype) else b.icmp_unsigned
            better = cmp(">" if greater else "<", x, best)
        ranges = node.data.reduction_ranges
        linear: ir.Value = ir.Constant(I64, 0)
        for j in range(len(ranges)):
            step = 1
            for extent in ranges[j + 1:]:
                step *= extent
            linear = b.add(linear, b.mul(self.vars[rvar(j)], ir.Constant(I64, step)))
        return [b.select(better, x, best), b.select(better, linear, where)]

    def _identity(self, node: ComputedBuffer) -> ir.Value:
        kind, dtype = node.data.reduction_type, node.dtype
        typ = value_type(dtype)
        if kind == "prod":
            return ir.Constant(typ, 1.0 if is_float(dtype) else 1)
        if kind == "sum" or dtype == "bool":
            return ir.Constant(typ, (kind == "min") if dtype == "bool" else
                               (0.0 if is_float(dtype) else 0))
        if is_float(dtype):
            return ir.Constant(typ, float("-inf") if kind == "max" else float("inf"))
        info = np.iinfo(dtype)
        return ir.Constant(typ, int(info.min if kind == "max" else info.max))

    def _accumulate(self, node: ComputedBuffer, acc: ir.Value, x: ir.Value, checked: bool = True
                    ) -> ir.Value:
        b = self.builder
        kind, dtype = node.data.reduction_type, node.dtype
        if kind in ("max", "min"):  # a NaN anywhere wins, as in NumPy
            if dtype == "bool":
                return b.or_(acc, x) if kind == "max" else b.and_(acc, x)
            if is_float(dtype):
                # llvm.maximum/minimum propagate NaN and vectorize; they order -0 < +0, where
                # NumPy keeps whichever zero comes last: only a zero's sign can differ
                fn = self.fn.module.declare_intrinsic(
                    f"llvm.{kind}imum", [acc.type], ir.FunctionType(acc.type, [acc.type] * 2))
                return b.call(fn, [acc, x])
            return self._binary("maximum" if kind == "max" else "minimum", acc, x, dtype)
        if kind == "prod":
            if dtype == "bool":
                return b.and_(acc, x)
            if not is_float(dtype):
                return b.mul(acc, x)
            total = b.fmul(acc, x, flags=("reassoc",))
            if checked:
                self._after_step(node, total, acc, x)
            return total
        if dtype == "bool":
            return b.or_(acc, x)
        if is_float(dtype):
            total = b.fadd(acc, x, flags=("reassoc",))
            if checked:
                self._after_step(node, total, acc, x)
            return total
        return b.add(acc, x)


def emit_kernel(module: ir.Module, spec: KernelSpec, data_offset: int) -> ir.Function:
    return KernelEmitter(module, spec, data_offset).emit()


__all__ = ["I1", "KernelSpec", "emit_kernel"]
