"""The standard capture rule of each op kind, registered for every capture target an op declares
(``OpDef.captures``: one call, one op). Adding a NumPy function that is one element-wise op takes
its declaration in ``stax.ir.ops`` only; calls composed of several ops have rules of their own
(``arithmetic``, ``reductions``, ``building``, ``indexing``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..graph import Node
from ..interpreter import resolve_function
from ..ops import OPS, OpDef, OpKind
from ..sizes import product
from .arguments import SCALAR_TYPES, cast_to, operand, scalar
from .context import LoweringContext
from .registry import NotNative, RuleFunction, register

NO_VALUE = getattr(np, "_NoValue", None)  # NumPy's marker of an argument not given


def elementwise_rule(op: OpDef) -> RuleFunction:
    """A ufunc call on operands and scalars; ``dtype=`` computes in that dtype (NumPy casts the
    operands first); any other keyword runs as NumPy."""
    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        if set(kwargs) == {"dtype"} and not op.comparison:
            dtype = np.dtype(kwargs["dtype"]).name
            if dtype != node.tensor.dtype:
                raise NotNative
            return ctx.emit(op.name, tuple(cast_to(ctx, operand(a), dtype) for a in args))
        if kwargs:
            raise NotNative
        return ctx.emit(op.name, tuple(operand(a) for a in args))
    return lower


#: reductions whose NumPy function warns (a Python warning, whatever the error state) when a
#: slice has no element, or no more than ``ddof``: such calls stay NumPy's, which warns itself
WARN_WHEN_EMPTY = frozenset({"mean", "var", "std"})


def reduction_rule(op: OpDef) -> RuleFunction:
    """``np.sum(x, axis=...)`` / ``x.sum(...)``, bound by the NumPy function's own signature."""
    signature = inspect.signature(resolve_function(op.captures[0]))

    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        return lower_reduction(ctx, node, op.name, signature.bind(*args, **kwargs).arguments)
    return lower


def lower_reduction(ctx: LoweringContext, node: Node, op: str, params: dict[str, Any]) -> Node:
    """The reduction ``op`` of ``params["a"]`` over ``params["axis"]``; ``initial=`` as the
    reduction combined with it (``_with_initial``); ``out=``, ``where=`` and a ``dtype=`` the op
    has no attribute for run as NumPy."""
    x = params.get("a")
    if not isinstance(x, Node) or x.tensor is None or \
            (op in ("var", "std") and np.dtype(x.tensor.dtype).kind == "c"):
        raise NotNative  # a complex variance is real: its dtype= would cast the data to it
    if op == "mean" and x.tensor.dtype == "float16" and params.get("dtype", NO_VALUE) not in (
            NO_VALUE, None):
        raise NotNative  # float16 asked for by name sums in float16 (NumPy's own call does);
        # without it NumPy sums float16 in float32, what the op's ``dtype`` stands for there
    initial = params.pop("initial", NO_VALUE)
    if initial is not NO_VALUE:
        return _with_initial(ctx, node, op, x, params, initial)
    attributes = OPS[op].attrs
    typed = "dtype" in attributes  # ops with a dtype= of their own
    for name in ("out", "where", "mean", "correction", "dtype" if not typed else "out"):
        if name in params and params[name] is not NO_VALUE and params[name] is not None and \
                not (name == "where" and params[name] is True):
            raise NotNative
    ddof = params.get("ddof", 0)
    if not isinstance(ddof, (int, np.integer)) or isinstance(ddof, bool):
        raise NotNative
    axes = _reduced_axes(x, params.get("axis"))
    count = product(x.tensor.shape[a] for a in axes)  # a size expression in dynamic mode
    if op in WARN_WHEN_EMPTY and count - int(ddof) <= 0:
        raise NotNative  # NumPy's call warns ("Mean of empty slice", "Degrees of freedom <= 0")
    keepdims = params.get("keepdims", False)
    keepdims = False if keepdims is NO_VALUE else bool(keepdims)
    attrs: dict[str, Any] = {"axis": axes, "keepdims": keepdims}
    if "ddof" in attributes:
        attrs["ddof"] = int(ddof)
    if typed:
        attrs["dtype"] = node.tensor.dtype
    return ctx.emit(op, (x,), attrs)


def _reduced_axes(x: Node, axis: Any) -> tuple[int, ...]:
    """``axis=`` of a reduction of ``x`` as sorted non-negative axes (None: all of them)."""
    ndim = x.tensor.ndim
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if not all(isinstance(a, (int, np.integer)) for a in axes):
        raise NotNative
    return tuple(sorted(int(a) % ndim for a in axes)) if ndim else ()


#: the element-wise op that folds ``initial=`` into each reduction that takes one
_COMBINE = {"sum": "add", "max": "maximum", "min": "minimum", "prod": "mul"}


def _with_initial(ctx: LoweringContext, node: Node, op: str, x: Node, params: dict[str, Any],
                  initial: Any) -> Node:
    """``np.max(x, initial=c)`` as ``maximum(c, max(x))`` — NumPy's reduce starts from ``c``,
    and ``maximum`` gives its second operand on a tie (``np.max([-0.0], initial=0.0)`` is -0.0)
    — likewise min, and integer sum and prod (exact in any order). A float sum or prod, whose
    rounding depends on where ``c`` enters (NumPy adds it first: ``np.sum([[1e16], [-1e16]],
    axis=0, initial=1.0)`` is 0.0), runs as NumPy unless ``c`` is 0 (1 for prod), which changes
    nothing but a zero's sign the same way in both orders. ``c`` is cast to the result dtype as
    NumPy casts it (``2.5`` is ``2`` for an int max); a cast that overflows runs as NumPy,
    which warns. An empty reduction is ``c`` itself. ``initial=None`` is no initial value."""
    dtype = node.tensor.dtype if node.tensor is not None else None
    if initial is None:
        return lower_reduction(ctx, node, op, params)
    if op not in _COMBINE or dtype is None or isinstance(initial, (Node, np.ndarray)) or \
            not isinstance(initial, SCALAR_TYPES):
        raise NotNative
    if op in ("sum", "prod") and np.dtype(dtype).kind not in "biu" and \
            initial != (0 if op == "sum" else 1):
        raise NotNative
    try:
        with np.errstate(all="raise"):
            value = scalar(np.asarray(initial).astype(dtype)[()])
    except (FloatingPointError, TypeError, ValueError, OverflowError):
        raise NotNative from None
    extents = [x.tensor.shape[a] for a in _reduced_axes(x, params.get("axis"))]
    if any(type(n) is not int for n in extents):
        raise NotNative  # a size that may be 0 in some call (a reduction of nothing)
    if 0 in extents:
        return ctx.emit("full", (), {"shape": tuple(node.tensor.shape), "value": value,
                                      "dtype": dtype})
    reduced = lower_reduction(ctx, node, op, params)
    return ctx.emit(_COMBINE[op], (value, reduced))


def scan_rule(op: OpDef) -> RuleFunction:
    """cumsum/cumprod along one axis (``axis=None`` only for 1-D input: flattening other shapes
    runs as NumPy), accumulating in the result dtype NumPy chose."""
    signature = inspect.signature(resolve_function(op.captures[0]))

    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        params = signature.bind(*args, **kwargs).arguments
        x = params.get("a")
        if not isinstance(x, Node) or x.tensor is None or params.get("out") is not None:
            raise NotNative
        ndim = x.tensor.ndim
        axis = params.get("axis")
        if axis is None and ndim == 1:
            axis = 0
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or ndim == 0:
            raise NotNative
        return ctx.emit(op.name, (x,), {"axis": int(axis) % ndim, "dtype": node.tensor.dtype})
    return lower


#: the standard rule of each op kind, and the ops it emits besides the op itself
STANDARD_RULES: dict[OpKind, tuple[Callable[[OpDef], RuleFunction], tuple[str, ...]]] = {
    OpKind.POINTWISE: (elementwise_rule, ("cast",)),
    OpKind.REDUCTION: (reduction_rule, tuple(_COMBINE.values()) + ("full",)),
    OpKind.SCAN: (scan_rule, ()),
}


def register_standard_rules() -> None:
    for op in OPS.values():
        if not op.captures:
            continue
        if op.kind not in STANDARD_RULES or (op.kind is OpKind.POINTWISE and not op.elementwise):
            raise TypeError(f"op {op.name!r} declares capture targets, but a {op.kind.value} op "
                            "has no standard capture rule: register a rule of its own")
        make, also = STANDARD_RULES[op.kind]
        register(op.captures, (op.name, *also), make(op), __name__)


register_standard_rules()
