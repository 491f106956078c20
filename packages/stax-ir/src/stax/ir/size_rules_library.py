"""NumPy's shape rules, on sizes, of its library functions (issue 15): statistics along axes
(``median``, ``percentile``, the ``nan*`` reductions, ``average``, ``ptp``), selection
(``partition``, ``lexsort``), ``trace``, triangles, repetition, the joins written over
``concatenate`` (``column_stack``, ``dstack``, ``append``), creation from sizes (``eye``,
``linspace``, ``diag`` of a vector), searching and interpolation (``searchsorted``, ``interp``),
``convolve``, ``kron``, ``cov`` and ``corrcoef``, and ``insert``/``delete`` of one element.

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
    """A reduction's result shape over ``axis`` (None: all, an int, a tuple of ints; a 0-d
    operand's axis 0, which NumPy's reductions take, reduces nothing)."""
    rank = len(shape)
    if axis is None:
        axes = set(range(rank))
    elif _integer(axis) and not rank:
        axes = set()
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


def _operand_metas(node: Node, operands: list[TensorMeta]) -> dict[Node, TensorMeta]:
    """Each array argument's metadata by node: ``operands`` come in the order of the call's
    arguments, keywords in the order given, which need not be the signature's."""
    nodes = [item for a in (*node.args, *node.kwargs.values())
             for item in (a if isinstance(a, (list, tuple)) else (a,))
             if isinstance(item, Node) and item.tensor is not None]
    return dict(zip(nodes, operands)) if len(nodes) == len(operands) else {}


def _shape_of(value: Any, metas: dict[Node, TensorMeta]) -> tuple[Any, ...] | None:
    """An array argument's shape in sizes, a number's ``()``; None for anything else."""
    if isinstance(value, Node):
        meta = metas.get(value)
        return None if meta is None else tuple(meta.shape)
    return () if _number(value) else None


def _vector_size(value: Any, metas: dict[Node, TensorMeta]) -> Any:
    """The length of a 1-D array argument that is not empty (NumPy raises on an empty one)."""
    shape = _shape_of(value, metas)
    if shape is None or len(shape) != 1 or (_integer(shape[0]) and shape[0] == 0):
        return None
    return shape[0]


def _searched(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.searchsorted(a, v, side, sorter)``, ``a.searchsorted(v)`` of a 1-D ``a``: v's shape,
    ``()`` for a number; a sorter as long as ``a`` (a guard: NumPy raises otherwise)."""
    params = bound(node, np.searchsorted)
    metas = _operand_metas(node, operands)
    if params is None or not isinstance(params.get("side", "left"), str):
        return None
    a = _shape_of(params.get("a"), metas) if isinstance(params.get("a"), Node) else None
    sorter = params.get("sorter")
    if a is None or len(a) != 1:
        return None
    if sorter is not None:
        order = _shape_of(sorter, metas) if isinstance(sorter, Node) else None
        if order is None or len(order) != 1 or \
                np.dtype(metas[sorter].dtype).kind not in "iu" or not order[0] == a[0]:
            return None
    return _shape_of(params["v"], metas)


def _interpolated(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.interp(x, xp, fp, left, right, period)``: x's shape, ``()`` for a number; ``xp`` and
    ``fp`` 1-D, not empty and of one length (a guard), the fills and period numbers."""
    params = bound(node, np.interp)
    metas = _operand_metas(node, operands)
    if params is None or not all(params.get(k) is None or _number(params[k])
                                 for k in ("left", "right", "period")) or \
            params.get("period") == 0:
        return None
    points, values = (_vector_size(params[k], metas) for k in ("xp", "fp"))
    if points is None or values is None or not points == values:
        return None
    return _shape_of(params["x"], metas)


def _convolved(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.convolve(a, v, mode)`` of 1-D arrays, neither empty: ``full`` has ``n + m - 1``
    elements, ``same`` the longer's, ``valid`` ``longer - shorter + 1`` (which is longer: a
    guard)."""
    params = bound(node, np.convolve)
    metas = _operand_metas(node, operands)
    if params is None:
        return None
    n, m = (_vector_size(params[k], metas) for k in ("a", "v"))
    mode = params.get("mode", "full")
    if n is None or m is None or mode not in ("full", "same", "valid"):
        return None
    if mode == "full":
        return (n + m - 1,)
    longer, shorter = (n, m) if n >= m else (m, n)  # a guard
    return (longer,) if mode == "same" else (longer - shorter + 1,)


def _kronecker(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.kron(a, b)``: both shapes padded in front with 1s to one rank, sizes multiplied
    (a number, or a 0-d array, multiplies: the same rule)."""
    params = bound(node, np.kron)
    metas = _operand_metas(node, operands)
    if params is None:
        return None
    a, b = (_shape_of(params[k], metas) for k in ("a", "b"))
    if a is None or b is None:
        return None
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    return tuple(p * q for p, q in zip(a, b))


def _covariance(reference: Callable[..., Any], array: str, extra: frozenset[str]) -> Rule:
    """``np.cov(m, rowvar, bias, ddof)``, ``np.corrcoef(x, rowvar)`` of one 1-D or 2-D array:
    one variable per row (per column with ``rowvar=False``, unless there is one row), the
    result squeezed as NumPy's: ``()`` for one variable or a 1-D array, else a square of the
    variables (whether there is one: a guard)."""
    def rule(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
        params = bound(node, reference)
        if params is None or not isinstance(params.get(array), Node) or len(operands) != 1 or \
                set(params) - {array, "rowvar", *extra} or \
                not all(_integer(params.get(k, 0)) or isinstance(params.get(k), (bool, np.bool_))
                        for k in ("rowvar", "bias")) or \
                not (params.get("ddof") is None or _integer(params["ddof"])):
            return None
        shape = operands[0].shape
        if len(shape) == 1:
            return ()
        if len(shape) != 2:
            return None
        variables = shape[0]
        if not params.get("rowvar", True):
            if shape[0] == 1:  # a guard: NumPy transposes only more than one row
                return ()
            variables = shape[1]
        return () if variables == 1 else (variables, variables)  # a guard: the squeeze
    return rule


def _resized_at(reference: Callable[..., Any], grown: int) -> Rule:
    """``np.insert(arr, k, value, axis)`` (``grown=1``) and ``np.delete(arr, k, axis)``
    (``grown=-1``) with one integer index: the axis (the flattened array without one) one
    longer or shorter; ``k`` within it (guards: ``-n <= k <= n`` to insert, ``-n <= k < n`` to
    delete; past it NumPy raises IndexError)."""
    def rule(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
        params = bound(node, reference)
        if params is None or not isinstance(params.get("arr"), Node) or \
                not _integer(params.get("obj")):
            return None
        if grown > 0 and _shape_of(params["values"], _operand_metas(node, operands)) != ():
            return None  # values of more elements: NumPy's broadcast, no rule
        k, axis, shape = int(params["obj"]), params.get("axis"), operands[0].shape
        if axis is None:
            shape, axis = (product(shape),), 0
        if not _integer(axis) or not -len(shape) <= axis < len(shape):
            return None
        axis = int(axis) % len(shape)
        n = shape[axis]
        if not (-n <= k and (k <= n if grown > 0 else k < n)):
            return None
        return (*shape[:axis], n + grown, *shape[axis + 1:])
    return rule


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
    rules["numpy.diagflat"] = _diag  # the same parameters; of a 1-D v the same matrix
    rules["numpy.linspace"] = _linspace
    rules.update(dict.fromkeys(("numpy.round", "numpy.around", "method:round"), _rounded))
    rules["numpy.column_stack"] = _joined_as(_as_column, 1, np.column_stack)
    rules["numpy.dstack"] = _joined_as(_at_least_3d, 2, np.dstack)
    rules["numpy.append"] = _appended
    rules.update(dict.fromkeys(("numpy.searchsorted", "method:searchsorted"), _searched))
    rules["numpy.interp"] = _interpolated
    rules["numpy.convolve"] = _convolved
    rules["numpy.kron"] = _kronecker
    rules["numpy.cov"] = _covariance(np.cov, "m", frozenset({"bias", "ddof"}))
    rules["numpy.corrcoef"] = _covariance(np.corrcoef, "x", frozenset())
    rules["numpy.insert"] = _resized_at(np.insert, 1)
    rules["numpy.delete"] = _resized_at(np.delete, -1)
    return rules


def _integer(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _number(value: Any) -> bool:
    """A plain number (a size is not one: it is a decision to read it)."""
    return isinstance(value, (int, float, complex, np.number, np.bool_)) and \
        not isinstance(value, Size)
