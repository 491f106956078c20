"""The operator set of the op graph: each op declared once (STYLE.md habit 2).

An ``OpDef`` holds the op's kind, its attributes and its NumPy reference (the semantics every
backend must reproduce). Later layers register their own rules for an op by its name (loop
lowering in ``stax.loop``, CPU emission in ``stax.codegen``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np


class OpKind(str, Enum):
    POINTWISE = "pointwise"
    REDUCTION = "reduction"
    EXTERN = "extern"  # a NumPy call run as is, between compiled kernels


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: OpKind
    arity: int  # -1: any number of operands
    reference: Callable[..., Any]
    attrs: tuple[str, ...] = ()
    doc: str = ""


OPS: dict[str, OpDef] = {}


def _declare(name: str, kind: OpKind, arity: int, reference: Callable[..., Any],
             attrs: tuple[str, ...] = (), doc: str = "") -> None:
    OPS[name] = OpDef(name, kind, arity, reference, attrs, doc)


P, R = OpKind.POINTWISE, OpKind.REDUCTION
_declare("add", P, 2, np.add, doc="x + y (logical or on bool)")
_declare("sub", P, 2, np.subtract)
_declare("mul", P, 2, np.multiply, doc="x * y (logical and on bool)")
_declare("truediv", P, 2, np.true_divide)
_declare("maximum", P, 2, np.maximum, doc="NaN-propagating; returns y when x == y")
_declare("minimum", P, 2, np.minimum, doc="NaN-propagating; returns y when x == y")
_declare("neg", P, 1, np.negative)
for _name, _ufunc in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                      ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)):
    _declare(_name, P, 2, _ufunc, doc="comparison in the operands' common dtype; NaN compares "
             "unequal to everything")
COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")
_declare("sum", R, 1,
         lambda x, axis, keepdims, dtype: np.sum(x, axis=axis, keepdims=keepdims, dtype=dtype),
         attrs=("axis", "keepdims", "dtype"),
         doc="sum over the axes in ``axis`` (a tuple), accumulating in ``dtype``")


def _extern(*args: Any, fn: str, method: bool, call_kwargs: dict[str, Any]) -> Any:
    from .interpreter import resolve_function

    if method:
        return getattr(args[0], fn)(*args[1:], **call_kwargs)
    return resolve_function(fn)(*args, **call_kwargs)


_declare("extern", OpKind.EXTERN, -1, _extern, attrs=("fn", "method", "call_kwargs"),
         doc="calls capture target ``fn`` (a method of the first operand when ``method``) with "
             "NumPy; its operands may nest nodes inside tuples and lists")


def get_op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}; known ops: {sorted(OPS)}") from None


# -- functions NumPy lacks (``stax.runtime.nn``): their eager semantics, declared here so every
# -- layer (and the reference interpreter) agrees on them without importing the runtime.
def _relu(x: Any) -> Any:
    return np.maximum(x, 0)


def _selu(x: Any) -> Any:
    """SELU, written exactly as its decomposition (spec example 4.2), so both give the same bits."""
    return 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1))


def _setitem(x: Any, key: Any, value: Any) -> Any:
    """``x[key] = value`` as a pure function: a copy of ``x`` (same layout) with the update."""
    y = np.copy(x, order="K")
    y[key] = value
    return y


NN_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "stax.nn.relu": _relu,
    "stax.nn.selu": _selu,
    "stax.functional.setitem": _setitem,
}
