"""The loop operators are declared once (``stax.loop.operators``): the operator lists, the
interpreter's tables and the operator rule's ops are derived from the declarations, a declaration
agrees with the op of the same name, and the floating-point events each declares cover what NumPy
reports computing it over special values."""

from __future__ import annotations

import numpy as np
import pytest

from stax.ir import comparison_ops, elementwise_ops, get_op
from stax.loop import LOWERINGS, LoopOptions
from stax.loop.elementwise import OPERATOR_OPS, lower_operator
from stax.loop.expr import BINARY_OPS, COMPARISON_OPS, TERNARY_OPS, UNARY_OPS
from stax.loop.interpreter import BINARY_FUNCTIONS, UNARY_FUNCTIONS
from stax.loop.operators import (
    INVALID,
    OPERATORS,
    OVERFLOW,
    UNDERFLOW,
    Events,
    LoopOperator,
    get_operator,
)
from stax.loop.registry import FALLBACKS


def test_the_operator_lists_are_the_declarations():
    assert set(BINARY_OPS) | set(COMPARISON_OPS) | set(UNARY_OPS) | set(TERNARY_OPS) == \
        set(OPERATORS)
    assert all(OPERATORS[op].arity == 3 for op in TERNARY_OPS)
    assert set(COMPARISON_OPS) == comparison_ops()
    assert all(OPERATORS[op].arity == 1 for op in UNARY_OPS)
    assert all(OPERATORS[op].arity == 2 and not OPERATORS[op].comparison for op in BINARY_OPS)
    assert set(BINARY_FUNCTIONS) == set(BINARY_OPS) | set(COMPARISON_OPS)
    assert set(UNARY_FUNCTIONS) == set(UNARY_OPS)


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_a_declaration_is_well_formed(name):
    op = OPERATORS[name]
    assert op.name == name and op.arity in (1, 2, 3)
    assert op.kinds and set(op.kinds) <= set("biuf")
    for dtype in (*op.operands, op.result):
        assert dtype in ("T", "U") or np.dtype(dtype).name == dtype, op.signature
    assert "T" in op.operands
    assert all(0 <= p < op.arity for p in op.preserves)
    assert op.events is None or "f" in op.kinds


def test_an_unknown_operator_is_refused_by_name():
    with pytest.raises(KeyError, match="unknown loop operator 'erf'"):
        get_operator("erf")


def test_an_operator_named_as_an_op_computes_that_ops_reference():
    """No second definition of an op's meaning: the operator of an op's name has its reference."""
    shared = set(OPERATORS) & elementwise_ops()
    assert shared >= set(OPERATOR_OPS) and "add" in shared
    assert {name: OPERATORS[name].reference for name in shared} == \
        {name: get_op(name).reference for name in shared}


def test_every_uniform_operator_of_an_ops_name_is_lowered():
    """Each element-wise op named as an operator of one dtype lowers by the operator rule, or by
    a rule of its own (which replaces the operator rule, whatever the order of registration)."""
    assert set(OPERATOR_OPS) == {name for name, op in OPERATORS.items()
                                 if op.uniform and name in elementwise_ops()}
    assert all(name in LOWERINGS for name in OPERATOR_OPS)
    by_operator = {name for name in OPERATOR_OPS if LOWERINGS[name] is lower_operator}
    assert by_operator == {name for name, rule in FALLBACKS.items() if LOWERINGS[name] is rule}
    assert {"add", "lt", "sqrt", "neg"} <= by_operator
    assert not {"floordiv", "sin", "copysign", "signbit"} & by_operator  # rules of their own


def test_a_second_declaration_is_refused():
    from stax.loop import operators
    with pytest.raises(ValueError, match="'add' is declared twice"):
        operators._declare("add", "T,T->T", np.add, "f")


# -- the declared events against NumPy's ----------------------------------------------------------


def _specials(dtype: str) -> np.ndarray:
    info = np.finfo(dtype)
    return np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, -1.5, 2.5, 0.5, -3.0, 100.0,
                     1000.0, 1e30, info.smallest_subnormal, info.tiny, info.max, -info.max],
                    dtype=dtype)


def _reported(op: LoopOperator, dtype: str) -> int:
    """The categories NumPy reports computing ``op`` over every pair of special values."""
    x = _specials(dtype)
    operands = [x] if op.arity == 1 else [x[:, None], x[None, :]] if op.arity == 2 else \
        [x[:, None, None], x[None, :, None], x[None, None, :]]
    if op.operands[-1] == "int64":
        operands[-1] = np.array([-2000, -40, -1, 0, 1, 40, 2000], dtype=np.int64)[None, :]
    seen = 0

    def record(kind: str, flag: int) -> None:
        nonlocal seen
        seen |= flag
    with np.errstate(all="call", call=record):
        op.reference(*operands)
    # NumPy's flags: 1 divide, 2 overflow, 4 underflow, 8 invalid (npy_get_floatstatus)
    return seen


def _declarable(events: Events | None) -> int:
    """The categories an operation with these ``events`` may report (underflow aside)."""
    if events is None:
        return 0
    return (events.inf | (events.otherwise if events.zero_operand is not None else 0)
            | (INVALID if events.nan else 0) | (OVERFLOW if events.difference else 0))


FLOAT_OPERATORS = sorted(name for name, op in OPERATORS.items()
                         if op.kinds == "f" and op.result == "T")


@pytest.mark.parametrize("dtype", sorted(d for d in LoopOptions().dtypes if d.startswith("float")))
@pytest.mark.parametrize("name", FLOAT_OPERATORS)
def test_the_declared_events_cover_numpys(name, dtype):
    """What NumPy reports (divide, overflow, invalid) an operator declares; an exact operator
    never underflows."""
    op = OPERATORS[name]
    reported = _reported(op, dtype)
    assert reported & ~UNDERFLOW & ~_declarable(op.events) == 0, (reported, op.events)
    if op.exact:
        assert not reported & UNDERFLOW
