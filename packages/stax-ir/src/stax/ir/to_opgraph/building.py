"""Capture rules for functions that build arrays: concatenate, stack, pad, tril/triu, roll,
zeros/ones/full and their *_like forms, arange, linspace, eye (their loop lowerings are
``stax.loop.building``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..graph import Node
from ..meta import TensorMeta
from .arguments import bind, int_arg, scalar
from .context import LoweringContext, dense_meta
from .registry import NotNative, RuleFunction, register, rule

#: a constant operand of a stack or concatenation is built from ``full`` nodes up to this size
MAX_CONSTANT_ELEMENTS = 64


def _arrays(value: Any, ctx: LoweringContext | None = None) -> tuple[Node, ...]:
    """The operands of a stack or concatenation; with ``ctx``, constants among them (a Python
    scalar, a short list of numbers: ``np.array([x[0], 1.0])``) become nodes of NumPy's dtype
    for them."""
    if not isinstance(value, (list, tuple)) or not value:
        raise NotNative
    if ctx is not None:
        value = [v if isinstance(v, Node) else _elements(ctx, v) or _constant(ctx, v)
                 for v in value]
    if not all(isinstance(v, Node) and v.tensor is not None for v in value):
        raise NotNative
    return tuple(value)


def _elements(ctx: LoweringContext, value: Any) -> Node | None:
    """A list of traced scalars of one dtype (``[q[-1]]``, ``(x[0], x[-1])``): their stack, the
    array NumPy makes of them; None for anything else."""
    if not isinstance(value, (list, tuple)) or not value or not all(
            isinstance(v, Node) and v.tensor is not None and v.tensor.ndim == 0 for v in value):
        return None
    dtypes = {v.tensor.dtype for v in value}
    if len(dtypes) != 1:
        return None
    shape = (len(value),)
    meta = TensorMeta(shape, dtypes.pop(), (1,))
    return ctx.emit("stack", tuple(value), {"axis": 0}, meta=meta)


def _constant(ctx: LoweringContext, value: Any) -> Node:
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        raise NotNative from None
    if array.dtype.kind not in "biuf" or array.size > MAX_CONSTANT_ELEMENTS or array.ndim > 2:
        raise NotNative
    meta = TensorMeta.of(array.copy(order="C"))  # (``ascontiguousarray`` makes 0-d 1-d)
    if array.ndim == 0:
        return ctx.emit("full", (), {"shape": (), "value": array.item(), "dtype": array.dtype.name},
                        meta=meta)
    rows = tuple(_constant(ctx, row) for row in array)
    return ctx.emit("stack", rows, {"axis": 0}, meta=meta)


@rule("numpy.concatenate", emits=("concatenate", "stack", "full"))
def _concatenate(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Node:
    """Joined along one axis (``axis=None`` flattens: NumPy); ``out=``/``dtype=`` forms too."""
    params = bind(lambda arrays, axis=0: None, args, kwargs)
    arrays = _arrays(params["arrays"], ctx)
    if params.get("axis", 0) is None:
        raise NotNative
    ndim = node.tensor.ndim
    return ctx.emit("concatenate", arrays, {"axis": int_arg(params.get("axis", 0)) % ndim})


@rule("numpy.stack", emits=("stack", "full"))
def _stack(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    params = bind(lambda arrays, axis=0: None, args, kwargs)
    arrays = _arrays(params["arrays"], ctx)
    return ctx.emit("stack", arrays, {"axis": int_arg(params.get("axis", 0)) % node.tensor.ndim})


@rule("numpy.array", emits=("stack", "full", "cast"))
def _array(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """A constant array capture recorded (a result computed from the key alone): rebuilt; a
    flat list of scalar inputs and numbers (``np.array([s, i, r])`` of scalar arguments, made
    inputs by ``scalar_inputs``): each converted to the array's dtype, stacked."""
    if len(args) != 1 or set(kwargs) - {"dtype"} or not isinstance(args[0], (list, tuple)):
        raise NotNative
    if any(isinstance(v, Node) for v in args[0]):
        if np.dtype(node.tensor.dtype).kind != "f":
            raise NotNative
        return stacked_numbers(ctx, args[0], node.tensor.dtype)
    return _constant(ctx, np.asarray(args[0], dtype=kwargs.get("dtype")))


def stacked_numbers(ctx: LoweringContext, values: Any, dtype: str) -> Node:
    """0-d nodes and Python numbers (into a float ``dtype`` only) as the 1-d array of ``dtype``
    NumPy makes of them, each converted to it (a float array's conversion of each is a cast):
    ``np.array([s, i, r])`` of scalar inputs, ``out[k] = s, i, 0.1``."""
    numbers = [v for v in values if not isinstance(v, Node)]
    if (numbers and np.dtype(dtype).kind != "f") or not all(
            (isinstance(v, Node) and v.tensor is not None and v.tensor.ndim == 0) or
            type(v) in (int, float) for v in values):
        raise NotNative
    zero_d = dense_meta((), dtype)
    parts = tuple((v if v.tensor.dtype == dtype else ctx.emit("cast", (v,), {"dtype": dtype},
                                                                meta=zero_d))
                  if isinstance(v, Node) else
                  ctx.emit("full", (), {"shape": (), "value": float(v), "dtype": dtype},
                           meta=zero_d) for v in values)
    return ctx.emit("stack", parts, {"axis": 0}, meta=dense_meta((len(parts),), dtype))


@rule("numpy.pad", emits=("pad",))
def _pad(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """Constant padding with one scalar value; other modes run as NumPy."""
    params = bind(lambda array, pad_width, mode="constant", constant_values=0: None, args, kwargs)
    x = params["array"]
    if not isinstance(x, Node) or x.tensor is None or params.get("mode", "constant") != "constant":
        raise NotNative
    ndim = x.tensor.ndim
    width = np.asarray(params["pad_width"], dtype=object)
    try:
        pairs = np.broadcast_to(width, (ndim, 2))
    except ValueError:
        raise NotNative from None
    pad_width = tuple((int_arg(a), int_arg(b)) for a, b in pairs)
    if any(a < 0 or b < 0 for a, b in pad_width):
        raise NotNative
    value = scalar(params.get("constant_values", 0))
    return ctx.emit("pad", (x,), {"pad_width": pad_width, "value": value})


def _triangle(op: str) -> RuleFunction:
    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        params = bind(lambda m, k=0: None, args, kwargs)
        x = params["m"]
        if not isinstance(x, Node) or x.tensor is None or x.tensor.ndim < 2:
            raise NotNative
        return ctx.emit(op, (x,), {"k": int_arg(params.get("k", 0))})
    return lower


for _op in ("tril", "triu"):
    register((f"numpy.{_op}",), (_op,), _triangle(_op))


@rule("numpy.roll", emits=("roll",))
def _roll(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """A roll along one axis (or of a 1-D array): two pieces of one concatenation; without an
    axis, of the flattened array (read at computed offsets)."""
    params = bind(lambda a, shift, axis=None: None, args, kwargs)
    x = params["a"]
    if not isinstance(x, Node) or x.tensor is None:
        raise NotNative
    ndim, axis = x.tensor.ndim, params.get("axis")
    if axis is None and ndim == 1:
        axis = 0
    if axis is None:
        return ctx.emit("roll", (x,), {"shift": int_arg(params["shift"]), "axis": None})
    axis = int_arg(axis) % ndim if ndim else int_arg(axis)
    return ctx.emit("roll", (x,), {"shift": int_arg(params["shift"]), "axis": axis})


def _filled(value_of: Callable[[dict[str, Any]], Any], reference: Any) -> RuleFunction:
    """np.zeros/ones/full and their *_like forms: the shape and dtype are the result's (capture
    measured them), the fill value a scalar."""
    def lower(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Node:
        params = bind(reference, args, kwargs)
        if params.get("subok", True) is not True or params.get("like") is not None:
            raise NotNative
        meta = node.tensor
        return ctx.emit("full", (), {"shape": tuple(meta.shape), "value": scalar(value_of(params)),
                                     "dtype": meta.dtype})
    return lower


for _function, _value_of in ((np.zeros, lambda p: 0), (np.ones, lambda p: 1),
                             (np.full, lambda p: p["fill_value"]), (np.zeros_like, lambda p: 0),
                             (np.ones_like, lambda p: 1),
                             (np.full_like, lambda p: p["fill_value"])):
    register((f"numpy.{_function.__name__}",), ("full",), _filled(_value_of, _function))


#: the dtypes creation functions compose natively (float16 and complex run as NumPy)
CREATION_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                             "uint64", "float32", "float64"})


def _positions(ctx: LoweringContext, n: int, dtype: str) -> Node:
    """0, 1, ..., n - 1 in ``dtype`` (an integer range cast, as NumPy converts its loop index)."""
    ramp = ctx.emit("arange", (), {"start": 0, "step": 1, "n": n, "dtype": "int64"},
                    meta=TensorMeta((n,), "int64", (1,)))
    return ctx.emit("cast", (ramp,), {"dtype": dtype}, meta=TensorMeta((n,), dtype, (1,))), ramp


def _float_arange(ctx: LoweringContext, node: Node, args: tuple[Any, ...]) -> Node:
    """NumPy's float arange: a[0] = start, a[1] = start + step (in Python floats), and
    a[i] = start + i * delta with delta = a[1] - a[0], all in the result's dtype (its fill loop)."""
    meta = node.tensor
    values = [float(scalar(a)) for a in args]
    start, step = (0.0, 1.0) if len(values) == 1 else \
        (values[0], values[2] if len(values) == 3 else 1.0)
    kind = np.dtype(meta.dtype).type
    first, second = kind(start), kind(start + step)
    delta = second - first
    n = meta.shape[0]
    if n < 2:
        return ctx.emit("full", (), {"value": first.item(), "shape": (n,), "dtype": meta.dtype})
    positions, ramp = _positions(ctx, n, meta.dtype)
    flags = TensorMeta((n,), "bool", (1,))
    values_node = ctx.emit("add", (ctx.emit("mul", (positions, delta.item())), first.item()))
    at_one = ctx.emit("eq", (ramp, 1), meta=flags)
    values_node = ctx.emit("where", (at_one, second.item(), values_node))
    return ctx.emit("where", (ctx.emit("eq", (ramp, 0), meta=flags), first.item(), values_node))


@rule("numpy.arange", emits=("arange", "full", "cast", "mul", "add", "eq", "where"))
def _arange(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """Integer ranges (start + step * i, exact); float ranges by NumPy's own fill formula."""
    meta = node.tensor
    if set(kwargs) - {"dtype"} or not 1 <= len(args) <= 3 or meta.dtype not in CREATION_DTYPES:
        raise NotNative
    if np.dtype(meta.dtype).kind == "f":
        return _float_arange(ctx, node, args)
    if np.dtype(meta.dtype).kind not in "iu":
        raise NotNative
    values = [int_arg(a) for a in args]
    start, step = (0, 1) if len(values) == 1 else (values[0], values[2] if len(values) == 3 else 1)
    return ctx.emit("arange", (), {"start": start, "step": step, "n": meta.shape[0],
                                   "dtype": meta.dtype})


@rule("numpy.linspace", emits=("full", "arange", "cast", "truediv", "mul", "add", "eq",
                                  "where", "floor"))
def _linspace(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """NumPy's linspace for scalar ends: i * step + start in the ends' float type (float64 for
    Python numbers, float32 for float32 ends; i / div * delta when the step underflows to 0), the
    last value exactly ``stop`` with the endpoint, then the dtype (floored for integer dtypes).
    Array ends, ``retstep`` and ``axis`` run as NumPy."""
    params = bind(np.linspace, args, kwargs)
    meta = node.tensor
    if params.get("retstep") or params.get("axis", 0) != 0 or params.get("device") is not None \
            or meta.dtype not in CREATION_DTYPES or np.dtype(meta.dtype).kind not in "iuf":
        raise NotNative
    ends = [scalar(params["start"]), scalar(params["stop"])]
    # NumPy computes in the ends' inexact result type (float32 ends: float32 arithmetic), then
    # casts to ``dtype``
    work = np.result_type(params["start"], params["stop"])  # (a Python number weak: NEP 50)
    work = work if work.kind == "f" else np.dtype("float64")
    if work.itemsize not in (4, 8):
        raise NotNative
    start, stop = (work.type(e) for e in ends)
    num, endpoint = int_arg(params.get("num", 50)), bool(params.get("endpoint", True))
    div = num - 1 if endpoint else num
    wide = TensorMeta((num,), work.name, (1,))
    if num < 2 or div == 0:
        values = ctx.emit("full", (), {"value": start, "shape": (num,), "dtype": work.name},
                          meta=wide)
    else:
        positions, ramp = _positions(ctx, num, work.name)
        with np.errstate(all="ignore"):  # (NumPy's own: an infinite delta is NumPy's too)
            delta = np.subtract(stop, start, dtype=work.type)
            step = delta / div
        if step == 0:
            fraction = ctx.emit("truediv", (positions, float(div)), meta=wide)
            values = ctx.emit("mul", (fraction, delta), meta=wide)
        else:
            values = ctx.emit("mul", (positions, step), meta=wide)
        values = ctx.emit("add", (values, start), meta=wide)
        if endpoint:
            last = ctx.emit("eq", (ramp, num - 1), meta=TensorMeta((num,), "bool", (1,)))
            values = ctx.emit("where", (last, stop, values), meta=wide)
    if np.dtype(meta.dtype).kind in "iu":
        values = ctx.emit("floor", (values,), meta=wide)
    if meta.dtype == work.name:
        return values
    return ctx.emit("cast", (values,), {"dtype": meta.dtype})


@rule("numpy.eye", emits=("eye",))
def _eye(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    params = bind(np.eye, args, kwargs)
    if params.get("order", "C") != "C" or params.get("like") is not None:
        raise NotNative
    meta = node.tensor
    return ctx.emit("eye", (), {"n": meta.shape[0], "m": meta.shape[1],
                                "k": int_arg(params.get("k", 0)), "dtype": meta.dtype})


@rule("numpy.diag", "numpy.diagflat", emits=("view", "pad", "arange", "sub", "eq", "where"))
def _diag(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """``np.diag(v, k)`` (and ``np.diagflat(v, k)``) of a 1-D ``v``: the square matrix of side
    ``n + |k|`` with v on its k-th diagonal, zeros elsewhere (``where(j - i == k, v along the
    rows, 0)``; v padded with |k| zeros so every row reads inside it). ``np.diag`` of a 2-D
    array is a view of it (the native forms take it)."""
    params = bind(lambda v, k=0: None, args, kwargs)
    v, k = params["v"], int_arg(params.get("k", 0))
    meta = node.tensor
    if not isinstance(v, Node) or v.tensor is None or v.tensor.ndim != 1 or meta is None or \
            meta.ndim != 2 or meta.dtype != v.tensor.dtype:
        raise NotNative
    n = meta.shape[0]
    if k:
        v = ctx.emit("pad", (v,), {"pad_width": ((0, abs(k)),), "value": 0},
                     meta=TensorMeta((n,), v.tensor.dtype, (1,)))
    # the value at (i, j): v[i] above the main diagonal (k >= 0), v[j] below it
    along = (v.tensor.strides[0], 0) if k >= 0 else (0, v.tensor.strides[0])
    values = ctx.view(v, 0, along, (n, n))
    ramp = ctx.emit("arange", (), {"start": 0, "step": 1, "n": n, "dtype": "int64"},
                    meta=TensorMeta((n,), "int64", (1,)))
    rows = ctx.view(ramp, 0, (1, 0), (n, n))
    columns = ctx.view(ramp, 0, (0, 1), (n, n))
    offsets = ctx.emit("sub", (columns, rows), meta=TensorMeta((n, n), "int64", (n, 1)))
    on = ctx.emit("eq", (offsets, k), meta=TensorMeta((n, n), "bool", (n, 1)))
    return ctx.emit("where", (on, values, 0), meta=meta)
