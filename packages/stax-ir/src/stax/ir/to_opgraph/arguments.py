"""Reading a captured call's arguments: operands, Python scalars, NumPy signatures. Each helper
raises ``NotNative`` for an argument the rules do not lower, so the call runs as NumPy."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ..graph import Node
from ..meta import TensorMeta
from ..sizes import Size
from .context import LoweringContext
from .registry import NotNative

SCALAR_TYPES = (bool, int, float, complex, np.bool_, np.integer, np.floating,
                np.complexfloating)


def operand(value: Any) -> Any:
    """An op operand: a node or a Python or NumPy scalar; a size (a size-generic version of
    ``x / x.shape[0]``) is a Python int."""
    if isinstance(value, (Node, Size)) or isinstance(value, SCALAR_TYPES):
        return value
    raise NotNative


def bind(reference: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by parameter name, as ``reference``'s signature binds them."""
    try:
        return inspect.signature(reference).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        raise NotNative from None


def int_arg(value: Any) -> int:
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise NotNative


def axis_arg(value: Any, ndim: int) -> int:
    """An axis argument in ``[0, ndim)``, as NumPy normalizes it; NotNative where NumPy's call
    decides (a 0-d array, whose axis 0 some functions take, or an axis out of range: NumPy's
    own error)."""
    axis = int_arg(value)
    if not -ndim <= axis < ndim:
        raise NotNative
    return axis % ndim


def scalar(value: Any) -> Any:
    if isinstance(value, SCALAR_TYPES):
        return value.item() if isinstance(value, np.generic) else value
    raise NotNative


def cast_to(ctx: LoweringContext, value: Any, dtype: str) -> Any:
    """``value`` in ``dtype`` (a ``cast`` op for a node of another dtype; scalars as they are)."""
    if not isinstance(value, Node) or value.tensor.dtype == dtype:
        return value
    meta = TensorMeta(value.tensor.shape, dtype, value.tensor.strides)
    return ctx.emit("cast", (value,), {"dtype": dtype}, meta=meta)


def result_metas(node: Node) -> list[TensorMeta]:
    """The array metadata of each result of a multi-result call, from its getitem users (capture
    makes one per result)."""
    metas: dict[int, TensorMeta] = {}
    for user in node.users:
        if user.target == "operator.getitem" and len(user.args) == 2 and \
                isinstance(user.args[1], int) and user.tensor is not None:
            metas[user.args[1]] = user.tensor
    if sorted(metas) != list(range(node.meta.get("sequence", 0))):
        raise NotNative
    return [metas[i] for i in sorted(metas)]
