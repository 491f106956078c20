"""argmax/argmin in one pass over memory and a block (``KernelEmitter.reductions``).

NumPy's rule: the first index of the extreme value, a NaN beating every number (the first
NaN). One pass carrying (best, index) through a select per element is a chain LLVM's loop
vectorizer does not take (1M float64 argmax ran 4.8 ms, NumPy 0.1); two full passes (the
extreme, then the first index holding it by an unsigned minimum of indices) read the data twice
and, on AVX2, emulate the 64-bit minimum (no ``vpminuq``): 100,000 float32 ran 33 us against
NumPy's 10.4.

Here the innermost reduced loop runs in blocks (``blocks.py``). Pass one: each block's extreme
and whether it holds a NaN, a reduction LLVM vectorizes, from fresh accumulators; at the block's
end, a block whose extreme beats the best so far (strictly: equal values keep the earlier
block), or the first block holding a NaN, becomes the best, and its first flat index is kept.
Pass two reads that one block again (from cache) for the first element equal to the best (the
first NaN where one was seen). The numbers' extreme leaves NaNs out (they would raise the CPU's
invalid flag through the max instructions: a kernel reading the flags would say ``MAYBE`` on
NaN data); zeros tie under ``==``, so either zero as a block's extreme finds the first zero."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from llvmlite import ir

from stax.loop import ComputedBuffer, rvar

from ..rowshare import expr_key
from .arithmetic import extreme
from .blocks import Restarted
from .extremes import identity_hidden, nan_bits, nan_flag_type, nan_seen
from .registry import Accumulator, Emitter, reduction, two_passes
from .types import I64, is_float, is_signed, value_type

KINDS = ("argmax", "argmin")


def arg_identity(em: Emitter, node: ComputedBuffer) -> list[ir.Value]:
    """(the value every element beats or ties, the first index)."""
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


def _one_pass_step(em: Emitter, node: ComputedBuffer, accs: Sequence[ir.Value], x: ir.Value,
                   checked: bool) -> list[ir.Value]:
    """The reduction in one pass, carrying (best value, its flat index in the reduced loops)
    through a select per element (the registered accumulator, ``registry.REDUCTIONS``; nests
    take the two passes)."""
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
        linear = b.add(linear, b.mul(em.vars[rvar(j)], em.size(step)))
    return linear


def _identity(em: Emitter, node: ComputedBuffer) -> list[ir.Value]:
    """(the extreme of the numbers so far, a NaN seen, the first flat index of the best
    block; the NaN flag as ``accumulators.nan_flag_type`` says)."""
    first = arg_identity(em, node)[0]
    return [first, ir.Constant(nan_flag_type(first.type), 0), ir.Constant(I64, 0)]


def _step(em: Emitter, node: ComputedBuffer, accs: Sequence[ir.Value], x: ir.Value,
          checked: bool) -> list[ir.Value]:
    b, (acc, nan, where) = em.builder, accs
    dtype, greater = node.data.body.dtype, node.data.reduction_type == "argmax"
    if dtype == "bool":
        return [b.or_(acc, x) if greater else b.and_(acc, x), nan, where]
    if is_float(dtype):
        number = b.fcmp_ordered("ord", x, x)  # quiet
        # the identity hidden from LLVM, which would fold the select out of the reduction
        # (``extremes.identity_hidden``; a masked argmax's body is such a select too)
        identity = arg_identity(em, node)[0]
        numbers = b.select(number, identity_hidden(em, x, identity), em.hide(identity))
        fn = em.fn.module.declare_intrinsic(f"llvm.{'max' if greater else 'min'}num",
                                            [acc.type], ir.FunctionType(acc.type, [acc.type] * 2))
        # ``nnan nsz`` as in ``_extreme_step``: pass two compares with ``==``, where zeros tie
        return [b.call(fn, [acc, numbers], fastmath=("nnan", "nsz")),
                nan_bits(em, number, x, nan), where]
    return [extreme(em, "maximum" if greater else "minimum", acc, x, dtype), nan, where]


def restart(em: Emitter, node: ComputedBuffer, position: int, var: str) -> Restarted:
    """The arg reduction whose pass-one values start at ``position`` of a nest's carried
    values, in blocks of its innermost reduced loop ``var``: each block's extreme against the
    best so far."""
    b = em.builder
    dtype, greater = node.data.body.dtype, node.data.reduction_type == "argmax"
    best_at, nan_at, where_at = position, position + 1, position + 2

    def end(k: ir.Value, low: ir.Value, before: Sequence[ir.Value],
            after: Sequence[ir.Value]) -> dict[int, ir.Value]:
        best, nan = before[best_at], nan_seen(em, before[nan_at])
        extreme_, has_nan = after[best_at], nan_seen(em, after[nan_at])
        symbol = ">" if greater else "<"
        if is_float(dtype):
            # a NaN found first takes it; once one is found nothing does
            beats = b.and_(b.not_(has_nan), b.fcmp_ordered(symbol, extreme_, best))
            take = b.and_(b.not_(nan), b.or_(has_nan, beats))
        else:
            cmp = b.icmp_signed if is_signed(dtype) and dtype != "bool" else b.icmp_unsigned
            take = cmp(symbol, extreme_, best)
        inner = em.vars[var]
        em.vars[var] = low  # the block's first element
        first = linear_index(em, node)
        em.vars[var] = inner
        return {best_at: b.select(take, extreme_, best), nan_at: b.or_(before[nan_at],
                                                                        after[nan_at]),
                where_at: b.select(take, first, before[where_at])}
    return Restarted((best_at, nan_at), tuple(_identity(em, node)[:2]), end)


def _found(em: Emitter, node: ComputedBuffer, x: ir.Value, best: ir.Value, nan: ir.Value,
           past: ir.Value) -> ir.Value:
    """Pass two's candidate: the element's flat index where ``x`` is the extreme (the first
    NaN where one was seen), else ``past`` the end (the loop keeps their unsigned minimum)."""
    b = em.builder
    if is_float(node.data.body.dtype):
        hit = b.select(nan_seen(em, nan), b.fcmp_unordered("uno", x, x),
                       b.fcmp_ordered("==", x, best))
    else:
        hit = b.icmp_unsigned("==", x, best)
    return b.select(hit, linear_index(em, node), past)


def first_index(em: Emitter, node: ComputedBuffer, pass_one: Sequence[ir.Value],
                block: int) -> ir.Value:
    """Pass two: the first flat index of the reduced loops holding the extreme, read in the
    block pass one kept (its first flat index ``where``; every loop around the innermost
    reduced one at its coordinate there, the innermost over at most ``block`` elements)."""
    b = em.builder
    best, nan, where = pass_one
    ranges = node.reduction_ranges
    outer_memo = em.memo
    umin = em.fn.module.declare_intrinsic("llvm.umin", [I64], ir.FunctionType(I64, [I64, I64]))
    past = em.size(math.prod(ranges))

    def candidate() -> ir.Value:
        return _found(em, node, em.value(node.data.body), best, nan, past)

    if not ranges:
        em.memo = dict(outer_memo)
        found = candidate()
        em.memo = outer_memo
        return found
    last = len(ranges) - 1
    kept = {rvar(j): em.vars.get(rvar(j)) for j in range(len(ranges))}
    stride: Any = 1
    for j in range(last, -1, -1):
        at = b.udiv(where, em.size(stride)) if j < last else where
        em.vars[rvar(j)] = b.urem(at, em.size(ranges[j])) if j else at
        stride = stride * ranges[j]
    low = em.vars[rvar(last)]
    end = b.add(low, ir.Constant(I64, block))
    extent = em.size(ranges[last])
    high = b.select(b.icmp_signed("<", end, extent), end, extent)

    def inner(accs: Sequence[ir.Value]) -> Sequence[ir.Value]:
        em.memo = dict(outer_memo)
        return [b.call(umin, [accs[0], candidate()])]

    em.memo = dict(outer_memo)
    [first] = em.loop(rvar(last), low, high, [past], inner)
    em.memo = outer_memo
    for var, value in kept.items():  # (the reduced loops' variables as pass one left them)
        if value is None:
            em.vars.pop(var, None)
        else:
            em.vars[var] = value
    return first


def shadows(nodes: Sequence[ComputedBuffer]) -> dict[int, int]:
    """The max and min reductions among a nest's ``nodes`` that an arg reduction's pass one
    computes (the same values over the same loops, the same direction: ``x.max()`` beside
    ``x.argmax()``, a split argmax's row extremes), by position: the arg reduction's."""
    args: dict[tuple[bool, object], int] = {}
    for i, n in enumerate(nodes):
        if n.data.reduction_type in KINDS:
            args.setdefault((n.data.reduction_type == "argmax", expr_key(n.data.body)), i)
    found: dict[int, int] = {}
    for i, n in enumerate(nodes):
        if n.data.reduction_type in ("max", "min") and args:
            j = args.get((n.data.reduction_type == "max", expr_key(n.data.body)))
            if j is not None and nodes[j].reduction_ranges == n.reduction_ranges:
                found[i] = j
    return found


def extreme_of(em: Emitter, pass_one: Sequence[ir.Value]) -> ir.Value:
    """The max (min) from an argmax's (argmin's) pass one: NaN where one was seen
    (``accumulators._extreme_result``: the same steps, so the same value)."""
    best, nan = pass_one[0], pass_one[1]
    if not isinstance(best.type, ir.HalfType | ir.FloatType | ir.DoubleType):
        return best
    return em.builder.select(nan_seen(em, nan), ir.Constant(best.type, float("nan")), best)


#: a shadow's accumulator: nothing carried (``shadows``)
SHADOW = Accumulator(0, lambda em, node: [], lambda em, node, accs, x, checked: [],
                     lambda em, result: None)


for _kind in KINDS:
    reduction(_kind, Accumulator(2, arg_identity, _one_pass_step, lambda em, result: result[1]))
    two_passes(_kind, Accumulator(3, _identity, _step, lambda em, result: list(result)))
