"""Which recorded operation NumPy would name for each floating-point event category.

NumPy checks the CPU's flags after each ufunc call and reports per category (divide by zero,
overflow, invalid) by its error state: "divide by zero encountered in divide", from the line
that called the ufunc. A compiled call knows which categories its kernels raised, not which
operation raised them. Where the captured program has exactly one operation that can raise a
category, that operation is the one eager NumPy reported, and the call can have NumPy report it
again (``stax.codegen.event_reports``) instead of running the whole function eagerly:
``np.where(d != 0, a / d, 0.0)`` with zeros in ``d`` warned through an eager rerun at every
call (0.98x NumPy).

An operation that can raise is *reportable* when it is a NumPy ufunc applied to arrays (its
result has dimensions: a NumPy scalar's arithmetic says "scalar divide"), recorded with the
user's line, whose inputs and result share one dtype; ``RAISES`` says which categories it may
raise, and a category is attributed where exactly one operation may raise it. Operations that
never raise (comparisons, ``where``, ``isnan``, ``maximum``, indexing, views, widening casts)
are ignored. Any other
operation (a reduction, a narrowing cast, a NumPy step) may raise anything: then no category
is attributed, and an event declines the call as before. So does every event of a program that
ran under its own ``np.errstate`` block (``error_state.py``).

``info["event_sources"]``: category name (``divide``, ``over``, ``invalid``) -> [ufunc name, dtype,
``file:line in function``, the operation's place among the recorded operations].
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: Python operators on arrays and the ufuncs NumPy runs for them
OPERATOR_UFUNCS = {"operator.add": "add", "operator.sub": "subtract",
                   "operator.mul": "multiply", "operator.truediv": "divide",
                   "operator.floordiv": "floor_divide", "operator.mod": "remainder"}
#: ufuncs that raise no floating-point event on any operands (special values included:
#: ``test_event_sources.py`` checks it against NumPy)
SILENT_UFUNCS = frozenset({
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "isnan", "isinf",
    "isfinite", "signbit", "absolute", "fabs", "negative", "positive", "floor", "ceil", "trunc",
    "rint", "sign", "maximum", "minimum", "fmax", "fmin", "copysign", "logical_and",
    "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "invert"})
#: other recorded operations that compute nothing that can raise: indexing, views, copies,
#: new arrays, selections
SILENT_TARGETS = frozenset({
    "operator.lt", "operator.le", "operator.gt", "operator.ge", "operator.eq", "operator.ne",
    "operator.neg", "operator.pos", "operator.abs", "operator.getitem", "operator.and_",
    "operator.or_", "operator.xor", "operator.invert", "numpy.where", "numpy.transpose",
    "numpy.zeros_like", "numpy.ones_like", "numpy.empty_like", "numpy.zeros", "numpy.ones",
    "numpy.empty", "numpy.reshape", "numpy.ravel", "numpy.copy", "numpy.concatenate",
    "numpy.stack", "numpy.broadcast_to", "numpy.expand_dims", "numpy.squeeze",
    "numpy.swapaxes"})
SILENT_METHODS = frozenset({"reshape", "ravel", "copy", "transpose", "flatten", "squeeze",
                            "swapaxes"})
CATEGORIES = ("divide", "over", "invalid")
_D, _O, _I = ("divide",), ("over",), ("invalid",)
#: the categories each reportable float ufunc may raise (underflow aside: calls decline where
#: NumPy's state heeds it), a superset of what NumPy raised on every special value and pair
#: of them (``test_event_sources.py`` checks it); a ufunc not listed is not reportable.
#: ``power`` and ``nextafter`` are not: the kernels' events are wider than NumPy's there
#: (``2 ** inf`` is an overflow to them, silent to NumPy), which a declined call hides and a
#: report would not (``test_errstate.py::test_every_function_on_special_values``)
RAISES: dict[str, tuple[str, ...]] = {
    "add": _O + _I, "subtract": _O + _I, "multiply": _O + _I, "divide": _D + _O + _I,
    "floor_divide": _D + _O + _I, "remainder": _D + _I, "fmod": _D + _I,
    "sqrt": _I, "log": _D + _I,
    "log2": _D + _I, "log10": _D + _I, "log1p": _D + _I, "exp": _O, "exp2": _O, "expm1": _O,
    "cosh": _O, "sinh": _O, "square": _O, "hypot": _O, "rad2deg": _O, "degrees": _O,
    "sin": _I, "cos": _I, "tan": _I, "arcsin": _I, "arccos": _I, "arccosh": _I,
    "arctanh": _D + _I, "reciprocal": _D + _O, "logaddexp": _O + _I, "logaddexp2": _O + _I,
    "spacing": _O + _I,
    "arcsinh": (), "arctan": (), "arctan2": (), "tanh": (), "cbrt": (), "deg2rad": (),
    "radians": ()}
#: integer ufuncs that report (a division by zero, ``MIN // -1``); the others wrap silently
INTEGER_RAISES: dict[str, tuple[str, ...]] = {"floor_divide": _D + _O, "remainder": _D + _O,
                                              "fmod": _D + _O}


def event_sources(nodes: list[Any]) -> dict[str, list[Any]]:
    """``info["event_sources"]`` of a capture's nodes, in the order they were recorded."""
    raisers: dict[str, list[list[Any]]] = {c: [] for c in CATEGORIES}
    for place, node in enumerate(nodes):
        kind = _kind(node)
        if kind is None:
            continue
        if kind == "":  # may raise anything, and NumPy would name it in words of its own
            return {}
        dtype = np.dtype(node.meta["tensor"].dtype)
        table = RAISES if dtype.kind == "f" else INTEGER_RAISES if dtype.kind in "iu" else {}
        if kind not in table:
            if dtype.kind in "fc":
                return {}
            continue  # integer add, multiply...: NumPy wraps, silently
        for category in table[kind]:
            raisers[category].append([kind, str(dtype), node.source, place])
    return {c: found[0] for c, found in raisers.items() if len(found) == 1}


def _kind(node: Any) -> str | None:
    """None for an operation that never raises; the ufunc NumPy names for one that may and
    can be reported as that ufunc; "" for any other operation."""
    op = getattr(node.op, "value", node.op)
    if op in ("placeholder", "output", "get_attr"):
        return None
    target = str(node.target)
    if not _numbers_fit(node):  # NumPy casts the number first: "overflow encountered in cast"
        return ""
    if op == "call_method":
        if target in SILENT_METHODS:
            return None
        if target == "astype":
            return None if _widening(node) else ""
        return ""
    if target in SILENT_TARGETS:
        return "" if "dtype" in node.kwargs or "casting" in node.kwargs else None
    if target == "stax.functional.setitem":  # a value of the array's own dtype: no cast
        value = node.args[-1] if node.args else None
        meta = getattr(value, "meta", {}).get("tensor")
        return None if meta is not None and meta.dtype == node.meta["tensor"].dtype else ""
    name = OPERATOR_UFUNCS.get(target)
    if name is None and target.startswith("numpy."):
        ufunc = getattr(np, target[len("numpy."):], None)
        name = ufunc.__name__ if isinstance(ufunc, np.ufunc) else None
    if name is None:
        return ""
    if name in SILENT_UFUNCS:
        return None
    return name if _reportable(node, getattr(np, name)) else ""


def _reportable(node: Any, ufunc: np.ufunc) -> bool:
    """An array result of one dtype, every array operand of it too (a Python number beside
    them), from a known line, with NumPy's loop for that dtype."""
    meta = node.meta.get("tensor")
    if node.source is None or meta is None or not meta.shape or ufunc.nout != 1 or \
            ufunc.nin not in (1, 2) or node.kwargs or len(node.args) != ufunc.nin:
        return False
    dtype = np.dtype(meta.dtype)
    for a in node.args:
        operand = getattr(a, "meta", {}).get("tensor")
        if operand is not None and np.dtype(operand.dtype) != dtype:
            return False
        if operand is None and type(a) not in (int, float):
            return False
    return dtype.char * ufunc.nin + "->" + dtype.char in ufunc.types


def _numbers_fit(node: Any) -> bool:
    """Whether every Python number among the operands fits the dtype of the array operands
    (NEP 50: ``x_f32 + 1e300`` casts 1e300 to float32 first, which overflows)."""
    numbers = [a for a in (*node.args, *node.kwargs.values()) if type(a) in (int, float)]
    arrays = [getattr(a, "meta", {}).get("tensor") for a in node.args]
    dtypes = {np.dtype(m.dtype) for m in arrays if m is not None}
    if not numbers or not dtypes:
        return True
    for dtype in dtypes:
        for v in numbers:
            if dtype.kind == "f" and math.isfinite(v) and abs(v) > float(np.finfo(dtype).max):
                return False
            if dtype.kind in "iu" and type(v) is int and \
                    not np.iinfo(dtype).min <= v <= np.iinfo(dtype).max:
                return False
    return True


def _widening(node: Any) -> bool:
    """An ``astype`` that cannot raise: to a float at least as wide, from floats, integers or
    bools (no float to integer: NaN is invalid there; no narrowing float: overflow)."""
    source = getattr(node.args[0], "meta", {}).get("tensor") if node.args else None
    target = node.meta.get("tensor")
    if source is None or target is None:
        return False
    src, dst = np.dtype(source.dtype), np.dtype(target.dtype)
    if src == dst:
        return True
    return dst.kind == "f" and dst.itemsize >= 4 and (
        src.kind in "biu" or (src.kind == "f" and dst.itemsize >= src.itemsize))
