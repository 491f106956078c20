"""NumPy's shape rules of the calls a size-generic graph may hold, on sizes (issue 15).

Each rule takes a captured call node and its array operands' symbolic metadata (in argument
order, arrays inside a list argument included: ``np.concatenate([a, b])``) and returns the
result's shape in sizes, or None where it has no rule for this form of the call. A relation the
rule needs (two broadcast sizes equal, the non-joined sizes of a concatenation equal) is a
comparison of sizes, so a guard of the active ``ShapeEnv``; a rule never assumes one. The rules
of NumPy's library functions (statistics, selection, joins written over ``concatenate``) are in
``size_rules_library.py``; ``shape_rules()`` holds both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .graph import Node
from .meta import TensorMeta
from .ops import OPS, SCALAR_OPERATORS, OpKind, capture_targets_of, elementwise_ops
from .size_rules_library import concatenated_shape, library_rules, reduced_shape
from .sizes import Size, product

Rule = Callable[[Node, list[TensorMeta]], "tuple[Any, ...] | None"]

_EXTRA_ELEMENTWISE = frozenset({
    "operator.pow", "numpy.power", "numpy.float_power", "numpy.square", "numpy.where",
    "numpy.clip", "method:clip", "method:astype", "numpy.maximum", "numpy.minimum",
    *SCALAR_OPERATORS,  # NumPy's scalar math on 0-d values (``k.sum() + k.shape[0]``)
})


def broadcast_shapes(shapes: Sequence[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    """NumPy's broadcast of ``shapes``, with sizes: a symbol against 1 is the symbol, two
    symbols must be equal (a guard)."""
    if not shapes:
        return ()
    rank = max(len(s) for s in shapes)
    out = []
    for d in range(rank):
        size: Any = 1
        for s in shapes:
            k = d - (rank - len(s))
            if k < 0:
                continue
            n = s[k]
            if isinstance(n, int) and n == 1:
                continue
            if isinstance(size, int) and size == 1:
                size = n
            elif not n == size:  # a decision: a guard that they are equal
                return None
        out.append(size)
    return tuple(out)


def _elementwise(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    return broadcast_shapes([m.shape for m in operands])


def _axis_argument(node: Node) -> Any:
    if "axis" in node.kwargs:
        return node.kwargs["axis"]
    return node.args[1] if len(node.args) > 1 else None  # f(x, axis) and x.f(axis) alike


def _reduced(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    if len(operands) != 1 or {"out", "where", "initial"} & set(node.kwargs):
        return None
    axis = _axis_argument(node)
    if node.target in ("argmax", "argmin", "numpy.argmax", "numpy.argmin") and \
            not isinstance(axis, int) and axis is not None:
        return None
    return reduced_shape(operands[0].shape, axis, bool(node.kwargs.get("keepdims", False)))


def _matmul(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``a @ b``: 1-D operands promoted and their dimension dropped, batch dimensions
    broadcast, the contracted sizes equal (a guard)."""
    if len(operands) != 2 or not operands[0].ndim or not operands[1].ndim:
        return None
    a, b = operands[0].shape, operands[1].shape
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if not a2[-1] == b2[-2]:
        return None
    batch = broadcast_shapes([a2[:-2], b2[:-2]])
    if batch is None:
        return None
    return (*batch, *a2[-2:-1][:len(a) - 1], *b2[-1:][:len(b) - 1])


def _dot(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.dot``/``x.dot`` of operands of rank at most 2 (where it is ``matmul``, or a
    scalar product of two vectors)."""
    if len(operands) != 2 or any(m.ndim > 2 for m in operands):
        return None
    if not operands[0].ndim or not operands[1].ndim:
        return broadcast_shapes([operands[0].shape, operands[1].shape])  # times a scalar
    return _matmul(node, operands)


def _outer(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    if len(operands) != 2:
        return None
    return (product(operands[0].shape), product(operands[1].shape))


def _ufunc_outer(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.subtract.outer(a, b)`` and every binary ufunc's: ``a.shape + b.shape``."""
    if len(operands) != 2 or len(node.args) != 2 or \
            not all(isinstance(a, Node) for a in node.args) or {"out", "where"} & set(node.kwargs):
        return None
    return (*operands[0].shape, *operands[1].shape)


def _inner(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.inner(a, b)``: the last axes contracted (their sizes equal: a guard), the others
    kept, a's then b's; a 0-d operand multiplies."""
    if len(operands) != 2 or len(node.args) != 2 or node.kwargs:
        return None
    a, b = operands[0].shape, operands[1].shape
    if not a or not b:
        return broadcast_shapes([a, b])
    if not a[-1] == b[-1]:
        return None
    return (*a[:-1], *b[:-1])


def _tensordot(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.tensordot(a, b, axes)``: ``axes=N`` pairs a's last N axes with b's first N; a pair
    of sequences (or ints) names them. Paired sizes equal (guards); a's free axes then b's."""
    if len(operands) != 2 or not all(isinstance(a, Node) for a in node.args[:2]) or \
            len(node.args) > 3 or set(node.kwargs) - {"axes"}:
        return None
    axes = node.kwargs.get("axes", node.args[2] if len(node.args) > 2 else 2)
    a, b = operands[0].shape, operands[1].shape
    if _integer(axes):
        if not 0 <= axes <= min(len(a), len(b)):
            return None
        pairs_a, pairs_b = list(range(len(a) - axes, len(a))), list(range(axes))
    elif isinstance(axes, (list, tuple)) and len(axes) == 2:
        pairs_a, pairs_b = (list(p) if isinstance(p, (list, tuple)) else [p] for p in axes)
    else:
        return None
    if len(pairs_a) != len(pairs_b) or not all(_integer(d) for d in (*pairs_a, *pairs_b)):
        return None
    pairs_a = [int(d) + len(a) if d < 0 else int(d) for d in pairs_a]
    pairs_b = [int(d) + len(b) if d < 0 else int(d) for d in pairs_b]
    if not all(0 <= d < len(a) for d in pairs_a) or not all(0 <= d < len(b) for d in pairs_b) \
            or len(set(pairs_a)) != len(pairs_a) or len(set(pairs_b)) != len(pairs_b):
        return None
    if not all(a[i] == b[j] for i, j in zip(pairs_a, pairs_b)):  # guards
        return None
    return (*(n for d, n in enumerate(a) if d not in pairs_a),
            *(n for d, n in enumerate(b) if d not in pairs_b))


def _crossed(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.cross(a, b, axisa, axisb, axisc, axis)``: vectors of 2 or 3 components (numbers,
    not sizes) along ``axisa``/``axisb``, the other axes broadcast; with a 3-vector among them
    the result holds 3-vectors along ``axisc``, else scalars."""
    names = ("axisa", "axisb", "axisc", "axis")
    if len(operands) != 2 or len(node.args) != 2 or \
            not all(isinstance(a, Node) for a in node.args) or set(node.kwargs) - set(names):
        return None
    axis = node.kwargs.get("axis")
    axisa, axisb, axisc = (node.kwargs.get(k, -1) if axis is None else axis for k in names[:3])
    a, b = operands[0].shape, operands[1].shape
    if not a or not b or not all(_integer(k) for k in (axisa, axisb, axisc)) or \
            not -len(a) <= axisa < len(a) or not -len(b) <= axisb < len(b):
        return None
    axisa, axisb = axisa % len(a), axisb % len(b)
    vectors = (a[axisa], b[axisb])
    if not all(_integer(n) and n in (2, 3) for n in vectors):
        return None
    shape = broadcast_shapes([a[:axisa] + a[axisa + 1:], b[:axisb] + b[axisb + 1:]])
    if shape is None or 3 not in vectors:
        return shape
    rank = len(shape) + 1
    if not -rank <= axisc < rank:
        return None
    axisc %= rank
    return (*shape[:axisc], 3, *shape[axisc:])


def _joined(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.concatenate(seq, axis)``: the joined sizes summed, the others equal (guards)."""
    if set(node.kwargs) - {"axis"} or len(node.args) > 2 or not operands:
        return None
    axis = node.kwargs.get("axis", node.args[1] if len(node.args) > 1 else 0)
    shapes = [m.shape for m in operands]
    if axis is None:
        return (sum((product(s) for s in shapes), 0),)
    return concatenated_shape(shapes, axis) if isinstance(axis, int) else None


def _stacked(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.stack(seq, axis)``: equal shapes (guards), a new dimension of ``len(seq)``."""
    if set(node.kwargs) - {"axis"} or len(node.args) > 2 or not operands:
        return None
    axis = node.kwargs.get("axis", node.args[1] if len(node.args) > 1 else 0)
    shape = operands[0].shape
    if not isinstance(axis, int) or any(
            len(m.shape) != len(shape) or not all(a == b for a, b in zip(m.shape, shape))
            for m in operands[1:]):
        return None
    axis %= len(shape) + 1
    return (*shape[:axis], len(operands), *shape[axis:])


def _scanned(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.cumsum(x, axis)`` and its kin: the operand's shape, flattened without an axis."""
    if len(operands) != 1 or {"out"} & set(node.kwargs):
        return None
    if _axis_argument(node) is None:
        return (product(operands[0].shape),)
    return operands[0].shape


def _accumulated(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.maximum.accumulate(x, axis)`` and every binary ufunc's: x's shape."""
    if len(operands) != 1 or not operands[0].shape or {"out"} & set(node.kwargs) or \
            not node.args or not isinstance(node.args[0], Node):
        return None
    return operands[0].shape


def _polynomial(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.polyval(p, x)`` of 1-D coefficients (an array, or numbers): x's shape."""
    if len(node.args) != 2 or node.kwargs or not isinstance(node.args[1], Node):
        return None
    p = node.args[0]
    if isinstance(p, Node):
        return operands[1].shape if len(operands) == 2 and len(operands[0].shape) == 1 else None
    if not isinstance(p, (list, tuple)) or not all(isinstance(c, (int, float)) for c in p):
        return None
    return operands[0].shape if len(operands) == 1 else None


def _like(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.zeros_like(x)`` and its kin: x's shape (unless the call gives another)."""
    if "shape" in node.kwargs or not operands or not node.args or \
            not isinstance(node.args[0], Node):
        return None
    return operands[0].shape


def _differenced(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.diff(x, n=1, axis=-1)``: the axis shortened by ``n`` (at least 0: a guard)."""
    if len(operands) != 1 or set(node.kwargs) - {"n", "axis"} or len(node.args) > 1:
        return None
    n, axis = node.kwargs.get("n", 1), node.kwargs.get("axis", -1)
    shape = operands[0].shape
    if not isinstance(n, int) or not isinstance(axis, int) or not shape or n < 0:
        return None
    axis %= len(shape)
    if shape[axis] < n:
        return None
    return (*shape[:axis], shape[axis] - n, *shape[axis + 1:])


def _created(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.zeros(shape)``, ``np.ones``, ``np.full`` (and ``np.empty``, captured as zeros): the
    shape argument, whose sizes the function may have read from its arrays."""
    shape = node.kwargs.get("shape", node.args[0] if node.args else None)
    shape = shape if isinstance(shape, (tuple, list)) else (shape,)
    if not all(isinstance(n, Size) or (isinstance(n, int) and n >= 0) for n in shape):
        return None
    return tuple(shape)


def _arange(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.arange(stop)``, ``np.arange(start, stop)`` with integer bounds: ``stop - start``
    elements (none where that is negative: a guard)."""
    if node.kwargs or not 1 <= len(node.args) <= 2 or \
            not all(isinstance(a, (int, Size)) and not isinstance(a, bool) for a in node.args):
        return None
    start, stop = (0, node.args[0]) if len(node.args) == 1 else node.args
    return (stop - start if stop > start else 0,)


def _updated(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``x[key] = value`` captured functionally (``stax.functional.setitem``): x's shape. Where
    the key lands is the lowering's to work out in sizes (each decision a guard)."""
    if not node.args or not isinstance(node.args[0], Node) or not operands:
        return None
    return operands[0].shape


def _copied(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    if len(operands) != 1 or set(node.kwargs) - {"order"}:
        return None
    return operands[0].shape


def _element(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``x[i, j]`` with one integer (or size) per dimension: one element, NumPy's scalar; each
    position in bounds at every size it serves (guards). ``x[idx]`` with an integer array:
    a gather, ``idx.shape + x.shape[1:]``."""
    if len(node.args) != 2 or not isinstance(node.args[0], Node) or not operands:
        return None
    if isinstance(node.args[1], Node) and len(operands) == 2 and operands[0].ndim and \
            np.dtype(operands[1].dtype).kind in "iu":
        return (*operands[1].shape, *operands[0].shape[1:])
    key = node.args[1] if isinstance(node.args[1], tuple) else (node.args[1],)
    if key and all(isinstance(k, Node) for k in key) and len(operands) == len(key) + 1 and \
            len(key) <= operands[0].ndim and \
            all(np.dtype(m.dtype).kind in "iu" for m in operands[1:]):
        # ``x[rows, cols]``: integer arrays for the leading axes, their shapes broadcast
        indexed = broadcast_shapes([m.shape for m in operands[1:]])
        return None if indexed is None else (*indexed, *operands[0].shape[len(key):])
    shape = operands[0].shape
    if len(key) != len(shape) or not all(
            isinstance(k, (int, np.integer, Size)) and not isinstance(k, (bool, np.bool_))
            for k in key):
        return None
    if not all(-n <= k and k < n for k, n in zip(key, shape)):
        return None
    return ()


def _stacked_along(axis: int) -> Rule:
    """``np.vstack`` (axis 0) and ``np.hstack`` (axis 1; 0 for 1-D operands): a concatenation
    of operands of rank 2 or more (lower ranks are reshaped first: no rule)."""
    def rule(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
        if node.kwargs or len(node.args) != 1 or not operands or \
                any(m.ndim < 2 for m in operands):
            return None
        return concatenated_shape([m.shape for m in operands], axis)
    return rule


def _taken(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.take(x, indices, axis)`` along an axis: that axis replaced by the indices' shape."""
    axis = node.kwargs.get("axis", node.args[2] if len(node.args) > 2 else None)
    if not operands or not isinstance(node.args[0], Node) or not isinstance(axis, int) or \
            set(node.kwargs) - {"axis"}:
        return None
    indices = node.args[1] if len(node.args) > 1 else None
    if isinstance(indices, Node) and len(operands) == 2:
        taken = tuple(operands[1].shape)
    elif isinstance(indices, (list, tuple)) and all(isinstance(i, int) for i in indices):
        taken = (len(indices),)
    else:
        return None
    shape = operands[0].shape
    axis %= max(len(shape), 1)
    return (*shape[:axis], *taken, *shape[axis + 1:])


def _einsum(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.einsum("ij,jk->ik", a, b)`` with explicit output subscripts (letters only): each
    output letter's size from the operands, a letter's sizes equal across them (guards)."""
    spec = node.args[0] if node.args else None
    if not isinstance(spec, str) or "->" not in spec or "." in spec or node.kwargs or \
            len(operands) != len(node.args) - 1:
        return None
    inputs, output = spec.replace(" ", "").split("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        return None
    sizes: dict[str, Any] = {}
    for letters, meta in zip(terms, operands):
        if len(letters) != meta.ndim or not letters.isalpha():
            return None
        for letter, n in zip(letters, meta.shape):
            if isinstance(n, int) and n == 1 and letter in sizes:
                continue  # broadcast
            if letter in sizes and not (isinstance(sizes[letter], int) and sizes[letter] == 1):
                if not sizes[letter] == n:  # a guard: the same letter, the same size
                    return None
            else:
                sizes[letter] = n
    if not all(letter in sizes for letter in output):
        return None
    return tuple(sizes[letter] for letter in output)


def _rolled(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.roll(x, shift, axis)``: x's shape, whatever the axis."""
    if len(operands) != 1 or not isinstance(node.args[0], Node):
        return None
    return operands[0].shape


def _sorted(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.sort(x, axis=-1)``: x's shape; flattened with ``axis=None``."""
    if len(operands) != 1 or not isinstance(node.args[0], Node):
        return None
    axis = node.kwargs.get("axis", node.args[1] if len(node.args) > 1 else -1)
    return (product(operands[0].shape),) if axis is None else operands[0].shape


def _tiled(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.tile(x, reps)`` with integer repetitions."""
    reps = node.args[1] if len(node.args) > 1 else node.kwargs.get("reps")
    reps = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    if len(operands) != 1 or not all(isinstance(r, int) and r >= 0 for r in reps):
        return None
    shape = operands[0].shape
    rank = max(len(shape), len(reps))
    shape = (1,) * (rank - len(shape)) + tuple(shape)
    reps = (1,) * (rank - len(reps)) + reps
    return tuple(n * r for n, r in zip(shape, reps))


def _integer(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _padded(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.pad(x, widths)`` with constant integer widths: each dimension grown by them."""
    widths = node.args[1] if len(node.args) > 1 else node.kwargs.get("pad_width")
    shape = operands[0].shape if len(operands) == 1 else None
    if shape is None or isinstance(widths, Node):
        return None
    if isinstance(widths, int):
        widths = ((widths, widths),) * len(shape)
    widths = tuple(tuple(w) if isinstance(w, (tuple, list)) else (w, w) for w in widths)
    if len(widths) == 1:
        widths = widths * len(shape)
    if len(widths) != len(shape) or not all(isinstance(v, int) and v >= 0
                                            for w in widths for v in w):
        return None
    return tuple(n + before + after for n, (before, after) in zip(shape, widths))


def _norm(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.linalg.norm(x, axis=k)``: the vector norm along one axis."""
    if len(operands) != 1 or set(node.kwargs) - {"axis", "keepdims"} or len(node.args) > 1:
        return None
    axis = node.kwargs.get("axis")
    if not isinstance(axis, int):
        return None
    return _reduced(node, operands)


def _solved(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.linalg.solve(A, b)`` of a square matrix and a vector or matrix: b's shape (no
    batches: NumPy 2 reads a 1-D ``b`` alone as a vector)."""
    if len(operands) != 2 or len(node.args) != 2 or node.kwargs or \
            len(operands[0].shape) != 2 or len(operands[1].shape) not in (1, 2):
        return None
    return operands[1].shape


def _square_matrix(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.linalg.inv(A)`` (A's shape) of one 2-D matrix."""
    if len(operands) != 1 or len(node.args) != 1 or node.kwargs or len(operands[0].shape) != 2:
        return None
    return operands[0].shape


def _determinant(node: Node, operands: list[TensorMeta]) -> tuple[Any, ...] | None:
    """``np.linalg.det(A)`` of one 2-D matrix: a scalar."""
    return None if _square_matrix(node, operands) is None else ()


def shape_rules() -> dict[str, Rule]:
    """Each call target (``method:sum`` for methods) and its rule."""
    rules: dict[str, Rule] = {}
    elementwise = capture_targets_of(elementwise_ops()) | _EXTRA_ELEMENTWISE
    rules.update(dict.fromkeys(elementwise, _elementwise))
    reductions = capture_targets_of(frozenset(n for n, op in OPS.items()
                                              if op.kind is OpKind.REDUCTION))
    rules.update(dict.fromkeys(reductions, _reduced))
    rules.update(dict.fromkeys(("operator.matmul", "numpy.matmul"), _matmul))
    rules.update(dict.fromkeys(("numpy.dot", "method:dot"), _dot))
    rules["numpy.outer"] = _outer
    rules.update(dict.fromkeys(_ufunc_outer_targets(), _ufunc_outer))
    rules["numpy.inner"] = _inner
    rules["numpy.tensordot"] = _tensordot
    rules["numpy.cross"] = _crossed
    rules["numpy.concatenate"] = _joined
    rules["numpy.stack"] = _stacked
    rules.update(dict.fromkeys(("numpy.cumsum", "numpy.cumprod", "method:cumsum",
                                "method:cumprod"), _scanned))
    rules.update(dict.fromkeys(("numpy.zeros_like", "numpy.ones_like", "numpy.empty_like",
                                "numpy.full_like"), _like))
    rules["numpy.diff"] = _differenced
    rules.update(dict.fromkeys((t.replace(".outer", ".accumulate") for t in _ufunc_outer_targets()),
                               _accumulated))
    rules["numpy.polyval"] = _polynomial
    rules.update(dict.fromkeys(("numpy.zeros", "numpy.ones", "numpy.full"), _created))
    rules["numpy.arange"] = _arange
    rules["stax.functional.setitem"] = _updated
    rules["operator.getitem"] = _element  # views of it are ``view_sizes.indexed``'s
    rules["numpy.vstack"] = _stacked_along(0)
    rules["numpy.hstack"] = _stacked_along(1)
    rules["numpy.roll"] = _rolled
    rules["numpy.take"] = _taken
    rules["numpy.einsum"] = _einsum
    rules.update(dict.fromkeys(("numpy.sort", "numpy.argsort", "method:argsort"), _sorted))
    rules["numpy.tile"] = _tiled
    rules["numpy.pad"] = _padded
    rules["numpy.linalg.norm"] = _norm
    rules["numpy.linalg.solve"] = _solved
    rules["numpy.linalg.inv"] = _square_matrix
    rules["numpy.linalg.det"] = _determinant
    rules.update(dict.fromkeys(("method:copy", "numpy.copy"), _copied))
    rules.update(library_rules())
    return rules


def _ufunc_outer_targets() -> list[str]:
    """``numpy.add.outer`` and the ``outer`` of every other binary ufunc NumPy names."""
    return [f"numpy.{name}.outer" for name, f in vars(np).items()
            if isinstance(f, np.ufunc) and f.nin == 2 and f.nout == 1]
