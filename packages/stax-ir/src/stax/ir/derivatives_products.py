"""Reverse-mode rules of the NumPy steps that have one: matrix products (BLAS), whose transposes
are products again; ``np.einsum`` and a basic index run as NumPy's are ``derivatives_functions``'.
Declared with the ``extern`` op (``ops.py``: ``vjp=derivatives_products.extern``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .derivatives import (
    Emit,
    Need,
    cast_to,
    elem,
    meta,
    permuted,
    shape_of,
    unbroadcast,
    wants,
)
from .meta import TensorMeta

MATMUL = frozenset({"operator.matmul", "numpy.matmul", "numpy.dot"})


def _matmul(emit: Emit, a: Any, b: Any, shape: tuple[int, ...], dtype: str) -> Any:
    return emit("extern", (a, b), {"fn": "numpy.matmul", "method": False, "call_kwargs": {}},
                meta(shape, dtype))


def _transposed(emit: Emit, m: Any) -> Any:
    """``m`` with its last two axes swapped: a view."""
    rank = len(shape_of(m))
    return permuted(emit, m, (*range(rank - 2), rank - 1, rank - 2))


def _as_rows(emit: Emit, m: Any) -> Any:
    """``m`` (a stack of matrices) as one matrix of all its rows, ``(prod(leading), last)``: a
    view where its leading axes and rows lie at one stride from each other; else None."""
    shape, strides = shape_of(m), tuple(m.tensor.strides)
    for d in range(len(shape) - 2):
        if shape[d] != 1 and strides[d] != strides[d + 1] * shape[d + 1]:
            return None
    merged = (int(np.prod(shape[:-1])), shape[-1])
    return emit("view", (m,), {"offset": 0, "strides": (strides[-2], strides[-1]),
                               "shape": merged},
                TensorMeta(merged, m.tensor.dtype, (strides[-2], strides[-1])))


def _column(emit: Emit, v: Any) -> Any:
    (n,) = shape_of(v)
    return emit("view", (v,), {"offset": 0, "strides": (v.tensor.strides[0], 0),
                               "shape": (n, 1)}, meta((n, 1), v.tensor.dtype))


def _row(emit: Emit, v: Any) -> Any:
    (n,) = shape_of(v)
    return emit("view", (v,), {"offset": 0, "strides": (0, v.tensor.strides[0]),
                               "shape": (1, n)}, meta((1, n), v.tensor.dtype))


def extern(emit: Emit, node: Any, g: Any, need: Need = None) -> tuple[Any, ...]:
    """The NumPy steps with a rule: matrix products (``a @ b``, ``np.matmul``; ``np.dot`` of
    1-D and 2-D operands), whose transposes are products again (``g @ b.T``, ``a.T @ g``,
    summed over the axes a stack of matrices was broadcast along); ``np.einsum``
    (``derivatives_functions.einsum``); a basic index run as NumPy's (``.getitem``)."""
    if node.kwargs.get("fn") == "numpy.einsum" and not node.kwargs.get("method"):
        from .derivatives_functions import einsum
        return einsum(emit, node, g, need)
    if node.kwargs.get("fn") == "operator.getitem" and not node.kwargs.get("call_kwargs"):
        from .derivatives_functions import getitem
        return getitem(emit, node, g, need)
    if node.kwargs.get("fn") not in MATMUL or node.kwargs.get("method") or len(node.args) != 2 \
            or node.kwargs.get("call_kwargs"):
        raise NotImplementedError(f"the NumPy step {node.kwargs.get('fn')}")
    a, b = node.args
    ra, rb = len(shape_of(a)), len(shape_of(b))
    dtype = node.tensor.dtype
    ga = gb = None
    if ra >= 2 and rb >= 2:  # (..., n, k) @ (..., k, m), the leading axes broadcast
        if ra > 2 or rb > 2:
            if node.kwargs["fn"] == "numpy.dot":
                raise NotImplementedError("np.dot of more than two dimensions")
            batch = tuple(np.broadcast_shapes(shape_of(a)[:-2], shape_of(b)[:-2]))
            ga = unbroadcast(emit, _matmul(emit, g, _transposed(emit, b),
                                           (*batch, *shape_of(a)[-2:]), dtype), a) \
                if wants(need, a) else None
            rows_a, rows_g = _as_rows(emit, a), _as_rows(emit, g)
            if rb == 2 and rows_a is not None and rows_g is not None and wants(need, b):
                # a stack times one matrix: its cotangent is one product over every row of the
                # stack (a.T @ g with the leading axes merged), not a stack of products summed
                gb = cast_to(emit, _matmul(emit, _transposed(emit, rows_a), rows_g,
                                            shape_of(b), dtype), b)
            else:
                gb = unbroadcast(emit, _matmul(emit, _transposed(emit, a), g,
                                               (*batch, *shape_of(b)[-2:]), dtype), b) \
                    if wants(need, b) else None
            return ga, gb
        if wants(need, a):
            ga = _matmul(emit, g, _transposed(emit, b), shape_of(a), dtype)
        if wants(need, b):
            gb = _matmul(emit, _transposed(emit, a), g, shape_of(b), dtype)
    elif ra > 2 or rb > 2:
        raise NotImplementedError("a product of a vector and a stack of matrices")
    elif ra == 2:  # (n, k) @ (k,) -> (n,)
        if wants(need, a):
            ga = elem(emit, "mul", _column(emit, g), _row(emit, b), like=a)
        if wants(need, b):
            gb = _matmul(emit, _transposed(emit, a), g, shape_of(b), dtype)
    elif rb == 2:  # (k,) @ (k, m) -> (m,)
        if wants(need, a):
            ga = _matmul(emit, b, g, shape_of(a), dtype)
        if wants(need, b):
            gb = elem(emit, "mul", _column(emit, a), _row(emit, g), like=b)
    else:  # (k,) @ (k,) -> ()
        ga = elem(emit, "mul", b, g, like=a) if wants(need, a) else None
        gb = elem(emit, "mul", a, g, like=b) if wants(need, b) else None
    return (None if ga is None else cast_to(emit, ga, a),
            None if gb is None else cast_to(emit, gb, b))


