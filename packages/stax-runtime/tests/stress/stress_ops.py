"""The operations stress programs are made of, taken from the coverage table, and the error rules
that say how far a compiled result may lie from eager NumPy's.

The op lists come from ``stax.runtime.coverage``: its ufunc cases (every NumPy ufunc with a numeric
loop), its reductions, and ``APPROXIMATE`` (the functions Stax computes within an ulp bound rather
than bit for bit). Everything else is bit-exact (docs/internals.md, "Invariants").

A value is *exact* when every operation on the way to it is bit-exact and its inputs were exact: its
compiled result must equal eager's bit for bit (signed zeros too; a NaN's sign excepted). Any other
value is *inexact* and carries an absolute error bound ``E``, computed on every call from the eager
intermediate values by the rule of each step (forward error analysis): ``E`` of a sum is the inputs'
bounds plus one rounding, of a product ``|a| E_b + |b| E_a``, of a reduction over ``n`` elements
``n E + n eps sum|a|`` (spec §13), and so on. Operations whose result jumps with a tiny change of
input (comparisons, floor, casts to integers, argmax, division by an inexact value) only ever take
exact inputs: the generator never feeds them an inexact one, so no tolerance is ever needed there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from stax.runtime import coverage

_CASES = coverage.cases()
APPROXIMATE = coverage.APPROXIMATE

#: every ufunc of the coverage table that has a numeric loop, by arity (``nout == 1``)
UFUNCS_1 = sorted(c.name[3:] for c in _CASES if c.group == "ufunc" and c.fn is not None
                  and getattr(np, c.name[3:]).nin == 1 and getattr(np, c.name[3:]).nout == 1)
UFUNCS_2 = sorted(c.name[3:] for c in _CASES if c.group == "ufunc" and c.fn is not None
                  and getattr(np, c.name[3:]).nin == 2 and getattr(np, c.name[3:]).nout == 1)
#: ufuncs with two results (``np.divmod(a, b)[1]``)
UFUNCS_2OUT = sorted(c.name[3:] for c in _CASES if c.group == "ufunc" and c.fn is not None
                     and getattr(np, c.name[3:]).nout == 2)
#: the reductions of the coverage table (``x.sum(axis=-1)`` and friends)
REDUCTIONS = sorted({m.group(1) for c in _CASES if c.group == "reduction"
                     for m in [re.fullmatch(r"x\.(\w+)\(axis=-1\)", c.name)] if m})

# -- which operations may take an inexact input, and the error rule they then follow --------------
#: unary functions continuous with a bounded slope (on the values programs make): rule per name
SMOOTH_UNARY = {"negative": "same", "positive": "same", "absolute": "same", "abs": "same",
                "fabs": "same", "conj": "same", "conjugate": "same", "square": "square",
                "sin": "lip1", "cos": "lip1", "tanh": "lip1", "arctan": "lip1", "atan": "lip1",
                "exp": "exp"}
SMOOTH_BINARY = {"add": "add", "subtract": "add", "multiply": "mul", "maximum": "same",
                 "minimum": "same", "fmax": "same", "fmin": "same"}
#: binary functions smooth in their first argument when the second is an exact scalar
SMOOTH_BY_SCALAR = {"divide": "div_scalar", "true_divide": "div_scalar"}
#: reductions: the rule on an inexact input, or None (exact inputs only)
REDUCTION_RULE = {"sum": "sum", "mean": "mean", "cumsum": "sum", "max": "same", "min": "same",
                  "prod": None, "cumprod": None, "var": None, "std": None, "argmax": None,
                  "argmin": None, "any": None, "all": None}
#: the rule of an inexact result made from exact inputs (rounded differently, not wrong)
EXACT_INPUT_RULE = {"sum": "sum", "mean": "mean", "cumsum": "sum", "prod": "prod",
                    "cumprod": "prod", "var": "var", "std": "std"}
#: reductions whose float result is bit-exact
EXACT_REDUCTIONS = {"max", "min", "argmax", "argmin", "any", "all"}

#: ulps of the result two approximations of one function may differ by (each is within 1 ulp of
#: the exact value, NumPy's promise and the measured vmath bound; 8 leaves room for float32 SIMD)
ULPS = 8.0


def is_approximate(name: str) -> bool:
    return name in APPROXIMATE


def eps(value: Any) -> float:
    dtype = np.asarray(value).dtype
    return float(np.finfo(dtype).eps) if dtype.kind == "f" else 0.0


def magnitude(value: Any) -> float:
    """max |v| over the finite elements (0 when there are none)."""
    a = np.asarray(value)
    if a.dtype.kind not in "fiub" or a.size == 0:
        return 0.0
    a = a.astype(np.float64)
    finite = np.isfinite(a)
    return float(np.abs(a[finite]).max()) if finite.any() else 0.0


def _abs_finite(value: Any) -> np.ndarray:
    a = np.asarray(value).astype(np.float64)
    return np.where(np.isfinite(a), np.abs(a), 0.0)


def _count(x: Any, out: Any, extra: dict[str, Any]) -> int:
    """How many elements each result combines: the reduced ones, or a scan's axis length."""
    x = np.asarray(x)
    if extra.get("scan"):
        axis = extra.get("axis")
        return max(1, x.size if axis is None or x.ndim == 0 else x.shape[axis])
    return max(1, x.size // max(1, np.asarray(out).size))


def _row_sum_bound(x: Any, extra: dict[str, Any]) -> float:
    """max over results of sum |x| along the reduced axes (finite elements)."""
    a = _abs_finite(x)
    axis = extra.get("axis")
    axis = tuple(axis) if isinstance(axis, list) else axis  # JSON has no tuples
    if a.ndim == 0:
        return float(a)
    return float(np.max(a.sum(axis=axis), initial=0.0))


# a rule: (E of the operands, the operands' values, the result, step attributes) -> E of the result
Rule = Callable[[list[float], list[Any], Any, dict[str, Any]], float]


def _round(out: Any) -> float:
    return eps(out) * magnitude(out)


RULES: dict[str, Rule] = {
    "exact": lambda E, ins, out, extra: 0.0,
    "same": lambda E, ins, out, extra: max(E, default=0.0),
    "narrow": lambda E, ins, out, extra: max(E, default=0.0) + _round(out),
    "add": lambda E, ins, out, extra: sum(E) + _round(out),
    "mul": lambda E, ins, out, extra: (magnitude(ins[0]) * E[1] + magnitude(ins[1]) * E[0]
                                       + E[0] * E[1] + _round(out)),
    "div_scalar": lambda E, ins, out, extra: (
        E[0] / max(abs(float(ins[1])), 1e-300) + _round(out)),
    "square": lambda E, ins, out, extra: 2 * magnitude(ins[0]) * E[0] + E[0] ** 2 + _round(out),
    "lin2": lambda E, ins, out, extra: 2 * E[0] + _round(out),
    "lip1": lambda E, ins, out, extra: E[0] + ULPS * _round(out),
    "exp": lambda E, ins, out, extra: 1.01 * magnitude(out) * E[0] + ULPS * _round(out),
    "approx": lambda E, ins, out, extra: ULPS * _round(out),
    "sum": lambda E, ins, out, extra: _count(ins[0], out, extra) * (
        E[0] + 2 * eps(out) * _row_sum_bound(ins[0], extra)),
    "mean": lambda E, ins, out, extra: (E[0] + 2 * eps(out) * _row_sum_bound(ins[0], extra)
                                        + _round(out)),
    "prod": lambda E, ins, out, extra: 2 * _count(ins[0], out, extra) * _round(out),
    "var": lambda E, ins, out, extra: (16 * (_count(ins[0], out, extra) + 1) * eps(out)
                                       * magnitude(ins[0]) ** 2),
    "std": lambda E, ins, out, extra: (np.sqrt(16 * (_count(ins[0], out, extra) + 1) * eps(out))
                                       * magnitude(ins[0]) + ULPS * _round(out)),
    "matmul": lambda E, ins, out, extra: 2 * eps(out) * _abs_product(ins[0], ins[1]),
}


def _abs_product(a: Any, b: Any) -> float:
    """k max(|a| @ |b|): what a product's sums add up (k max|a| max|b| where einsum broadcast a
    length-1 axis that matmul refuses)."""
    a, b = _abs_finite(a), _abs_finite(b)
    k = max(a.shape[-1], b.shape[0])
    try:
        return k * magnitude(a @ b)
    except ValueError:
        return k * k * magnitude(a) * magnitude(b)
