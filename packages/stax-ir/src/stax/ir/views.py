"""Affine view maps: where the elements of a view lie in its base's memory, and how that map
changes when the base is laid out differently (capture measures views on the example arrays;
the op graph and the loop layer read them on any layout)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .sizes import Size, same_size


def _index(value: Any) -> Any:
    """An offset or stride as an int (NumPy integers converted), a size kept as it is."""
    return value if isinstance(value, Size) else int(value)


def rebase_view(offset: int, strides: Sequence[int], shape: Sequence[int],
                base_shape: Sequence[int], measured: Sequence[int], layout: Sequence[int]
                ) -> tuple[int, tuple[int, ...]] | None:
    """A view's affine map (element ``offset`` and ``strides`` into its base's memory), measured
    on the base laid out with strides ``measured``, for the same base laid out with ``layout``;
    None when the view is not affine in the base's elements (a reshape across dimensions).

    A view map is a statement about memory, so it holds only for the layout it was measured on:
    row 0 of an F-ordered (3, 4) array is offset 0, stride 3, but offset 0, stride 1 in a
    row-major copy. The map is rebased through the base's element indices: the element at the
    view's origin, and the index step along each view dimension, found by decomposing the memory
    positions; the steps are accepted only when every element the view reaches is then inside
    the base (no carry from one base dimension into the next), so the rebased map reads the same
    elements exactly."""
    strides = tuple(_index(s) for s in strides)
    if len(measured) == len(layout) and all(map(same_size, measured, layout)):
        return _index(offset), strides  # sizes kept: a size-generic view (issue 15)
    if any(n == 0 for n in shape):
        return 0, (0,) * len(shape)
    origin = element_at(offset, base_shape, measured)
    if origin is None:
        return None
    low, high = list(origin), list(origin)
    rebased = []
    for n, stride in zip(shape, strides):
        if n == 1:
            rebased.append(0)
            continue
        step = element_at(offset + stride, base_shape, measured)
        if step is None:
            return None
        move = [b - a for a, b in zip(origin, step)]
        for d, m in enumerate(move):
            if m > 0:
                high[d] += (n - 1) * m
            else:
                low[d] += (n - 1) * m
        rebased.append(sum(m * t for m, t in zip(move, layout)))
    if any(lo < 0 or hi >= extent for lo, hi, extent in zip(low, high, base_shape)):
        return None
    return sum(j * t for j, t in zip(origin, layout)), tuple(rebased)


def element_at(position: int, shape: Sequence[int], strides: Sequence[int]) -> list[int] | None:
    """An element index of an array of ``shape`` with ``strides`` whose memory position is
    ``position`` (elements from element 0), or None when this greedy search finds none."""
    index = [0] * len(shape)
    for d in sorted(range(len(shape)), key=lambda d: -abs(strides[d])):
        if shape[d] > 1 and strides[d] != 0:
            index[d] = min(max(position // strides[d], 0), shape[d] - 1)
            position -= index[d] * strides[d]
    return index if position == 0 else None
