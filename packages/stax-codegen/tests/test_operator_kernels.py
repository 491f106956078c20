"""Every loop operator, in every loop dtype its declaration names (``LoopOperator.kinds``,
``stax.loop.operators``), emits on the CPU and computes the reference interpreter's answer over
edge values: the declarations, not a hand list, say what this test covers, so a new operator (or a
new kind of an old one) is tested here without a line of its own."""

from __future__ import annotations

import numpy as np
import pytest

from stax.codegen import Executable, generate
from stax.codegen.cpu.target import LOOP_DTYPES
from stax.ir import approximate_ops, tree_flatten
from stax.loop import (
    OPERATORS,
    Affine,
    Binary,
    ComputedBuffer,
    InputBuffer,
    Load,
    LoopOperator,
    LoopProgram,
    OutputRef,
    Pointwise,
    Ternary,
    Unary,
)
from stax.loop.interpreter import interpret

X0 = Affine.var("x0")
#: operators exact only for operands the lowering checks first (a quotient below
#: ``LoopOptions.fmod_exact_quotient``): tested on tame values, as the approximate ones
CHECKED_RANGE = frozenset({"py_floordiv", "py_mod"})


def _values(dtype: str, tame: bool) -> np.ndarray:
    """Edge values of ``dtype``; ``tame``: within every math routine's argument range (a sine's
    range check is the lowering's, not the operator's)."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        return np.array([False, True])
    if kind in "iu":
        info = np.iinfo(dtype)
        values = [0, 1, 2, 3, 6, 7, 12, info.bits - 1, info.bits, info.max, info.max - 1, info.min]
        values += [-1, -2, -6, -12, info.min + 1] if kind == "i" else []
        return np.array(values, dtype=dtype)
    info = np.finfo(dtype)
    values = [0.0, -0.0, 0.5, -0.75, 1.0, 1.5, -2.0, 3.25, 10.0]
    if not tame:
        values += [np.nan, np.inf, -np.inf, info.max, info.smallest_subnormal]
    return np.array(values, dtype=dtype)


def _typed(op: LoopOperator, dtype: str) -> tuple[list[str], str]:
    """The operand dtypes and the result dtype of ``op`` when its ``T`` is ``dtype``."""
    concrete = {"T": dtype}
    if op.result == "U":  # bitcast: the other dtypes of the width, bool aside
        others = [d for d in sorted(LOOP_DTYPES) if d != dtype and d != "bool"
                  and np.dtype(d).itemsize == np.dtype(dtype).itemsize]
        concrete["U"] = others[0]  # every loop dtype's width has another
    return [concrete.get(d, d) for d in op.operands], concrete.get(op.result, op.result)


def _program(name: str, operands: list[str], result: str, n: int) -> LoopProgram:
    names = [f"in{k}" for k in range(len(operands))]
    loads = [Load(a, X0, d) for a, d in zip(names, operands)]
    body = Unary(name, loads[0], result) if len(loads) == 1 else \
        Binary(name, loads[0], loads[1], result) if len(loads) == 2 else \
        Ternary(name, *loads, result)
    _, in_tree = tree_flatten((tuple(range(len(names))), {}))
    _, out_tree = tree_flatten((0,))
    return LoopProgram(
        f"operator_{name}", [InputBuffer(a, (n,), d, (1,)) for a, d in zip(names, operands)],
        names, in_tree, [ComputedBuffer("out", (n,), result, (1,), X0, Pointwise((n,), body))],
        [OutputRef("out")], out_tree)


def _pairs(op: LoopOperator, operands: list[str], tame: bool) -> list[np.ndarray]:
    if len(operands) == 1:
        return [_values(operands[0], tame)]
    if len(operands) == 3:  # every triple of values (fma)
        grids = np.meshgrid(*(_values(d, tame) for d in operands), indexing="ij")
        return [g.ravel() for g in grids]
    a, b = _values(operands[0], tame), _values(operands[1], tame)
    if operands[1] == "int64" and operands[0] != "int64":  # ldexp's exponent
        b = np.array([-2000, -3, -1, 0, 1, 3, 2000], dtype=np.int64)
    return [np.repeat(a, len(b)), np.tile(b, len(a))]


CASES = [(name, dtype) for name, op in OPERATORS.items() for dtype in sorted(LOOP_DTYPES)
         if np.dtype(dtype).kind in op.kinds]


@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_every_operator_in_every_declared_dtype_computes_the_interpreters_answer(name, dtype):
    op = OPERATORS[name]
    operands, result = _typed(op, dtype)
    approximate = name in approximate_ops()  # within NumPy's ulp threshold, not bit for bit
    arrays = _pairs(op, operands, tame=approximate or name in CHECKED_RANGE)
    program = _program(name, operands, result, len(arrays[0]))
    with np.errstate(all="ignore"):
        want = interpret(program, arrays).outputs[0]
        (got,) = Executable(generate(program))(*arrays)
    assert got.dtype == want.dtype
    if approximate:
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)
