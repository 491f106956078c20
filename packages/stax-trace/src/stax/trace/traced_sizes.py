"""Sizes the traced function reads from its arrays' shapes (issue 15, spec §10.4).

``x.shape[0]``, ``x.size`` and their sums, products and floor quotients are ``TracedSize``
values during capture: an int at the traced sizes that remembers, as a ``stax.ir.sizes.Size``
over one symbol per shape dimension read, how it was computed. Where such a value reaches a
traced call as an argument (``x.reshape(n, 4, -1)``, ``np.zeros((n, m))``, ``x[: n // 2]``,
``x / n``), the node records the int NumPy was given and, in ``meta["size_args"]``, where it lies
in the arguments and its expression; a size-generic compile puts the expression back
(``stax.ir.symbolic_shapes``), so the call follows the sizes of each call.

Any other use decides something in Python from the size — a comparison, ``range(n)``, a
float, a string, a NumPy scalar — and the value cannot follow the sizes there: it marks the
dimensions it came from as read (``tracer.shape_read``), which keeps the version exact in them.
A ``TracedSize`` is deliberately not an ``int`` subclass: CPython consumes ints without asking
them (``range``, slicing), so every such use goes through ``__index__`` here and is seen.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from stax.ir.sizes import Size

if TYPE_CHECKING:
    from .tracer import Tracer


class TracedSize:
    """An int read from traced shapes, with the expression it was computed by."""

    __slots__ = ("expression", "tracer", "value")

    def __init__(self, value: int, expression: int | Size, tracer: Tracer) -> None:
        self.value = int(value)
        self.expression = expression
        self.tracer = tracer

    # -- uses that decide something: the sizes are read -----------------------------------
    def read(self) -> int:
        """The int, the dimensions it came from marked as read (their sizes stay exact)."""
        self.tracer.read_sizes(self.expression)
        return self.value

    def __index__(self) -> int:
        return self.read()

    __int__ = __index__

    def __float__(self) -> float:
        return float(self.read())

    def __complex__(self) -> complex:
        return complex(self.read())

    def __bool__(self) -> bool:
        return bool(self.read())

    def __hash__(self) -> int:
        return hash(self.read())

    def __str__(self) -> str:
        return str(self.read())

    def __repr__(self) -> str:
        return repr(self.read())

    def __format__(self, spec: str) -> str:
        return format(self.read(), spec)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.read(), dtype=dtype)

    def __round__(self, ndigits: int | None = None) -> Any:
        return round(self.read(), ndigits)

    # -- integer arithmetic that stays a size ---------------------------------------------
    def _combine(self, other: Any, fn: Callable[[Any, Any], Any], swap: bool = False) -> Any:
        if isinstance(other, TracedSize):
            value, expression = other.value, other.expression
        elif isinstance(other, (int, np.integer)) and not isinstance(other, (bool, np.bool_)):
            value = expression = int(other)
        else:
            return NotImplemented  # a traced array's own operator records the call
        if swap:
            return TracedSize(fn(value, self.value), fn(expression, self.expression), self.tracer)
        return TracedSize(fn(self.value, value), fn(self.expression, expression), self.tracer)

    def __add__(self, other: Any) -> Any:
        return self._arith(other, operator.add)

    def __radd__(self, other: Any) -> Any:
        return self._arith(other, operator.add, swap=True)

    def __sub__(self, other: Any) -> Any:
        return self._arith(other, operator.sub)

    def __rsub__(self, other: Any) -> Any:
        return self._arith(other, operator.sub, swap=True)

    def __mul__(self, other: Any) -> Any:
        return self._arith(other, operator.mul)

    def __rmul__(self, other: Any) -> Any:
        return self._arith(other, operator.mul, swap=True)

    def __floordiv__(self, other: Any) -> Any:
        if isinstance(other, (int, np.integer)) and not isinstance(other, (bool, np.bool_)) \
                and other > 0:  # a floor quotient by a positive number stays a size
            return self._combine(other, operator.floordiv)
        return self._decided(other, operator.floordiv)

    def __mod__(self, other: Any) -> Any:
        if isinstance(other, (int, np.integer)) and not isinstance(other, (bool, np.bool_)) \
                and other > 0:
            return self._combine(other, operator.mod)
        return self._decided(other, operator.mod)

    def __neg__(self) -> TracedSize:
        return TracedSize(-self.value, -self.expression, self.tracer)

    def __pos__(self) -> TracedSize:
        return self

    def _arith(self, other: Any, fn: Callable[[Any, Any], Any], swap: bool = False) -> Any:
        result = self._combine(other, fn, swap)
        if result is NotImplemented and not _traced(other):
            return self._decided(other, fn, swap)
        return result

    def _decided(self, other: Any, fn: Callable[[Any, Any], Any], swap: bool = False) -> Any:
        """An operation whose result is not a size (a float, a NumPy scalar): computed on the
        int, the sizes read."""
        if _traced(other):
            return NotImplemented
        other = other.read() if isinstance(other, TracedSize) else other
        return fn(other, self.read()) if swap else fn(self.read(), other)


def _binary_decided(fn: Callable[[Any, Any], Any], swap: bool = False) -> Callable[..., Any]:
    def method(self: TracedSize, other: Any) -> Any:
        return self._decided(other, fn, swap)
    return method


def _compared(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def method(self: TracedSize, other: Any) -> Any:
        if _traced(other):
            return NotImplemented
        other = other.read() if isinstance(other, TracedSize) else other
        return fn(self.read(), other)
    return method


for _name, _fn in (("truediv", operator.truediv), ("pow", operator.pow),
                   ("divmod", divmod), ("and", operator.and_), ("or", operator.or_),
                   ("xor", operator.xor), ("lshift", operator.lshift),
                   ("rshift", operator.rshift)):
    setattr(TracedSize, f"__{_name}__", _binary_decided(_fn))
    setattr(TracedSize, f"__r{_name}__", _binary_decided(_fn, swap=True))
TracedSize.__rfloordiv__ = _binary_decided(operator.floordiv, swap=True)
TracedSize.__rmod__ = _binary_decided(operator.mod, swap=True)
for _name, _fn in (("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt),
                   ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)):
    setattr(TracedSize, f"__{_name}__", _compared(_fn))
TracedSize.__abs__ = lambda self: abs(self.read())  # type: ignore[method-assign]
TracedSize.__invert__ = lambda self: ~self.read()  # type: ignore[method-assign]


def _traced(value: Any) -> bool:
    """A traced array (its operator records the call, with this size as an argument)."""
    from .proxy import Proxy

    return isinstance(value, Proxy)


def plain(value: Any) -> Any:
    """``value`` with every ``TracedSize`` in it (through tuples, lists, dicts and slices) its
    int, reading nothing: the arguments NumPy's own call is given during capture."""
    if isinstance(value, (TracedSize, TracedScalar)):
        return value.value
    if isinstance(value, slice):
        if any(isinstance(b, (TracedSize, TracedScalar)) for b in (value.start, value.stop,
                                                                   value.step)):
            return slice(plain(value.start), plain(value.stop), plain(value.step))
        return value
    if isinstance(value, (tuple, list)) and any(_holds(v) for v in value):
        return type(value)(plain(v) for v in value)
    if isinstance(value, dict) and any(_holds(v) for v in value.values()):
        return {k: plain(v) for k, v in value.items()}
    return value


def _holds(value: Any) -> bool:
    if isinstance(value, (TracedSize, TracedScalar)):
        return True
    if isinstance(value, slice):
        return any(isinstance(b, (TracedSize, TracedScalar))
                   for b in (value.start, value.stop, value.step))
    if isinstance(value, (tuple, list)):
        return any(_holds(v) for v in value)
    if isinstance(value, dict):
        return any(_holds(v) for v in value.values())
    return False


class TracedScalar:
    """A Python ``int`` or ``float`` argument during capture (issue 15: a scalar that changes
    between calls can be a run-time input of a generic version, as torch.compile does for
    ints). Where it is an operand of a traced call (``x * k``), the node records the value and,
    in ``meta["scalar_args"]``, the argument it came from; any other use — arithmetic in Python,
    a comparison, ``range(k)``, a conversion — decides something from its value, which marks
    the argument read (``info["scalar_read"]``: its value stays part of the key)."""

    __slots__ = ("leaf", "tracer", "value")

    def __init__(self, value: int | float, leaf: int, tracer: Tracer) -> None:
        self.value = value
        self.leaf = leaf
        self.tracer = tracer

    def read(self) -> int | float:
        self.tracer.scalar_read.add(self.leaf)
        return self.value

    def __index__(self) -> int:
        return operator.index(self.read())  # a float's own TypeError

    def __int__(self) -> int:
        return int(self.read())

    def __float__(self) -> float:
        return float(self.read())

    def __complex__(self) -> complex:
        return complex(self.read())

    def __bool__(self) -> bool:
        return bool(self.read())

    def __hash__(self) -> int:
        return hash(self.read())

    def __str__(self) -> str:
        return str(self.read())

    def __repr__(self) -> str:
        return repr(self.read())

    def __format__(self, spec: str) -> str:
        return format(self.read(), spec)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.read(), dtype=dtype)

    def __getattr__(self, name: str) -> Any:  # k.is_integer(), k.real: the value's own
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.read(), name)


def _scalar_binary(fn: Callable[[Any, Any], Any], swap: bool = False) -> Callable[..., Any]:
    def method(self: TracedScalar, other: Any) -> Any:
        if _traced(other):
            return NotImplemented  # the traced array's operator records the call
        other = other.read() if isinstance(other, (TracedScalar, TracedSize)) else other
        return fn(other, self.read()) if swap else fn(self.read(), other)
    return method


def _scalar_unary(fn: Callable[[Any], Any]) -> Callable[..., Any]:
    return lambda self, *rest: fn(self.read(), *rest)


for _name, _fn in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow), ("divmod", divmod),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                   ("lshift", operator.lshift), ("rshift", operator.rshift),
                   ("matmul", operator.matmul)):
    setattr(TracedScalar, f"__{_name}__", _scalar_binary(_fn))
    setattr(TracedScalar, f"__r{_name}__", _scalar_binary(_fn, swap=True))
for _name, _fn in (("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt),
                   ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)):
    setattr(TracedScalar, f"__{_name}__", _scalar_binary(_fn))
for _name, _fn in (("neg", operator.neg), ("pos", operator.pos), ("abs", abs),
                   ("invert", operator.invert), ("round", round), ("trunc", math.trunc),
                   ("floor", math.floor), ("ceil", math.ceil)):
    setattr(TracedScalar, f"__{_name}__", _scalar_unary(_fn))
