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
#: ops whose rules handle every dtype themselves (a view of a float16 value is NumPy's view of
#: its buffer); the driver runs the others as their NumPy reference outside the options' dtypes
OWN_DTYPE_RULES: set[str] = set()


def lowers(*ops: str, any_dtype: bool = False) -> Callable[[Rule], Rule]:
    """Register the decorated rule as the loop lowering of each of ``ops`` (a rule serving
    several ops reads ``node.target``). ``any_dtype``: the rule is called whatever the dtypes."""
    def register(rule: Rule) -> Rule:
        for op in ops:
            if op in LOWERINGS:
                raise ValueError(f"op {op!r} has two loop lowerings: {LOWERINGS[op].__qualname__} "
                                 f"and {rule.__qualname__}")
            LOWERINGS[op] = rule
            if any_dtype:
                OWN_DTYPE_RULES.add(op)
        return rule
    return register
