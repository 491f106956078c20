"""The loop layer's halves fit together: every declared op has a loop lowering (or a
decomposition), every lowering names a declared op, every loop operator and reduction has an
interpreter entry, and every op lowered in every loop dtype runs in the interpreter to NumPy's
answer — so a missing half fails here instead of silently becoming a NumPy step."""

from __future__ import annotations

import inspect
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stax.loop
from stax.ir import OPS, Node, approximate_ops, get_op
from stax.ir.meta import SUPPORTED_DTYPES
from stax.loop import (
    LOWERINGS,
    RULE_MODULES,
    Affine,
    Cast,
    ComputedBuffer,
    Const,
    Expr,
    KindTable,
    Load,
    LoopOptions,
    postorder,
)
from stax.loop.expr import (
    BINARY_OPS,
    COMPARISON_OPS,
    EXPR_KINDS,
    TERNARY_OPS,
    UNARY_OPS,
    format_expr,
)
from stax.loop.interpreter import (
    BINARY_FUNCTIONS,
    REDUCTIONS,
    SCANS,
    TERNARY_FUNCTIONS,
    UNARY_FUNCTIONS,
    evaluate,
)
from stax.loop.ir import REDUCTION_TYPES, SCAN_TYPES


def missing_lowerings() -> list[str]:
    """Declared ops with neither a loop lowering nor a decomposition into ops that have one."""
    from stax.ir import OPS
    from stax.loop import LOWERINGS

    return sorted(op for op, definition in OPS.items()
                  if op not in LOWERINGS and definition.decompose is None)


def test_every_declared_op_has_a_loop_lowering():
    assert missing_lowerings() == []


def test_every_lowering_names_a_declared_op():
    assert sorted(set(LOWERINGS) - set(OPS)) == []


def test_a_rule_can_be_registered_once_only(monkeypatch):
    """A second rule of an op is an error; a fallback rule (the operator rule) lowers an op only
    until a rule of its own is registered, before or after it."""
    registry = stax.loop.registry
    for table in ("LOWERINGS", "FALLBACKS"):
        monkeypatch.setattr(registry, table, {})
    monkeypatch.setattr(registry, "OWN_DTYPE_RULES", set())

    def own(ctx, node):
        return None

    def fallback(ctx, node):
        return None

    def another(ctx, node):
        return None
    registry.lowers("a")(own)
    registry.lowers("a", "b", fallback=True)(fallback)
    registry.lowers("b")(another)
    assert registry.LOWERINGS == {"a": own, "b": another}
    with pytest.raises(ValueError, match="two loop lowerings"):
        registry.lowers("a")(another)
    with pytest.raises(ValueError, match="two loop lowerings"):
        registry.lowers("b")(own)
    registry.lowers("c", fallback=True)(fallback)
    with pytest.raises(ValueError, match="two loop lowerings"):
        registry.lowers("c", fallback=True)(another)


def test_the_real_registry_refuses_a_second_rule():
    with pytest.raises(ValueError, match="two loop lowerings"):
        stax.loop.registry.lowers("where")(lambda ctx, node: None)


def test_every_rule_module_is_imported_by_rules():
    """The modules that define rules (in the registry, or registering in their source) are
    exactly those ``rules.py`` imports."""
    from stax.loop.complex_values import COMPLEX_LOWERINGS

    listed = {module.__name__ for module in RULE_MODULES}
    assert {rule.__module__ for rule in (*LOWERINGS.values(), *COMPLEX_LOWERINGS.values())} == \
        listed
    package = Path(stax.loop.__file__).parent
    registering = {f"stax.loop.{path.stem}" for path in package.glob("*.py")
                   if path.stem != "registry" and any(
                       mark in path.read_text()
                       for mark in ("@lowers(", "LOWERINGS[", "@complex_lowers("))}
    assert registering == listed


#: rule modules that only ``rules.py`` imports (``externs`` is imported by the driver too)
ONLY_IMPORTED_BY_RULES = ["bits", "building", "elementwise", "reductions", "views"]


@pytest.mark.parametrize("module", ONLY_IMPORTED_BY_RULES)
def test_the_check_fails_when_a_rule_module_is_not_imported(tmp_path, module):
    """The package with ``module`` deleted from ``rules.py``'s import line (run in a fresh
    interpreter): its ops have no lowering, and ``missing_lowerings`` names them (but those
    named as a loop operator, which the operator rule then lowers)."""
    package = Path(stax.loop.__file__).parent
    copy = tmp_path / "stax" / "loop"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    rules = copy / "rules.py"
    # the name and its separator, in the import (one line or one name a line) and the tuple
    edited, count = re.subn(rf"\b{module},\s*|,\s*{module}\b(?=\))", "", rules.read_text())
    assert count == 2  # the import and the tuple
    rules.write_text(edited)
    script = inspect.getsource(missing_lowerings) + (
        "\nimport stax.loop, sys\n"
        f"assert stax.loop.__file__.startswith({str(copy)!r}), stax.loop.__file__\n"
        "missing = missing_lowerings()\n"
        "print(' '.join(missing))\n"
        "assert missing == [], 'ops without a loop lowering: ' + ' '.join(missing)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": str(tmp_path), "PATH": ""})
    assert done.returncode != 0, done.stdout + done.stderr
    assert "ops without a loop lowering" in done.stderr
    ops = set(done.stdout.split())
    fallback = set() if module == "elementwise" else set(stax.loop.elementwise.OPERATOR_OPS)
    assert ops and ops == {op for op, rule in LOWERINGS.items()
                           if rule.__module__ == f"stax.loop.{module}"} - fallback


# -- the interpreter's entries ---------------------------------------------------------------


def test_every_loop_operator_has_an_interpreter_entry():
    assert set(BINARY_FUNCTIONS) == set(BINARY_OPS) | set(COMPARISON_OPS)
    assert set(UNARY_FUNCTIONS) == set(UNARY_OPS)
    assert set(TERNARY_FUNCTIONS) == set(TERNARY_OPS) == {"fma"}
    assert set(REDUCTIONS) == set(REDUCTION_TYPES)
    assert set(SCANS) == set(SCAN_TYPES)


def test_every_visitor_table_covers_every_kind():
    with pytest.raises(TypeError, match="no handler for the expression kinds"):
        KindTable("partial", {Load: print})

    class Foreign(Expr):
        dtype = "int8"
    with pytest.raises(TypeError, match="Foreign is no expression kind"):
        format_expr(Foreign())
    assert set(EXPR_KINDS) == {"load", "guarded_load", "indirect_load", "index", "const", "cast",
                               "unary", "binary", "ternary", "select"}


@pytest.mark.parametrize("dtype", sorted(LoopOptions().dtypes))
def test_every_loop_dtype_has_interpreter_values(dtype):
    """Constants, loads and casts of every loop dtype evaluate to values of that dtype."""
    data = np.arange(4).astype(dtype)
    memory = {"x": (data, 0)}
    grid = {"x0": np.arange(4)}
    load = Load("x", Affine.var("x0"), dtype)
    for e in (Const(1, dtype), load, Cast(load, "float64"), Cast(Const(1.0, "float64"), dtype)):
        value = np.asarray(evaluate(e, grid, memory))
        assert value.dtype == np.dtype(e.dtype)


# -- every op, every loop dtype: lowered, interpreted, NumPy's answer ------------------------------


def _samples(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Edge values of ``dtype`` (zeros of both signs, NaN, infinities, extremes, subnormals, shift
    counts at and past the width) and plain ones (small positive values: no ties, no overflow)."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        edges = np.array([False, True, True, False, True, False, False, True])
        return edges, edges
    if kind == "c":  # complex: the float samples as real parts, reversed as imaginary ones
        part = np.dtype(dtype).type(0).real.dtype.name
        (edges_re, plain_re) = _samples(part)
        with np.errstate(over="ignore"):
            edges_c = edges_re.astype(dtype)
            edges_c.imag = edges_re[::-1]
            plain_c = plain_re.astype(dtype)
            plain_c.imag = plain_re[::-1] - 1
        return edges_c, plain_c
    if kind == "f":
        info = np.finfo(dtype)
        edges = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.5, 2.5, info.smallest_subnormal,
                 info.max, 0.5, -3.0]
        plain = [0.75, 1.5, 2.0, 3.25, 0.5, 1.25, 2.75, 4.0]
    else:
        info = np.iinfo(dtype)
        edges = [0, 1, info.max, info.min, 2, 3, 7, info.bits - 1, info.bits]
        edges += [-1, -8] if kind == "i" else [info.max - 1]
        return np.array(edges, dtype=dtype), np.array([1, 2, 3, 5, 4, 6, 7, 9], dtype=dtype)
    return np.array(edges, dtype=dtype), np.array(plain, dtype=dtype)


Example = Callable[[Any, np.ndarray], list[Node]]  # (builder over x, x) -> outputs


def _unary(b: Any, x: np.ndarray, op: str) -> list[Node]:
    return [b(op, b.inputs["x"])]


def _binary(b: Any, x: np.ndarray, op: str) -> list[Node]:
    rows = b("view", b.inputs["x"], offset=0, strides=(1, 0), shape=(x.size, x.size))
    columns = b("view", b.inputs["x"], offset=0, strides=(0, 1), shape=(x.size, x.size))
    return [b(op, rows, columns), b(op, b.inputs["x"], x[1].item())]


def _reduction(b: Any, x: np.ndarray, op: str) -> list[Node]:
    attrs = {"keepdims": False, "dtype": None, "ddof": 0}
    # C-ordered: NumPy then sums in the order the interpreter does (the loop IR leaves the order
    # of a float reduction to the backend; NumPy sums a strided array in memory order)
    table = _table(b, x)
    keep = {a: v for a, v in attrs.items() if a in get_op(op).attrs}
    return [b(op, table, axis=(1,), **keep), b(op, table, axis=(0, 1), **{**keep, "keepdims": True})]


EXAMPLES: dict[str, Example] = {
    "cast": lambda b, x: [b("cast", b.inputs["x"], dtype=d) for d in sorted(LoopOptions().dtypes)],
    "where": lambda b, x: [b("where", b.inputs["x"], b.inputs["x"], x[-1].item())],
    "ldexp": lambda b, x: [b("ldexp", b.inputs["x"], b.inputs["n"]), b("ldexp", b.inputs["x"], 3)],
    "view": lambda b, x: [b("view", b.inputs["x"], offset=1, strides=(2, 1), shape=(2, 3))],
    "cumsum": lambda b, x: [b("cumsum", b.inputs["x"], axis=0, dtype=None)],
    "cumprod": lambda b, x: [b("cumprod", b.inputs["x"], axis=0, dtype=None)],
    "cummax": lambda b, x: [b("cummax", b.inputs["x"], axis=0, dtype=None)],
    "cummin": lambda b, x: [b("cummin", b.inputs["x"], axis=0, dtype=None)],
    "layer_norm": lambda b, x: [
        b("layer_norm", _table(b, x), _row(b, x), None, normalized_ndim=1, eps=1e-5)],
    "concatenate": lambda b, x: [b("concatenate", b.inputs["x"], b.inputs["x"], axis=0)],
    "stack": lambda b, x: [b("stack", b.inputs["x"], b.inputs["x"], axis=1)],
    "pad": lambda b, x: [b("pad", _table(b, x), pad_width=((1, 0), (0, 2)), value=1)],
    "reshape": lambda b, x: [b("reshape", _columns(b, x), shape=(x.size,))],
    "take": lambda b, x: [b("take", b.inputs["x"], b.inputs["i"], axis=0)],
    "take_const": lambda b, x: [b("take_const", _table(b, x), axis=0, indices=(1, 0, 1))],
    # starts i[0] = 1, i[1] = -2 (clamped to 0) and i[3] = 3 (clamped to the last start)
    "dynamic_slice": lambda b, x: [
        b("dynamic_slice", _table(b, x), _position(b, 0), axis=1, length=2),
        b("dynamic_slice", b.inputs["x"], _position(b, 1), axis=0, length=3),
        b("dynamic_slice", _table(b, x), _position(b, 3), axis=1, length=x.size // 2 - 1)],
    "roll": lambda b, x: [b("roll", _table(b, x), shift=1, axis=1),
                          b("roll", _table(b, x), shift=-3, axis=None)],
    "setitem": lambda b, x: [b("setitem", _table(b, x), _row(b, x), key=(("int", 1), ("slice", 0, x.size // 2, 1)), scalar=None),
                             b("setitem", _table(b, x), key=(("slice", 1, 0, -1),
                                                             ("slice", 0, 2, 1)), scalar=7)],
    # positions i = [1, -2, 0, 3, -1] (repeats after wrapping; the last write wins, or sums)
    "scatter": lambda b, x: [b("scatter", b("mul", b.inputs["x"], 1), b.inputs["i"],
                               count=1, accumulate=False, scalar=x[0].item()),
                             b("scatter", b("view", b.inputs["x"], offset=0, strides=(2, 1),
                                            shape=(x.size // 2, 2)), b.inputs["i"],
                               b("view", b.inputs["x"], offset=1, strides=(1,), shape=(2,)),
                               count=1, accumulate=x.dtype.kind in "iuf", scalar=None)],
    "scatter_maximum": lambda b, x: [b("scatter_maximum", b("mul", b.inputs["x"], 1),
                                       b.inputs["i"], b("view", b.inputs["x"], offset=1,
                                                        strides=(1,), shape=(5,)),
                                       count=1, scalar=None)],
    "scatter_minimum": lambda b, x: [b("scatter_minimum", b("mul", b.inputs["x"], 1),
                                       b.inputs["i"], count=1, scalar=x[0].item())],
    "tril": lambda b, x: [b("tril", _table(b, x), k=0)],
    "triu": lambda b, x: [b("triu", _table(b, x), k=1)],
    "full": lambda b, x: [b("full", shape=(2, 3), value=1, dtype=x.dtype.name)],
    "arange": lambda b, x: [b("arange", start=2, step=3, n=4, dtype=x.dtype.name)],
    "eye": lambda b, x: [b("eye", n=3, m=4, k=1, dtype=x.dtype.name)],
    # a condition that never holds (x < x is false for NaN too): the value passes through
    "decline_if": lambda b, x: [b("decline_if", b.inputs["x"], b("lt", b.inputs["x"], b.inputs["x"]),
                                  why="never")],
    "extern": lambda b, x: [b("extern", b.inputs["x"], fn="numpy.flip", method=False,
                              call_kwargs={})],
}


def _position(b: Any, k: int) -> Node:
    return b("view", b.inputs["i"], offset=k, strides=(), shape=())


def _table(b: Any, x: np.ndarray) -> Node:
    return b("view", b.inputs["x"], offset=0, strides=(x.size // 2, 1), shape=(2, x.size // 2))


def _columns(b: Any, x: np.ndarray) -> Node:
    return b("view", b.inputs["x"], offset=0, strides=(1, 2), shape=(2, x.size // 2))


def _row(b: Any, x: np.ndarray) -> Node:
    return b("view", b.inputs["x"], offset=0, strides=(1,), shape=(x.size // 2,))


def _example(op: str) -> Example:
    if op in EXAMPLES:
        return EXAMPLES[op]
    definition = get_op(op)
    if definition.kind.value == "reduction":
        return lambda b, x: _reduction(b, x, op)
    assert not definition.attrs, f"op {op!r} needs an example in EXAMPLES"
    if definition.arity == 1:
        return lambda b, x: _unary(b, x, op)
    assert definition.arity == 2, f"op {op!r} needs an example in EXAMPLES"
    return lambda b, x: _binary(b, x, op)


def _run(build: Any, lowered: Any, op: str, x: np.ndarray, options: LoopOptions) -> Any:
    """The example of ``op`` over ``x`` lowered and interpreted; None where NumPy refuses it."""
    b = build(x=x, i=np.array([1, -2, 0, 3, -1]), n=np.arange(-3, x.size - 3, dtype=np.int32))
    try:
        outputs = _example(op)(b, x)
    except (TypeError, ValueError):  # NumPy has no such function of these dtypes, or refuses them
        return None
    return lowered(b, *outputs, options=options)


def _produced(loop: Any) -> set[tuple[str, str, str]]:
    found = set()
    for buffer in loop.buffers:
        if isinstance(buffer, ComputedBuffer):
            for e in postorder(buffer.data.body):
                found.add((e.kind, getattr(e, "op", ""), e.dtype))
            kind = getattr(buffer.data, "reduction_type", None) or getattr(buffer.data, "scan_type", "")
            found.add((type(buffer.data).__name__, kind, buffer.dtype))
    return found


OPS_WITH_EXAMPLES = sorted(LOWERINGS)
#: the CPU backend's options, and a backend whose kernels compute in no dtype (every op runs
#: as the NumPy call ``externs.op_as_extern`` makes of it)
OPTIONS = {"cpu": LoopOptions(), "no kernels": LoopOptions(dtypes=frozenset())}
#: (op, options) -> its examples lowered and interpreted, over every dtype and both sample sets
_RESULTS: dict[tuple[str, str], list[Any]] = {}


def _results(build: Any, lowered: Any, op: str, options: str = "cpu") -> list[Any]:
    if (op, options) not in _RESULTS:
        runs = (_run(build, lowered, op, x, OPTIONS[options]) for dtype in SUPPORTED_DTYPES
                for x in _samples(dtype))
        _RESULTS[op, options] = [r for r in runs if r is not None]
    return _RESULTS[op, options]


@pytest.mark.parametrize("options", list(OPTIONS))
@pytest.mark.parametrize("op", OPS_WITH_EXAMPLES)
def test_every_op_in_every_dtype_runs_in_the_interpreter_as_numpy(build, lowered, op, options):
    """Natively in the backend's dtypes, as a NumPy call in the others (float16 for the CPU)."""
    compared = 0
    for result in _results(build, lowered, op, options):
        if result.run.failed_checks:  # the compiled call runs as NumPy: the answer is NumPy's
            continue
        if op in approximate_ops() and any(np.asarray(w).dtype.kind == "c"
                                           for w in result.expected):
            result.assert_close_to_numpys(4)  # glibc's complex functions from real ones
        else:
            result.assert_numpys()
        if options == "no kernels" and op != "view":
            assert result.native is False and not any(
                isinstance(b, ComputedBuffer) for b in result.loop.buffers), op
        compared += 1
    assert compared, f"{op}: no dtype was compared"


def test_the_examples_produce_every_loop_operator_and_dtype(build, lowered):
    """Every loop operator, reduction, scan and loop dtype is produced by some lowering (else it
    is dead vocabulary, or a lowering lost it), so the examples above exercise them all."""
    produced: set[tuple[str, str, str]] = set()
    for op in OPS_WITH_EXAMPLES:
        for result in _results(build, lowered, op):
            produced |= _produced(result.loop)
    operators = {op for kind, op, _ in produced if kind in ("unary", "binary")}
    assert operators == set(BINARY_OPS) | set(COMPARISON_OPS) | set(UNARY_OPS)
    assert {op for kind, op, _ in produced if kind == "Reduction"} == set(REDUCTION_TYPES)
    assert {op for kind, op, _ in produced if kind == "Scan"} == set(SCANS)
    assert {dtype for kind, _, dtype in produced if kind in EXPR_KINDS} >= LoopOptions().dtypes
