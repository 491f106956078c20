"""The interval analysis of integer loop-IR expressions (``stax.loop.intervals``); its use (a
gather at clamped positions has no check) is tested with the runtime (test_gather)."""

from __future__ import annotations

import numpy as np

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

