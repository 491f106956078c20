"""The reduction kinds in Triton: how each starts its lane-wise accumulators (a looped
reduction), folds one block of elements into them, and reduces a block to one value per row
(``XBLOCK`` x 1: the whole row at once in a persistent reduction, the accumulators after the
loop in a looped one). Masked lanes never count: they take the kind's identity first.

NumPy's rules are kept where Triton's built-in reductions differ or are unspecified: a NaN
anywhere makes max and min NaN (Triton's ``tl.max`` may drop it; its interpreter's does), and
argmax/argmin return the first index of the extreme value, a NaN beating every number (the first
NaN). Each is composed of NaN-free built-in reductions, so the GPU and the interpreter agree. A
float sum or product is reduced as a tree (not NumPy's order): within the rounding bound of
spec §13. Only a zero's sign may differ from NumPy for max/min of -0.0 and 0.0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from stax.loop import ComputedBuffer

from .source import is_float

#: helper functions a kernel may call (``KernelWriter.helper``), emitted once per module
HELPERS = {
    "_product": "@triton.jit\ndef _product(a, b):\n    return a * b\n",
}

W = Any  # the kernel writer (``emit.KernelWriter``)


@dataclass(frozen=True)
class ReductionKind:
    """``start(w, node)``: assign the looped reduction's accumulators, return their names;
    ``update(w, node, accs, value, mask, index)``: the accumulators' new values after one block
    (``index``: each lane's position in the reduced extent); ``final(w, node, values, mask,
    index)``: the row's result from the row's block (persistent: ``[value]`` under ``mask``) or
    from the accumulators (``mask`` None)."""

    start: Callable[[W, ComputedBuffer], list[str]]
    update: Callable[[W, ComputedBuffer, list[str], str, str, str], list[str]]
    final: Callable[[W, ComputedBuffer, list[str], str | None, str | None], str]


def _where(w: W, mask: str | None, v: str, fill: Any, dtype: str) -> str:
    return v if mask is None else f"tl.where({mask}, {v}, {w.const(fill, dtype)})"


def _dtype(node: ComputedBuffer) -> str:
    return node.data.body.dtype


def _extreme(dtype: str, largest: bool) -> Any:
    """The value every element beats (or ties): -inf / the smallest integer for a maximum."""
    if is_float(dtype):
        return float("-inf") if largest else float("inf")
    if dtype == "bool":
        return 0 if largest else 1
    info = np.iinfo(dtype)
    return int(info.min if largest else info.max)


# -- bool: any (sum, max) and all (prod, min), counted in int8 -----------------------------------

def _logical(any_: bool) -> ReductionKind:
    fill = not any_

    def start(w: W, node: ComputedBuffer) -> list[str]:
        return [w.assign(w.full(int(fill), "int8"), "acc")]

    def update(w: W, node: ComputedBuffer, accs: list[str], v: str, mask: str, index: str
               ) -> list[str]:
        bit = f"{_where(w, mask, v, fill, 'bool')}.to(tl.int8)"
        return [f"{accs[0]} {'|' if any_ else '&'} {bit}"]

    def final(w: W, node: ComputedBuffer, values: list[str], mask: str | None,
              index: str | None) -> str:
        bits = values[0] if mask is None else f"{_where(w, mask, values[0], fill, 'bool')}.to(tl.int8)"
        return f"tl.{'max' if any_ else 'min'}({bits}, 1)[:, None] != 0"
    return ReductionKind(start, update, final)


# -- sum and prod ----------------------------------------------------------------------------------

def _arithmetic(op: str) -> ReductionKind:
    identity = 0 if op == "+" else 1

    def start(w: W, node: ComputedBuffer) -> list[str]:
        return [w.assign(w.full(identity, _dtype(node)), "acc")]

    def update(w: W, node: ComputedBuffer, accs: list[str], v: str, mask: str, index: str
               ) -> list[str]:
        return [f"{accs[0]} {op} {_where(w, mask, v, identity, _dtype(node))}"]

    def final(w: W, node: ComputedBuffer, values: list[str], mask: str | None,
              index: str | None) -> str:
        block = _where(w, mask, values[0], identity, _dtype(node))
        if op == "+":
            return f"tl.sum({block}, 1)[:, None]"
        return f"tl.reduce({block}, 1, {w.helper('_product')})[:, None]"
    return ReductionKind(start, update, final)


def _by_dtype(numbers: ReductionKind, logical: ReductionKind) -> ReductionKind:
    """``numbers`` for a numeric accumulator, ``logical`` for a bool one."""
    def pick(node: ComputedBuffer) -> ReductionKind:
        return logical if _dtype(node) == "bool" else numbers
    return ReductionKind(lambda w, n: pick(n).start(w, n),
                         lambda w, n, *a: pick(n).update(w, n, *a),
                         lambda w, n, *a: pick(n).final(w, n, *a))


# -- max and min ------------------------------------------------------------------------------------

def _compare(largest: bool) -> tuple[str, str]:
    return (">", "max") if largest else ("<", "min")


def _best(w: W, v: str, mask: str | None, dtype: str, largest: bool) -> tuple[str, str | None]:
    """The row's extreme value (``XBLOCK`` x 1) among the lanes under ``mask``; with floats also
    the name of "the row has a NaN", the NaN lanes being left out of the extreme."""
    _, fn = _compare(largest)
    edge = w.const(_extreme(dtype, largest), dtype)
    if not is_float(dtype):
        return w.assign(f"tl.{fn}({_where(w, mask, v, _extreme(dtype, largest), dtype)}, 1)[:, None]"), None
    nan = f"{mask} & ({v} != {v})" if mask else f"{v} != {v}"
    number = f"{mask} & ({v} == {v})" if mask else f"{v} == {v}"
    has_nan = w.assign(f"tl.max(({nan}).to(tl.int8), 1)[:, None] != 0")
    return w.assign(f"tl.{fn}(tl.where({number}, {v}, {edge}), 1)[:, None]"), has_nan


def _extremum(largest: bool) -> ReductionKind:
    symbol, _ = _compare(largest)

    def start(w: W, node: ComputedBuffer) -> list[str]:
        return [w.assign(w.full(_extreme(_dtype(node), largest), _dtype(node)), "acc")]

    def update(w: W, node: ComputedBuffer, accs: list[str], v: str, mask: str, index: str
               ) -> list[str]:
        acc, dtype = accs[0], _dtype(node)
        if not is_float(dtype):
            return [f"tl.{'maximum' if largest else 'minimum'}({acc}, "
                    f"{_where(w, mask, v, _extreme(dtype, largest), dtype)})"]
        return [f"tl.where({mask} & (({v} {symbol} {acc}) | ({v} != {v})), {v}, {acc})"]  # NaN sticks

    def final(w: W, node: ComputedBuffer, values: list[str], mask: str | None,
              index: str | None) -> str:
        dtype = _dtype(node)
        best, has_nan = _best(w, values[0], mask, dtype, largest)
        if has_nan is None:
            return best
        return f"tl.where({has_nan}, {w.const(float('nan'), dtype)}, {best})"
    return ReductionKind(start, update, final)


# -- argmax and argmin: the first index of the extreme value (a NaN's, if any) ---------------------

def _arg(largest: bool) -> ReductionKind:
    symbol, _ = _compare(largest)

    def value_dtype(node: ComputedBuffer) -> str:
        return "int8" if _dtype(node) == "bool" else _dtype(node)

    def as_value(w: W, node: ComputedBuffer, v: str) -> str:
        return f"{v}.to(tl.int8)" if _dtype(node) == "bool" else v

    def past(node: ComputedBuffer) -> int:
        return int(np.prod(node.data.reduction_ranges))  # no element's position

    def start(w: W, node: ComputedBuffer) -> list[str]:
        dtype = value_dtype(node)
        index = "tl.int32" if w.spec.index_bits == 32 else "tl.int64"
        return [w.assign(w.full(_extreme(dtype, largest), dtype), "acc"),
                w.assign(f"tl.full([XBLOCK, R0_BLOCK], {past(node)}, {index})", "pos")]

    def update(w: W, node: ComputedBuffer, accs: list[str], v: str, mask: str, index: str
               ) -> list[str]:
        best, where = accs
        v = as_value(w, node, v)
        first = f"({where} == {past(node)})"
        if is_float(value_dtype(node)):
            better = (f"{mask} & ({best} == {best}) & "
                      f"(({v} {symbol} {best}) | ({v} != {v}) | {first})")
        else:
            better = f"{mask} & (({v} {symbol} {best}) | {first})"
        better = w.assign(better, "better")
        return [f"tl.where({better}, {v}, {best})", f"tl.where({better}, {index}, {where})"]

    def final(w: W, node: ComputedBuffer, values: list[str], mask: str | None,
              index: str | None) -> str:
        v = as_value(w, node, values[0])
        positions = index if index is not None else values[1]
        dtype = value_dtype(node)
        best, has_nan = _best(w, v, mask, dtype, largest)
        hit = f"{v} == {best}"
        if has_nan is not None:
            hit = f"tl.where({has_nan}, {v} != {v}, {hit})"
        if mask is not None:
            hit = f"{mask} & ({hit})"
        return f"tl.min(tl.where({hit}, {positions}, {past(node)}), 1)[:, None]"
    return ReductionKind(start, update, final)


REDUCTIONS: dict[str, ReductionKind] = {
    "sum": _by_dtype(_arithmetic("+"), _logical(any_=True)),
    "prod": _by_dtype(_arithmetic("*"), _logical(any_=False)),
    "max": _by_dtype(_extremum(largest=True), _logical(any_=True)),
    "min": _by_dtype(_extremum(largest=False), _logical(any_=False)),
    "argmax": _arg(largest=True),
    "argmin": _arg(largest=False),
}


def reduction_kind(kind: str) -> ReductionKind:
    found = REDUCTIONS.get(kind)
    if found is None:
        raise NotImplementedError(f"no Triton emitter for the reduction {kind!r}")
    return found


__all__ = ["HELPERS", "REDUCTIONS", "ReductionKind", "reduction_kind"]
