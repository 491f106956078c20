"""Views written in size symbols (issue 15): where a transpose, a basic index or a reshape of an
operand lies in the operand's memory, as expressions of its sizes.

Capture records a view as numbers measured at the traced sizes (``meta["view"]``: an element
offset and strides into the operand's memory, and the operand's strides they were measured on).
A size-generic version needs the same map for every size, so each rule here derives it from the
operand's symbolic shape and strides by NumPy's own rule of the call (``slice.indices``, a
row-major reshape) and checks it against what capture measured; every decision the rule takes
from a size (a slice's bound past the end, a ``-1`` that must divide) is a guard of the active
``ShapeEnv``. A rule returns None where it has no answer: the graph then stays exact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .graph import Node
from .meta import TensorMeta
from .sizes import Size, concrete, exact_quotient, product, same_size

#: a view's map: (result meta, the view metadata written in sizes)
View = tuple[TensorMeta, dict[str, Any]]
ViewRule = Callable[[Node, TensorMeta], "View | None"]


def transposed(node: Node, base: TensorMeta) -> View | None:
    """``x.T``, ``np.transpose(x, axes)``, ``x.transpose(1, 0)``: the operand's shape and
    strides permuted, at offset 0."""
    axes = node.kwargs.get("axes", node.args[1] if len(node.args) > 1 else None)
    if len(node.args) > 2:  # x.transpose(1, 0)
        axes = node.args[1:]
    order = tuple(reversed(range(base.ndim))) if axes is None else tuple(axes)
    if not all(isinstance(a, int) for a in order) or \
            sorted(a % max(base.ndim, 1) for a in order) != list(range(base.ndim)):
        return None
    order = tuple(a % base.ndim for a in order)
    return _checked(node, base, 0, tuple(base.shape[a] for a in order),
                    tuple(base.strides[a] for a in order))


def indexed(node: Node, base: TensorMeta) -> View | None:
    """``x[key]`` with a basic key (integers, slices with integer steps, ``None``, ``...``):
    each slice's start and length by ``slice.indices``'s rule on the dimension's size, each
    integer a position (negative ones counted from the end); the bounds' comparisons with sizes
    are guards."""
    key = node.args[1] if len(node.args) == 2 else None
    key = key if isinstance(key, tuple) else (key,)
    if not all(k is None or k is Ellipsis or isinstance(k, (slice, Size)) or _integer(k)
               for k in key):
        return None
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > base.ndim or sum(1 for k in key if k is Ellipsis) > 1:
        return None
    if Ellipsis not in key:
        key = (*key, Ellipsis)
    at = key.index(Ellipsis)
    key = (*key[:at], *(slice(None),) * (base.ndim - consumed), *key[at + 1:])
    offset: Any = 0
    shape: list[Any] = []
    strides: list[Any] = []
    d = 0
    for k in key:
        if k is None:
            shape.append(1)
            strides.append(0)
            continue
        n, stride = base.shape[d], base.strides[d]
        d += 1
        if isinstance(k, slice):
            bounds = slice_bounds(k, n)
            if bounds is None:
                return None
            start, length, step = bounds
            offset = offset + start * stride
            shape.append(length)
            strides.append(stride * step)
            continue
        position = k if isinstance(k, Size) else int(k)  # x[n - 1]: a size read in Python
        if position < 0:
            position = position + n
        if not (position >= 0 and position < n):  # NumPy raised eagerly: no view to map
            return None
        offset = offset + position * stride
    return _checked(node, base, offset, tuple(shape), tuple(strides))


def swapped(node: Node, base: TensorMeta) -> View | None:
    """``x.swapaxes(a, b)``, ``np.swapaxes(x, a, b)``: two dimensions exchanged."""
    axes = node.args[1:3] if len(node.args) >= 3 else None
    if axes is None or node.kwargs or not all(_integer(a) for a in axes) or not base.ndim:
        return None
    order = list(range(base.ndim))
    a, b = (int(axis) % base.ndim for axis in axes)
    order[a], order[b] = order[b], order[a]
    return _checked(node, base, 0, tuple(base.shape[d] for d in order),
                    tuple(base.strides[d] for d in order))


def flipped(node: Node, base: TensorMeta) -> View | None:
    """``np.flip(x, axis)``: each flipped dimension read from its end, with its stride negated."""
    axis = node.kwargs.get("axis", node.args[1] if len(node.args) > 1 else None)
    if axis is None:
        axes = set(range(base.ndim))
    elif _integer(axis):
        axes = {int(axis) % max(base.ndim, 1)}
    elif isinstance(axis, tuple) and all(_integer(a) for a in axis):
        axes = {int(a) % max(base.ndim, 1) for a in axis}
    else:
        return None
    offset: Any = 0
    strides = list(base.strides)
    for d in axes:
        offset = offset + (base.shape[d] - 1) * base.strides[d]
        strides[d] = -base.strides[d]
    return _checked(node, base, offset, tuple(base.shape), tuple(strides))


def expanded(node: Node, base: TensorMeta) -> View | None:
    """``np.expand_dims(x, axis)``: length-1 dimensions inserted (their strides NumPy's)."""
    axis = node.kwargs.get("axis", node.args[1] if len(node.args) > 1 else None)
    axes = axis if isinstance(axis, tuple) else (axis,)
    if not axes or not all(_integer(a) for a in axes):
        return None
    rank = base.ndim + len(axes)
    at = sorted(int(a) % rank for a in axes)
    if len(set(at)) != len(at):
        return None
    sizes, strides = iter(base.shape), iter(base.strides)
    shape = tuple(1 if d in at else next(sizes) for d in range(rank))
    steps = tuple(0 if d in at else next(strides) for d in range(rank))
    return _checked(node, base, 0, shape, steps)


def squeezed(node: Node, base: TensorMeta) -> View | None:
    """``np.squeeze(x, axis)``, ``x.squeeze(axis)``: length-1 dimensions removed; without an
    axis, those of length 1 as numbers (a size is never squeezed: whether it is 1 would be
    a decision, so such a graph keeps exact)."""
    axis = node.kwargs.get("axis", node.args[1] if len(node.args) > 1 else None)
    if axis is None:
        if any(isinstance(n, Size) for n in base.shape):
            return None
        axes = {d for d, n in enumerate(base.shape) if n == 1}
    else:
        chosen = axis if isinstance(axis, tuple) else (axis,)
        if not all(_integer(a) for a in chosen):
            return None
        axes = {int(a) % max(base.ndim, 1) for a in chosen}
        if any(not (isinstance(base.shape[d], int) and base.shape[d] == 1) for d in axes):
            return None
    keep = [d for d in range(base.ndim) if d not in axes]
    return _checked(node, base, 0, tuple(base.shape[d] for d in keep),
                    tuple(base.strides[d] for d in keep))


def broadcast(node: Node, base: TensorMeta) -> View | None:
    """``np.broadcast_to(x, shape)``: x's dimensions aligned to the end of ``shape``, a new or
    length-1 dimension read with stride 0 (the sizes of ``shape`` may be read from shapes)."""
    shape = node.kwargs.get("shape", node.args[1] if len(node.args) > 1 else None)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if not all(_integer(n) or isinstance(n, Size) for n in shape) or len(shape) < base.ndim:
        return None
    lead = len(shape) - base.ndim
    strides: list[Any] = [0] * lead
    for n, m, stride in zip(shape[lead:], base.shape, base.strides):
        if isinstance(m, int) and m == 1:
            strides.append(0)
        elif same_size(n, m):
            strides.append(stride)
        else:
            return None
    return _checked(node, base, 0, shape, tuple(strides))


def moved(node: Node, base: TensorMeta) -> View | None:
    """``np.moveaxis(x, source, destination)``: a transpose, its order NumPy's (the axes not
    moved keep their order, each moved one inserted at its destination)."""
    source = node.kwargs.get("source", node.args[1] if len(node.args) > 1 else None)
    destination = node.kwargs.get("destination", node.args[2] if len(node.args) > 2 else None)
    source, destination = (tuple(a) if isinstance(a, (tuple, list)) else (a,)
                           for a in (source, destination))
    rank = base.ndim
    if len(source) != len(destination) or not all(
            _integer(a) and -rank <= a < rank for a in (*source, *destination)):
        return None
    source, destination = (tuple(int(a) % rank for a in axes) for axes in (source, destination))
    if len(set(source)) != len(source) or len(set(destination)) != len(destination):
        return None
    order = [d for d in range(rank) if d not in source]
    for to, d in sorted(zip(destination, source)):
        order.insert(to, d)
    return _checked(node, base, 0, tuple(base.shape[d] for d in order),
                    tuple(base.strides[d] for d in order))


def rotated(node: Node, base: TensorMeta) -> View | None:
    """``np.rot90(m, k, axes)``: NumPy's composition of flips and a swap of the two axes."""
    k = node.kwargs.get("k", node.args[1] if len(node.args) > 1 else 1)
    axes = node.kwargs.get("axes", node.args[2] if len(node.args) > 2 else (0, 1))
    rank = base.ndim
    if not _integer(k) or not isinstance(axes, (tuple, list)) or len(axes) != 2 or \
            not all(_integer(a) and -rank <= a < rank for a in axes):
        return None
    first, second = (int(a) % rank for a in axes)
    if first == second:
        return None
    layout = (0, list(base.shape), list(base.strides))
    turns = int(k) % 4
    if turns == 2:
        layout = _flip(_flip(layout, first), second)
    elif turns:
        order = list(range(rank))
        order[first], order[second] = order[second], order[first]
        if turns == 1:
            layout = _permute(_flip(layout, second), order)
        else:
            layout = _flip(_permute(layout, order), second)
    offset, shape, strides = layout
    return _checked(node, base, offset, tuple(shape), tuple(strides))


def flipped_along(axis: int, least_rank: int) -> ViewRule:
    """``np.flipud`` (axis 0, rank 1 or more) and ``np.fliplr`` (axis 1, rank 2 or more)."""
    def rule(node: Node, base: TensorMeta) -> View | None:
        if len(node.args) != 1 or node.kwargs or base.ndim < least_rank:
            return None
        offset, shape, strides = _flip((0, list(base.shape), list(base.strides)), axis)
        return _checked(node, base, offset, tuple(shape), tuple(strides))
    return rule


def at_least(rank: int) -> ViewRule:
    """``np.atleast_1d``/``2d``/``3d`` of one array: length-1 dimensions added as NumPy adds
    them (``(n,)`` is ``(1, n)`` in 2-D and ``(1, n, 1)`` in 3-D)."""
    def rule(node: Node, base: TensorMeta) -> View | None:
        if len(node.args) != 1 or node.kwargs:
            return None
        shape, strides = list(base.shape), list(base.strides)
        if base.ndim < rank:
            ones = {0: (0,) * rank, 1: (0, 2)[: rank - 1], 2: (2,)}[base.ndim]
            for d in ones:
                shape.insert(d, 1)
                strides.insert(d, 0)
        return _checked(node, base, 0, tuple(shape), tuple(strides))
    return rule


def diagonal(node: Node, base: TensorMeta) -> View | None:
    """``np.diagonal(x, offset, axis1, axis2)``, ``x.diagonal()``, ``np.diag`` of a 2-D x: the
    other axes, then the diagonal, its length the smaller of the two sizes the offset leaves
    (which one is a guard), read with the sum of their strides."""
    if str(node.target) == "numpy.diag":
        offset = node.kwargs.get("k", node.args[1] if len(node.args) > 1 else 0)
        axes: tuple[Any, ...] = (0, 1)
        if base.ndim != 2 or len(node.args) > 2 or set(node.kwargs) - {"k"}:
            return None
    else:
        names = ("offset", "axis1", "axis2")
        given = dict(zip(names, node.args[1:]), **node.kwargs)
        if len(node.args) > 4 or set(node.kwargs) - set(names):
            return None
        offset, axes = given.get("offset", 0), (given.get("axis1", 0), given.get("axis2", 1))
    rank = base.ndim
    if not _integer(offset) or rank < 2 or not all(_integer(a) and -rank <= a < rank
                                                   for a in axes):
        return None
    first, second = (int(a) % rank for a in axes)
    if first == second:
        return None
    offset = int(offset)
    length = diagonal_length(base.shape[first], base.shape[second], offset)
    start = offset * base.strides[second] if offset >= 0 else -offset * base.strides[first]
    others = [d for d in range(rank) if d not in (first, second)]
    return _checked(node, base, start, (*(base.shape[d] for d in others), length),
                    (*(base.strides[d] for d in others),
                     base.strides[first] + base.strides[second]))


def diagonal_length(rows: Any, columns: Any, offset: int) -> Any:
    """The length of the diagonal ``offset`` of a ``rows`` by ``columns`` matrix: the smaller
    of what the offset leaves of each, at least 0 (each comparison of sizes a guard)."""
    down, across = (rows, columns - offset) if offset >= 0 else (rows + offset, columns)
    length = down if down <= across else across
    return length if length > 0 else 0


def _flip(layout: tuple[Any, list[Any], list[Any]], axis: int) -> tuple[Any, list[Any], list[Any]]:
    offset, shape, strides = layout
    offset = offset + (shape[axis] - 1) * strides[axis]
    strides = [-s if d == axis else s for d, s in enumerate(strides)]
    return offset, shape, strides


def _permute(layout: tuple[Any, list[Any], list[Any]],
             order: list[int]) -> tuple[Any, list[Any], list[Any]]:
    offset, shape, strides = layout
    return offset, [shape[d] for d in order], [strides[d] for d in order]


def slice_bounds(key: slice, n: Any) -> tuple[Any, Any, int] | None:
    """``key.indices(n)``'s start, the slice's length and its step, for a size ``n`` (each
    comparison of a bound with ``n`` a guard); None for a step that is not a nonzero int."""
    step = 1 if key.step is None else key.step
    if not _integer(step) or step == 0 or not all(
            b is None or _integer(b) or isinstance(b, Size) for b in (key.start, key.stop)):
        return None
    step = int(step)
    lower, upper = (0, n) if step > 0 else (-1, n - 1)

    def bound(value: Any, default: Any) -> Any:
        if value is None:
            return default
        value = value if isinstance(value, Size) else int(value)
        if value < 0:
            value = value + n
            return lower if value < lower else value
        return upper if value > upper else value

    start = bound(key.start, lower if step > 0 else upper)
    stop = bound(key.stop, upper if step > 0 else lower)
    return start, slice_length(start, stop, step), step


def slice_length(start: Any, stop: Any, step: int) -> Any:
    """``len(range(start, stop, step))`` of normalized bounds that may be sizes (whether the
    range is empty a guard)."""
    if not isinstance(start, Size) and not isinstance(stop, Size):
        return len(range(start, stop, step))
    if step > 0:
        return (stop - start - 1) // step + 1 if stop > start else 0
    return (start - stop - 1) // -step + 1 if start > stop else 0


def reshaped(node: Node, base: TensorMeta) -> View | None:
    """``x.reshape(shape)``, ``np.reshape(x, shape)``, ``x.ravel()`` of an operand laid out row-
    major: the new shape (a ``-1`` is the element count divided by the others' product, that
    division exact or guarded) with row-major strides, at offset 0. Other layouts (NumPy copies
    or views them by strides that need not follow sizes) have no rule."""
    shape = reshape_target(node, base)
    if shape is None or not row_major(base):
        return None
    return _checked(node, base, 0, shape, row_major_strides(shape))


def reshape_target(node: Node, base: TensorMeta) -> tuple[Any, ...] | None:
    """The shape a reshape, ravel or flatten call asks for, in sizes (None: no rule)."""
    order = node.kwargs.get("order", "C")
    if order != "C":
        return None
    target = str(node.target)
    if target.endswith("ravel") or target.endswith("flatten"):
        if len(node.args) > 1 + target.startswith("numpy."):
            return None
        return (product(base.shape),)
    request = node.args[1:] if not target.startswith("numpy.") else node.args[1:2]
    if "shape" in node.kwargs or "newshape" in node.kwargs:
        request = (node.kwargs.get("shape", node.kwargs.get("newshape")),)
    if len(request) == 1 and isinstance(request[0], (tuple, list)):
        request = tuple(request[0])
    if not request or not all(_integer(n) or isinstance(n, Size) for n in request):
        return None
    known = product(n for n in request if not (_integer(n) and n == -1))
    total = product(base.shape)
    unknown = [i for i, n in enumerate(request) if _integer(n) and n == -1]
    if len(unknown) > 1:
        return None
    if not unknown:
        return tuple(request) if total == known else None  # a guard where sizes differ
    rest = exact_quotient(total, known)
    if rest is None:
        if not isinstance(known, int) or known <= 0 or total % known != 0:  # a guard
            return None
        rest = total // known
    return tuple(rest if i == unknown[0] else n for i, n in enumerate(request))


def row_major(meta: TensorMeta) -> bool:
    """Whether ``meta``'s strides are row-major in its sizes (length-1 dimensions aside), as
    expressions: deciding nothing."""
    dense = row_major_strides(meta.shape)
    return all(same_size(n, 1) or same_size(s, t)
               for n, s, t in zip(meta.shape, meta.strides, dense))


def row_major_strides(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    strides: list[Any] = []
    step: Any = 1
    for n in reversed(shape):
        strides.append(step)
        step = step * n
    return tuple(reversed(strides))


def _checked(node: Node, base: TensorMeta, offset: Any, shape: tuple[Any, ...],
             strides: tuple[Any, ...]) -> View | None:
    """The view in sizes, if at the traced sizes it is the view capture measured."""
    view, meta = node.meta["view"], node.tensor
    if concrete(offset) != view.get("offset") or concrete(shape) != tuple(meta.shape) or \
            list(concrete(base.strides)) != list(view.get("base_strides", concrete(base.strides))):
        return None
    kept = []
    for n, stride, measured in zip(shape, strides, view["strides"]):
        if concrete(stride) == measured:
            kept.append(stride)
        elif isinstance(n, int) and n == 1:  # a length-1 dimension's stride, as NumPy gave it
            kept.append(measured)
        else:
            return None
    strides = tuple(kept)
    return (TensorMeta(shape, meta.dtype, strides, meta.device, meta.scalar),
            {**view, "offset": offset, "strides": list(strides),
             "base_strides": list(base.strides)})


def view_rules() -> dict[str, ViewRule]:
    """Each call whose result may be a view of its first operand, and its rule."""
    rules: dict[str, ViewRule] = {
        "numpy.transpose": transposed, "method:transpose": transposed,
        "operator.getitem": indexed,
        "method:reshape": reshaped, "numpy.reshape": reshaped, "method:ravel": reshaped,
        "numpy.ravel": reshaped,
        "method:swapaxes": swapped, "numpy.swapaxes": swapped, "numpy.flip": flipped,
        "numpy.expand_dims": expanded, "numpy.squeeze": squeezed, "method:squeeze": squeezed,
        "numpy.broadcast_to": broadcast,
        "numpy.moveaxis": moved, "numpy.rot90": rotated,
        "numpy.flipud": flipped_along(0, 1), "numpy.fliplr": flipped_along(1, 2),
        "numpy.atleast_1d": at_least(1), "numpy.atleast_2d": at_least(2),
        "numpy.atleast_3d": at_least(3),
        "numpy.diagonal": diagonal, "method:diagonal": diagonal, "numpy.diag": diagonal,
    }
    return rules


def _integer(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
