"""Scalar arguments during capture (issue 15, item 3; issue 14, item 3): ``TracedScalar``.

A Python ``int`` or ``float`` argument, or a NumPy scalar (``stax.ir.scalar_inputs.value_kind``:
``np.float64(t)`` from ``for t in np.linspace(...)``), whose value changes between calls can be a
run-time input of a generic version, as torch.compile does for ints (``stax.ir.scalar_inputs``).
Capture must then know where the value went: where it is an operand of a traced call (``x * k``)
the node records the value and, in ``meta["scalar_args"]``, the argument it came from; any other
use — arithmetic in Python, a comparison, ``range(k)``, a conversion, a NumPy computation on no
traced array — decides something from the value, which marks the argument read
(``info["scalar_read"]``: its value stays part of the key). ``isinstance(k, float)`` answers as
for the value (``__class__``; the type is part of the key, so it reads nothing), and a NumPy
ufunc of no traced operand gets the value itself, which NumPy takes as a weak scalar (NEP 50)
if it is a Python number.
"""

from __future__ import annotations

import contextvars
import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from stax.ir.scalar_inputs import FAST_EXPONENTS, expression_kind, value_kind
from stax.ir.scalar_predicates import COMPARISONS, MAX_PREDICATES, testable

from .traced_sizes import (
    TracedNumber,
    TracedSize,
    scalar_operator,
    traced_array,
    ufunc_on_values,
)

if TYPE_CHECKING:
    from .tracer import Tracer


class TracedScalar(TracedNumber):
    """A scalar argument during capture (issue 15: a scalar that changes between calls can be
    a run-time input of a generic version, as torch.compile does for ints), or a number
    computed from such arguments in Python (``w * t``, ``t + dt / 2``, ``np.sin(w * t)``:
    ``expression``). Where it is an operand of a traced call (``x * k``), the node records the
    value and, in ``meta["scalar_args"]``, the argument it came from or the expression that
    computes it; any other use — a comparison, ``range(k)``, a conversion — decides something
    from its value, which marks the arguments read (``info["scalar_read"]``: their values stay
    part of the key)."""

    __slots__ = ("expr", "leaf", "size", "tracer", "value")

    def __init__(self, value: Any, leaf: int | None, tracer: Tracer,
                 expr: list[Any] | None = None, size: int = 1) -> None:
        self.value = value
        self.leaf = leaf  # the flat argument it is, or None for a computed one
        self.tracer = tracer
        self.expr = expr  # how a computed one is computed (``stax.ir.scalar_inputs``)
        self.size = size  # its expression's operations (``MAX_EXPRESSION``)

    def read(self) -> Any:
        """The value, the arguments marked read (their values stay part of the key)."""
        if self.expr is None:
            self.tracer.scalar_read.add(self.leaf)
        else:
            self.tracer.scalar_read.update(expression_leaves(self.expr))
        return self.value

    @property
    def recorded(self) -> Any:
        """What ``meta["scalar_args"]`` records of a use: the argument, or the expression."""
        return self.leaf if self.expr is None else self.expr

    @property
    def expression(self) -> list[Any] | None:
        """Its expression, an argument's included; None for a value arithmetic does not follow."""
        if self.expr is not None:
            return self.expr
        return _operand(self.value, self.leaf)

    def __getattr__(self, name: str) -> Any:  # k.is_integer(), k.real: the value's own
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.read(), name)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """``np.sin(w * t)``: a followed ufunc of one float scalar is a computed scalar (NumPy's
        float64, strong); anything else runs on the values, read."""
        if method == "__call__" and not kwargs and ufunc.__name__ in FOLLOWED_UFUNCS and \
                len(inputs) == ufunc.nin:
            exprs = [o.expression if isinstance(o, TracedScalar) else _operand(o) for o in inputs]
            size = 1 + sum(o.size for o in inputs if isinstance(o, TracedScalar))
            if all(e is not None for e in exprs) and size <= MAX_EXPRESSION:
                apply = scalar_operator(ufunc, method, inputs, kwargs) or ufunc
                value = apply(*(o.value if isinstance(o, TracedScalar) else o for o in inputs))
                if type(value) in (np.float64, np.float32):  # (NumPy's reports given, as eagerly)
                    return TracedScalar(value, None, self.tracer,
                                        [f"numpy.{ufunc.__name__}", *exprs], size)
                for o in inputs:  # not followed (an int's reciprocal): read, not run again
                    if isinstance(o, TracedNumber):  # (NumPy warned once, as eagerly)
                        o.read()
                return value
        return ufunc_on_values(ufunc, method, inputs, kwargs)


#: operators whose float result a 0-d float64 computation gives bit for bit (a Python float's
#: arithmetic is IEEE double's; a division by zero, which raises in Python, is a decline;
#: ``**`` is C's pow, called by the kernels as CPython calls it: ``stax.ir.libm``)
FOLLOWED_OPERATORS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
                      "truediv": operator.truediv, "neg": operator.neg, "pos": operator.pos,
                      "abs": abs, "pow": operator.pow}
#: NumPy ufuncs a computed scalar follows (compiled: within NumPy's own accuracy, as for
#: arrays; arithmetic bit for bit), their result NumPy's float64; ``np.float64(2) * t`` is one
FOLLOWED_UFUNCS = frozenset({
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "hypot", "arctan2",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
    "cbrt", "square", "absolute", "negative", "reciprocal", "deg2rad", "rad2deg"})
#: the operations one computed number may hold: past them (a loop's ``t += dt``) it is read
MAX_EXPRESSION = 32
#: an int an expression takes: converted to a double exactly
_EXACT_INT = 2 ** 53


def _operand(value: Any, leaf: int | None = None) -> list[Any] | None:
    """The expression of a value in computed-scalar arithmetic: a float, an int within 2**53
    or a NumPy float64, as an argument (``leaf``) or a constant; None for anything else."""
    t = type(value)
    if t is float or t is np.float64 or t is np.float32:
        kind, code = ("float" if t is float else f"numpy.{t.__name__}"), float(value).hex()
    elif t is int and -_EXACT_INT < value < _EXACT_INT:
        kind, code = "int", value
    else:
        return None
    return ["arg", leaf, kind, code] if leaf is not None else ["const", kind, code]


#: whether capture follows scalar arguments (off for a capture run again with their values)
FOLLOWING: contextvars.ContextVar[bool] = contextvars.ContextVar("stax_following", default=True)


def retried_with_values(run: Callable[[], Any], leaves: list[Any], outcome: Any) -> Any:
    """``run()`` (a capture); where it raises ``TypeError`` and scalar arguments were followed,
    ``run()`` again with the scalars as their values: code that wants the number itself (a
    ``SeedSequence``, ``json.dumps``) refuses the stand-in, where eagerly it works."""
    try:
        return run()
    except TypeError as exc:
        if not retried(exc, leaves):
            raise
    if outcome is not None:  # what the first run recorded of the call
        outcome.undo_untraced_updates()
        outcome.arguments.clear()
        outcome.generators.clear()
    token = FOLLOWING.set(False)
    try:
        return run()
    finally:
        FOLLOWING.reset(token)


def retried(error: BaseException, leaves: list[Any]) -> bool:
    """Whether ``retried_with_values`` captures again after ``error``: a capture that ends so
    gives no reports of its own (the run again gives them, once)."""
    return isinstance(error, TypeError) and FOLLOWING.get() and \
        any(value_kind(leaf) is not None for leaf in leaves)


def expression_leaves(expr: list[Any]) -> set[int]:
    """The flat arguments an expression reads."""
    if expr[0] == "arg":
        return {expr[1]}
    if expr[0] == "const":
        return set()
    return set().union(*(expression_leaves(e) for e in expr[1:]))


def _computed(name: str, operands: tuple[Any, ...]) -> TracedScalar | None:
    """``operands`` combined by operator ``name`` as a computed scalar, or None where it is not
    followed (another operator or operand, a result other than a float)."""
    fn = FOLLOWED_OPERATORS.get(name)
    exprs = [o.expression if isinstance(o, TracedScalar) else _operand(o) for o in operands]
    size = 1 + sum(o.size for o in operands if isinstance(o, TracedScalar))
    if fn is None or any(e is None for e in exprs) or size > MAX_EXPRESSION:
        return None  # (one grown by a loop, ``t += dt``: read, its value in the key)
    if name == "pow" and any(expression_kind(e) != "float" for e in exprs):
        return None  # a NumPy float64's ``**`` is NumPy's scalar power: read
    try:
        value = fn(*(o.value if isinstance(o, TracedScalar) else o for o in operands))
    except ArithmeticError:
        return None  # raised again as eagerly, by the values read
    if type(value) not in (float, np.float64, np.float32):
        return None  # an int result (``n + 1``): Python's unbounded ints are not followed
    tracer = next(o.tracer for o in operands if isinstance(o, TracedScalar))
    return TracedScalar(value, None, tracer, [name, *exprs], size)


def _scalar_binary(fn: Callable[[Any, Any], Any], name: str = "",
                   swap: bool = False) -> Callable[..., Any]:
    def method(self: TracedScalar, other: Any) -> Any:
        if traced_array(other):
            return NotImplemented  # the traced array's operator records the call
        computed = _computed(name, (other, self) if swap else (self, other))
        if computed is not None:
            return computed
        other = other.read() if isinstance(other, (TracedScalar, TracedSize)) else other
        return fn(other, self.read()) if swap else fn(self.read(), other)
    return method


def _scalar_unary(fn: Callable[[Any], Any], name: str = "") -> Callable[..., Any]:
    def method(self: TracedScalar, *rest: Any) -> Any:
        computed = None if rest else _computed(name, (self,))
        return computed if computed is not None else fn(self.read(), *rest)
    return method


for _name, _fn in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow), ("divmod", divmod),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                   ("lshift", operator.lshift), ("rshift", operator.rshift),
                   ("matmul", operator.matmul)):
    setattr(TracedScalar, f"__{_name}__", _scalar_binary(_fn, _name))
    setattr(TracedScalar, f"__r{_name}__", _scalar_binary(_fn, _name, swap=True))


def _scalar_compare(fn: Callable[[Any, Any], Any], name: str) -> Callable[..., Any]:
    """``k > 100.0``, ``t + dt >= t_end``: a comparison of followed scalars (or of one and a
    number) computed by what a key entry tests silently (``scalar_predicates.testable``) is
    recorded with its outcome and reads nothing; the generic version then applies where it
    comes out the same. Anything else reads (``np.exp(k) > 1``: its warnings are eager's)."""
    def method(self: TracedScalar, other: Any) -> Any:
        if traced_array(other):
            return NotImplemented  # the traced array's operator records the call
        left = self.expression
        right = other.expression if isinstance(other, TracedScalar) else _operand(other)
        recorded = self.tracer.scalar_predicates
        if left is not None and right is not None and len(recorded) < MAX_PREDICATES and \
                testable(left) and testable(right):
            value = fn(self.value, other.value if isinstance(other, TracedScalar) else other)
            if type(value) in (bool, np.bool_):
                recorded.append([name, left, right, bool(value)])
                return value
        other = other.read() if isinstance(other, (TracedScalar, TracedSize)) else other
        return fn(self.read(), other)
    return method


for _name, _fn in COMPARISONS.items():
    setattr(TracedScalar, f"__{_name}__", _scalar_compare(_fn, _name))
for _name, _fn in (("neg", operator.neg), ("pos", operator.pos), ("abs", abs),
                   ("invert", operator.invert), ("round", round), ("trunc", math.trunc),
                   ("floor", math.floor), ("ceil", math.ceil)):
    setattr(TracedScalar, f"__{_name}__", _scalar_unary(_fn, _name))


def note_power_exponent(operands: Any) -> None:
    """``x ** p`` of an array ``x`` and a followed scalar ``p``: NumPy's loop takes a fast path
    at each of ``FAST_EXPONENTS``, so the version records which one ``p`` is, if any
    (predicates its key entry tests): a version for another value serves every other one, with
    pow; one for 2.0 serves 2.0 alone, with the square (``scalar_inputs._pinned``)."""
    base, p = operands
    if not isinstance(p, TracedScalar) or isinstance(base, TracedNumber):
        return
    expr, recorded = p.expression, p.tracer.scalar_predicates
    new = [predicate for value in FAST_EXPONENTS
           if (predicate := ["eq", expr, ["const", "float", value.hex()], bool(p.value == value)])
           not in recorded]  # (a loop's body run at capture: once, not once an iteration)
    if expr is None or not testable(expr) or len(recorded) + len(new) > MAX_PREDICATES:
        p.read()
        return
    recorded.extend(new)
