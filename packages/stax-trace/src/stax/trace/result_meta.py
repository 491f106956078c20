"""What capture records about a call's result: its metadata, and where a view of the call's
first argument lies in that argument's memory."""

from __future__ import annotations

from typing import Any

import numpy as np

from stax.ir import TensorMeta, UnsupportedError, tree_leaves

from .call_values import traced_bounds
from .isolation import refused
from .proxy import Proxy


def view_relation(value: np.ndarray, args: Any) -> dict[str, Any] | None:
    """When the result is a view of the first argument (x.T, x[1:, ::2], x.reshape(...)), where
    its elements lie in that argument's memory: an element offset from the argument's element 0
    and strides, in elements. Given the argument's layout (part of the key) NumPy always makes
    the same view, so later layers can read the argument's memory with this affine map.

    The map holds for the argument's layout at capture, recorded with it ("base_strides"): a
    later layer may give the argument another layout (a decomposed np.clip of an F-ordered array
    is computed row-major), and must then rebase the map (``stax.ir.rebase_view``)."""
    first = args[0] if isinstance(args, (tuple, list)) and args else None
    if not isinstance(first, Proxy) or not isinstance(first.value, np.ndarray):
        return None
    if any(isinstance(leaf, Proxy) or traced_bounds(leaf)
           for leaf in tree_leaves(tuple(args[1:]))):
        return None  # a traced index (a lifted loop's item): where the view lies is data
    source = first.value
    if value.dtype != source.dtype or value.base is None or not np.shares_memory(value, source):
        return None
    itemsize = value.itemsize
    delta = value.__array_interface__["data"][0] - source.__array_interface__["data"][0]
    if delta % itemsize or any(s % itemsize for s in (*value.strides, *source.strides)):
        return None
    return {"offset": delta // itemsize, "strides": [s // itemsize for s in value.strides],
            "base_strides": [s // itemsize for s in source.strides]}


def meta_of(value: Any, target: str, source: str | None) -> TensorMeta:
    try:
        return TensorMeta.of(value)
    except UnsupportedError as exc:
        raise refused(UnsupportedError(f"{target}() returned an array of {exc.what}",
                                       source=source, hint=exc.hint)) from None
