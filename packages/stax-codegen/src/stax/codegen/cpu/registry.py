"""The CPU emitter's tables: how each loop-IR operation becomes LLVM IR, registered by decorator
in the modules ``rules.py`` imports (issue 11: a target's emitters registered per operation, a
missing one a failing test, not a silent gap).

- ``UNARY`` / ``BINARY`` / ``TERNARY``: per loop operator (``stax.loop.expr``'s ``UNARY_OPS``,
  ``BINARY_OPS``, ``COMPARISON_OPS`` and ``TERNARY_OPS``), ``emit(em, node, *operands)``: the
  value of ``node`` from its operands' values;
- ``REDUCTIONS``: per reduction kind, its ``Accumulator`` (first values, one step, the result);
- ``SCANS``: per scan kind, one step of the running value.

Expression kinds dispatch through a ``KindTable`` (``expressions.py``), whose unary and binary
handlers look the operator up here. Looking up an operation nobody registered raises
``NotImplementedError`` naming it; registering one twice raises ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from llvmlite import ir

from stax.loop import Affine, Binary, ComputedBuffer, Expr, Ternary, Unary


class Emitter(Protocol):
    """What an emitter function uses of the kernel emitter (``emit.KernelEmitter``)."""

    builder: ir.IRBuilder
    fn: ir.Function
    pointers: dict[str, ir.Value]
    local: dict[str, tuple[Affine, ir.Value]]
    vars: dict[str, ir.Value]
    spec: Any  # emit.KernelSpec
    rewritten: set[str]  # buffers the kernel stores over (``KernelSpec.in_place``, both sides)
    in_order: bool  # reductions step in order (no ``reassoc``): a columns nest's

    def value(self, expr: Expr) -> ir.Value: ...

    def index(self, expr: Affine) -> ir.Value: ...
    def size(self, n: Any, typ: ir.IntType = ...) -> ir.Value: ...
    def coordinates(self, expr: Affine) -> ir.Value: ...

    def ordered(self, symbol: str, a: ir.Value, c: ir.Value) -> ir.Value: ...

    def opaque(self, v: ir.Value) -> ir.Value: ...

    def hide(self, v: ir.Value) -> ir.Value: ...

    def integer_division_events(self, a: ir.Value, c: ir.Value, op: str, dtype: str) -> None: ...

    def after_step(self, node: ComputedBuffer, total: ir.Value, acc: ir.Value, x: ir.Value
                   ) -> None: ...


UnaryEmitter = Callable[[Emitter, Unary, ir.Value], ir.Value]
BinaryEmitter = Callable[[Emitter, Binary, ir.Value, ir.Value], ir.Value]
TernaryEmitter = Callable[[Emitter, Ternary, ir.Value, ir.Value, ir.Value], ir.Value]
#: (builder, dtype, running value, this element's value) -> the new running value
ScanStep = Callable[["Emitter", str, ir.Value, ir.Value], ir.Value]


@dataclass(frozen=True)
class Accumulator:
    """A reduction kind: ``carried`` loop values (an arg reduction carries the best value and its
    index), their first values, one step over an element ``x`` (``checked``: a precise kernel
    checks the step's events, where the loop does not vectorize anyway), and the result."""

    carried: int
    identity: Callable[[Emitter, ComputedBuffer], list[ir.Value]]
    step: Callable[[Emitter, ComputedBuffer, Sequence[ir.Value], ir.Value, bool], list[ir.Value]]
    result: Callable[[Emitter, Sequence[ir.Value]], ir.Value]


UNARY: dict[str, UnaryEmitter] = {}
BINARY: dict[str, BinaryEmitter] = {}
TERNARY: dict[str, TernaryEmitter] = {}
REDUCTIONS: dict[str, Accumulator] = {}
SCANS: dict[str, ScanStep] = {}
#: reductions emitted in two passes (``arg_blocks.py``: pass two reads the block pass one
#: kept), by kind: pass one's accumulator
TWO_PASSES: dict[str, Accumulator] = {}

F = TypeVar("F")


def _register(table: dict[str, Any], what: str, names: Sequence[str]) -> Callable[[F], F]:
    def decorate(fn: F) -> F:
        for name in names:
            if name in table:
                raise ValueError(f"two CPU emitters for the {what} {name!r}")
            table[name] = fn
        return fn
    return decorate


def unary(*ops: str) -> Callable[[UnaryEmitter], UnaryEmitter]:
    """Register the emitter of the unary loop operators ``ops``."""
    return _register(UNARY, "unary operator", ops)


def binary(*ops: str) -> Callable[[BinaryEmitter], BinaryEmitter]:
    """Register the emitter of the binary loop operators (comparisons included) ``ops``."""
    return _register(BINARY, "binary operator", ops)


def ternary(*ops: str) -> Callable[[TernaryEmitter], TernaryEmitter]:
    """Register the emitter of the loop operators of three operands ``ops``."""
    return _register(TERNARY, "ternary operator", ops)


def scan(*kinds: str) -> Callable[[ScanStep], ScanStep]:
    return _register(SCANS, "scan", kinds)


def reduction(kind: str, accumulator: Accumulator) -> None:
    _register(REDUCTIONS, "reduction", (kind,))(accumulator)


def two_passes(kind: str, pass_one: Accumulator) -> None:
    _register(TWO_PASSES, "two-pass reduction", (kind,))(pass_one)


def _lookup(table: dict[str, Any], what: str, name: str) -> Any:
    found = table.get(name)
    if found is None:
        raise NotImplementedError(f"no CPU emitter for the {what} {name!r}")
    return found


def unary_emitter(op: str) -> UnaryEmitter:
    return _lookup(UNARY, "unary operator", op)


def binary_emitter(op: str) -> BinaryEmitter:
    return _lookup(BINARY, "binary operator", op)


def ternary_emitter(op: str) -> TernaryEmitter:
    return _lookup(TERNARY, "ternary operator", op)


def emits(op: str) -> bool:
    """Whether a loop operator (unary, binary, comparison or ternary) has a CPU emitter;
    complete once ``rules`` is imported."""
    return op in UNARY or op in BINARY or op in TERNARY


def accumulator(kind: str) -> Accumulator:
    return _lookup(REDUCTIONS, "reduction", kind)


def scan_step(kind: str) -> ScanStep:
    return _lookup(SCANS, "scan", kind)


def by_dtype(what: str, routines: dict[str, F], dtype: str) -> F:
    """The routine of ``dtype`` among an operator's ``routines`` (a float function has one per
    float dtype); ``NotImplementedError`` for a dtype it lacks."""
    found = routines.get(dtype)
    if found is None:
        raise NotImplementedError(f"no CPU emitter for {what} in {dtype}")
    return found
