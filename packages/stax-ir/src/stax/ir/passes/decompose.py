"""DecomposePass (spec §4.4, table 4.2): composite operators become fusible primitives.

Only where the decomposition computes the same bits as the composite (each rule is tested against
NumPy on special values): ``np.clip`` with scalar bounds decomposes as
``minimum(hi, maximum(lo, x))``, which keeps NumPy's signed zeros, where
``minimum(maximum(x, lo), hi)`` would not; with array bounds as NumPy's compare-and-select
loop; ``np.rad2deg`` stays whole because NumPy's float32 loop does not round like
``x * (180/pi)``. Functions with a numerically better dedicated form (log1p, expm1, sinh...)
are kept, as table 4.2 says.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph import Graph, Node, Opcode
from ..meta import TensorMeta
from ..ops import NN_FUNCTIONS
from .base import constant_value, infer_meta
from .identity_product import PRODUCTS, identity_product
from .rewrite import substitute

#: Table 4.2 in Stax's target names. Decompose: a rule below. Keep: never decomposed. Optional:
#: off by default.
DECOMPOSE = ("stax.nn.selu", "numpy.square", "numpy.clip", "numpy.deg2rad", "numpy.radians",
             *PRODUCTS)  # beyond table 4.2: a product with an identity (identity_product.py)
KEEP = ("stax.nn.relu", "numpy.log1p", "numpy.expm1", "numpy.log10", "numpy.sinh", "numpy.cosh",
        "numpy.arcsinh", "numpy.arccosh", "numpy.arctanh", "numpy.rad2deg", "numpy.degrees",
        "numpy.exp2")
OPTIONAL = ("stax.nn.softmax", "stax.nn.log_softmax")

SELU_ALPHA = 1.6732632423543772
SELU_SCALE = 1.0507009873554805

_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "operator.mul": lambda a, b: a * b, "operator.sub": lambda a, b: a - b,
    "operator.gt": lambda a, b: a > b, "operator.lt": lambda a, b: a < b,
    "operator.ne": lambda a, b: a != b, "numpy.where": np.where, "numpy.exp": np.exp,
    "numpy.maximum": np.maximum, "numpy.minimum": np.minimum, "operator.add": lambda a, b: a + b,
    "operator.invert": lambda a: ~a, "numpy.isfinite": np.isfinite, "numpy.positive": np.positive,
}


class _Emitter:
    """Creates nodes before ``anchor`` with metadata inferred from their operands."""

    def __init__(self, graph: Graph, anchor: Node) -> None:
        self.graph = graph
        self.anchor = anchor

    def __call__(self, target: str, *args: Any, name: str | None = None,
                 kwargs: dict[str, Any] | None = None, meta: TensorMeta | None = None) -> Node:
        """An element-wise call (its metadata inferred), or any call given its ``meta``."""
        data: dict[str, Any] = {}
        inferred = meta if meta is not None else infer_meta(_FUNCTIONS[target], args)
        if inferred is not None:
            data["tensor"] = inferred
        if self.anchor.source:
            data["source"] = self.anchor.source
        with self.graph.inserting_before(self.anchor):
            return self.graph.call_function(target, args, kwargs, name=name, meta=data)


def _selu(e: _Emitter, x: Any) -> Node:
    """Spec example 4.2's chain, constants on the left as a decomposition table writes them."""
    exp = e("numpy.exp", x)
    sub = e("operator.sub", exp, 1)
    mul = e("operator.mul", SELU_ALPHA, sub)
    gt = e("operator.gt", x, 0)
    where = e("numpy.where", gt, x, mul)
    return e("operator.mul", SELU_SCALE, where)


def _square(e: _Emitter, x: Any) -> Node:
    return e("operator.mul", x, x)


def _clip(e: _Emitter, x: Any, lo: Any, hi: Any) -> Node | None:
    """Scalar bounds (Python, NumPy or 0-d): ``minimum(hi, maximum(lo, x))``; array bounds of
    integers too. Float array bounds (any bound of one or more dimensions, broadcast or not):
    NumPy's clip loop for them compares, ``max = a if isnan(a) or a > lo else lo`` then
    ``a if isnan(a) or a < hi else hi``, so where x and a bound are zeros of both signs the
    bound wins (``clip(-0.0, [0.0], 1)`` is 0.0, ``maximum`` keeps -0.0): two selects each.
    A ``None`` bound is NumPy's own rewrite (``_methods._clip``): ``maximum(x, lo)``,
    ``minimum(x, hi)``, ``positive(x)`` (x first: on a tie of zeros NumPy's ``maximum`` keeps
    its second operand), an integer array's Python int bound at or past its dtype's range
    dropped first (``np.clip(x, lo, None)`` was a NumPy step)."""
    if lo is None or hi is None:
        return _half_open(e, x, lo, hi)
    arrays = [b for b in (x, lo, hi) if isinstance(b, Node)]
    if not all(constant_value(b) or isinstance(b, Node) for b in (lo, hi)):
        return None
    if any(b.tensor is None or b.tensor.dtype == "float16" for b in arrays):
        return None  # NumPy's half loop keeps x on a tie of zeros: its own call
    if len(arrays) > 1 and any(np.dtype(b.tensor.dtype).kind not in "iub" for b in arrays):
        if not any(isinstance(b, Node) and b.tensor.shape for b in (lo, hi)):
            return e("numpy.minimum", hi, e("numpy.maximum", lo, x))  # NumPy's scalar loop
        low = _compare_select(e, "operator.gt", x, lo)
        return _compare_select(e, "operator.lt", low, hi)
    return e("numpy.minimum", hi, e("numpy.maximum", lo, x))


def _half_open(e: _Emitter, x: Any, lo: Any, hi: Any) -> Node | None:
    if not isinstance(x, Node) or x.tensor is None or \
            not all(b is None or constant_value(b) or isinstance(b, Node) for b in (lo, hi)):
        return None
    if np.dtype(x.tensor.dtype).kind in "iu":
        info = np.iinfo(x.tensor.dtype)
        lo = None if type(lo) is int and lo <= info.min else lo
        hi = None if type(hi) is int and hi >= info.max else hi
    if lo is None and hi is None:
        return e("numpy.positive", x)
    return e("numpy.maximum", x, lo) if hi is None else \
        e("numpy.minimum", x, hi) if lo is None else _clip(e, x, lo, hi)


def _compare_select(e: _Emitter, compare: str, a: Node, bound: Any) -> Node:
    """``a if isnan(a) or compare(a, bound) else bound``: NumPy's clip step for array bounds."""
    kept = e("numpy.where", e(compare, a, bound), a, bound)
    return e("numpy.where", e("operator.ne", a, a), a, kept)


#: the bounds' keywords of ``np.clip`` (``a_min``/``a_max``; ``min``/``max`` from NumPy 2.1)
#: and of ``ndarray.clip``
_CLIP_KEYWORDS = (("a_min", "min"), ("a_max", "max"))


def _clip_operands(node: Node) -> tuple[Any, Any, Any] | None:
    """``(x, lo, hi)`` of ``np.clip(x, lo, hi)`` or ``x.clip(lo, hi)``, bounds by position or
    keyword, a missing one None; None where another keyword (``out=``) is given."""
    if node.op not in (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD) or \
            (node.op is Opcode.CALL_METHOD) != (node.target == "clip") or len(node.args) > 3:
        return None
    bounds = list(node.args[1:]) + [None] * (3 - len(node.args))
    for k, names in enumerate(_CLIP_KEYWORDS):
        given = [n for n in names if n in node.kwargs]
        if len(given) > 1 or (given and len(node.args) > k + 1):
            return None
        if given:
            bounds[k] = node.kwargs[given[0]]
    if set(node.kwargs) - {n for names in _CLIP_KEYWORDS for n in names}:
        return None
    return node.args[0], bounds[0], bounds[1]


def _deg2rad(e: _Emitter, x: Any) -> Node:
    return e("operator.mul", x, math.pi / 180)


RULES: dict[str, Callable[..., Node | None]] = {
    "stax.nn.selu": _selu, "numpy.square": _square, "numpy.clip": _clip,
    "numpy.deg2rad": _deg2rad, "numpy.radians": _deg2rad,
    **{product: identity_product for product in PRODUCTS},
}
assert set(RULES) == set(DECOMPOSE) and not set(RULES) & set(KEEP)
assert all(t in NN_FUNCTIONS for t in DECOMPOSE if t.startswith("stax.nn."))


@dataclass
class DecomposePass:
    name: str = "DecomposePass"
    last_summary: str = field(default="", compare=False)

    def run(self, graph: Graph) -> bool:
        notes: list[str] = []
        if graph.dialect != "capture":  # composites are expanded where they are still calls
            self.last_summary = ""
            return False
        for node in list(graph.nodes):
            rule, args = RULES.get(node.target), node.args
            if node.target in ("numpy.clip", "clip") and not node.effectful:
                rule, args = _clip, _clip_operands(node)  # keywords and the method form too
                if args is None:
                    continue
            elif rule is None or node.op is not Opcode.CALL_FUNCTION or node.kwargs or \
                    node.effectful:
                continue
            try:
                result = rule(_Emitter(graph, node), *args)
            except (OverflowError, TypeError, ValueError):  # NEP 50: np.clip(uint8, -1, 1)
                continue  # operands the primitives refuse: the composite stays (DCE drops the rest)
            if result is None:
                continue
            if result.tensor is not None and node.tensor is not None and \
                    (result.tensor.dtype, result.tensor.shape) != (node.tensor.dtype,
                                                                   node.tensor.shape):
                continue  # not the same bits (np.square of bool is int8, x * x bool): kept whole
            if node.tensor is not None and result is not node and not result.users:
                result.meta["tensor"] = node.tensor  # NumPy's layout for it (F-ordered x: F)
            notes.append(f"%{node.name} expanded into a chain ending in %{result.name}")
            substitute(graph, node, result)
        self.last_summary = "; ".join(notes)
        return bool(notes)
