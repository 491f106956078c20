"""The interval analysis of integer loop-IR expressions (``stax.loop.intervals``) and its use:
a gather whose positions are clamped by construction needs no bounds check."""

from __future__ import annotations

import numpy as np

import stax.runtime as stax
from stax.loop import Affine
from stax.loop.expr import Binary, Cast, Const, Index, Load, Select
from stax.loop.intervals import integer_interval

I64 = "int64"


def test_clamps_ramps_and_remainders_are_followed():
    x0 = Index(Affine.var("x0") * 3 + 1, I64)
    unknown = Load("b", Affine.var("x0"), I64)
    clamp = Binary("minimum", Binary("maximum", unknown, Const(0, I64), I64), Const(9, I64), I64)
    assert integer_interval(x0, {"x0": 5}) == (1, 13)
    assert integer_interval(clamp, {"x0": 5}) == (0, 9)
    assert integer_interval(Binary("mod", unknown, Const(7, I64), I64), {}) == (0, 6)
    assert integer_interval(Binary("floordiv", x0, Const(2, I64), I64), {"x0": 5}) == (0, 6)
    picked = Select(Binary("lt", x0, Const(4, I64), "bool"), Const(-2, I64), x0, I64)
    assert integer_interval(picked, {"x0": 5}) == (-2, 13)
    assert integer_interval(Cast(x0, "int8"), {"x0": 5}) == (1, 13)
    # what it does not follow may be any value of its dtype; a sum of those may wrap
    info = np.iinfo(np.int64)
    assert integer_interval(unknown, {}) == (info.min, info.max)
    assert integer_interval(Binary("add", unknown, Const(1, I64), I64), {}) == \
        (info.min, info.max)
    assert integer_interval(Const(1.5, "float64"), {}) is None


def test_a_clamped_gather_has_no_check_and_an_unclamped_one_keeps_it():
    def clipped(x, i):
        return x[np.clip(i, 0, x.shape[0] - 1)] * 2

    def unclipped(x, i):
        return x[i] * 2

    rng = np.random.default_rng(0)
    x, i = rng.standard_normal(50), rng.integers(-100, 100, 30)
    f = stax.compile(clipped, strict_native=True)
    np.testing.assert_array_equal(f(x, i), clipped(x, i))
    assert not f.versions()[0].artifact.checks
    g = stax.compile(unclipped, strict_native=True)
    np.testing.assert_array_equal(g(x, i % 50), unclipped(x, i % 50))
    assert g.versions()[0].artifact.checks  # out-of-bounds positions: NumPy's IndexError
