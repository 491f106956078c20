"""The proxy that stands in for a NumPy array during capture (spec §3.2–3.3).

A ``Proxy`` carries a graph node (the symbol) and the eager value of that node on the example
inputs (mixed mode). NumPy hands it every call through its own protocols — ``__array_ufunc__``,
``__array_function__``, operator dunders, ndarray methods and attributes — and each call becomes
one node whose metadata (shape, dtype, strides) is the eager result's.
"""

from __future__ import annotations

import functools
import operator
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from stax.ir import NN_FUNCTIONS, SCALAR_OPERATORS, Opcode, UnsupportedError
from stax.ir.ops import same_index_key

from .in_place_calls import in_place_call
from .isolation import refused
from .positional_out import keyword_out
from .source import UNTRACED_INDEXED, library_frame, user_source, user_subscript
from .traced_scalars import note_power_exponent
from .traced_sizes import TracedNumber, plain, scalar_operator

if TYPE_CHECKING:
    from .tracer import Tracer

#: ndarray methods that mutate their array: refused before they run (functionalization is §4.9).
MUTATING_METHODS = frozenset({
    "fill", "sort", "partition", "put", "itemset", "resize", "setfield", "setflags", "byteswap",
})
#: NumPy functions that write into an argument.
MUTATING_FUNCTIONS = frozenset({
    "numpy.put", "numpy.place", "numpy.putmask", "numpy.fill_diagonal", "numpy.put_along_axis",
})
#: functions (and the same-named ndarray methods) whose ``out=`` receives exactly what they
#: return without it, cast as NumPy casts into ``out``: ``f(..., out=o)`` is ``o[...] = f(...)``
OUT_FUNCTIONS = frozenset({
    "clip", "round", "around", "cumsum", "cumprod", "sum", "prod", "mean", "max", "min", "amax",
    "amin",
})
#: those of ``OUT_FUNCTIONS`` that accumulate in ``out``'s dtype when given no ``dtype=``
ACCUMULATING = frozenset({"cumsum", "cumprod", "sum", "prod", "mean"})
#: attributes read straight from the example value: static metadata, part of the signature.
STATIC_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size", "itemsize", "nbytes"})


class Proxy:
    __slots__ = ("__weakref__", "node", "tracer", "value", "view_of")
    __array_priority__ = 1000.0

    def __new__(cls, node: Any, value: Any, tracer: Tracer) -> Proxy:
        if cls is Proxy and not isinstance(value, np.ndarray):
            cls = ScalarProxy  # (what ``isinstance(x, Hashable)`` and ``hash(x)`` see)
        return object.__new__(cls)

    def __init__(self, node: Any, value: Any, tracer: Tracer) -> None:
        self.node = node
        self.value = value
        self.tracer = tracer
        self.view_of: tuple[Proxy, Any] | None = None  # (base, key) when x[key] is a view of base

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        """``isinstance(x, np.ndarray)`` (or ``np.floating`` for a scalar) answers as for the
        value it stands for; ``type(x)`` cannot be made to, and capture refuses code calling it
        (``reach.py``)."""
        return type(self.value)

    # -- Python reads the value as text or bytes: refused, since a compiled version would not
    # -- redo the print, log or message on later calls (eager NumPy runs it every call)
    def __repr__(self) -> str:
        raise _text(self, "repr()")

    def __str__(self) -> str:
        raise _text(self, "str() (print(), str.format, '%s')")

    def __format__(self, spec: str) -> str:
        raise _text(self, "an f-string or format()")

    def __bytes__(self) -> bytes:
        raise _text(self, "bytes()")

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise _text(self, "pickling or copying by pickle")

    #: unhashable, as an array is: ``isinstance(x, collections.abc.Hashable)`` reads the
    #: class (a method here answered True where eager's False took the other branch);
    #: ``ScalarProxy`` stands for a NumPy scalar, which is hashable
    __hash__ = None  # type: ignore[assignment]

    def __copy__(self) -> Any:
        return self.__getattr__("copy")()

    def __deepcopy__(self, memo: Any) -> Any:
        return self.__getattr__("copy")()

    def __contains__(self, item: Any) -> bool:  # as ndarray: (x == item).any()
        return bool((self == item).__getattr__("any")())

    def __divmod__(self, other: Any) -> Any:
        return self.tracer.record(Opcode.CALL_FUNCTION, "numpy.divmod", (self, other), {}, np.divmod)

    def __rdivmod__(self, other: Any) -> Any:
        return self.tracer.record(Opcode.CALL_FUNCTION, "numpy.divmod", (other, self), {}, np.divmod)

    def __round__(self, ndigits: Any = None) -> Any:
        _live(self)
        if isinstance(self.value, np.ndarray):  # ndarray defines no __round__
            raise TypeError("type numpy.ndarray doesn't define __round__ method")
        rounded = self.tracer.record(Opcode.CALL_FUNCTION, "numpy.round",
                                     (self,) if ndigits is None else (self, ndigits), {}, np.round)
        return rounded if ndigits is not None else self.tracer.gate(rounded, "int")

    # -- NumPy protocols -----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        target = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        if method == "outer" and len(inputs) == 2 and not kwargs and ufunc.nin == 2 and \
                all(isinstance(v, Proxy) or (isinstance(v, (int, float, complex, np.generic)) and
                                             np.asarray(v).dtype.kind in "biufc") for v in inputs):
            # a's axes first, then b's, broadcast (``np.subtract.outer(x, y)``); a Python
            # number an array of its own (strong: ``np.multiply.outer(x32, 2.0)`` is float64)
            a, b = (v if isinstance(v, Proxy) else np.asarray(v)[()] for v in inputs)
            if np.ndim(_plain(a)) and np.ndim(_plain(b)):  # (new axes: any size, generic)
                a = a[(Ellipsis, *(None,) * np.ndim(_plain(b)))]
            return ufunc(a, b)
        if method == "at":
            if ufunc in (np.add, np.subtract, np.maximum, np.minimum) and \
                    isinstance(inputs[0], Proxy) and not kwargs and len(inputs) in (2, 3):
                a = inputs[0]  # an unbuffered accumulation into a: recorded as a pure function
                pure = f"stax.functional.{ufunc.__name__}_at"
                a._update_in_place(target, lambda: self.tracer.record(
                    Opcode.CALL_FUNCTION, pure, inputs, {}, NN_FUNCTIONS[pure]))
                return None
            raise _mutation(target, _IN_PLACE_FORMS)
        if "out" in kwargs:
            return _ufunc_into(self.tracer, ufunc, method, target, inputs, kwargs)
        if isinstance(self.value, np.generic) and len(inputs) == 2 and inputs[1] is self and \
                (by_operator := scalar_operator(ufunc, method, inputs, kwargs)) is not None:
            # ``np.int32(k) + x.max()``: the NumPy scalar's operator (scalar math, its overflow
            # reported), which defers through the ufunc to this value (a probe's find)
            return _apply(self.tracer, by_operator, inputs)
        if ufunc is np.power and method == "__call__":
            note_power_exponent(inputs)
        return self.tracer.record(Opcode.CALL_FUNCTION, target, inputs, kwargs,
                                  getattr(ufunc, method))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        args, kwargs = keyword_out(func, args, kwargs)  # ``np.clip(x, 0, 1, a)``: ``out=a``
        module = func.__module__ or "numpy"
        target = f"{module}.{func.__name__}"
        if target == "numpy.empty_like":  # unspecified contents: zeros, as np.empty (creation.py)
            func, target = np.zeros_like, "numpy.zeros_like"
        if isinstance(args[0] if args else None, Proxy) and \
                in_place_call(target, args, kwargs, _plain):  # np.copyto, np.putmask, ...
            return None
        if kwargs.get("out") is not None and module == "numpy" and func.__name__ in OUT_FUNCTIONS:
            return _into(self.tracer, Opcode.CALL_FUNCTION, target, func, args, kwargs)
        if target in MUTATING_FUNCTIONS:
            raise _mutation(target, _IN_PLACE_FORMS)
        if kwargs.get("out") is not None:
            raise _mutation(target)
        return self.tracer.record(Opcode.CALL_FUNCTION, target, args, kwargs, func)

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        _live(self)
        raise _conversion()

    # -- attributes and methods -----------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if name in Proxy.__slots__:
            object.__setattr__(self, name, value)
            return
        # ``y.shape = (3, 2)``, ``z.imag = ...``: changes the array in place, not recorded
        raise refused(UnsupportedError(f"setting ndarray attribute .{name} of a traced array "
                                       "is not captured yet", source=user_source()))

    def __getattr__(self, name: str) -> Any:
        _live(self)
        if name in STATIC_ATTRIBUTES:
            if name in ("shape", "size") and not library_frame(sys._getframe(1)):
                # the user's code: sizes that follow the shape (traced_sizes.py)
                shape = self.tracer.sizes.shape_of(self)
                return shape if name == "shape" else functools.reduce(operator.mul, shape, 1)
            if name in ("shape", "size", "nbytes"):
                self.tracer.sizes.read_dims(self.node, None)
            return getattr(self.value, name)
        if name == "T":
            return self.tracer.record(Opcode.CALL_FUNCTION, "numpy.transpose", (self,), {},
                                      np.transpose)
        if name in ("real", "imag"):  # the parts of a complex array (of a real one: itself, 0)
            function = np.real if name == "real" else np.imag
            return self.tracer.record(Opcode.CALL_FUNCTION, f"numpy.{name}", (self,), {},
                                      function)
        if name in ("__array_struct__", "__array_interface__"):  # NumPy asks before __array__
            raise _conversion()
        attr = getattr(self.value, name)  # AttributeError as ndarray would raise it
        if not callable(attr):
            raise refused(UnsupportedError(f"reading ndarray attribute .{name} of a traced "
                                           "array", source=user_source()))
        if name == "byteswap":  # a copy unless inplace=True: its bytes reversed, not captured
            def swapped(inplace: bool = False) -> Any:
                if inplace:
                    raise _mutation("method .byteswap(inplace=True)")
                raise refused(UnsupportedError("x.byteswap() (a copy with each element's bytes "
                                               "reversed) is not captured", source=user_source()))
            return swapped
        if name in MUTATING_METHODS:
            raise _mutation(f"method .{name}()")
        if name in ("item", "tolist"):  # reads data into Python: a data gate (table 3.2)
            def read(*args: Any) -> Any:
                if not args:
                    return self.tracer.gate(self, name)
                getattr(self.value, name)(*args)  # eager's own errors ("out of bounds for size")
                key = args[0] if len(args) == 1 else args
                # ``x.item(3)``: the flat index into x in C order; ``x.item((1, 2))``: x[1, 2]
                target = self.reshape(-1)[key] if isinstance(key, (int, np.integer)) and \
                    self.value.ndim != 1 else self[key]
                return self.tracer.gate(target, name)
            return read

        def method(*args: Any, **kwargs: Any) -> Any:
            call = lambda obj, *a, **k: getattr(obj, name)(*a, **k)  # noqa: E731
            if kwargs.get("out") is not None:
                if name not in OUT_FUNCTIONS:
                    raise _mutation(f"method .{name}(..., out=...)")
                return _into(self.tracer, Opcode.CALL_METHOD, name, call, (self, *args), kwargs)
            return self.tracer.record(Opcode.CALL_METHOD, name, (self, *args), kwargs, call)
        return method

    def __len__(self) -> int:
        _live(self)
        self.tracer.sizes.read_dims(self.node, (0,))
        return len(self.value)

    # -- values Python reads from data: data gates (spec §3.4, table 3.2) -----------------------
    def __bool__(self) -> bool:
        return self.tracer.gate(self, "bool")

    def __int__(self) -> int:
        return self.tracer.gate(self, "int")

    def __float__(self) -> float:
        return self.tracer.gate(self, "float")

    def __index__(self) -> int:
        return self.tracer.gate(self, "index")

    def __complex__(self) -> complex:
        raise refused(UnsupportedError("complex() of a traced array", node=self.node.name,
                                       source=user_source()))

    def __iter__(self) -> Any:
        """Iterating an array walks its first axis: a shape read, not a data gate."""
        _live(self)
        if not self.value.ndim:
            raise TypeError("iteration over a 0-d array")
        self.tracer.sizes.read_dims(self.node, (0,))
        return (self[i] for i in range(len(self.value)))

    def __getitem__(self, key: Any) -> Any:
        item = self.tracer.record(Opcode.CALL_FUNCTION, "operator.getitem", (self, key), {},
                                  operator.getitem)
        if isinstance(item.value, np.ndarray) and (
                np.may_share_memory(item.value, self.value) or
                (item.value.size == 0 and _plain_key(key))):  # an empty view shares no memory
            item.view_of = (self, key)
            self.tracer.views.add(item)
        elif _same_shape_mask(key, self):  # x[m]: may be lifted into x[m] = f(x[m])
            self.tracer.masked_reads[item.node] = ((self.node, self.value), key.node)
        return item

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(self.value, np.generic):  # NumPy's own error: scalars are immutable
            raise TypeError(f"'{type(self.value).__module__}.{type(self.value).__name__}' object "
                            "does not support item assignment")
        if _same_shape_mask(key, self) and isinstance(value, Proxy) and np.ndim(value.value):
            lifted = self.tracer.lift_masked(value, key)
            if lifted is not None:  # x[m] = f(x[m]): x = where(m, f(x), x), no count (masked.py)
                self._update_in_place("masked assignment x[m] = f(x[m])",
                                      lambda: np.where(key, lifted, self))
                return
        # ``x[k] op= v`` ends with ``x[k] = t`` where ``t`` is the view ``x[k]`` itself: that view
        # does not make the write visible elsewhere
        own_view = isinstance(value, Proxy) and value.view_of is not None and \
            value.view_of[0] is self
        # a float or complex NumPy scalar into an integer array: NumPy converts it as a scalar
        # (out of range: OverflowError), not as the 0-d array a NumPy step would receive
        as_scalar = {"scalar": True} if isinstance(value, Proxy) and \
            isinstance(value.value, (np.floating, np.complexfloating)) and \
            self.value.dtype.kind in "iub" else {}
        self._update_in_place("item assignment x[...] = ...", lambda: self.tracer.record(
            Opcode.CALL_FUNCTION, "stax.functional.setitem", (self, key, value), as_scalar,
            NN_FUNCTIONS["stax.functional.setitem"]), ignore=(value.value,) if own_view else ())
        if own_view and not same_index_key(value.view_of[1], key):
            # ``x[2:4] = x[:2]``: NumPy reads the value before writing; the value stays a view
            # of x, so from now on it shows the updated x, as the view does in eager NumPy
            value._view_again()

    def _view_again(self) -> None:
        """Stand for ``base[key]`` of the updated ``base`` (``view_of``), as a view does in
        eager NumPy after its base is written."""
        base, key = self.view_of
        again = base[key]
        self.node, self.value = again.node, again.value

    def _update_in_place(self, what: str, compute: Any, ignore: tuple[Any, ...] = ()) -> Proxy:
        """``x op= y`` / ``x[k] = v`` on an array no other value can see (not an argument, not a
        view, nothing viewing it) means the same as rebinding ``x`` to the updated copy: record
        that, and make this proxy stand for it (spec §4.9 functionalization, at capture).
        ``ignore``: values that view ``x`` but are read by this very update (they are read
        before it writes, as NumPy reads overlapping operands)."""
        if self.view_of is not None:
            return self._update_view_in_place(what, compute, ignore)
        # every view, the one written through included: made again in the order taken, a view
        # before the views taken of it (those made from its stale value were wrong: a review)
        views = self.tracer.views.of(self)
        reason = self.tracer.shared(self, (*ignore, *(v.value for v in views)))
        if reason is not None:
            raise _mutation(f"{what} of {reason}")
        dtype = self.value.dtype
        new = compute()
        self._check_same_shape(new)
        if new.value.dtype != dtype:  # in place keeps x's dtype: NumPy casts the result back
            with np.errstate(all="ignore"):  # inside the operation, which reported its own
                new = new.astype(dtype)
        if isinstance(self.value, np.ndarray) and not isinstance(new.value, np.ndarray):
            new = np.copy(new)  # a 0-d array stays one (NumPy computed a scalar into it)
        self.node, self.value = new.node, new.value
        for view in views:  # each shows the new value, as NumPy's views do (live_views.py)
            view._view_again()
        return self

    def _check_same_shape(self, new: Proxy) -> None:
        """An in-place update cannot change the shape (NumPy's own error, raised as eager would)."""
        if new.value.shape != self.value.shape:
            raise ValueError(f"non-broadcastable output operand with shape {self.value.shape} "
                             f"doesn't match the broadcast shape {new.value.shape}")

    def _update_view_in_place(self, what: str, compute: Any, ignore: tuple[Any, ...] = ()
                              ) -> Proxy:
        """``x[k] op= v`` (Python: ``t = x[k]; t op= v; x[k] = t``) when ``t`` is a view: the
        update writes through to ``x``. Record it as ``x = setitem(x, k, t op v)`` and make ``t``
        the view ``x[k]`` of the updated ``x`` again."""
        base, key = self.view_of
        new = compute()
        self._check_same_shape(new)
        base._update_in_place(what, lambda: self.tracer.record(
            Opcode.CALL_FUNCTION, "stax.functional.setitem", (base, key, new), {},
            NN_FUNCTIONS["stax.functional.setitem"]), ignore=(self.value, *ignore))  # replaced
        self._view_again()
        return self


class ScalarProxy(Proxy):
    """Stands in for a NumPy scalar (a reduction's result): hashable as one is, but ``hash()``
    (a dict key, a set member) would key the compiled program by one call's value."""

    __slots__ = ()

    def __hash__(self) -> int:
        _live(self)
        raise refused(UnsupportedError("hash() of a traced NumPy scalar (a dict key or a set "
                                       "member)", node=self.node.name, source=user_source()))


def _ufunc_into(tracer: Tracer, ufunc: np.ufunc, method: str, target: str, inputs: Any,
                kwargs: dict[str, Any]) -> Any:
    """``np.add(x, y, out=z)``: compute out of place, then update ``z`` in place (a rebinding, or
    a write-back when ``z`` is an argument). Returns ``z``, as NumPy does."""
    out = kwargs.pop("out")
    out = out[0] if isinstance(out, tuple) and len(out) == 1 else out
    if not isinstance(out, Proxy) or ufunc.nout != 1:
        raise _mutation(f"{target}(..., out=...)")
    if method in ("reduce", "accumulate") and kwargs.get("dtype") is None:
        kwargs["dtype"] = out.value.dtype  # the loop's dtype is out's (NumPy's rule)
    where = kwargs.pop("where", True)
    if where is not True and method != "__call__":
        raise _mutation(f"{target}(..., out=..., where=...)")
    # eager's own errors (casting, shapes; a NumPy scalar as out) first, its floating-point
    # reports once, from the recorded call
    probe = out.value if isinstance(out.value, np.generic) else np.copy(out.value, order="K")
    concrete = [v.value if isinstance(v, Proxy) else v for v in inputs]
    with np.errstate(all="ignore"):
        getattr(ufunc, method)(*concrete, out=probe, **kwargs,
                               **({} if where is True else {"where": _plain(where)}))

    def compute() -> Any:
        operands = inputs if where is True else _masked_operands(tracer, ufunc, inputs, where)
        new = tracer.record(Opcode.CALL_FUNCTION, target, operands, kwargs, getattr(ufunc, method))
        if where is True:
            if np.shape(new.value) != np.shape(out.value):  # NumPy broadcasts into out
                new = np.broadcast_to(new, np.shape(out.value))
            return new
        # out[where] gets the result, the rest of out is kept
        return tracer.record(Opcode.CALL_FUNCTION, "numpy.where", (where, new.astype(out.value.dtype),
                                                                    out), {}, np.where)
    return out._update_in_place(f"{target}(..., out=...)", compute)


def _masked_operands(tracer: Tracer, ufunc: np.ufunc, inputs: Any, where: Any) -> tuple[Any, ...]:
    """``ufunc(..., where=m)`` computes only where ``m`` holds, and warns only of those lanes
    (``np.divide(a, d, out=o, where=d != 0)``, a safe division): the recorded call computes
    every lane, so the traced operands are 1 elsewhere (0 for arctanh, whose 1 is a division
    by zero), values that raise nothing, their results dropped by the select after."""
    safe = 0 if ufunc is np.arctanh else 1
    return tuple(
        tracer.record(Opcode.CALL_FUNCTION, "numpy.where",
                      (where, v, np.dtype(v.value.dtype).type(safe)), {}, np.where)
        if isinstance(v, Proxy) and isinstance(getattr(v, "value", None), np.ndarray) and
        v.value.dtype.kind in "biuf" else v for v in inputs)


def _into(tracer: Tracer, opcode: Opcode, target: str, func: Any, args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> Any:
    """``func(*args, out=o)`` of ``OUT_FUNCTIONS``: eager's own errors first (casting into
    ``o``, shapes), from a call on copies; then the call without ``out`` recorded and ``o``
    updated with its result (an argument as ``x += y`` updates one). Returns ``o``."""
    out = kwargs["out"]
    out = out[0] if isinstance(out, tuple) and len(out) == 1 else out
    what = f"{target}(..., out=...)"
    if not isinstance(out, Proxy) or not isinstance(out.value, np.ndarray):
        raise _mutation(what)
    rest = {k: v for k, v in kwargs.items() if k != "out"}
    if func.__name__ in ACCUMULATING and rest.get("dtype") is None:
        rest["dtype"] = out.value.dtype  # NumPy accumulates in out's dtype (ufunc.reduce's rule)
    probe = np.copy(out.value, order="K")
    plain = {k: _plain(v) for k, v in rest.items()}
    with np.errstate(all="ignore"):  # the recorded call reports the floating-point events
        func(*(_plain(a) for a in args), **plain, out=probe)
    return out._update_in_place(what, lambda: tracer.record(opcode, target, args, rest, func))


def _same_shape_mask(key: Any, x: Proxy) -> bool:
    return isinstance(key, Proxy) and isinstance(key.value, np.ndarray) and key.value.dtype == \
        np.bool_ and key.value.shape == np.shape(x.value)


def escaped(source: str | None = None) -> UnsupportedError:
    return refused(UnsupportedError(
        "a traced value escaped the compiled function (stored in a global or container) and was "
        "used after its capture", source=source or user_source(3),
        hint="return the value from the function instead of storing it"))


def _conversion() -> UnsupportedError:
    return refused(UnsupportedError(UNTRACED_INDEXED if user_subscript() else  # ``table[idx]``
        "conversion of a traced array to a concrete NumPy array (np.asarray with arguments that "
        "need its data, a C extension, or a NumPy function without __array_function__ support)",
        source=user_source(3)))


def _live(proxy: Proxy) -> None:
    if proxy.tracer.finished:
        raise escaped()


def _text(proxy: Proxy, what: str) -> UnsupportedError:
    _live(proxy)
    return refused(UnsupportedError(
        f"{what} of a traced value", node=proxy.node.name, source=user_source(3),
        hint="a compiled version would not redo it on later calls; compute the text outside the "
             "compiled function"))


def _plain(value: Any) -> Any:  # NumPy's own call's argument at capture, reading no scalar
    return value.value if isinstance(value, Proxy) else plain(value)


#: what the hint of a refused in-place function says compiles instead
_IN_PLACE_FORMS = ("the function runs eagerly; assignments (x[idx] = v, x[m] = v), np.add.at, "
                   "np.subtract.at, np.maximum.at, np.minimum.at, np.copyto, np.putmask, "
                   "np.place, np.fill_diagonal")


def _mutation(what: str, hint: str = "write it out of place (y = x + 1, not x += 1)") -> Any:
    return refused(UnsupportedError(f"in-place update {what} is not captured yet",
                                    source=user_source(3), hint=hint))


#: the capture target of a Python operator applied to NumPy integer scalars, by operator
_SCALAR_TARGETS = {fn: name for name, fn in SCALAR_OPERATORS.items()}
#: Python's own scalars an operator takes as NumPy's scalar math does: as weak operands (NEP 50)
_PYTHON_INTEGERS = (int, bool)


def scalar_math(fn: Any, operands: tuple[Any, ...]) -> bool:
    """Whether eager Python computes ``fn(*operands)`` (an operator of ``SCALAR_OPERATORS``)
    with NumPy's scalar math on integers: its operands' values are NumPy integer scalars (one at
    least; ``np.bool_`` counts as a scalar) and Python ints or bools, no array among them. That
    math reports integer overflow, which NumPy's ufunc loops do not; the recorded operation is
    then NumPy's operator on NumPy scalars (``stax.ir.SCALAR_OPERATORS``). Which of NumPy's
    paths it takes for a pair of scalar types (``np.uint8(1) + np.int8(1)`` defers to the
    ``np.add`` loop, which does not check) NumPy decides again at run time, on the same types."""
    if fn not in _SCALAR_TARGETS:
        return False
    # a size or count read from a shape (``TracedSize``), a scalar argument: their Python value
    values = [o.value if isinstance(o, (Proxy, TracedNumber)) else o for o in operands]
    if fn in (operator.mul, operator.abs) and any(isinstance(v, np.complexfloating)
                                                   for v in values):
        # complex scalar math multiplies without an FMA and takes glibc's hypot, where the
        # array loops (and kernels) do otherwise: NumPy's own operator on the scalars
        return all(isinstance(v, (np.generic, int, float, complex)) for v in values)
    return any(isinstance(v, np.integer) for v in values) and all(
        type(v) in _PYTHON_INTEGERS or isinstance(v, (np.integer, np.bool_)) for v in values)


def _apply(tracer: Tracer, fn: Any, operands: tuple[Any, ...]) -> Any:
    """Record ``fn(*operands)`` for a Python operator: NumPy's scalar operator where eager NumPy
    uses its scalar math (``scalar_math``), else the operator itself (array arithmetic)."""
    if scalar_math(fn, operands):
        target = _SCALAR_TARGETS[fn]
        return tracer.record(Opcode.CALL_FUNCTION, target, operands, {}, NN_FUNCTIONS[target])
    if fn is operator.pow:
        note_power_exponent(operands)
    return tracer.record(Opcode.CALL_FUNCTION, f"operator.{fn.__name__}", operands, {}, fn)


def _binary(fn: Any, reflected: bool) -> Any:
    def forward(self: Proxy, other: Any) -> Any:
        return _apply(self.tracer, fn, (self, other))

    def backward(self: Proxy, other: Any) -> Any:
        return _apply(self.tracer, fn, (other, self))

    return backward if reflected else forward


def _unary(fn: Any) -> Any:
    def apply(self: Proxy) -> Any:
        return _apply(self.tracer, fn, (self,))

    return apply


def _plain_key(key: Any) -> bool:
    """A key of ints, slices, None and Ellipsis: indexing by it gives a view."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(isinstance(k, (int, np.integer, slice, type(None), type(Ellipsis))) and
               not isinstance(k, (bool, np.bool_)) for k in parts)


def _inplace(name: str, fn: Any) -> Any:
    target = f"operator.{fn.__name__}"
    inplace_fn = getattr(operator, f"i{fn.__name__.rstrip('_')}")

    def update(self: Proxy, other: Any) -> Any:
        if isinstance(self.value, np.generic):  # NumPy scalars rebind: x = x op y
            return _apply(self.tracer, fn, (self, other))
        probe = np.copy(self.value, order="K")
        with np.errstate(all="ignore"):  # eager's errors (a scalar stand-in's value, unread)
            inplace_fn(probe, other.value if isinstance(other, Proxy) else plain(other))
        # ``b[1:] += b[:-1]``: the operand is an indexing view of the same array, read before
        # the write (NumPy copies an overlapping operand first); afterwards it is made the view
        # of the updated array again, so a name still holding it sees the update as in eager
        base = self.view_of[0] if self.view_of is not None else self
        same_base = isinstance(other, Proxy) and other.view_of is not None and \
            other.view_of[0] is base
        updated = self._update_in_place(f"operator {name}", lambda: self.tracer.record(
            Opcode.CALL_FUNCTION, target, (self, other), {}, fn),
            ignore=(other.value,) if same_base else ())
        if same_base:
            other._view_again()
        return updated
    return update


_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
           "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
           "pow": operator.pow, "matmul": operator.matmul, "and": operator.and_,
           "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
           "rshift": operator.rshift}
_INPLACE_SYMBOLS = dict(zip(_BINARY, ("+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "&=", "|=",
                                       "^=", "<<=", ">>=")))
for _name, _fn in _BINARY.items():
    setattr(Proxy, f"__{_name}__", _binary(_fn, False))
    setattr(Proxy, f"__r{_name}__", _binary(_fn, True))
    setattr(Proxy, f"__i{_name}__", _inplace(_INPLACE_SYMBOLS[_name], _fn))
for _name, _fn in {"lt": operator.lt, "le": operator.le, "eq": operator.eq, "ne": operator.ne,
                   "gt": operator.gt, "ge": operator.ge}.items():
    setattr(Proxy, f"__{_name}__", _binary(_fn, False))
for _name, _fn in {"neg": operator.neg, "pos": operator.pos, "abs": operator.abs,
                   "invert": operator.invert}.items():
    setattr(Proxy, f"__{_name}__", _unary(_fn))
