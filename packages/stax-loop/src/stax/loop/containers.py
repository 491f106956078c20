"""One walker over the containers that hold operands (fx's ``map_aggregate``): nested tuples,
lists, dicts and slices. Mapping an extern call's operands to buffers, encoding them, decoding
them and printing them are each this walk with their own leaf and container rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: a container's new value from the container and its walked items (elements; a slice's start,
#: stop and step; a dict's (key, value) pairs)
Combine = Callable[[Any, list[Any]], Any]


def rebuild(container: Any, items: list[Any]) -> Any:
    """The container again, of the same type, over the walked items."""
    if isinstance(container, dict):
        return dict(items)
    if isinstance(container, slice):
        return slice(*items)
    return type(container)(items)


def fold(value: Any, leaf: Callable[[Any], Any], combine: Combine = rebuild) -> Any:
    """``value`` walked bottom-up: every leaf becomes ``leaf(v)`` and every tuple, list, dict or
    slice becomes ``combine(container, items)`` over its walked items. With the default
    ``combine`` this is ``value`` with its leaves mapped."""
    if isinstance(value, (tuple, list)):
        return combine(value, [fold(v, leaf, combine) for v in value])
    if isinstance(value, dict):
        return combine(value, [(k, fold(v, leaf, combine)) for k, v in value.items()])
    if isinstance(value, slice):
        return combine(value, [fold(v, leaf, combine) for v in (value.start, value.stop, value.step)])
    return leaf(value)
