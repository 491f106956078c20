"""The specialization key's input signature sigma (spec definition 2.2), static mode.

``signature(args, kwargs)`` is a nested tuple ``(positional, keywords)`` whose structure is the
path structure guards report (``inputs[0][0][2][0]``: positional part, first argument, shape item,
dimension 0):

- an array: ``("ndarray", device, shape, dtype, strides)`` — strides in bytes, as numbers, because
  kernels are written for the traced layout (§2.2); the dynamic-mode expression form replaces this
  item when dynamic shapes land;
- None, bool, int, str: ``(type, value)``; float: ``("float", float.hex(x))`` so that -0.0 and 0.0
  differ and a NaN matches itself; a NumPy scalar: ``(type, dtype, bytes)``;
- a tuple, list or dict: ``(type, elements)`` with a dict's elements as ``(key, signature)`` pairs;
- anything else: ``(type, id)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

ARRAY = "ndarray"
_BY_VALUE = (int, bool, str, type(None))


def leaf_signature(x: Any) -> Any:
    t = type(x)
    if t is np.ndarray:
        return (ARRAY, "cpu", x.shape, x.dtype, x.strides)
    if t is float:
        return ("float", x.hex())
    if t in _BY_VALUE:
        return (t.__name__, x)
    if t in (tuple, list):
        return (t.__name__, tuple(leaf_signature(v) for v in x))
    if t is dict:
        return ("dict", tuple((k, leaf_signature(v)) for k, v in x.items()))
    if isinstance(x, np.generic):
        return (t.__name__, x.dtype.str, x.tobytes())
    return (f"{t.__module__}.{t.__qualname__}", id(x))


def signature(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    return (tuple(leaf_signature(a) for a in args),
            tuple((k, leaf_signature(v)) for k, v in kwargs.items()))


def array_signature(args: tuple[Any, ...]) -> Any:
    """Dispatch level 2's fingerprint for the common call ``f(array, array, ...)``: the arrays'
    layouts only; None when an argument is not a plain array."""
    keys = []
    for a in args:
        if type(a) is not np.ndarray:
            return None
        keys.append((a.shape, a.strides, a.dtype))
    return tuple(keys)


@dataclass(frozen=True)
class GuardFailure:
    """One guard that does not hold: ``path`` should equal ``expected`` but is ``actual``."""

    path: str
    expected: Any
    actual: Any

    @property
    def condition(self) -> str:
        return f"{self.path} == {_show(self.expected)}"

    def __str__(self) -> str:
        return f"{self.condition} (got {_show(self.actual)})"


def _show(value: Any) -> str:
    if isinstance(value, np.dtype):
        return str(value) if value.isnative else value.str
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "float":
        return repr(float.fromhex(value[1]))
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) \
            and value[0] in ("int", "bool", "str", "NoneType"):
        return repr(value[1])
    return repr(value)


def diff_signature(expected: Any, actual: Any, path: str = "inputs") -> list[GuardFailure]:
    """The guards (projections of sigma, definition 2.3) that fail for ``actual``.

    Empty exactly when the signatures are equal; otherwise every differing component, each with its
    path in the signature, so a miss always explains itself (corollary 2.1).
    """
    (exp_pos, exp_kw), (act_pos, act_kw) = expected, actual
    out = _diff_sequence(exp_pos, act_pos, f"{path}[0]")
    exp_names, act_names = tuple(k for k, _ in exp_kw), tuple(k for k, _ in act_kw)
    if exp_names != act_names:
        return [*out, GuardFailure(f"keys({path}[1])", exp_names, act_names)]
    for i, ((_, e), (_, a)) in enumerate(zip(exp_kw, act_kw)):
        out += _diff_leaf(e, a, f"{path}[1][{i}][1]")
    return out


def _diff_sequence(expected: tuple[Any, ...], actual: tuple[Any, ...], path: str
                   ) -> list[GuardFailure]:
    if len(expected) != len(actual):
        return [GuardFailure(f"len({path})", len(expected), len(actual))]
    out: list[GuardFailure] = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        out += _diff_leaf(e, a, f"{path}[{i}]")
    return out


def _diff_leaf(expected: Any, actual: Any, path: str) -> list[GuardFailure]:
    if expected == actual:
        return []
    if expected[0] != actual[0]:
        return [GuardFailure(f"{path}[0]", expected[0], actual[0])]
    kind = expected[0]
    if kind == ARRAY:
        out = [GuardFailure(f"{path}[{i}]", expected[i], actual[i]) for i in (1, 3)
               if expected[i] != actual[i]]
        for item in (2, 4):  # shape, strides: per dimension, as in ``inputs[0][0][2][0] == 4``
            e, a = expected[item], actual[item]
            if len(e) != len(a):
                out.append(GuardFailure(f"len({path}[{item}])", len(e), len(a)))
            else:
                out += [GuardFailure(f"{path}[{item}][{d}]", x, y)
                        for d, (x, y) in enumerate(zip(e, a)) if x != y]
        return out
    if kind in ("tuple", "list"):
        return _diff_sequence(expected[1], actual[1], f"{path}[1]")
    if kind == "dict":
        e_keys, a_keys = tuple(k for k, _ in expected[1]), tuple(k for k, _ in actual[1])
        if e_keys != a_keys:
            return [GuardFailure(f"keys({path}[1])", e_keys, a_keys)]
        out = []
        for i, ((_, e), (_, a)) in enumerate(zip(expected[1], actual[1])):
            out += _diff_leaf(e, a, f"{path}[1][{i}][1]")
        return out
    return [GuardFailure(path, expected, actual)]
