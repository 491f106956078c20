"""The CPU emitter is complete (issue 11 item 3): every loop operator, reduction and scan kind
the loop layer defines has a registered CPU emitter, every op lowered in every dtype emits (so
every operator in every loop dtype the loop layer gives it has one), the emitter modules are
imported explicitly (``cpu/rules.py``) and the check fails when one is left out."""

from __future__ import annotations

import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stax.codegen
from stax.codegen import generate
from stax.codegen.cpu import registry
from stax.codegen.cpu.functions import BINARY_ROUTINES, UNARY_ROUTINES
from stax.codegen.cpu.rules import EMITTER_MODULES
from stax.codegen.cpu.target import LOOP_DTYPES
from stax.ir import approximate_ops, get_op
from stax.ir.meta import SUPPORTED_DTYPES
from stax.loop import LOWERINGS, ComputedBuffer, lower_opgraph, postorder
from stax.loop.expr import BINARY_OPS, COMPARISON_OPS, UNARY_OPS
from stax.loop.interpreter import SCANS
from stax.loop.ir import REDUCTION_TYPES

PACKAGE = Path(stax.codegen.__file__).parent


def missing_emitters() -> list[str]:
    """The loop layer's operators, reductions and scans without a CPU emitter, by name."""
    import stax.codegen.cpu.emit  # noqa: F401  (the emitter: it imports every emitter module)
    from stax.codegen.cpu.registry import BINARY, REDUCTIONS, SCANS, UNARY
    from stax.loop.expr import BINARY_OPS, COMPARISON_OPS, UNARY_OPS
    from stax.loop.interpreter import SCANS as SCAN_KINDS
    from stax.loop.ir import REDUCTION_TYPES

    wanted = [("unary", set(UNARY_OPS), UNARY), ("binary", set(BINARY_OPS) | set(COMPARISON_OPS),
                                                    BINARY),
              ("reduction", set(REDUCTION_TYPES), REDUCTIONS), ("scan", set(SCAN_KINDS), SCANS)]
    return sorted(f"{what} {name}" for what, names, table in wanted for name in names - set(table))


def test_every_loop_operator_reduction_and_scan_has_a_cpu_emitter():
    assert missing_emitters() == []


def test_the_tables_name_nothing_the_loop_layer_lacks():
    assert set(registry.UNARY) == set(UNARY_OPS)
    assert set(registry.BINARY) == set(BINARY_OPS) | set(COMPARISON_OPS)
    assert set(registry.REDUCTIONS) == set(REDUCTION_TYPES)
    assert set(registry.SCANS) == set(SCANS)


def test_every_approximate_op_has_a_routine_in_both_float_dtypes():
    """The ops declared within an ulp bound (``Accuracy.ULP``) are the math routines."""
    routines = {**UNARY_ROUTINES, **BINARY_ROUTINES}
    assert approximate_ops() <= set(routines)
    assert {op: sorted(routines[op]) for op in approximate_ops()} == \
        {op: ["float32", "float64"] for op in approximate_ops()}


def test_an_unknown_operation_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="unary operator 'erf'"):
        registry.unary_emitter("erf")
    with pytest.raises(NotImplementedError, match="reduction 'median'"):
        registry.accumulator("median")
    with pytest.raises(ValueError, match="two CPU emitters for the binary operator 'add'"):
        registry.binary("add")(lambda em, e, a, c: a)


# -- every op in every dtype: lowered and emitted -------------------------------------------------

def _arrays(dtype: str) -> dict[str, np.ndarray]:
    x = (np.arange(6) % 5 + 1).astype(dtype).reshape(2, 3)
    return {"x": x, "y": x[::-1].copy(), "n": np.arange(6, dtype=np.int32).reshape(2, 3)}


def _outputs(b: Any, op: str, x: np.ndarray) -> list[Any]:
    """The op over the builder's inputs, as the loop layer's tests apply it."""
    if op == "cast":
        return [b(op, b.inputs["x"], dtype=d) for d in sorted(LOOP_DTYPES)]
    if op == "ldexp":
        return [b(op, b.inputs["x"], b.inputs["n"])]
    if op == "where":
        return [b(op, b.inputs["x"], b.inputs["x"], b.inputs["y"])]
    if op in ("cumsum", "cumprod", "cummax", "cummin"):
        return [b(op, b.inputs["x"], axis=1, dtype=None)]
    definition = get_op(op)
    if definition.kind.value == "reduction":
        attrs = {"keepdims": False, "dtype": None, "ddof": 0}
        return [b(op, b.inputs["x"], axis=(1,), **{a: v for a, v in attrs.items()
                                                    if a in definition.attrs})]
    if definition.attrs or definition.arity not in (1, 2):
        return []  # data movement and creation: expression kinds, no operator of their own
    return [b(op, *(b.inputs[n] for n in ("x", "y")[:definition.arity]))]


def _lowered(build: Any, op: str, dtype: str) -> Any:
    b = build(**_arrays(dtype))
    try:
        with np.errstate(all="ignore"):
            outputs = _outputs(b, op, b.arrays["x"])
    except (TypeError, ValueError):  # NumPy has no such function of this dtype
        return None
    return lower_opgraph(b.program(*outputs)) if outputs else None


def _produced(program: Any) -> set[tuple[str, str, str]]:
    found = set()
    for buffer in program.buffers:
        if isinstance(buffer, ComputedBuffer):
            for e in postorder(buffer.data.body):
                found.add((e.kind, getattr(e, "op", ""), e.dtype))
            data = buffer.data
            kind = getattr(data, "reduction_type", None) or getattr(data, "scan_type", "")
            found.add((type(data).__name__, kind, buffer.dtype))
    return found


#: ops the loop layer lowers natively in a dtype the CPU emitter cannot compute them in. Capture
#: never makes these (``np.power`` of integers becomes a NumPy call), only an op graph built by
#: hand; before the emitter's tables the CPU emitter made invalid LLVM IR of them (``fpext i8``)
KNOWN_GAPS: list[str] = []  # "<op> <dtype>: why" for an op the CPU cannot emit yet


def test_every_op_in_every_dtype_emits_and_the_examples_reach_every_operator_and_dtype(build):
    """Every declared op with a loop lowering, in every dtype NumPy takes it in, lowered and
    emitted (fast and precise kernels): no operator in a dtype the loop layer gives it lacks an
    emitter. The examples produce every operator, reduction, scan and loop dtype, so this
    covers them all."""
    produced: set[tuple[str, str, str]] = set()
    refused: list[str] = []
    for op in sorted(LOWERINGS):
        for dtype in SUPPORTED_DTYPES:
            program = _lowered(build, op, dtype)
            if program is None:
                continue
            try:
                generate(program)
            except NotImplementedError as error:
                refused.append(f"{op} {dtype}: {error}")
                continue
            produced |= _produced(program)
    assert refused == KNOWN_GAPS
    operators = {op for kind, op, _ in produced if kind in ("unary", "binary")}
    assert sorted((set(BINARY_OPS) | set(COMPARISON_OPS) | set(UNARY_OPS)) - operators) == []
    assert {op for kind, op, _ in produced if kind == "Reduction"} == set(REDUCTION_TYPES)
    assert {op for kind, op, _ in produced if kind == "Scan"} == set(SCANS)
    assert {dtype for kind, _, dtype in produced if kind in ("unary", "binary", "cast")} == \
        set(LOOP_DTYPES)


# -- the emitter modules are imported explicitly --------------------------------------------------

#: emitter modules only ``rules.py`` imports (``arithmetic`` is imported by ``accumulators`` too:
#: an integer max/min reduction steps with its ``extreme``)
ONLY_IMPORTED_BY_RULES = ["accumulators", "bitwise", "comparisons", "division", "functions"]


def _registered() -> dict[str, str]:
    """Each registered operation (``"unary exp"``) and the module registering it."""
    tables = {"unary": registry.UNARY, "binary": registry.BINARY, "scan": registry.SCANS,
              "reduction": registry.REDUCTIONS, "two-pass": registry.TWO_PASSES}
    return {f"{what} {name}": getattr(entry, "identity", entry).__module__
            for what, table in tables.items() for name, entry in table.items()}


def test_every_registering_module_is_listed_in_rules():
    listed = {module.__name__ for module in EMITTER_MODULES}
    assert set(_registered().values()) == listed
    registering = {f"stax.codegen.cpu.{path.stem}" for path in (PACKAGE / "cpu").glob("*.py")
                   if re.search(r"^@(unary|binary|scan)\(|^reduction\(|^    two_passes\(", path.read_text(), re.M)}
    assert registering == listed


@pytest.mark.parametrize("module", ONLY_IMPORTED_BY_RULES)
def test_the_check_fails_when_an_emitter_module_is_not_imported(tmp_path, module):
    """The package with ``module`` deleted from ``rules.py``'s import line (run in a fresh
    interpreter): its operations have no emitter, and ``missing_emitters`` names them."""
    copy = tmp_path / "stax" / "codegen"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    rules = copy / "cpu" / "rules.py"
    lines = rules.read_text().splitlines()
    edited = [re.sub(rf"\b{module}, |, {module}\b", "", line)
              if line.startswith(("from . import", "EMITTER_MODULES")) else line for line in lines]
    assert sum(a != b for a, b in zip(lines, edited)) == 2  # the import line and the tuple
    rules.write_text("\n".join(edited) + "\n")
    script = inspect.getsource(missing_emitters) + (
        "\nimport stax.codegen\n"
        f"assert stax.codegen.__file__.startswith({str(copy)!r}), stax.codegen.__file__\n"
        "missing = missing_emitters()\n"
        "print('\\n'.join(missing))\n"
        "assert missing == [], 'no CPU emitter for: ' + ', '.join(missing)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(tmp_path), "PATH": "",
                                            "STAX_CACHE_DIR": "off"})
    assert done.returncode != 0, done.stdout + done.stderr
    assert "no CPU emitter for" in done.stderr, done.stderr
    lost = {name for name, owner in _registered().items()
            if owner == f"stax.codegen.cpu.{module}"}
    assert lost and set(done.stdout.split("\n")) - {""} == lost
