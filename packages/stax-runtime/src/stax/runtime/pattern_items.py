"""Where a size-generic version's scalar inputs are among a call's arguments: an argument
itself, or an item of a list or tuple argument (coefficients ``f(x, [a, b, c])``, a pack
``(w, b)``), as positions of a pattern (``generic.Pattern``), and what a key says of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stax.ir.scalar_inputs import numpy_kind

from .key_entry import container_items
from .signature import numpy_scalar_dtype

#: the dimension of a pattern pair ``(position, SCALAR_VALUE)``: the scalar's value is a
#: run-time input (``scalar_arguments.py``)
SCALAR_VALUE = -1
#: a scalar inside a list or tuple argument (``f(x, [a, b, c])``, coefficients): its position
#: in a pattern is ``ITEM * (i + 1) + j`` for item ``j`` of argument ``i`` (ints: the patterns
#: stay pairs of ints, stored as such: ``dynamic_memory``)
ITEM = 1 << 16


def item_position(argument: int, item: int) -> int:
    """The pattern position of item ``item`` of list or tuple argument ``argument``."""
    return ITEM * (argument + 1) + item


def split(position: int) -> tuple[int, int | None]:
    """(the argument, the item of it or None) a pattern position names."""
    return (position, None) if position < ITEM else (position // ITEM - 1, position % ITEM)


def leaf_at(positional: Sequence[Any], position: int) -> Any:
    """A key's leaf at a pattern position: an argument's, or an item's of a list or tuple."""
    argument, item = split(position)
    return positional[argument] if item is None else positional[argument][1][item]


def scalar_positions(positional: Sequence[Any]) -> list[int]:
    """The positions of a key's scalars a generic version may take as inputs: its Python and
    NumPy number arguments, and those items of its list and tuple arguments (not deeper)."""
    found = []
    for i, leaf in enumerate(positional):
        if scalar_kind(leaf):
            found.append(i)
        elif items_of(leaf) is not None:
            found += [item_position(i, j) for j, item in enumerate(leaf[1]) if scalar_kind(item)]
    return found


def items_of(leaf: Any) -> tuple[Any, ...] | None:
    """The items' leaves of a list or tuple argument's leaf (fewer than ``ITEM``), else None."""
    items = container_items(leaf)
    return items if items is not None and len(items) < ITEM else None


def scalar_kind(leaf: Any) -> str | None:
    """``"int"`` or ``"float"`` for the signature leaf of a Python int or float (not a bool),
    ``"numpy.<dtype>"`` for a NumPy scalar a generic version can take as an input
    (``scalar_arguments.value_kind``)."""
    if isinstance(leaf, tuple) and len(leaf) == 2 and leaf[0] in ("int", "float"):
        return leaf[0]
    if isinstance(leaf, tuple) and len(leaf) == 3 and leaf[0] == "complex":
        return "complex"  # (``("complex", key of the real part, of the imaginary part)``)
    dtype = numpy_scalar_dtype(leaf)  # (type name, dtype, bytes)
    if dtype is not None and dtype.isnative:
        return numpy_kind(dtype)
    return None


def changed_items(a: Any, b: Any) -> list[int] | None:
    """The items of two list (or tuple) leaves of one length that differ, where each is a
    scalar of one kind in both; None where anything else differs."""
    old, new = items_of(a), items_of(b)
    if old is None or new is None or a[0] != b[0] or len(old) != len(new):
        return None
    items = [j for j, (x, y) in enumerate(zip(old, new)) if x != y]
    if not items or any(scalar_kind(old[j]) is None or scalar_kind(old[j]) != scalar_kind(new[j])
                        for j in items):
        return None
    return items


def described(position: int, d: int) -> str:
    """A pattern's dimension as a log names it: ``inputs[1]``, ``inputs[1][0]``,
    ``inputs[0].shape[1]``."""
    argument, item = split(position)
    if d != SCALAR_VALUE:
        return f"inputs[{argument}].shape[{d}]"
    return f"inputs[{argument}]" if item is None else f"inputs[{argument}][{item}]"


def flat_item(args: Sequence[Any], positions: Sequence[int], position: int) -> tuple[int, Any]:
    """The flat leaf index and the value of a pattern position's scalar (an argument, or an
    item of a list or tuple argument)."""
    from stax.ir import tree_flatten

    i, j = split(position)
    if j is None:
        return positions[i], args[i]
    before = sum(len(tree_flatten(item)[0]) for item in args[i][:j])
    return positions[i] + before, args[i][j]
