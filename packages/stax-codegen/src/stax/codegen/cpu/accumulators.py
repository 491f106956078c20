"""Emitters of reductions and scans: each reduction kind's accumulator (its first value, one
step, its result) and each scan kind's step. A float sum or product steps with ``reassoc`` — the
only fast-math flag Stax sets — so LLVM's loop vectorizer widens it with several accumulators;
a scan steps in NumPy's order (no flag: NumPy's bits), and so does a reduction while the
emitter's ``in_order`` is set (a columns nest: vectors run across the columns, each column's
sum row after row as NumPy's)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from llvmlite import ir

from stax.loop import ComputedBuffer

from .arithmetic import extreme
from .extremes import identity_hidden, nan_bits, nan_flag_type, nan_seen
from .registry import Accumulator, Emitter, reduction, scan
from .types import is_float, value_type


def _first(em: Emitter, result: Sequence[ir.Value]) -> ir.Value:
    return result[0]


def _reassociable(em: Emitter) -> tuple[str, ...]:
    return () if em.in_order else ("reassoc",)


def _sum_identity(em: Emitter, node: ComputedBuffer) -> list[ir.Value]:
    dtype = node.dtype
    return [ir.Constant(value_type(dtype), False if dtype == "bool" else
                        (0.0 if is_float(dtype) else 0))]


def _sum_step(em: Emitter, node: ComputedBuffer, accs: Sequence[ir.Value], x: ir.Value,
              checked: bool) -> list[ir.Value]:
    b, acc = em.builder, accs[0]
    if node.dtype == "bool":
        return [b.or_(acc, x)]
    if is_float(node.dtype):
        total = b.fadd(acc, x, flags=_reassociable(em))
        if checked:
            em.after_step(node, total, acc, x)
        return [total]
    return [b.add(acc, x)]


def _prod_identity(em: Emitter, node: ComputedBuffer) -> list[ir.Value]:
    return [ir.Constant(value_type(node.dtype), 1.0 if is_float(node.dtype) else 1)]


def _prod_step(em: Emitter, node: ComputedBuffer, accs: Sequence[ir.Value], x: ir.Value,
               checked: bool) -> list[ir.Value]:
    b, acc = em.builder, accs[0]
    if node.dtype == "bool":
        return [b.and_(acc, x)]
    if not is_float(node.dtype):
        return [b.mul(acc, x)]
    total = b.fmul(acc, x, flags=_reassociable(em))
    if checked:
        em.after_step(node, total, acc, x)
    return [total]


def _extreme_identity(em: Emitter, node: ComputedBuffer) -> list[ir.Value]:
    """The value every element beats (the smallest for max, the largest for min), and no NaN
    seen yet."""
    kind, dtype = node.data.reduction_type, node.dtype
    typ = value_type(dtype)
    if dtype == "bool":
        first = ir.Constant(typ, kind == "min")
    elif is_float(dtype):
        first = ir.Constant(typ, float("-inf") if kind == "max" else float("inf"))
    else:
        info = np.iinfo(dtype)
        first = ir.Constant(typ, int(info.min if kind == "max" else info.max))
    return [first, ir.Constant(nan_flag_type(typ), 0)]


def _extreme_step(em: Emitter, node: ComputedBuffer, accs: Sequence[ir.Value], x: ir.Value,
                  checked: bool) -> list[ir.Value]:
    """(the extreme of the numbers so far, whether a NaN was seen): a NaN anywhere wins, as in
    NumPy, decided after the loop (``_extreme_result``). The numbers' extreme is ``maxnum`` with
    ``nnan nsz`` (a NaN never reaches it): one ``vmaxps`` a vector, where ``llvm.maximum``
    (NaN-propagating, -0 < +0) took six instructions and a chain of about nine cycles; a row
    max of 4096 float32 was a fifth of softmax's time on an Intel host. No max instruction
    sees a NaN, so none raises the CPU's invalid flag. Only a zero's sign can differ from
    NumPy (which keeps whichever zero comes last). Given the extreme alone (a columns nest keeps
    one value a column, in memory, ``nests.py``), a float steps by the NaN-propagating
    ``llvm.maximum``/``minimum`` instead."""
    b, acc = em.builder, accs[0]
    kind, dtype = node.data.reduction_type, node.dtype
    nan = accs[1:]
    if dtype == "bool":
        return [b.or_(acc, x) if kind == "max" else b.and_(acc, x), *nan]
    identity = _extreme_identity(em, node)[0]
    if not is_float(dtype):
        x = identity_hidden(em, x, identity)
        return [extreme(em, "maximum" if kind == "max" else "minimum", acc, x, dtype), *nan]
    if not nan:
        fn = em.fn.module.declare_intrinsic(f"llvm.{kind}imum", [acc.type],
                                            ir.FunctionType(acc.type, [acc.type] * 2))
        return [b.call(fn, [acc, identity_hidden(em, x, identity)])]
    [nan] = nan
    number = b.fcmp_ordered("ord", x, x)  # quiet: no flag for a quiet NaN
    numbers = b.select(number, identity_hidden(em, x, identity), em.hide(identity))
    fn = em.fn.module.declare_intrinsic(f"llvm.{kind}num", [acc.type],
                                        ir.FunctionType(acc.type, [acc.type] * 2))
    return [b.call(fn, [acc, numbers], fastmath=("nnan", "nsz")), nan_bits(em, number, x, nan)]


def _extreme_result(em: Emitter, result: Sequence[ir.Value]) -> ir.Value:
    extreme_, nan = result
    if not isinstance(extreme_.type, ir.HalfType | ir.FloatType | ir.DoubleType):
        return extreme_
    return em.builder.select(nan_seen(em, nan), ir.Constant(extreme_.type, float("nan")),
                             extreme_)


reduction("sum", Accumulator(1, _sum_identity, _sum_step, _first))
reduction("prod", Accumulator(1, _prod_identity, _prod_step, _first))
reduction("max", Accumulator(2, _extreme_identity, _extreme_step, _extreme_result))
reduction("min", Accumulator(2, _extreme_identity, _extreme_step, _extreme_result))


@scan("sum")
def running_sum(em: Emitter, dtype: str, previous: ir.Value, value: ir.Value) -> ir.Value:
    b = em.builder
    return (b.fadd if is_float(dtype) else b.add)(previous, value)


@scan("prod")
def running_product(em: Emitter, dtype: str, previous: ir.Value, value: ir.Value) -> ir.Value:
    b = em.builder
    return (b.fmul if is_float(dtype) else b.mul)(previous, value)


@scan("max")
def running_maximum(em: Emitter, dtype: str, previous: ir.Value, value: ir.Value) -> ir.Value:
    """``np.maximum(previous, value)`` (``arithmetic.extreme``): a NaN so far stays, a NaN
    value comes in, a tie takes the value (signed zeros as NumPy's)."""
    return extreme(em, "maximum", previous, value, dtype)


@scan("min")
def running_minimum(em: Emitter, dtype: str, previous: ir.Value, value: ir.Value) -> ir.Value:
    return extreme(em, "minimum", previous, value, dtype)
