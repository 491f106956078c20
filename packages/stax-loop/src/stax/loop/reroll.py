"""Rerolling: a run of region updates that an unrolled Python loop made becomes one loop again.

Capture unrolls ``for i in range(n): out[i, :] = x[i] * w + b`` into n assignments, and lowering
makes each a region update of the same buffer (``updates.py``): n kernels, n compilations (a
60-row fill took a second to compile) and n launches. Their bodies differ only in constants that
step by the same amount from one to the next (row ``i``'s offsets), so they are one kernel with
one more loop, outermost, over the iteration ``i``: the loop the program wrote.

A run qualifies when its updates follow one another in the program, each updating the one
before, over the same ranges, and their expressions are the same but for affine constants
(indices) that grow by the same step at each iteration. The rerolled buffer runs its new loop in
order (``ComputedBuffer.ordered``): an iteration may read what an earlier one stored
(``out[i] = max(out[i - 1], x[i])``), and a later one overwrites an earlier one's element, as
the program's own order does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .expr import Cast, Const, Expr, GuardedLoad, Index, Load, postorder, rewrite
from .index import Affine
from .ir import ComputedBuffer, ExternCall, Pointwise, xvar

#: the fewest updates worth one loop (two kernels cost about what one loop of two costs)
MIN_RUN = 3


def reroll_updates(buffers: Sequence[ComputedBuffer | ExternCall]) -> list[ComputedBuffer |
                                                                         ExternCall]:
    """``buffers`` with each run of similar region updates made one ordered update."""
    out: list[ComputedBuffer | ExternCall] = []
    i = 0
    while i < len(buffers):
        run = _run_from(buffers, i)
        if len(run) >= MIN_RUN:
            out.append(_rerolled(run))
            i += len(run)
        else:
            out.append(buffers[i])
            i += 1
    return out


def _updates(b: Any) -> bool:
    return isinstance(b, ComputedBuffer) and b.updates is not None and \
        b.store_offset is None and not b.ordered and isinstance(b.data, Pointwise)


def _run_from(buffers: Sequence[Any], start: int) -> list[ComputedBuffer]:
    """The longest run of rerollable updates starting at ``start``."""
    first = buffers[start]
    if not _updates(first):
        return [first]
    run = [first]
    step: list[int] | None = None
    for b in buffers[start + 1:]:
        if not _updates(b) or b.updates != run[-1].name or \
                (b.shape, b.dtype, b.strides, b.ranges) != \
                (first.shape, first.dtype, first.strides, first.ranges):
            break
        deltas = _deltas(run[-1], b)
        if deltas is None or (step is not None and deltas != step):
            break
        step = deltas
        run.append(b)
    return run


def _signature(node: ComputedBuffer) -> tuple[list[Any], list[int], list[Expr | None]]:
    """The shape of ``node`` (every field but affine constants, operands by position, the
    buffer it updates named ``@``), its affine constants, and the node holding each (None: the
    store index), over its body's DAG in operand-first order."""
    order = list(postorder(node.data.body))
    position = {id(e): i for i, e in enumerate(order)}
    shape: list[Any] = [node.store_index.terms]
    numbers: list[int] = [node.store_index.const]
    holders: list[Expr | None] = [None]
    for e in order:
        kids = tuple(position[id(c)] for c in e.children())
        if isinstance(e, Load | Index):
            buffer = getattr(e, "buffer", None)
            shape.append((type(e).__name__, "@" if buffer == node.updates else buffer,
                          e.index.terms, e.dtype, kids))
            numbers.append(e.index.const)
            holders.append(e)
        elif isinstance(e, Const) and _counted(e):  # ``i * x``: the loop index as a number
            shape.append(("count", e.dtype))
            numbers.append(int(e.value))
            holders.append(e)
        elif isinstance(e, Const):
            shape.append(("const", repr(e.value), e.dtype))
        else:
            buffer = getattr(e, "buffer", None)
            shape.append((type(e).__name__, getattr(e, "op", None),
                          "@" if buffer == node.updates else buffer, e.dtype, kids))
    return shape, numbers, holders


def _counted(e: Const) -> bool:
    """Whether a constant may step with the iteration: a whole number (no -0.0) that its dtype
    holds exactly, so ``Cast(Index(c0 + k * step))`` gives each iteration's constant bit for
    bit (a Python loop index multiplying or added to a value)."""
    v = e.value
    if isinstance(v, bool) or not isinstance(v, (int, float)) or e.dtype == "bool":
        return False
    if isinstance(v, float) and (not v.is_integer() or (v == 0 and str(v).startswith("-"))):
        return False
    limit = 2 ** 24 if e.dtype == "float32" else 2 ** 53 if e.dtype == "float64" else 2 ** 31
    return abs(v) < limit


def _deltas(a: ComputedBuffer, b: ComputedBuffer) -> list[int] | None:
    """How ``b``'s affine constants exceed ``a``'s, when the two are otherwise the same."""
    shape_a, numbers_a, _ = _signature(a)
    shape_b, numbers_b, _ = _signature(b)
    if shape_a != shape_b:
        return None
    return [y - x for x, y in zip(numbers_a, numbers_b)]


def _rerolled(run: list[ComputedBuffer]) -> ComputedBuffer:
    """One update over ``(len(run),) + ranges``: the first update's expressions with every
    loop variable one further in, and each affine constant stepping with the new ``x0``."""
    first, last = run[0], run[-1]
    deltas = _deltas(run[0], run[1])
    assert deltas is not None
    _, _, holders = _signature(first)
    shift = {xvar(d): Affine.var(xvar(d + 1)) for d in range(len(first.ranges))}
    k = Affine.var(xvar(0))
    step = {id(h): d for h, d in zip(holders, deltas) if h is not None}

    def moved(index: Affine, delta: int) -> Affine:
        return index.substitute(shift) + k * delta

    def replace_node(e: Expr) -> Expr | None:
        if type(e) is Load:
            return Load(e.buffer, moved(e.index, step[id(e)]), e.dtype)
        if type(e) is GuardedLoad:
            return GuardedLoad(e.buffer, moved(e.index, step[id(e)]), e.dtype,
                               rewrite(e.guard, replace_node))
        if type(e) is Index:
            return Index(moved(e.index, step[id(e)]), e.dtype)
        if type(e) is Const and id(e) in step and step[id(e)] != 0:  # the constant of iteration k
            count = Index(k * step[id(e)] + int(e.value), "int64")
            return count if e.dtype == "int64" else Cast(count, e.dtype)
        return None
    body = rewrite(first.data.body, replace_node)
    return replace(last, store_index=moved(first.store_index, deltas[0]), updates=first.updates,
                   ordered=True, data=Pointwise((len(run), *first.ranges), body))
