"""Capture graph -> op graph (spec §4–5): the capture rules and the driver that applies them.

``registry`` holds the table of rules by capture target; each rule module registers its rules by
decorator when imported, and this package imports every one of them below (``RULE_MODULES``), so
importing ``stax.ir`` registers them all. ``standard`` registers the standard rule of each op kind
for the capture targets the op declarations name (``OpDef.captures``); the other modules hold
rules for calls composed of several ops or with forms of their own. ``native_forms`` lowers calls
without a rule that are still one op (views, gathers, copying reshapes), and ``driver`` walks the
capture graph. The completeness test (``tests/test_capture_rules.py``) checks this table against
the op declarations, and that every rule module here is imported.
"""

from __future__ import annotations

from . import (
    arithmetic,
    building,
    calculus,
    counting,
    differences,
    indexing,
    products,
    reductions,
    repetition,
    scalars,
    searching,
    standard,
)
from .context import LoweringContext, RuleContractError, describe
from .driver import DATA_DEPENDENT_SHAPES, data_dependent_shape, lower_capture, lower_without_rule
from .native_forms import NATIVE_FORM_OPS
from .registry import RULES, CaptureRule, NotNative, capture_key, rule, rule_for, targets_emitting

#: the modules that register capture rules, each imported once here
RULE_MODULES = (standard, arithmetic, reductions, indexing, building, differences, repetition,
                products, searching, scalars, counting, calculus)

__all__ = [
    "DATA_DEPENDENT_SHAPES",
    "NATIVE_FORM_OPS",
    "RULES",
    "RULE_MODULES",
    "CaptureRule",
    "LoweringContext",
    "NotNative",
    "RuleContractError",
    "capture_key",
    "data_dependent_shape",
    "describe",
    "lower_capture",
    "lower_without_rule",
    "rule",
    "rule_for",
    "targets_emitting",
]
