"""Emitters of the math functions (exp, log, the trigonometric and hyperbolic functions, cbrt,
hypot, pow, arctan2, logaddexp, ldexp): which routine computes each loop operator in each float
dtype. float64 in double-double steps within 1 ulp (``vmath64``; tanh in double, ``vmath``);
float32 in float32 lanes where a fitted polynomial reaches the bound (exp, log, log2, log10,
log1p, tanh), sin, cos and tan from the short reduction where the program checks their arguments
(``KernelSpec.trig_checked``) and Payne–Hanek's otherwise (``vmath.trig32``), else computed in
double and rounded once."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from stax.loop import Binary, Unary

from . import vmath64
from .libm import python_pow
from .registry import Emitter, binary, by_dtype, unary
from .types import I64
from .vmath.double import F64, tanh64
from .vmath.lanes32 import exp32, log1p32, log2_32, log10_32, log32, tanh32
from .vmath.trig32 import TRIG32
from .vmath.via_double import BINARY_VIA_DOUBLE, VIA_DOUBLE

#: a routine: (builder, module, *operands) -> the result, in the operands' type
Routine = Callable[..., ir.Value]


def in_double(routine: Routine) -> Routine:
    """A float32 routine from a double one: the operands widened (exact), the result rounded
    once."""
    def rounded(b: ir.IRBuilder, module: ir.Module, *operands: ir.Value) -> ir.Value:
        wide = routine(b, module, *(b.fpext(x, F64) for x in operands))
        return b.fptrunc(wide, operands[0].type)
    return rounded


#: float64 unary routines: double-double, tanh in double
FLOAT64 = {**vmath64.UNARY, "tanh": tanh64}
#: float32 unary routines: in float32 lanes, from the float32 reduction, else in double
FLOAT32 = {**{op: in_double(fn) for op, fn in VIA_DOUBLE.items()}, "exp": exp32, "log": log32,
           "log2": log2_32, "log10": log10_32, "log1p": log1p32, "tanh": tanh32,
           **TRIG32["full"]}
#: per unary loop operator, its routine per dtype
UNARY_ROUTINES: dict[str, dict[str, Routine]] = {
    op: {dtype: table[op] for dtype, table in (("float32", FLOAT32), ("float64", FLOAT64))
         if op in table} for op in sorted(FLOAT32.keys() | FLOAT64.keys())}


def ldexp32(b: ir.IRBuilder, module: ir.Module, a: ir.Value, c: ir.Value) -> ir.Value:
    """float32 ``a`` times 2^``c`` (an int64): exact in double, rounded once."""
    bound = ir.Constant(I64, 300)
    n = b.select(b.icmp_signed(">", c, bound), bound, c)
    n = b.select(b.icmp_signed("<", n, ir.Constant(I64, -300)), ir.Constant(I64, -300), n)
    scale = b.bitcast(b.shl(b.add(n, ir.Constant(I64, 1023)), ir.Constant(I64, 52)), F64)
    return b.fptrunc(b.fmul(b.fpext(a, F64), scale), a.type)


#: per binary loop operator, its routine per dtype
BINARY_ROUTINES: dict[str, dict[str, Routine]] = {
    op: {"float64": fn, "float32": in_double(BINARY_VIA_DOUBLE[op])}
    for op, fn in vmath64.BINARY.items()}
BINARY_ROUTINES["ldexp"] = {"float64": vmath64.ldexp, "float32": ldexp32}
# Python's float ``**``: C's pow itself, called (``libm.py``)
BINARY_ROUTINES["python_pow"] = {"float64": python_pow, "float32": python_pow}


@unary(*UNARY_ROUTINES)
def unary_function(em: Emitter, e: Unary, x: ir.Value) -> ir.Value:
    if e.dtype == "float32" and e.op in TRIG32["short"] and "float32" in em.spec.trig_checked:
        return TRIG32["short"][e.op](em.builder, em.fn.module, x)
    return by_dtype(e.op, UNARY_ROUTINES[e.op], e.dtype)(em.builder, em.fn.module, x)


@binary(*BINARY_ROUTINES)
def binary_function(em: Emitter, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
    return by_dtype(e.op, BINARY_ROUTINES[e.op], e.dtype)(em.builder, em.fn.module, a, c)
