"""The table of capture rules: for each capture target, the rule that lowers its calls to ops.

A rule is registered by the ``rule`` decorator in the module that defines it, naming the capture
targets it lowers (``numpy.fmod``, ``operator.add``, ``method:sum``: the form of
``OpDef.captures``) and every op it may emit, each a declared op. The package imports each rule
module explicitly (``stax.ir.to_opgraph.RULE_MODULES``), and its completeness test checks the
table against the op declarations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ops import get_op

if TYPE_CHECKING:
    from ..graph import Node
    from .context import LoweringContext

RuleFunction = Callable[["LoweringContext", "Node", tuple[Any, ...], dict[str, Any]], Any]


class NotNative(Exception):
    """Raised by a rule for a form of its call it does not lower (``np.add(x, y, dtype=...)``):
    the call then runs as an extern NumPy call."""


@dataclass(frozen=True)
class CaptureRule:
    fn: RuleFunction
    emits: frozenset[str]  # the ops the rule may emit (the driver holds it to them)
    module: str  # where it was registered


RULES: dict[tuple[str, str], CaptureRule] = {}


def capture_key(target: str) -> tuple[str, str]:
    """``"method:sum"`` -> ("method", "sum"); ``"numpy.exp"`` -> ("function", "numpy.exp")."""
    kind, _, name = target.rpartition(":")
    return (kind or "function", name)


def target_name(kind: str, target: str) -> str:
    """The inverse of ``capture_key``."""
    return f"method:{target}" if kind == "method" else target


def register(targets: Iterable[str], emits: Iterable[str], fn: RuleFunction,
             module: str | None = None) -> None:
    emitted = frozenset(emits)
    if not emitted:
        raise ValueError(f"a capture rule for {list(targets)} names no op it emits")
    for op in emitted:
        get_op(op)  # a KeyError names an op that is not declared
    entry = CaptureRule(fn, emitted, module or fn.__module__)
    for target in targets:
        key = capture_key(target)
        if key in RULES:
            raise ValueError(f"two capture rules for {target!r} ({RULES[key].module}, "
                             f"{entry.module})")
        RULES[key] = entry


def rule(*targets: str, emits: Iterable[str]) -> Callable[[RuleFunction], RuleFunction]:
    """Register the decorated function as the rule of ``targets``, emitting ops among ``emits``."""
    def decorate(fn: RuleFunction) -> RuleFunction:
        register(targets, emits, fn)
        return fn
    return decorate


def rule_for(kind: str, target: str) -> CaptureRule | None:
    return RULES.get((kind, target))


def targets_emitting(ops: Iterable[str]) -> frozenset[str]:
    """The capture targets whose rule may emit one of ``ops`` (``approximate_ops()``: the NumPy
    functions computed within an ulp threshold)."""
    wanted = frozenset(ops)
    return frozenset(target_name(*key) for key, entry in RULES.items() if entry.emits & wanted)
