"""NumPy's shape rules, on sizes, of its library functions (issue 15): statistics along axes
(``median``, ``percentile``, the ``nan*`` reductions, ``average``, ``ptp``), selection
(``partition``, ``lexsort``), ``trace``, triangles, repetition, the joins written over
``concatenate`` (``column_stack``, ``dstack``, ``append``) and creation from sizes (``eye``,
``linspace``, ``diag`` of a vector).

The rules follow ``size_rules.py``'s contract: each takes the call node and its array operands'
symbolic metadata and returns the result's shape in sizes, or None for a form of the call it
has no rule for; a relation between sizes the result depends on is compared (a guard of the
active ``ShapeEnv``), never assumed. Arguments are bound by the NumPy function's own signature,
so a positional ``out`` or ``weights`` is seen as surely as a keyword one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .graph import Node
from .meta import TensorMeta
from .sizes import Size, product

Rule = Callable[[Node, list[TensorMeta]], "tuple[Any, ...] | None"]
#: arguments that must broadcast against the operand or stand for part of the result (a
#: ``where`` mask, an ``initial`` value, a precomputed ``mean``): such calls have no rule
_MASKS = frozenset({"where", "initial", "mean"})


def bound(node: Node, reference: Callable[..., Any]) -> dict[str, Any] | None:
    """The call's arguments by parameter name as ``reference``'s signature binds them (for a
    method, ``self`` first, as capture records it), or None where they do not bind."""
    try:
        return inspect.signature(reference).bind(*node.args, **node.kwargs).arguments
    except (TypeError, ValueError):
        return None


def reduced_shape(shape: tuple[Any, ...], axis: Any, keepdims: bool) -> tuple[Any, ...] | None:
    """A reduction's result shape over ``axis`` (None: all, an int, a tuple of ints)."""
    rank = len(shape)
    if axis is None:
        axes = set(range(rank))
    elif _integer(axis) and -rank <= axis < rank:
        axes = {int(axis) % rank}
    elif isinstance(axis, tuple) and all(_integer(a) and -rank <= a < rank for a in axis):
        axes = {int(a) % rank for a in axis}
        if len(axes) != len(axis):
            return None
    else:
        return None
    return tuple(1 if d in axes else n for d, n in enumerate(shape) if keepdims or d not in axes)


def concatenated_shape(shapes: Sequence[tuple[Any, ...]], axis: int) -> tuple[Any, ...] | None:
    """``np.concatenate``'s shape for operands of one rank: the sizes along ``axis`` summed,
    the others equal (guards)."""
    if not shapes or not shapes[0]:
        return None
    rank = len(shapes[0])
    if not -rank <= axis < rank or any(len(s) != rank for s in shapes):
        return None
    axis %= rank
    first = shapes[0]
    for s in shapes[1:]:
        if not all(d == axis or s[d] == first[d] for d in range(rank)):  # guards
            return None
    return (*first[:axis], sum((s[axis] for s in shapes), 0), *first[axis + 1:])


def _statistic(reference: Callable[..., Any], banned: frozenset[str] = frozenset()) -> Rule:
    """A reduction written in Python over NumPy's own (``np.nanmean``, ``np.median``,
    ``np.ptp``, ``np.average`` without weights): the reduced shape, with ``percentile``'s and
    ``quantile``'s ``q`` shape in front."""
    def rule(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
        params = bound(node, reference)
        if params is None or not isinstance(params.get("a"), Node) or \
                params.get("out") is not None or (banned | _MASKS) & set(params):
            return None
        kept = reduced_shape(operands[0].shape, params.get("axis"),
                             params.get("keepdims", False) is True)
        if kept is None or "q" not in params:
            return kept
        q = params["q"]
        if isinstance(q, Node):
            return (*operands[1].shape, *kept) if len(operands) == 2 else None
        if isinstance(q, (Size, bool)) or not isinstance(q, (int, float, list, tuple)):
            return None
        return (*np.shape(q), *kept)
    return rule


def _arg_statistic(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.nanargmax(a, axis)``/``nanargmin``: one axis or none (a tuple is NumPy's error)."""
    params = bound(node, np.nanargmax)
    if params is None or not isinstance(params.get("a"), Node) or \
            params.get("out") is not None or isinstance(params.get("axis"), tuple):
        return None
    return reduced_shape(operands[0].shape, params.get("axis"),
                         params.get("keepdims", False) is True)


def _nan_scanned(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.nancumsum(a, axis)``/``nancumprod``: a's shape, flattened without an axis."""
    params = bound(node, np.nancumsum)
    if params is None or not isinstance(params.get("a"), Node) or params.get("out") is not None:
        return None
    axis, shape = params.get("axis"), operands[0].shape
    if axis is None:
        return (product(shape),)
    return shape if _integer(axis) and -len(shape) <= axis < len(shape) else None


def _counted(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.count_nonzero(a, axis)``: a reduction's shape (a Python int without an axis)."""
    params = bound(node, np.count_nonzero)
    if params is None or not isinstance(params.get("a"), Node):
        return None
    return reduced_shape(operands[0].shape, params.get("axis"),
                         params.get("keepdims", False) is True)


def _traced(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.trace(a, offset, axis1, axis2)``, ``a.trace()``: a's shape without the two axes. The
    diagonal's length, which depends on how the sizes compare, is summed over: not in the
    shape."""
    params = bound(node, np.trace)
    if params is None or not isinstance(params.get("a"), Node) or \
            params.get("out") is not None or isinstance(params.get("offset"), Node):
        return None
    shape = operands[0].shape
    rank = len(shape)
    axes = (params.get("axis1", 0), params.get("axis2", 1))
    if rank < 2 or not all(_integer(a) and -rank <= a < rank for a in axes):
        return None
    first, second = (int(a) % rank for a in axes)
    if first == second:
        return None
    return tuple(n for d, n in enumerate(shape) if d not in (first, second))


def _partitioned(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.partition(a, kth, axis)``: a's shape (flattened with ``axis=None``); each ``kth``
    within the axis (guards: past it, NumPy raises)."""
    params = bound(node, np.partition)
    if params is None or not isinstance(params.get("a"), Node) or \
            params.get("order") is not None:
        return None
    kth, axis, shape = params["kth"], params.get("axis", -1), operands[0].shape
    positions = tuple(kth) if isinstance(kth, (list, tuple)) else (kth,)
    if not positions or not all(_integer(k) or isinstance(k, Size) for k in positions):
        return None
    if axis is None:
        shape = (product(shape),)
        axis = 0
    if not _integer(axis) or not -len(shape) <= axis < len(shape):
        return None
    n = shape[int(axis) % len(shape)]
    if not all(-n <= k and k < n for k in positions):
        return None
    return shape


def _lexsorted(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.lexsort(keys, axis)``: a sequence of keys of one shape (guards), or a 2-D or larger
    array whose rows are the keys: the indices have a key's shape."""
    params = bound(node, np.lexsort)
    if params is None or not operands:
        return None
    keys, axis = params["keys"], params.get("axis", -1)
    if isinstance(keys, Node):
        if len(operands) != 1 or operands[0].ndim < 2:
            return None
        shape = operands[0].shape[1:]
    elif isinstance(keys, (list, tuple)) and len(keys) == len(operands) and \
            all(isinstance(k, Node) for k in keys):
        shape = operands[0].shape
        if any(len(m.shape) != len(shape) or not all(a == b for a, b in zip(m.shape, shape))
               for m in operands[1:]):
            return None
    else:
        return None
    if not shape or not _integer(axis) or not -len(shape) <= axis < len(shape):
        return None
    return shape


def _repeated(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.repeat(a, k, axis)``, ``a.repeat(k, axis)`` with one integer count: the axis (the
    flattened array without one) ``k`` times as long."""
    params = bound(node, np.repeat)
    if params is None or not isinstance(params.get("a"), Node) or len(operands) != 1:
        return None
    k, axis, shape = params["repeats"], params.get("axis"), operands[0].shape
    if not _integer(k) or k < 0:
        return None
    if axis is None:
        return (product(shape) * int(k),)
    if not _integer(axis) or not -len(shape) <= axis < len(shape):
        return None
    axis = int(axis) % len(shape)
    return (*shape[:axis], shape[axis] * int(k), *shape[axis + 1:])


def _triangle(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.tril(m, k)``/``np.triu`` of rank 2 or more: m's shape (a 1-D m is NumPy's square)."""
    params = bound(node, np.tril)
    if params is None or not isinstance(params.get("m"), Node) or operands[0].ndim < 2 or \
            not _integer(params.get("k", 0)):
        return None
    return operands[0].shape


def _diag(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.diag(v, k)`` of a 1-D v: a square of side ``len(v) + |k|`` (of a 2-D v NumPy
    returns a view: ``view_sizes.diagonal``)."""
    params = bound(node, np.diag)
    k = params.get("k", 0) if params is not None else None
    if params is None or not isinstance(params.get("v"), Node) or len(operands) != 1 or \
            operands[0].ndim != 1 or not _integer(k):
        return None
    side = operands[0].shape[0] + abs(int(k))
    return (side, side)


def _eye(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.eye(n, m)``: ``(n, m)``, ``m`` n without one; the sizes may be read from shapes."""
    params = bound(node, np.eye)
    if params is None or operands or not _integer(params.get("k", 0)):
        return None
    n = params["N"]
    m = params.get("M")
    m = n if m is None else m
    if not all(isinstance(v, Size) or (_integer(v) and v >= 0) for v in (n, m)):
        return None
    return (n, m)


def _linspace(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.linspace(start, stop, num)`` with scalar ends: ``(num,)``, num maybe a size."""
    params = bound(node, np.linspace)
    if params is None or operands or params.get("retstep") or params.get("axis", 0) != 0:
        return None
    num = params.get("num", 50)
    if not (isinstance(num, Size) or (_integer(num) and num >= 0)):
        return None
    return (num,)


def _rounded(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.round(a, decimals)``, ``np.around``, ``a.round()``: a's shape."""
    params = bound(node, np.round)
    if params is None or not isinstance(params.get("a"), Node) or len(operands) != 1 or \
            params.get("out") is not None or not _integer(params.get("decimals", 0)):
        return None
    return operands[0].shape


def _joined_as(promoted: Callable[[tuple[Any, ...]], tuple[Any, ...]], axis: int,
               reference: Callable[..., Any]) -> Rule:
    """A join NumPy writes as each operand promoted in rank (``atleast_3d``, a 1-D column),
    then concatenated along ``axis``."""
    def rule(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
        params = bound(node, reference)
        tup = params.get("tup") if params is not None else None
        if not isinstance(tup, (list, tuple)) or len(tup) != len(operands) or \
                not all(isinstance(t, Node) for t in tup):
            return None
        return concatenated_shape([promoted(tuple(m.shape)) for m in operands], axis)
    return rule


def _as_column(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """``np.column_stack``'s promotion: a 1-D array a column, a 0-d one ``(1, 1)``."""
    return {0: (1, 1), 1: (*shape, 1)}.get(len(shape), shape)


def _at_least_3d(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    return {0: (1, 1, 1), 1: (1, *shape, 1), 2: (*shape, 1)}.get(len(shape), shape)


def _appended(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.append(arr, values, axis)`` of two arrays: flattened and joined without an axis,
    else a concatenation along it."""
    params = bound(node, np.append)
    if params is None or not isinstance(params.get("arr"), Node) or \
            not isinstance(params.get("values"), Node) or len(operands) != 2:
        return None
    axis = params.get("axis")
    shapes = [m.shape for m in operands]
    if axis is None:
        return (product(shapes[0]) + product(shapes[1]),)
    return concatenated_shape(shapes, int(axis)) if _integer(axis) else None


def library_rules() -> dict[str, Rule]:
    """Each call target of this module and its rule."""
    rules: dict[str, Rule] = {}
    for name in ("nansum", "nanprod", "nanmean", "nanmax", "nanmin", "nanstd", "nanvar",
                 "nanmedian", "median", "ptp"):
        rules[f"numpy.{name}"] = _statistic(getattr(np, name))
    for name in ("percentile", "quantile", "nanpercentile", "nanquantile"):
        rules[f"numpy.{name}"] = _statistic(getattr(np, name), frozenset({"weights"}))
    rules["numpy.average"] = _statistic(np.average, frozenset({"weights", "returned"}))
    rules.update(dict.fromkeys(("numpy.nanargmax", "numpy.nanargmin"), _arg_statistic))
    rules.update(dict.fromkeys(("numpy.nancumsum", "numpy.nancumprod"), _nan_scanned))
    rules["numpy.count_nonzero"] = _counted
    rules.update(dict.fromkeys(("numpy.trace", "method:trace"), _traced))
    rules["numpy.partition"] = _partitioned
    rules["numpy.lexsort"] = _lexsorted
    rules.update(dict.fromkeys(("numpy.repeat", "method:repeat"), _repeated))
    rules.update(dict.fromkeys(("numpy.tril", "numpy.triu"), _triangle))
    rules["numpy.eye"] = _eye
    rules["numpy.diag"] = _diag
    rules["numpy.linspace"] = _linspace
    rules.update(dict.fromkeys(("numpy.round", "numpy.around", "method:round"), _rounded))
    rules["numpy.column_stack"] = _joined_as(_as_column, 1, np.column_stack)
    rules["numpy.dstack"] = _joined_as(_at_least_3d, 2, np.dstack)
    rules["numpy.append"] = _appended
    return rules


def _integer(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
