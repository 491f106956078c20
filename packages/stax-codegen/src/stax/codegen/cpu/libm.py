"""Calls of C's ``pow`` from kernels: the ``python_pow`` loop operator (Python's float ``**``).

The kernels reach the very function CPython calls (``stax.ir.libm``) under a name of our own,
``stax_python_pow``, bound to its address in LLVM's symbol table: LLVM knows ``pow`` by name and
rewrites ``pow(x, 2.0)`` as ``x * x``, which differs from glibc's pow for ~0.09% of doubles,
and folds calls on constants by its own routine; it knows nothing of this name. The declaration
says the call reads and writes no memory and unwinds nothing, so a call on loop-invariant
operands (a scalar argument's power) is hoisted out of the loop and the loop still vectorizes.
"""

from __future__ import annotations

import functools

from llvmlite import ir

from stax.ir.libm import C_POW_ADDRESS

from . import host
from .types import FLOAT_TYPES, I64

F32, F64 = FLOAT_TYPES["float32"], FLOAT_TYPES["float64"]

SYMBOL = "stax_python_pow"


@functools.cache
def bind_symbols() -> None:
    """Bind ``SYMBOL`` to C's pow in this process (before any kernel using it is loaded: a
    cached object file resolves it when it is loaded too)."""
    host.llvm().add_symbol(SYMBOL, C_POW_ADDRESS)


def _declared(module: ir.Module) -> ir.Function:
    found = module.globals.get(SYMBOL)
    if found is None:
        found = ir.Function(module, ir.FunctionType(F64, [F64, F64]), SYMBOL)
        found.attributes.add("nounwind")
        found.attributes.add("readnone")
    return found


def python_pow(b: ir.IRBuilder, module: ir.Module, x: ir.Value, y: ir.Value) -> ir.Value:
    """``pow(x, y)`` in double, rounded once to float32 operands' type; lane by lane for
    vectors."""
    bind_symbols()
    fn = _declared(module)
    if isinstance(x.type, ir.VectorType):
        out = ir.Constant(x.type, ir.Undefined)
        for lane in range(x.type.count):
            at = ir.Constant(I64, lane)
            value = python_pow(b, module, b.extract_element(x, at), b.extract_element(y, at))
            out = b.insert_element(out, value, at)
        return out
    if x.type == F32:
        return b.fptrunc(b.call(fn, [b.fpext(x, F64), b.fpext(y, F64)]), F32)
    return b.call(fn, [x, y])
