"""fmax/fmin selects (``stax.loop.bits.fmax_select``) and their recognition by kernels
(``fmax_operands``), which report a tie of different bits in their events word instead of a
check pass of their own."""

import pytest

from stax.loop import Binary, Const, Load, Select
from stax.loop.bits import fmax_operands, fmax_select
from stax.loop.expr import expr_from_json, expr_to_json
from stax.loop.index import Affine


def _loads(dtype):
    return Load("x", Affine.var("x0"), dtype), Load("y", Affine.var("x0"), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["fmax", "fmin"])
def test_the_select_is_recognized_after_a_json_round_trip(op, dtype):
    """Kernels may be generated from a loaded document: the operands stay shared there."""
    x, y = _loads(dtype)
    e = fmax_select(op, x, y, dtype)
    assert fmax_operands(e) == (x, y)
    again = expr_from_json(expr_to_json(e))
    found = fmax_operands(again)
    assert found is not None and found == (again.a, again.b)


@pytest.mark.parametrize("value", [0.0, -0.0, float("nan")])
def test_a_constant_that_can_tie_with_other_bits_is_watched(value):
    x, _ = _loads("float64")
    c = Const(value, "float64")
    assert fmax_operands(fmax_select("fmax", x, c, "float64")) == (x, c)
    assert fmax_operands(fmax_select("fmin", c, x, "float64")) == (c, x)


@pytest.mark.parametrize("value", [1.0, -2.5, float("inf")])
def test_a_constant_whose_equals_share_its_bits_is_not(value):
    x, _ = _loads("float64")
    c = Const(value, "float64")
    assert fmax_operands(fmax_select("fmax", x, c, "float64")) is None
    assert fmax_operands(fmax_select("fmin", c, x, "float64")) is None


def test_other_selects_are_not_fmax():
    x, y = _loads("float64")
    nan_y = Binary("ne", y, y, "bool")
    others = [
        Select(Binary("or", Binary("ge", x, y, "bool"), nan_y, "bool"), x, y, "float64"),
        Select(Binary("or", Binary("gt", x, y, "bool"), nan_y, "bool"), y, x, "float64"),
        Select(Binary("gt", x, y, "bool"), x, y, "float64"),
        Select(Binary("or", Binary("gt", x, y, "bool"), Binary("ne", x, x, "bool"), "bool"),
               x, y, "float64"),
    ]
    for e in others:
        assert fmax_operands(e) is None
    xi, yi = Load("x", Affine.var("x0"), "int64"), Load("y", Affine.var("x0"), "int64")
    assert fmax_operands(fmax_select("fmax", xi, yi, "int64")) is None
