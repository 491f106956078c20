"""Capture rule for counting values: ``np.bincount`` as a scatter that sums.

``np.bincount(x, weights, minlength=m)`` whose traced result has length ``m`` (every value was
below m: ``driver._within_minlength``, no data gate) is ``zeros(m)`` with ``weights[i]`` (or 1)
added at ``x[i]`` for each ``i`` in order, as NumPy's loop adds them: the scatter's unbuffered
sums (``np.add.at``'s), bit for bit. It holds only for values in ``[0, m)``, which the program
checks (``decline_if``): a larger value (NumPy returns a longer array) or a negative one
(NumPy's ValueError) declines the call and NumPy runs it. Counts are int64 (NumPy's intp
here), weighted sums float64 (NumPy converts the weights to double).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Node
from .arguments import bind, cast_to
from .context import LoweringContext, dense_meta
from .registry import NotNative, rule

#: value dtypes NumPy casts to its index type safely (uint64 it refuses)
_VALUE_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"})


@rule("numpy.bincount", emits=("full", "cast", "scatter", "lt", "ge", "logical_or",
                               "decline_if"))
def _bincount(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
    params = bind(lambda x, weights=None, minlength=0: None, args, kwargs)
    x, weights, minlength = params["x"], params.get("weights"), params.get("minlength", 0)
    if not isinstance(x, Node) or x.tensor is None or x.tensor.ndim != 1 or \
            x.tensor.dtype not in _VALUE_DTYPES or not x.tensor.shape[0] or \
            node.tensor is None or tuple(node.tensor.shape) != (minlength,):
        raise NotNative  # the other forms run as NumPy's call, their result shape checked
    n, dtype = x.tensor.shape[0], node.tensor.dtype
    if weights is not None and (not isinstance(weights, Node) or weights.tensor is None or
                                tuple(weights.tensor.shape) != (n,) or
                                np.dtype(weights.tensor.dtype).kind not in "biuf"):
        raise NotNative
    if dtype != ("int64" if weights is None else "float64"):
        raise NotNative
    zeros = ctx.emit("full", (), {"shape": (minlength,), "value": 0, "dtype": dtype},
                     meta=dense_meta((minlength,), dtype))
    at = cast_to(ctx, x, "int64")
    if weights is None:
        counted = ctx.emit("scatter", (zeros, at), {"count": 1, "accumulate": True, "scalar": 1},
                           meta=node.tensor)
    else:
        counted = ctx.emit("scatter", (zeros, at, cast_to(ctx, weights, "float64")),
                           {"count": 1, "accumulate": True, "scalar": None}, meta=node.tensor)
    flags = dense_meta((n,), "bool")
    outside = ctx.emit("ge", (at, minlength), meta=flags)
    if x.tensor.dtype.startswith("int"):
        outside = ctx.emit("logical_or", (ctx.emit("lt", (at, 0), meta=flags), outside),
                           meta=flags)
    return ctx.emit("decline_if", (counted, outside),
                    {"why": "np.bincount of a value outside [0, minlength)"}, meta=node.tensor)
