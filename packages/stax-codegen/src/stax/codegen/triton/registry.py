"""The Triton emitter's tables: how each loop operator becomes Triton source, registered by
decorator in the modules ``rules.py`` imports (the CPU's ``cpu/registry.py`` holds the same
tables for LLVM). The target's basis is derived from them (``target.triton_basis``): an operator
without an emitter here makes its op a NumPy step, never a wrong kernel.

An emitter takes the kernel writer, the node and its operands' source (names of values already
assigned) and returns the source of the node's value; it may assign intermediate values first
(``writer.assign``). Looking up an operator nobody registered raises ``NotImplementedError``
naming it; registering one twice raises ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from stax.loop import Binary, Ternary, Unary


class Writer(Protocol):
    """What an emitter uses of the kernel writer (``emit.KernelWriter``)."""

    def assign(self, text: str, hint: str = "tmp") -> str: ...

    def const(self, value: Any, dtype: str) -> str: ...


UnaryEmitter = Callable[[Writer, Unary, str], str]
BinaryEmitter = Callable[[Writer, Binary, str, str], str]
TernaryEmitter = Callable[[Writer, Ternary, str, str, str], str]

UNARY: dict[str, UnaryEmitter] = {}
BINARY: dict[str, BinaryEmitter] = {}
TERNARY: dict[str, TernaryEmitter] = {}

F = TypeVar("F")


def _register(table: dict[str, Any], what: str, names: Sequence[str]) -> Callable[[F], F]:
    def decorate(fn: F) -> F:
        for name in names:
            if name in table:
                raise ValueError(f"two Triton emitters for the {what} {name!r}")
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


def _lookup(table: dict[str, Any], what: str, name: str) -> Any:
    found = table.get(name)
    if found is None:
        raise NotImplementedError(f"no Triton emitter for the {what} {name!r}")
    return found


def unary_emitter(op: str) -> UnaryEmitter:
    return _lookup(UNARY, "unary operator", op)


def binary_emitter(op: str) -> BinaryEmitter:
    return _lookup(BINARY, "binary operator", op)


def ternary_emitter(op: str) -> TernaryEmitter:
    return _lookup(TERNARY, "ternary operator", op)


def emits(op: str) -> bool:
    """Whether a loop operator has a Triton emitter; complete once ``rules`` is imported."""
    return op in UNARY or op in BINARY or op in TERNARY
