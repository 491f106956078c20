"""LLVM types of NumPy dtypes: registers (bool is i1) and memory (bool is one byte, as NumPy)."""

from __future__ import annotations

from llvmlite import ir

FLOAT_TYPES = {"float32": ir.FloatType(), "float64": ir.DoubleType()}
INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64,
            "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I64 = ir.IntType(64)
I8P = I8.as_pointer()


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_TYPES


def is_signed(dtype: str) -> bool:
    return dtype.startswith("int")


#: a complex buffer is addressed as an array of its parts (``stax.loop.complex_values``)
PART_TYPES = {"complex64": "float32", "complex128": "float64"}


def value_type(dtype: str) -> ir.Type:
    if dtype == "bool":
        return I1
    if dtype in FLOAT_TYPES:
        return FLOAT_TYPES[dtype]
    if dtype in PART_TYPES:  # a complex buffer's stores and pointers: its parts' float
        return FLOAT_TYPES[PART_TYPES[dtype]]
    return ir.IntType(INT_BITS[dtype])


def memory_type(dtype: str) -> ir.Type:
    return I8 if dtype == "bool" else value_type(dtype)
