"""A traced call's arguments as NumPy's own call receives them during capture."""

from __future__ import annotations

import operator
from typing import Any

from .proxy import GeneratorProxy, Proxy
from .traced_sizes import plain


def gate_slice_bounds(value: Any) -> Any:
    """A traced slice bound (``x[:n]``) is an index gate: Python needs its integer value."""
    if isinstance(value, slice):
        return slice(*(operator.index(v) if isinstance(v, Proxy) else v
                       for v in (value.start, value.stop, value.step)))
    if isinstance(value, (tuple, list)):
        return type(value)(gate_slice_bounds(v) for v in value)
    return value


def concrete_arguments(value: Any) -> Any:
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
