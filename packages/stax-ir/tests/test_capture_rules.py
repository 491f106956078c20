"""Completeness of the capture rules against the op declarations (issue 11 item 3): every declared
op is produced by a capture rule (or a native form) or is marked NumPy-step-only; every rule names
declared ops; every capture target an op declares has its standard rule; and importing ``stax.ir``
imports every module that registers rules, so a forgotten import fails here instead of silently
turning ops into NumPy steps."""

import json
import subprocess
import sys

import numpy as np
import pytest

from stax.ir import OPS, lower_capture
from stax.ir.to_opgraph import (
    NATIVE_FORM_OPS,
    RULES,
    RuleContractError,
    capture_key,
    registry,
    rule_for,
    standard,
)


def produced_ops() -> set[str]:
    return {op for entry in RULES.values() for op in entry.emits} | set(NATIVE_FORM_OPS)


def test_every_declared_op_has_a_capture_rule_or_is_numpy_step_only():
    produced = produced_ops()
    missing = sorted(name for name, op in OPS.items() if name not in produced and
                     not op.numpy_step_only)
    assert not missing, f"ops no capture rule emits (declare one, or mark numpy_step_only): {missing}"
    steps = sorted(name for name, op in OPS.items() if op.numpy_step_only)
    assert steps == ["extern"]
    assert not set(steps) & produced


def test_every_capture_rule_names_declared_ops():
    for key, entry in RULES.items():
        assert entry.emits, key
        assert entry.emits <= set(OPS), (key, sorted(entry.emits - set(OPS)))


def test_a_rule_naming_an_undeclared_op_is_refused_when_registered():
    with pytest.raises(KeyError, match="no_such_op"):
        registry.register(("numpy.test_only_target",), ("no_such_op",), lambda *a: None)
    with pytest.raises(ValueError, match="names no op"):
        registry.register(("numpy.test_only_target",), (), lambda *a: None)
    with pytest.raises(ValueError, match="two capture rules"):
        registry.register(("numpy.exp",), ("exp",), lambda *a: None)
    assert ("function", "numpy.test_only_target") not in RULES


def test_every_declared_capture_target_has_the_standard_rule_of_its_op():
    for name, op in OPS.items():
        for target in op.captures:
            entry = rule_for(*capture_key(target))
            assert entry is not None, f"{name}: no rule for its capture target {target}"
            assert entry.module == standard.__name__ and name in entry.emits, (name, target)
    standard_keys = {key for key, entry in RULES.items() if entry.module == standard.__name__}
    declared = {capture_key(t) for op in OPS.values() for t in op.captures}
    assert standard_keys == declared


def test_a_rule_emitting_an_op_it_does_not_declare_is_an_error(capture, monkeypatch):
    def lying(ctx, node, args, kwargs):
        return ctx.emit("sub", args)
    monkeypatch.setitem(RULES, ("function", "numpy.add"),
                        registry.CaptureRule(lying, frozenset({"add"}), __name__))
    b = capture(x=np.ones(3), y=np.ones(3))
    b.output(b("numpy.add", b.inputs["x"], b.inputs["y"]))
    with pytest.raises(RuleContractError, match="emitted op 'sub'"):
        lower_capture(b.program())


# In a fresh interpreter (a test importing a rule module itself would hide a missing import):
# the rules registered by ``import stax.ir`` alone, then after importing every module of the
# package by name.
_FRESH = """
import importlib, json, pkgutil
import stax.ir
from stax.ir import to_opgraph
from stax.ir.to_opgraph import RULES

def by_module():
    found = {}
    for entry in RULES.values():
        found[entry.module] = found.get(entry.module, 0) + 1
    return found

imported = by_module()
for info in pkgutil.iter_modules(to_opgraph.__path__):
    importlib.import_module(f"stax.ir.to_opgraph.{info.name}")
print(json.dumps({"imported": imported, "all": by_module(),
                  "listed": [m.__name__ for m in to_opgraph.RULE_MODULES]}))
"""


def test_importing_stax_ir_registers_every_rule_module():
    out = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True,
                         timeout=60, check=True)
    found = json.loads(out.stdout)
    assert found["imported"] == found["all"], "a module registers rules only when imported by name"
    assert sorted(found["all"]) == sorted(found["listed"])


def test_the_functions_computed_within_an_ulp_threshold_come_from_the_declarations():
    """What the coverage table and the stress suite treat as approximate (``APPROXIMATE`` of
    ``stax.runtime.coverage``): the capture targets whose rule may emit an op declared
    ``Accuracy.ULP`` — the functions of those ops, and the powers (``x ** y`` may call pow)."""
    from stax.ir import approximate_ops
    from stax.ir.to_opgraph import targets_emitting

    functions = {f"numpy.{op}" for op in approximate_ops() - {"pow"}}
    powers = {"operator.pow", "numpy.power", "numpy.pow", "numpy.float_power"}
    composed = {"numpy.angle"}  # arctan2 of a complex value's parts
    assert targets_emitting(approximate_ops()) == functions | powers | composed
    assert len(functions) == 24
