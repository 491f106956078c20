"""Emitters of the math functions (exp, log, the trigonometric and hyperbolic functions, cbrt,
hypot, pow, arctan2, logaddexp, ldexp): which routine computes each loop operator in each float
dtype. float64 in double-double steps within 1 ulp (``vmath64``; tanh in double, ``vmath``);
float32 in float32 lanes where a fitted polynomial reaches the bound (exp, log, log2, log10,
log1p, tanh), sin, cos and tan from the short reduction where the program checks their arguments
(``KernelSpec.trig_checked``) and Payne–Hanek's otherwise (``vmath.trig32``), else computed in
double and rounded once."""

from __future__ import annotations

import functools
from collections.abc import Callable

from llvmlite import ir

from stax.loop import Binary, Unary

from . import vmath64
from .fpevents import NAN_QUIET, QUIET_ROUTINES, ROUTINE_VALUE
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


#: what a NaN operand is replaced by inside a routine (in every routine's domain, of a finite
#: result): 0.5, but arccosh's domain starts at 1
_STAND_IN = {"arccosh": 2.0}
#: per binary routine shielded from NaN operands, its result where one is NaN, from quiet
#: operations (C99's and NumPy's: ``hypot(inf, nan)`` is inf; else a NaN of the operands)
_NAN_RESULTS: dict[str, Callable[[ir.IRBuilder, ir.Value, ir.Value], ir.Value]] = {
    "hypot": lambda b, a, c: b.select(
        b.or_(_infinite(b, a), _infinite(b, c)), ir.Constant(a.type, float("inf")), b.fadd(a, c)),
    "arctan2": lambda b, a, c: b.fadd(a, c),
}


def _shields(e: Unary | Binary) -> bool:
    """Whether the routine of ``e`` takes NaN operands behind a shield (``fpevents.NAN_QUIET``,
    less those quiet themselves)."""
    return e.op in NAN_QUIET.get(e.dtype, ()) and e.op not in QUIET_ROUTINES.get(e.dtype, ())


def _infinite(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    fabs = b.module.declare_intrinsic("llvm.fabs", [x.type])
    return b.fcmp_ordered("==", b.call(fabs, [x]), ir.Constant(x.type, float("inf")))


def _shielded(b: ir.IRBuilder, op: str, operands: tuple[ir.Value, ...]
              ) -> tuple[ir.Value, tuple[ir.Value, ...]]:
    """(whether no operand is NaN, the operands with a NaN replaced by a stand-in): a routine's
    range reduction compares (x86's ``vcmpltpd`` is a signaling compare: the invalid flag on a
    quiet NaN) and converts (``cvttpd2qq`` of a NaN: invalid), and a fast kernel reading the
    CPU's flags could not tell that from an event: every call over NaN data (missing values,
    which make no event) ran again with the precise kernels (``np.tanh(x) * 2``, 3 elements: 4.7
    us against 0.35). ``ord`` is a quiet compare. A signaling NaN comes back as it went in
    (NumPy's routines quiet it, and warn for some)."""
    # a constant operand (``x ** 2.5``) stays one: the routine folds what it computes from it
    varying = [x for x in operands if not isinstance(x, ir.Constant)]
    if not varying:
        return ir.Constant(ir.IntType(1), 1), operands
    numbers = functools.reduce(b.and_, [b.fcmp_ordered("ord", x, x) for x in varying])
    stand_in = _STAND_IN.get(op, 0.5)
    return numbers, tuple(x if isinstance(x, ir.Constant) else
                          b.select(numbers, x, ir.Constant(x.type, stand_in)) for x in operands)


@unary(*UNARY_ROUTINES)
def unary_function(em: Emitter, e: Unary, x: ir.Value) -> ir.Value:
    b, module = em.builder, em.fn.module
    if e.dtype == "float32" and e.op in TRIG32["short"] and "float32" in em.spec.trig_checked:
        return TRIG32["short"][e.op](b, module, x)
    routine = by_dtype(e.op, UNARY_ROUTINES[e.op], e.dtype)
    if not _shields(e):
        return routine(b, module, x)
    numbers, (safe,) = _shielded(b, e.op, (x,))
    return _unshielded(b, numbers, routine(b, module, safe), x)  # f(nan) is that nan


@binary(*BINARY_ROUTINES)
def binary_function(em: Emitter, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
    b, module = em.builder, em.fn.module
    routine = by_dtype(e.op, BINARY_ROUTINES[e.op], e.dtype)
    if not _shields(e):
        return routine(b, module, a, c)
    numbers, safe = _shielded(b, e.op, (a, c))
    return _unshielded(b, numbers, routine(b, module, *safe), _NAN_RESULTS[e.op](b, a, c))


def _unshielded(b: ir.IRBuilder, numbers: ir.Value, value: ir.Value, nan: ir.Value
                ) -> ir.Value:
    """The routine's ``value`` where no operand is NaN, else ``nan``. The select carries the
    routine's own value (``ROUTINE_VALUE``): finite wherever no event happened, NaN operands
    included (their stand-ins'), it is what a fast kernel tests (``fpchecks``), two
    instructions as a chain's end test, instead of the select's value where no operand is NaN."""
    out = b.select(numbers, value, nan)
    setattr(out, ROUTINE_VALUE, value)
    return out

