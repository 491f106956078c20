"""A traced call's arguments as NumPy's own call receives them during capture."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .generator_proxy import GeneratorProxy
from .proxy import Proxy
from .traced_sizes import plain

#: calls whose key may keep a lifted loop's traced integers as slice bounds (``item_slices``)
ITEM_SLICED = frozenset({"operator.getitem", "stax.functional.setitem"})


def gate_slice_bounds(value: Any, keep: bool = False) -> Any:
    """A traced slice bound (``x[:n]``) is an index gate: Python needs its integer value. With
    ``keep`` (a lifted loop's body indexing: ``x[i * bs:(i + 1) * bs]``), a traced integer stays
    a bound of the recorded key; ``stax.runtime.item_uses`` proves such a slice the same length
    and inside the array for every item, else the body is not compiled."""
    if isinstance(value, slice):
        return slice(*(v if keep and traced_integer(v) else
                       operator.index(v) if isinstance(v, Proxy) else v
                       for v in (value.start, value.stop, value.step)))
    if isinstance(value, (tuple, list)):
        return type(value)(gate_slice_bounds(v, keep) for v in value)
    return value


def traced_integer(value: Any) -> bool:
    return isinstance(value, Proxy) and isinstance(value.value, np.integer)


def traced_bounds(value: Any) -> bool:
    """Whether ``value`` is a slice with a traced bound (``gate_slice_bounds`` kept it)."""
    return isinstance(value, slice) and any(
        isinstance(b, Proxy) for b in (value.start, value.stop, value.step))


def concrete_arguments(value: Any) -> Any:
    if traced_bounds(value):  # a lifted loop's traced bound: its value now
        return slice(*(b.value if isinstance(b, Proxy) else plain(b)
                       for b in (value.start, value.stop, value.step)))
    if isinstance(value, slice) or not isinstance(value, (Proxy, GeneratorProxy, tuple, list,
                                                         dict)):
        return plain(value)  # a traced size or scalar: its int or float
    if isinstance(value, Proxy):
        return value.value
    if isinstance(value, GeneratorProxy):
        return value.generator
    if isinstance(value, (tuple, list)):
        return type(value)(concrete_arguments(v) for v in value)
    if isinstance(value, dict):
        return {k: concrete_arguments(v) for k, v in value.items()}
    return value


#: calls taking a shape, and where: (first positional place, keywords); a method's place 0 is
#: the array itself, and every positional argument after it is the shape (``x.reshape(2, -1)``)
SHAPE_ARGUMENTS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "reshape": ((1, 2, 3, 4, 5, 6, 7, 8), ("shape",)),
    "numpy.reshape": ((1,), ("shape", "newshape")),
    "numpy.zeros_like": ((4,), ("shape",)), "numpy.ones_like": ((4,), ("shape",)),
    "numpy.empty_like": ((4,), ("shape",)), "numpy.full_like": ((5,), ("shape",)),
}


def gate_shape_arguments(target: str, args: Any, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """A shape made of traced values (``x.reshape(s)``, ``x.reshape(header[0], -1)``,
    ``np.zeros_like(x, shape=s)``) is read by Python: each size an index gate, so a call with
    other sizes takes another version. Recorded as the traced value, its example's sizes were
    the node's, every call."""
    places, names = SHAPE_ARGUMENTS.get(target, ((), ()))
    if not places or not isinstance(args, (tuple, list)):
        return args, kwargs
    args = type(args)(_gated_shape(a) if k in places else a for k, a in enumerate(args))
    kwargs = {k: _gated_shape(v) if k in names else v for k, v in kwargs.items()}
    return args, kwargs


def _gated_shape(value: Any) -> Any:
    if isinstance(value, Proxy) and np.asarray(value.value).dtype.kind in "iu":  # (others:
        # NumPy's own error, from the call)
        if np.ndim(value.value) == 0:
            return operator.index(value)
        return tuple(operator.index(v) for v in value)  # (a 2-D one: NumPy's error, below)
    if isinstance(value, (tuple, list)):
        return type(value)(_gated_shape(v) for v in value)
    return value
