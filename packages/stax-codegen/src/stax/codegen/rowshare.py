"""Keep an expensive per-element value of a row kernel instead of computing it twice (spec §7.5).

In a row-fused kernel (softmax: max, then sum of ``exp(x - max)``, then ``exp(x - max) / sum``)
a later element-wise phase often recomputes the very value an earlier reduction phase
accumulated. When that value is expensive (it contains a transcendental) and the later node has
the value's dtype, the reduction phase also stores the value into the later node's own output
buffer, at the element the later node will write, and the later node reads it back from there
and overwrites it in place: same buffer, same size, same dtype, same index — the in-place
condition of §7.5. The row is still in cache, so the second pass costs a load instead of a
transcendental, and no extra buffer exists.

This is a decision about loop nests, not about the CPU: any backend that emits row kernels phase
by phase can apply it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from stax.ir import CostClass, ops_of_cost
from stax.loop import (
    Affine,
    Binary,
    Cast,
    ComputedBuffer,
    Const,
    Expr,
    GuardedLoad,
    Index,
    IndirectLoad,
    KindTable,
    Load,
    Pointwise,
    Reduction,
    Select,
    Ternary,
    Unary,
    postorder,
    rewrite,
    rvar,
    xvar,
)

#: ops whose per-element value is worth keeping instead of recomputing: those declared a math
#: routine (``CostClass.FUNCTION``; only a unary one is looked for, ``_expensive``)
EXPENSIVE = ops_of_cost(CostClass.FUNCTION)


@dataclass(frozen=True)
class Spill:
    """While reducing ``reduction``, also store its accumulated value into ``buffer[index]``."""

    reduction: str
    buffer: str
    index: Affine  # in the reduction's variables (x for the row, r within it)


def _rename(index: Affine, names: dict[str, str]) -> Affine:
    return Affine(tuple(sorted((names.get(v, v), c) for v, c in index.terms)), index.const)


Names = dict[str, str]
Memo = dict[int, object]


def _key(e: Expr, names: Names, memo: Memo) -> object:
    """A hashable structural key of ``e`` with loop variables renamed (expressions compare by
    identity, so two phases' copies of one value are told apart only by structure)."""
    found = memo.get(id(e))
    if found is not None:
        return found
    key = _KEYS(e, names, memo)
    memo[id(e)] = key
    return key


def expr_key(e: Expr) -> object:
    """A hashable structural key of ``e``: two expressions over the same loop variables with
    equal keys compute the same values."""
    return _key(e, {}, {})


#: each expression kind's key, from its fields and its operands' keys
_KEYS: KindTable[Callable[[Any, Names, Memo], object]] = KindTable("rowshare key", {
    IndirectLoad: lambda e, names, memo: ("indirect_load", e.buffer, e.dtype,
                                          _key(e.offset, names, memo)),
    GuardedLoad: lambda e, names, memo: ("guarded_load", e.buffer, _rename(e.index, names),
                                         e.dtype, _key(e.guard, names, memo)),
    Load: lambda e, names, memo: ("load", e.buffer, _rename(e.index, names), e.dtype),
    Index: lambda e, names, memo: ("index", _rename(e.index, names), e.dtype),
    Const: lambda e, names, memo: ("const", repr(e.value), e.dtype),
    Cast: lambda e, names, memo: ("cast", _key(e.x, names, memo), e.dtype),
    Unary: lambda e, names, memo: ("unary", e.op, _key(e.x, names, memo), e.dtype),
    Binary: lambda e, names, memo: ("binary", e.op, _key(e.a, names, memo),
                                    _key(e.b, names, memo), e.dtype),
    Ternary: lambda e, names, memo: ("ternary", e.op, *(_key(c, names, memo) for c in e.children()),
                                     e.dtype),
    Select: lambda e, names, memo: ("select", *(_key(c, names, memo) for c in e.children()),
                                    e.dtype),
})


def _expensive(e: Expr) -> bool:
    return any(isinstance(n, Unary) and n.op in EXPENSIVE for n in postorder(e))


def share_row_values(phases: Sequence[Sequence[ComputedBuffer]]
                     ) -> tuple[list[list[ComputedBuffer]], list[Spill]]:
    """The phases of one row kernel with recomputed expensive values replaced by loads of the
    value an earlier reduction phase stored, and the stores (spills) that reduction must add."""
    out = [list(phase) for phase in phases]
    spills: list[Spill] = []
    spilled: set[str] = set()
    for i, phase in enumerate(out):
        for red in phase:
            if not isinstance(red.data, Reduction) or red.data.reduction_type == "argmax" \
                    or red.data.reduction_type == "argmin" or not _expensive(red.data.body):
                continue
            rows = len(red.ranges)
            to_x = {rvar(j): xvar(rows + j) for j in range(len(red.reduction_ranges))}
            wanted = _key(red.data.body, to_x, {})
            full = red.ranges + red.reduction_ranges
            for later in out[i + 1:]:
                for k, node in enumerate(later):
                    if node.name in spilled or not isinstance(node.data, Pointwise) \
                            or node.ranges != full or node.dtype != red.data.body.dtype:
                        continue
                    memo: dict[int, object] = {}
                    match = next((e for e in postorder(node.data.body)
                                  if _key(e, {}, memo) == wanted), None)
                    if match is None:
                        continue
                    reread = Load(node.name, node.store_index, node.dtype)
                    body = rewrite(node.data.body, lambda e, m=match: reread if e is m else None)
                    later[k] = replace(node, data=Pointwise(node.ranges, body))
                    to_r = {x: r for r, x in to_x.items()}
                    spills.append(Spill(red.name, node.name, _rename(node.store_index, to_r)))
                    spilled.add(node.name)
                    break
                else:
                    continue
                break
    return out, spills
