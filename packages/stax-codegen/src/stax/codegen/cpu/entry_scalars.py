"""Scalar arguments the machine-code entry reads itself (``entry.py``, ``EntryPlan.scalars``).

A scalar-generic version (``stax.runtime.scalar_arguments``) takes a Python ``float`` or
``int``, or a NumPy scalar, as a 0-d input. The entry checks the object's exact type (the type
object's address sits in the input's context slot, where an array's dtype would) and copies the
value into a stack slot behind a stand-in array object (kernels read only the data pointer):

- ``float`` and NumPy's numeric scalars hold their value right after the object header
  (``PyFloatObject.ob_fval``, NumPy's ``obval``): copied as ``itemsize`` bytes; the offset is
  checked once per type through ctypes (``readable``), and a type it does not hold for gets no
  entry;
- ``int``: its layout changes between CPython versions, so the entry calls
  ``PyLong_AsLongLongAndOverflow``; a value outside ``+-2**53`` (which a float array's dtype
  would not take exactly) takes the slow path, as the key entry's check does.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import numpy as np
from llvmlite import ir

from .types import I8P, I64

#: where a ``float``'s value, and a NumPy scalar's, follows the object header
VALUE_OFFSET = float.__basicsize__ - 8
#: an ``int`` argument's range (``stax.runtime.scalar_arguments.EXACT_INT``)
EXACT_INT = 2 ** 53
I32 = ir.IntType(32)


def scalar_type(kind: str) -> type | None:
    """The Python type of a scalar input's kind (``"float"``, ``"int"``, ``"numpy.float32"``)."""
    if kind == "float":
        return float
    if kind == "int":
        return int
    if kind == "complex":
        return complex
    if kind.startswith("numpy."):
        return np.dtype(kind.split(".", 1)[1]).type
    return None


@functools.cache
def readable(kind: str, dtype: str) -> bool:
    """Whether the entry can read a scalar of ``kind`` passed as a 0-d ``dtype`` input."""
    if kind == "int":
        return dtype == "int64"
    t = scalar_type(kind)
    if kind in ("float", "complex"):
        if dtype != {"float": "float64", "complex": "complex128"}[kind]:
            return False
    elif t is None or np.dtype(t) != np.dtype(dtype) or np.dtype(dtype).kind not in "iufc":
        return False
    probe = t(3 - 2j) if np.dtype(dtype).kind == "c" else t(3)  # its value's bytes where the
    wanted = np.array(probe, dtype).tobytes()  # entry reads them (``Py_complex`` too)
    return ctypes.string_at(id(probe) + VALUE_OFFSET, len(wanted)) == wanted


def scalar_stand_in(b: ir.IRBuilder, fn: ir.Function, obj: ir.Value, kind: str, dtype: str,
                    data_offset: int, require: Callable[[ir.Value], None],
                    as_long: Callable[[], ir.Value]) -> ir.Value:
    """The stand-in array object kernels read ``obj``'s value through (its type checked by the
    caller); ``as_long``: ``PyLong_AsLongLongAndOverflow``'s address, for an ``int``."""
    size = np.dtype(dtype).itemsize
    word = ir.IntType(8 * size)
    with b.goto_entry_block():
        b.position_at_start(fn.entry_basic_block)
        number = b.alloca(word, name="scalar")
        holder = b.alloca(ir.ArrayType(ir.IntType(8), data_offset + 8), name="scalar_obj")
        overflow = b.alloca(I32, name="overflow") if kind == "int" else None
    if kind == "int":
        to_long = b.inttoptr(as_long(), ir.FunctionType(I64, [I8P, I32.as_pointer()]).as_pointer())
        b.store(ir.Constant(I32, 0), overflow)
        value = b.call(to_long, [obj, overflow])
        inside = b.icmp_unsigned("<", b.add(value, ir.Constant(I64, EXACT_INT - 1)),
                                 ir.Constant(I64, 2 * EXACT_INT - 1))  # -2**53 < v < 2**53
        require(b.and_(inside, b.icmp_signed("==", b.load(overflow), ir.Constant(I32, 0))))
    else:
        at = b.gep(obj, [ir.Constant(I64, VALUE_OFFSET)])
        value = b.load(b.bitcast(at, word.as_pointer()))
    b.store(value, number)
    held = b.bitcast(holder, I8P)
    b.store(b.bitcast(number, I8P), b.bitcast(b.gep(held, [ir.Constant(I64, data_offset)]),
                                              I8P.as_pointer()))
    return held
