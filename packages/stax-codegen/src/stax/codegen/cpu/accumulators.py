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

from stax.loop import ComputedBuffer, rvar

from .arithmetic import extreme
from .registry import TWO_PASSES, Accumulator, Emitter, reduction, scan
from .types import I64, is_float, is_signed, value_type


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
    return [first, ir.Constant(ir.IntType(1), 0)]


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
        x = _identity_hidden(em, x, identity)
        return [extreme(em, "maximum" if kind == "max" else "minimum", acc, x, dtype), *nan]
    if not nan:
        fn = em.fn.module.declare_intrinsic(f"llvm.{kind}imum", [acc.type],
                                            ir.FunctionType(acc.type, [acc.type] * 2))
        return [b.call(fn, [acc, _identity_hidden(em, x, identity)])]
    [nan] = nan
    number = b.fcmp_ordered("ord", x, x)  # quiet: no flag for a quiet NaN
    x = b.select(number, _identity_hidden(em, x, identity), em.hide(identity))
    fn = em.fn.module.declare_intrinsic(f"llvm.{kind}num", [acc.type],
                                        ir.FunctionType(acc.type, [acc.type] * 2))
    return [b.call(fn, [acc, x], fastmath=("nnan", "nsz")), b.or_(nan, b.not_(number))]


def _extreme_result(em: Emitter, result: Sequence[ir.Value]) -> ir.Value:
    extreme_, nan = result
    if not isinstance(extreme_.type, ir.HalfType | ir.FloatType | ir.DoubleType):
        return extreme_
    return em.builder.select(nan, ir.Constant(extreme_.type, float("nan")), extreme_)


def _identity_hidden(em: Emitter, x: ir.Value, identity: ir.Constant) -> ir.Value:
    """``x``, where it is a select with the reduction's identity as an arm (``np.nanmax``'s
    ``where(isnan(x), -inf, x)``, a masked ``x[m].max()``), with that arm hidden from LLVM:
    knowing ``max(acc, -inf) = acc``, InstCombine rewrites the step ``max(acc, c ? -inf : x)``
    into ``c ? acc : max(acc, x)``, a select of the accumulator that the loop vectorizer does not
    take as a reduction, and the loop ran scalar (300x1000 float64: 1.6 ms against NumPy's
    0.05). The identity, loop-invariant but unknown, keeps the select where it was."""
    if not isinstance(x, ir.Instruction) or x.opname != "select":
        return x
    cond, a, c = x.operands
    same = lambda v: isinstance(v, ir.Constant) and str(v) == str(identity)  # noqa: E731
    if not (same(a) or same(c)):
        return x
    hidden = em.hide(identity)
    return em.builder.select(cond, hidden if same(a) else a, hidden if same(c) else c)


def _arg_identity(em: Emitter, node: ComputedBuffer) -> list[ir.Value]:
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


def _arg_step(em: Emitter, node: ComputedBuffer, accs: Sequence[ir.Value], x: ir.Value,
              checked: bool) -> list[ir.Value]:
    """NumPy's rule: the first index of the extreme value, and a NaN beats every number (the
    first NaN wins). Carries (best value, its flat index in the reduced loops)."""
    b = em.builder
    best, where = accs
    dtype = node.data.body.dtype
    greater = node.data.reduction_type == "argmax"
    if is_float(dtype):
        better = b.fcmp_ordered(">" if greater else "<", x, best)
        nan_first = b.and_(b.fcmp_unordered("uno", x, x), b.fcmp_ordered("ord", best, best))
        better = b.or_(better, nan_first)
    else:
        cmp = b.icmp_signed if is_signed(dtype) else b.icmp_unsigned
        better = cmp(">" if greater else "<", x, best)
    return [b.select(better, x, best), b.select(better, linear_index(em, node), where)]


def linear_index(em: Emitter, node: ComputedBuffer) -> ir.Value:
    """The flat index of the reduced loops' current element (C order)."""
    b = em.builder
    ranges = node.data.reduction_ranges
    linear: ir.Value = ir.Constant(I64, 0)
    for j in range(len(ranges)):
        step = 1
        for extent in ranges[j + 1:]:
            step *= extent
        linear = b.add(linear, b.mul(em.vars[rvar(j)], ir.Constant(I64, step)))
    return linear


# -- an arg reduction in two passes (``KernelEmitter.reductions``): the extreme value and
# -- whether a NaN was seen, reductions LLVM vectorizes, then the first index holding the extreme
# -- (or the first NaN), a vectorized unsigned minimum. One pass carries (best, index) through a
# -- select per element, a chain the loop vectorizer does not take: 1M float64 argmax ran
# -- 4.8 ms, NumPy 0.1. NaNs are kept from the max instructions, which raise the CPU's invalid
# -- flag for a quiet NaN: a kernel that reads the flags would say ``MAYBE`` on NaN data.
def _arg_extreme_identity(em: Emitter, node: ComputedBuffer) -> list[ir.Value]:
    return [_arg_identity(em, node)[0], ir.Constant(ir.IntType(1), 0)]


def _arg_extreme_step(em: Emitter, node: ComputedBuffer, accs: Sequence[ir.Value], x: ir.Value,
                      checked: bool) -> list[ir.Value]:
    """(the extreme of the numbers so far, whether a NaN was seen)."""
    b, (acc, nan) = em.builder, accs
    dtype, greater = node.data.body.dtype, node.data.reduction_type == "argmax"
    if dtype == "bool":
        return [b.or_(acc, x) if greater else b.and_(acc, x), nan]
    if is_float(dtype):
        number = b.fcmp_ordered("ord", x, x)  # quiet
        # the identity hidden from LLVM, which would fold the select out of the reduction
        x = b.select(number, x, em.hide(_arg_identity(em, node)[0]))  # (``_identity_hidden``)
        fn = em.fn.module.declare_intrinsic(f"llvm.{'max' if greater else 'min'}num",
                                            [acc.type], ir.FunctionType(acc.type, [acc.type] * 2))
        # ``nnan nsz`` as in ``_extreme_step``: pass two compares with ``==``, where zeros tie
        return [b.call(fn, [acc, x], fastmath=("nnan", "nsz")), b.or_(nan, b.not_(number))]
    return [extreme(em, "maximum" if greater else "minimum", acc, x, dtype), nan]


def first_at(em: Emitter, node: ComputedBuffer, x: ir.Value, extreme_: Sequence[ir.Value],
             past: ir.Value) -> ir.Value:
    """Pass two's candidate: the element's flat index where ``x`` is the extreme (the first
    NaN where one was seen), else ``past`` the end (the loop keeps their unsigned minimum)."""
    b = em.builder
    best, nan = extreme_
    if is_float(node.data.body.dtype):
        hit = b.select(nan, b.fcmp_unordered("uno", x, x), b.fcmp_ordered("==", x, best))
    else:
        hit = b.icmp_unsigned("==", x, best)
    return b.select(hit, linear_index(em, node), past)


reduction("sum", Accumulator(1, _sum_identity, _sum_step, _first))
reduction("prod", Accumulator(1, _prod_identity, _prod_step, _first))
reduction("max", Accumulator(2, _extreme_identity, _extreme_step, _extreme_result))
reduction("min", Accumulator(2, _extreme_identity, _extreme_step, _extreme_result))
reduction("argmax", Accumulator(2, _arg_identity, _arg_step, lambda em, result: result[1]))
reduction("argmin", Accumulator(2, _arg_identity, _arg_step, lambda em, result: result[1]))
for _kind in ("argmax", "argmin"):  # pass one: (the extreme number, a NaN seen)
    TWO_PASSES[_kind] = (Accumulator(2, _arg_extreme_identity, _arg_extreme_step,
                                      lambda em, result: list(result)), first_at)


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
