"""Every module of loop lowering rules, imported explicitly: importing one registers the rules
it defines (``registry.lowers``). The package imports this module, so the rules are in place
before anything is lowered; ``tests/test_completeness.py`` fails if a module is left out here."""

from __future__ import annotations

from . import (
    bits,
    building,
    checks,
    complex_log,
    complex_roots,
    complex_values,
    elementwise,
    externs,
    reductions,
    updates,
    views,
)

RULE_MODULES = (bits, building, checks, complex_log, complex_roots, complex_values, elementwise, externs,
                reductions, updates, views)
