"""Matrix products in the machine-code entry (``entry.py``): NumPy's ``cblas_?gemm`` called
between the kernels, as NumPy's ``matmul`` calls it (``blas.py``).

A plan's NumPy step ``a @ b`` (``operator.matmul``/``numpy.matmul``, written into the plan's
storage, ``extern_results.py``) is a ``Product`` when NumPy's own loop would make one ``gemm``
call of it: both operands 2-D float32 or float64 with every size above 1, each with contiguous
rows or columns, the result C-ordered. The entry then calls ``gemm`` with NumPy's arguments,
clearing the CPU's exception flags before and reading them after, as NumPy's ufunc machinery
does: an event goes into the call's events word like a kernel's, and the call goes the slow
way, where NumPy reports it. The GIL is released around a large product (as NumPy releases it)
and the thread pool's workers are sent to sleep first (``native_pool.rest``: BLAS has threads
of its own). Two arguments that are both operands must not be one array: NumPy computes a
matrix times its own transpose with ``syrk``, other bits (the guard sends such calls slow).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from llvmlite import ir

from stax.loop import BufferRef
from stax.loop.ir import decode_operands

from ..artifact import ExternPlan
from .blas import NO_TRANS, ROW_MAJOR, Gemm, numpys_gemm, operand
from .fpevents import MXCSR_CATEGORIES, MXCSR_TINY, clear_mxcsr_flags, flag_bits, read_mxcsr
from .types import I8P, I64

I32 = ir.IntType(32)
I8PP = I8P.as_pointer()
#: the products from which the GIL is released around ``gemm`` (multiply-adds): another
#: Python thread runs meanwhile, as beside NumPy's ``matmul``
RELEASE_GIL_WORK = 1 << 20
MATMUL_TARGETS = ("operator.matmul", "numpy.matmul")


@dataclass(frozen=True)
class Product:
    """One ``gemm`` call: ``out = a @ b`` over slots, with NumPy's arguments."""

    before: int          # how many of the plan's kernels run before it
    a: int
    b: int
    out: int
    m: int
    n: int
    p: int
    trans_a: int
    lda: int
    trans_b: int
    ldb: int
    ldc: int
    dtype: str


def refusal(externs: Any, loop: bool) -> str | None:
    """Why NumPy steps ``externs`` keep a program from an entry, or None: only matrix products
    are called from one, through NumPy's BLAS (probed once, 0.2 s: not for other steps)."""
    other = next((e.target for e in externs if e.method or e.target not in MATMUL_TARGETS), None)
    if other is not None:
        return f"it has NumPy steps ({other})"
    return "it has NumPy steps" if externs and (loop or numpys_gemm() is None) else None


def product(extern: ExternPlan, slots: dict[str, int], layouts: dict[str, Any], before: int,
            gemm: Gemm | None) -> Product | str:
    """The ``Product`` of NumPy step ``extern``, or why it is none. ``layouts``: each buffer's
    (shape, byte strides, dtype) as its kernels and NumPy see it."""
    if gemm is None:
        return "it has NumPy steps (NumPy's BLAS is not one the entry calls)"
    args = decode_operands(extern.args)
    if extern.method or extern.target not in MATMUL_TARGETS or decode_operands(extern.kwargs) \
            or not isinstance(args, tuple) or len(args) != 2 or \
            not all(isinstance(a, BufferRef) for a in args):
        return f"it has NumPy steps ({extern.target})"
    (a_shape, a_strides, a_dtype), (b_shape, b_strides, b_dtype) = \
        layouts[args[0].name], layouts[args[1].name]
    out_shape, out_strides, out_dtype = layouts[extern.buffer]
    dtype = np.dtype(out_dtype)
    if dtype.name not in gemm.address or {np.dtype(a_dtype), np.dtype(b_dtype)} != {dtype} or \
            len(a_shape) != 2 or len(b_shape) != 2 or 1 in (*a_shape, *b_shape) or \
            0 in (*a_shape, *b_shape) or a_shape[1] != b_shape[0] or \
            tuple(out_shape) != (a_shape[0], b_shape[1]):
        return "a matrix product is not one BLAS call"
    if args[0].name == args[1].name:
        return "a matrix product of an array with itself"
    first, second = operand(a_strides, a_shape, dtype.itemsize), \
        operand(b_strides, b_shape, dtype.itemsize)
    out = operand(out_strides, out_shape, dtype.itemsize)
    if first is None or second is None or out is None or out[0] != NO_TRANS:
        return "a matrix product's operand is not contiguous along an axis"
    return Product(before, slots[args[0].name], slots[args[1].name], slots[extern.buffer],
                   a_shape[0], a_shape[1], b_shape[1], first[0], first[1], second[0],
                   second[1], out[1], dtype.name)


def emit_product(b: ir.IRBuilder, fn: ir.Function, item: Product, data: Callable[[int], ir.Value],
                 word: Callable[[int], ir.Value], gemm_slot: int, thread_slots: tuple[int, int],
                 rest_slot: int | None, status: ir.Value | None, ilp64: bool) -> None:
    """The call of ``item`` (``data(slot)``: a slot's data pointer; ``word(i)``: context word
    ``i``): the pool put to rest, the flags cleared, ``gemm``, the flags ORed into ``status``."""
    integer = I64 if ilp64 else I32
    real = ir.DoubleType() if item.dtype == "float64" else ir.FloatType()
    if rest_slot is not None:
        b.call(b.inttoptr(word(rest_slot), ir.FunctionType(ir.VoidType(), []).as_pointer()), [])
    with b.goto_entry_block():
        b.position_at_start(fn.entry_basic_block)
        mxcsr = b.alloca(I32, name="blas_mxcsr")
    read_mxcsr(b, mxcsr)
    clear_mxcsr_flags(b, mxcsr)
    gemm_type = ir.FunctionType(ir.VoidType(), [I32, I32, I32, integer, integer, integer, real,
                                                I8P, integer, I8P, integer, real, I8P, integer])
    call = b.inttoptr(word(gemm_slot), gemm_type.as_pointer())
    release = math.prod((item.m, item.n, item.p)) >= RELEASE_GIL_WORK
    if release:
        save = b.inttoptr(word(thread_slots[0]), ir.FunctionType(I8P, []).as_pointer())
        thread = b.call(save, [])
    const = lambda v: ir.Constant(integer, v)  # noqa: E731
    b.call(call, [ir.Constant(I32, ROW_MAJOR), ir.Constant(I32, item.trans_a),
                  ir.Constant(I32, item.trans_b), const(item.m), const(item.p), const(item.n),
                  ir.Constant(real, 1.0), data(item.a), const(item.lda), data(item.b),
                  const(item.ldb), ir.Constant(real, 0.0), data(item.out), const(item.ldc)])
    if release:
        restore = b.inttoptr(word(thread_slots[1]),
                             ir.FunctionType(ir.VoidType(), [I8P]).as_pointer())
        b.call(restore, [thread])
    flags = read_mxcsr(b, mxcsr)
    if status is not None:
        b.store(b.or_(b.load(status), flag_bits(b, flags, MXCSR_CATEGORIES + MXCSR_TINY)),
                status)
