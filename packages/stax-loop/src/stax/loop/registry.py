"""The loop lowering rules, by op name: each rule module registers its rules with ``lowers``
when the package imports it (``stax/loop/__init__.py`` imports every one explicitly;
``tests/test_completeness.py`` fails if a declared op has no rule)."""

from __future__ import annotations

from collections.abc import Callable

from stax.ir import Node

from .context import Lazy, LoopLowering

#: a rule: the lowered value of one op-graph node
Rule = Callable[[LoopLowering, Node], Lazy]

LOWERINGS: dict[str, Rule] = {}
#: ops whose rule is a fallback (``lowers(fallback=True)``), which a rule of their own replaces
FALLBACKS: dict[str, Rule] = {}
#: ops whose rules handle every dtype themselves (a view of a float16 value is NumPy's view of
#: its buffer); the driver runs the others as their NumPy reference outside the options' dtypes
OWN_DTYPE_RULES: set[str] = set()


def lowers(*ops: str, any_dtype: bool = False, fallback: bool = False) -> Callable[[Rule], Rule]:
    """Register the decorated rule as the loop lowering of each of ``ops`` (a rule serving
    several ops reads ``node.target``). ``any_dtype``: the rule is called whatever the dtypes.
    ``fallback``: the rule lowers those of ``ops`` no other rule lowers, whichever is registered
    first (the rule of the element-wise ops named as loop operators)."""
    def register(rule: Rule) -> Rule:
        for op in ops:
            existing = LOWERINGS.get(op)
            if existing is not None and (fallback or FALLBACKS.get(op) is not existing):
                if fallback and FALLBACKS.get(op) is not existing:
                    continue  # a rule of its own
                raise ValueError(f"op {op!r} has two loop lowerings: {existing.__qualname__} "
                                 f"and {rule.__qualname__}")
            LOWERINGS[op] = rule
            OWN_DTYPE_RULES.discard(op)
            if fallback:
                FALLBACKS[op] = rule
            if any_dtype:
                OWN_DTYPE_RULES.add(op)
        return rule
    return register
