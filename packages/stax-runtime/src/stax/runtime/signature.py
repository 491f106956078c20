"""The input signature sigma of spec definition 2.2, static mode.

Arrays map to (shape, strides, dtype) — strides as numbers, because kernels are written for the
traced layout (§2.2). Python scalars map to (type, value) — they are baked into kernels as
constants. Floats are keyed by their bit pattern (``float.hex``), so -0.0 and 0.0 differ and a NaN
matches itself. Any other object maps to (type, identity).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stax.ir import tree_flatten

_BY_VALUE = (int, bool, str, type(None))


def leaf_key(x: Any) -> Any:
    t = type(x)
    if t is np.ndarray:
        return (x.shape, x.strides, x.dtype)
    if t is float:
        return (float, x.hex())
    if t in _BY_VALUE:
        return (t, x)
    if isinstance(x, np.generic):
        return (t, x.tobytes())
    return (t, id(x))


def signature(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The full signature: the argument tree's structure and a key per leaf."""
    leaves, treedef = tree_flatten((args, kwargs))
    return (treedef, tuple(leaf_key(leaf) for leaf in leaves))


def array_signature(args: tuple[Any, ...]) -> Any:
    """Fast form for the common call ``f(array, array, ...)``; None when it does not apply."""
    keys = []
    for a in args:
        if type(a) is not np.ndarray:
            return None
        keys.append((a.shape, a.strides, a.dtype))
    return tuple(keys)
