"""A product with an identity matrix, as NumPy's BLAS computes it, without the product.

``np.eye(n) @ X`` is the start of every power and chain of products written as a loop
(``result = np.eye(n); for ...: result = result @ A``): a full matrix product whose answer is
``X`` almost everywhere. Almost: BLAS multiplies every element, so ``(I @ X)[i, j]`` is
``X[i, j]`` plus ``0 * X[k, j]`` for every other row ``k``, accumulated from ``+0.0``:

- a non-finite element anywhere else in the column makes ``0 * inf`` or ``0 * nan``: NaN (and
  an infinity raises NumPy's "invalid value encountered in matmul");
- ``-0.0`` becomes ``+0.0`` (the accumulator's zero wins), as ``X + 0.0`` does;
- everything else is ``X[i, j]`` exactly (adding zeros is exact).

``X @ np.eye(n)`` is the same along rows. The rule counts each column's (row's) non-finite
elements, so a NaN where another element is not finite, else ``X + 0.0``; ``X * 0.0``, left
unused, is kept by DCE for its events (``Node.events_only``): it raises invalid exactly where
an infinity is, as the product's ``0 * inf`` does. A matrix of one row has no other row: no
NaN, no event (the count excludes the element itself; the events-only value is not made).
Only float32/float64 matrices of the identity's dtype (a mixed product converts first, which
NumPy does before BLAS too, but then the identity is not what is multiplied)."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ..graph import Node, Opcode
from ..meta import TensorMeta, contiguous_strides

#: the capture targets of a matrix product of two 2-D operands
PRODUCTS = ("operator.matmul", "numpy.matmul", "numpy.dot")
_IDENTITIES = {"numpy.eye": inspect.signature(np.eye), "numpy.identity": inspect.signature(np.identity)}


def identity_product(e: Any, a: Any, b: Any, *rest: Any) -> Node | None:
    """``a @ b`` where one operand is ``np.eye(n)``/``np.identity(n)`` and the other a float
    matrix of its dtype (``e``: the decompose pass's emitter); None for anything else."""
    if rest or not (isinstance(a, Node) and isinstance(b, Node)):
        return None
    for eye, x, axis in ((a, b, 0), (b, a, 1)):
        if _is_identity(eye) and x.tensor is not None and x.tensor.ndim == 2 and \
                x.tensor.dtype == eye.tensor.dtype and x.tensor.shape[axis] == eye.tensor.shape[0]:
            if e.anchor.target == "numpy.dot" and 1 in (*x.tensor.shape, eye.tensor.shape[0]):
                return None  # np.dot multiplies by a (1, 1) operand, keeping -0.0; vectors: gemv
            return _without_product(e, x, axis)
    return None


def _is_identity(node: Node) -> bool:
    signature = _IDENTITIES.get(node.target)
    if signature is None or node.op is not Opcode.CALL_FUNCTION or node.tensor is None or \
            node.tensor.dtype not in ("float32", "float64"):
        return False
    try:
        bound = signature.bind(*node.args, **node.kwargs).arguments
    except TypeError:
        return False
    n, m = node.tensor.shape if node.tensor.ndim == 2 else (None, None)
    return n is not None and n == m and bound.get("k", 0) == 0 and bound.get("like") is None


def _without_product(e: Any, x: Node, axis: int) -> Node:
    """``where(others not finite, nan, x + 0.0)`` over ``axis`` (0: columns, for ``I @ x``)."""
    shape = x.tensor.shape
    nonfinite = e("operator.invert", e("numpy.isfinite", x))
    counted = (shape[1],) if axis == 0 else (shape[0], 1)  # broadcast against x as it is
    counts = e("numpy.sum", nonfinite, kwargs={"axis": axis, "keepdims": axis == 1},
               meta=TensorMeta(counted, "int64", contiguous_strides(counted)))
    others = e("operator.gt", e("operator.sub", counts, nonfinite), 0)
    if shape[axis] > 1:
        e("operator.mul", x, 0.0)  # unused: DCE keeps it for its events, the products' 0 * inf
    return e("numpy.where", others, float("nan"), e("operator.add", x, 0.0))
