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

import operator
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from stax.ir.scalar_inputs import leaves_of
from stax.ir.sizes import Size

from .calls import calls, operating
from .selection_counts import PREFIX as COUNT
from .selection_counts import compared, mask_of, stale_length

if TYPE_CHECKING:
    from .tracer import Tracer


class TracedNumber:
    """A number the traced function holds that Stax follows (a size read from a shape, a
    scalar argument): every use that decides something in Python reads it (``read``: what it
    came from then stays exact); NumPy ufuncs and scalar operators get the Python value."""

    __slots__ = ()
    value: Any

    def read(self) -> Any:
        raise NotImplementedError

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

    def __round__(self, ndigits: int | None = None) -> Any:
        return round(self.read(), ndigits)

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        """``isinstance(n, int)``, ``isinstance(k, float)``, ``numbers.Number``: as for the
        value, whose type is part of the key, so reading it decides nothing (``type(n)``
        cannot be made to answer so, and capture refuses code calling it: ``reach.py``)."""
        return type(self.value)

    #: NumPy's binary operators defer to these methods (a NumPy scalar times ``n``)
    __array_priority__ = 1000

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return ufunc_on_values(ufunc, method, inputs, kwargs)


class TracedSize(TracedNumber):
    """An int read from traced shapes, with the expression it was computed by."""

    __slots__ = ("expression", "tracer", "value")

    def __init__(self, value: int, expression: int | Size, tracer: Tracer) -> None:
        self.value = int(value)
        self.expression = expression
        self.tracer = tracer

    def __bool__(self) -> bool:
        """``if len(t):`` of a selection's length: its test against 0 (``_compared``)."""
        answer = compared(self.tracer, self.expression, "ne", 0)
        return bool(self.read()) if answer is None else answer

    def read(self) -> int:
        """The int, the dimensions it came from marked as read (their sizes stay exact)."""
        self.tracer.sizes.read(self.expression)
        return self.value

    # -- integer arithmetic that stays a size ---------------------------------------------
    def _combine(self, other: Any, fn: Callable[[Any, Any], Any], swap: bool = False) -> Any:
        if traced_array(other):  # (a traced NumPy integer answers isinstance as its value)
            return NotImplemented  # its own operator records the call
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
        if _positive_int(other):  # by a positive number: a size (by a size: read, ``_decided``)
            return self._combine(other, operator.floordiv)
        return self._decided(other, operator.floordiv)

    def __mod__(self, other: Any) -> Any:
        if _positive_int(other):
            return self._combine(other, operator.mod)
        return self._decided(other, operator.mod)

    def __neg__(self) -> TracedSize:
        return TracedSize(-self.value, -self.expression, self.tracer)

    def __pos__(self) -> TracedSize:
        return self

    def _arith(self, other: Any, fn: Callable[[Any, Any], Any], swap: bool = False) -> Any:
        result = self._combine(other, fn, swap)
        if result is NotImplemented and not traced_array(other):
            return self._decided(other, fn, swap)
        return result

    def _decided(self, other: Any, fn: Callable[[Any, Any], Any], swap: bool = False) -> Any:
        """An operation whose result is not a size (a float, a NumPy scalar): computed on the
        int, the sizes read."""
        if traced_array(other):
            return NotImplemented
        other = other.read() if isinstance(other, TracedSize) else other
        return fn(other, self.read()) if swap else fn(self.read(), other)


def _positive_int(value: Any) -> bool:
    """A plain positive int (or NumPy integer): not a bool, a traced array or a followed
    number (a traced NumPy integer, a size, answers ``isinstance`` as its value)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) \
        and not traced_array(value) and not isinstance(value, TracedNumber) and value > 0


def _binary_decided(fn: Callable[[Any, Any], Any], swap: bool = False) -> Callable[..., Any]:
    def method(self: TracedSize, other: Any) -> Any:
        return self._decided(other, fn, swap)
    return method


def _compared(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def method(self: TracedSize, other: Any) -> Any:
        if traced_array(other):
            return NotImplemented
        if isinstance(self.expression, Size):  # a selection's length: a gate on the
            # program's test (two lengths: their difference against 0)
            answer = compared(self.tracer, self.expression, fn.__name__, other) \
                if not isinstance(other, TracedSize) else \
                compared(self.tracer, self.expression - other.expression, fn.__name__, 0)
            if answer is not None:
                return answer
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


def traced_array(value: Any) -> bool:
    """A traced array (its operator records the call, with this size as an argument)."""
    from .proxy import Proxy

    return isinstance(value, Proxy)


def plain(value: Any) -> Any:
    """``value`` with every ``TracedSize`` in it (through tuples, lists, dicts and slices) its
    int, reading nothing: the arguments NumPy's own call is given during capture."""
    if isinstance(value, TracedNumber):
        return value.value
    if isinstance(value, slice):
        if any(isinstance(b, TracedNumber) for b in (value.start, value.stop,
                                                                   value.step)):
            return slice(plain(value.start), plain(value.stop), plain(value.step))
        return value
    if isinstance(value, (tuple, list)) and any(_holds(v) for v in value):
        return type(value)(plain(v) for v in value)
    if isinstance(value, dict) and any(_holds(v) for v in value.values()):
        return {k: plain(v) for k, v in value.items()}
    return value


def _holds(value: Any) -> bool:
    if isinstance(value, TracedNumber):
        return True
    if isinstance(value, slice):
        return any(isinstance(b, TracedNumber)
                   for b in (value.start, value.stop, value.step))
    if isinstance(value, (tuple, list)):
        return any(_holds(v) for v in value)
    if isinstance(value, dict):
        return any(_holds(v) for v in value.values())
    return False


def ufunc_on_values(ufunc: Any, method: str, inputs: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
    """A NumPy ufunc some of whose operands are traced sizes or scalars: a traced array's own
    ``__array_ufunc__`` records it (NotImplemented here); else the ufunc runs on the Python
    values, which NumPy takes as weak scalars (NEP 50, as eagerly), the values read."""
    if any(traced_array(v) for v in (*inputs, *(kwargs.get("out") or ()))):
        return NotImplemented
    values = [v.read() if isinstance(v, TracedNumber) else v for v in inputs]
    by_operator = scalar_operator(ufunc, method, inputs, kwargs)
    if by_operator is not None:
        return by_operator(*values)
    return getattr(ufunc, method)(*values, **kwargs)


def scalar_operator(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> Callable[[Any, Any], Any] | None:
    """The Python operator a ufunc call given to a traced number stands for, or None (a call
    of the ufunc): ``t += dt`` of a NumPy scalar ``t`` defers to ``dt``'s ``__array_ufunc__``
    by calling the ufunc, where eagerly it is NumPy's scalar math (its integer overflow
    reported, its events named "in scalar add"). The operator where the code applies one
    (``t + dt``, ``t.__add__(dt)``) or calls a function of Python's that does (``sum([dt, dt],
    t)``, ``operator.iadd``); the ufunc otherwise (``np.add(t, dt)``, ``functools.reduce(np.add,
    ...)``)."""
    by_operator = _SCALAR_OPERATORS.get(ufunc.__name__)
    if by_operator is not None and method == "__call__" and not kwargs and \
            len(inputs) == 2 and isinstance(inputs[0], np.generic):
        caller = _caller()
        if caller is not None and (operating(caller) or any(calls(caller, f)
                                                            for f in _APPLIERS)):
            return by_operator
    return None


#: Python's functions that apply an operator to their arguments
_APPLIERS = (sum, operator.add, operator.iadd, operator.sub, operator.isub, operator.mul,
             operator.imul, operator.truediv, operator.itruediv, operator.floordiv,
             operator.ifloordiv, operator.mod, operator.imod, operator.pow, operator.ipow)


#: NumPy's ufuncs that a NumPy scalar's Python operator calls, and the operator
_SCALAR_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
    "true_divide": operator.truediv, "divide": operator.truediv,
    "floor_divide": operator.floordiv, "remainder": operator.mod, "power": operator.pow,
    "bitwise_and": operator.and_, "bitwise_or": operator.or_, "bitwise_xor": operator.xor,
    "left_shift": operator.lshift, "right_shift": operator.rshift, "less": operator.lt,
    "less_equal": operator.le, "greater": operator.gt, "greater_equal": operator.ge,
    "equal": operator.eq, "not_equal": operator.ne}


def _caller() -> Any:
    """The innermost frame outside Stax: the code that applied the operator."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("stax."):
        frame = frame.f_back
    return frame


class SizeReads:
    """The dimensions a capture's user code read as sizes, each a size symbol."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.symbols: dict[tuple[Any, int], str] = {}
        self.dims: dict[Any, set[int] | None] = {}  # node -> dimensions read (None: all)
        self._data_shaped: dict[Any, bool] = {}
        self.counts: dict[str, tuple[Any, Any]] = {}  # count symbol -> (selection, mask)
        #: counts of a lifted loop's erased first iteration (``loop_state.forget``): a length
        #: the loop's body read escaped it (``n = len(t)`` read after the loop) and is stale
        self.stale: set[str] = set()

    def shape_of(self, proxy: Any) -> tuple[Any, ...]:
        """``x.shape`` read by the user's code: each dimension a size that follows it. A value
        whose shape comes from the data (``x[x > 0]``, ``np.unique``, what is computed from
        them) gives Python its numbers, read: its shape gate stays, so another count takes
        another version (a size that followed it was the traced count in every call)."""
        node, shape = proxy.node, proxy.value.shape
        if self.data_shaped(node):
            mask = mask_of(node, self.data_shaped) if node.graph is self.tracer.graph else None
            if mask is None:
                self.read_dims(node, None)
                return tuple(shape)
            # a selection's length: its mask's count, which the program computes where the
            # length is an operand (``selection_counts.py``); any other use reads it
            name = f"{COUNT}{len(self.counts) + len(self.stale)}"  # (never one used before)
            self.counts[name] = (node, mask)
            return (TracedSize(shape[0], Size.symbol(name), self.tracer),)
        return tuple(TracedSize(n, self._symbol(node, d), self.tracer)
                     for d, n in enumerate(shape))

    def data_shaped(self, node: Any) -> bool:
        """Whether ``node`` or a node it is computed from has a data-dependent shape (a shape
        gate): conservatively, any input's."""
        stack = [node]
        while stack:
            top = stack[-1]
            if top in self._data_shaped:
                stack.pop()
                continue
            if top.meta.get("shape_gated"):
                self._data_shaped[top] = True
                stack.pop()
                continue
            inputs = top.inputs
            pending = [n for n in inputs if n not in self._data_shaped]
            if pending:
                stack.extend(pending)
                continue
            self._data_shaped[top] = any(self._data_shaped[n] for n in inputs)
            stack.pop()
        return self._data_shaped[node]

    def _symbol(self, node: Any, dim: int) -> Size:
        name = self.symbols.get((node, dim))
        if name is None:
            name = self.symbols[(node, dim)] = f"s{len(self.symbols)}"
        return Size.symbol(name)

    def values(self) -> dict[str, int]:
        """Each shape's size symbol's traced value."""
        return {name: node.tensor.shape[dim] for (node, dim), name in self.symbols.items()}

    def read(self, expression: Any) -> None:
        """Python decided something from a size: its dimensions stay exact."""
        if isinstance(expression, Size):
            names = expression.symbols
            if names & self.stale:  # the number of the first iteration, not of the last
                raise stale_length()
            for name in names & self.counts.keys():  # a selection's length: its shape gate
                self.read_dims(self.counts[name][0], None)
            for (node, dim), name in self.symbols.items():
                if name in names:
                    self.read_dims(node, (dim,))

    def read_dims(self, node: Any, dims: tuple[int, ...] | None) -> None:
        """Python read these dimensions of ``node``'s shape (None: all of it, ``x.nbytes`` or
        NumPy's own code): a generic version keeps them exact (``info["dims_read"]``)."""
        self.tracer.shape_read.add(node)
        known = self.dims.get(node, set())
        self.dims[node] = None if dims is None or known is None else known | set(dims)

    def dims_table(self, graph: Any) -> dict[str, list[int]]:
        """``info["dims_read"]``: the dimensions read of each node read only through them."""
        return {node.name: sorted(dims) for node, dims in self.dims.items()
                if dims is not None and node.graph is graph}

    def table(self, graph: Any) -> dict[str, list[Any]]:
        """``info["size_symbols"]``: each symbol's node name and dimension."""
        return {name: [node.name, dim] for (node, dim), name in self.symbols.items()
                if node.graph is graph}


def size_arguments(sizes: list[tuple[tuple[Any, ...], Any]], used: set[int] | None = None
                   ) -> dict[str, Any]:
    """The node metadata of the sizes and scalar arguments among a call's arguments: each
    one's place (``["args", 1, "stop"]``) and a size's expression over the capture's size
    symbols (``size_args``) or a scalar's flat argument index (``scalar_args``), for
    ``stax.ir.symbolic_shapes`` and ``stax.ir.scalar_inputs`` to put back. ``used`` (the
    tracer's ``scalar_used``) gets the scalar arguments noted: ``info["scalar_used"]``, so a
    rewrite that drops a use is seen, not taken for a constant."""
    meta: dict[str, Any] = {}
    computed = [[list(path), str(e)] for path, e in sizes if isinstance(e, Size)]
    if computed:
        meta["size_args"] = computed
    scalars = [[list(path), e.recorded] for path, e in sizes if not isinstance(e, Size)]
    if scalars:
        meta["scalar_args"] = scalars
        if used is not None:
            for _, recorded in scalars:
                used.update(leaves_of(recorded))
    return meta



def argument_records(node: Any) -> dict[str, Any]:
    """The ``size_args``/``scalar_args`` of ``node``'s metadata, for a node a rewrite makes in
    its place with its arguments at the same places (a masked selection's work lifted to whole
    arrays): without them a scalar argument's use is lost, and a generic version taking the
    scalar as an input kept the capture's value (``(x[x > 0] * a).sum()`` for every ``a``)."""
    return {k: node.meta[k] for k in ("size_args", "scalar_args") if k in node.meta}


def read_number(value: Any) -> Any:
    """A traced size's or scalar's Python value, read (its dimensions or argument then stay
    exact); any other value as it is."""
    return value.read() if isinstance(value, TracedNumber) else value
