"""Capturing NumPy's array-creation functions (``np.zeros(shape)``, ``np.arange(n)``...).

They take no array, so NumPy's dispatch protocols never show them to a proxy, and their result
would look like an array from outside the function (which capture must refuse: it could be a
global that changes). During capture the module attributes are replaced by recorders that call
NumPy as usual and, called from the user's code, record the creation as a node and return a
traced array: ``out = np.zeros((n, m)); out[i, :] = ...`` is then captured like any update of a
local array (spec §4.9), and a value computed from such arrays alone is a constant of the key
(``tracer.py``: Python may read it without a data gate). ``np.empty``'s contents are unspecified,
so it is recorded as ``np.zeros`` (its traced value, and what the compiled version allocates).

Called from NumPy's own Python code (``np.pad`` making its result), a recorder returns the real
array, as C code and NumPy's internals need, and remembers how it was made: when such an array
meets a traced call unchanged, the tracer records the creation then; modified in place first,
capture refuses it. Outside capture, and in other threads, the recorders only call NumPy.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from stax.ir import Opcode, UnsupportedError

from .calls import calls
from .isolation import refused
from .patching import Patches
from .proxy import Proxy
from .source import library_frame, user_source
from .traced_sizes import plain

if TYPE_CHECKING:
    from .tracer import Tracer

CREATION_FUNCTIONS = ("zeros", "ones", "full", "empty", "arange", "linspace", "logspace",
                      "geomspace", "eye", "identity", "tri",
                      # window functions of a length: ``x * np.hanning(len(x))``
                      "hanning", "hamming", "blackman", "bartlett", "kaiser")

@dataclass
class Created:
    """An array a creation function returned during capture, and how to make it again."""

    array: np.ndarray
    target: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    snapshot: np.ndarray
    source: str | None
    node: Any = None

    @property
    def made(self) -> np.ndarray:
        """The array its node makes (``np.array`` of a view's values: a contiguous one)."""
        return self.snapshot if self.target == "numpy.array" else self.array

    def unchanged(self) -> bool:
        return bool(np.array_equal(self.array, self.snapshot, equal_nan=self.array.dtype.kind == "f"))


_active = threading.local()
#: NumPy's own creation functions (as imported, before any capture replaced np.zeros & co.)
_ORIGINALS = {name: getattr(np, name) for name in CREATION_FUNCTIONS}


def active_tracer() -> Tracer | None:
    """The capture this thread's calls of intercepted functions go to (None: call them only)."""
    return getattr(_active, "tracer", None)


def _recorder(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    target = "numpy.zeros" if name == "empty" else f"numpy.{name}"

    @functools.wraps(original)
    def record(*args: Any, **kwargs: Any) -> Any:
        array = original(*plain(args), **plain(kwargs))  # sizes read from shapes as ints
        tracer = getattr(_active, "tracer", None)
        if tracer is None or type(array) is not np.ndarray:
            return array
        if name == "empty":
            array[...] = 0
        caller = sys._getframe(1)
        if not library_frame(caller) and calls(caller, record):  # the user's own call (not C's)
            return tracer.created_array(target, args, kwargs, array, user_source())
        tracer.created[id(array)] = Created(array, target, args, kwargs, array.copy(),
                                            user_source())
        return array
    record.__stax_original__ = original  # type: ignore[attr-defined]
    return record


# -- conversions: np.asarray(x) and its kin on a traced array --------------------------------------
# They take no __array_function__ dispatch, so on a proxy NumPy would ask for its data
# (``__array__``: refused). Yet on an array they are the identity, a cast or a copy, a common
# defensive idiom at the top of a function: answered here from the proxy, as NumPy would.

def _layout_kept(value: np.ndarray, order: Any) -> bool:
    return order in (None, "K", "A") or (order == "C" and value.flags.c_contiguous) or (
        order == "F" and value.flags.f_contiguous)


def _as_array(x: Proxy, dtype: Any = None, order: Any = None, *, device: Any = None,
              copy: Any = None, like: Any = None) -> Any:
    """``np.asarray``/``np.asanyarray``: x itself when nothing changes, else a cast or copy."""
    if device not in (None, "cpu") or like is not None or order not in (None, "K", "A", "C", "F"):
        return NotImplemented
    cast = dtype is not None and np.dtype(dtype) != x.value.dtype
    if copy is False and (cast or not _layout_kept(x.value, order)):
        return NotImplemented  # NumPy's own error for a copy it may not make
    if cast:
        return x.astype(dtype, order=order or "K")
    if copy or not _layout_kept(x.value, order):
        return np.copy(x, order=order or "K")
    return x


def _array(x: Proxy, dtype: Any = None, *, copy: Any = True, order: Any = "K", subok: Any = False,
           ndmin: int = 0, ndmax: int = 0, like: Any = None) -> Any:
    """``np.array``: a copy unless ``copy`` is False or None."""
    if ndmin > x.value.ndim or ndmax:
        return NotImplemented
    return _as_array(x, dtype, order, copy=True if copy is True else copy, like=like)


def _contiguous(order: str) -> Callable[..., Any]:
    def convert(x: Proxy, dtype: Any = None, *, like: Any = None) -> Any:
        """``np.ascontiguousarray`` / ``np.asfortranarray``: a copy only when needed."""
        if x.value.ndim == 0:
            return NotImplemented  # NumPy makes a 1-d array of it
        return _as_array(x, dtype, order, like=like)
    return convert


_CONVERSIONS: dict[str, Callable[..., Any]] = {
    "asarray": _as_array, "asanyarray": _as_array, "array": _array,
    "ascontiguousarray": _contiguous("C"), "asfortranarray": _contiguous("F"),
}


# -- np.array([a, b, c]) of traced values: a stack --------------------------------------------
# NumPy would ask each traced scalar for its data; stacking them (nested lists stacked level by
# level) gives the same array: np.stack promotes its operands as array coercion discovers dtypes.

_FROM_SEQUENCES = ("array", "asarray", "asanyarray")


def _holds_proxy(value: Any) -> bool:
    return any(isinstance(v, Proxy) or (type(v) in (list, tuple) and _holds_proxy(v))
               for v in value)


def _from_sequence(items: Any, dtype: Any = None, *, copy: Any = True, order: Any = "K",
                   subok: Any = False, ndmin: int = 0, like: Any = None, **rest: Any) -> Any:
    if ndmin or like is not None or rest or copy is False or not items:
        return NotImplemented
    rows = [_from_sequence(v) if type(v) in (list, tuple) else v for v in items]
    if any(r is NotImplemented for r in rows):
        return NotImplemented
    if not any(isinstance(r, Proxy) for r in rows):
        return items  # a constant row: a list constant of the stack it is in
    if (dtype is not None and np.dtype(dtype) == object) or _ragged(rows):
        raise refused(UnsupportedError(
            "np.array() of traced values of different shapes, or of dtype object, is not "
            "captured (NumPy makes an object array of them, or raises)", source=user_source(3),
            hint="the function runs eagerly"))
    stacked = np.stack(rows)
    if dtype is None:
        return stacked
    target = np.dtype(dtype)
    if target.kind == "i" and _holds_numpy_scalar(items):
        np.array(_values(items), dtype=target)  # NumPy's error for this call's values, if any
        stacked = _fitting_python_ints(stacked, target)
    return stacked.astype(target)


def _from_scalar_arguments(original: Callable[..., Any], items: Any, dtype: Any = None,
                           **rest: Any) -> Any:
    """``np.array([s, i, r])`` of float scalar arguments (``traced_scalars.TracedScalar``) and
    Python numbers, into a float array: one recorded ``numpy.array`` call, so the scalars stay
    run-time inputs (``stax.ir.scalar_inputs``) instead of being read; NotImplemented for any
    other list (nested, ints among the stand-ins, another dtype, more arguments)."""
    from .traced_scalars import TracedScalar

    stand_ins = [v for v in items if isinstance(v, TracedScalar)]
    if rest or not stand_ins or not all(
            (isinstance(v, TracedScalar) and isinstance(v.value, (float, np.floating))) or
            type(v) in (int, float) for v in items):
        return NotImplemented
    made = np.result_type(*(v.value for v in stand_ins), *(
        v for v in items if type(v) is float)) if dtype is None else np.dtype(dtype)
    if made.kind != "f" or (dtype is None and made != np.float64 and len(stand_ins) < len(items)):
        return NotImplemented
    tracer = stand_ins[0].tracer
    return tracer.record(Opcode.CALL_FUNCTION, "numpy.array", (list(items),),
                         {"dtype": np.dtype(dtype).name} if dtype is not None else {}, original)


def _ragged(rows: list[Any]) -> bool:
    try:
        shapes = {np.shape(r.value if isinstance(r, Proxy) else r) for r in rows}
    except ValueError:  # a ragged constant row
        return True
    return len(shapes) > 1


def _holds_numpy_scalar(items: Any) -> bool:
    """Whether a traced NumPy scalar (not a 0-d array: NumPy casts those) is among ``items``."""
    return any(isinstance(v.value, np.generic) if isinstance(v, Proxy) else
               type(v) in (list, tuple) and _holds_numpy_scalar(v) for v in items)


def _values(items: Any) -> Any:
    return [v.value if isinstance(v, Proxy) else _values(v) if type(v) in (list, tuple) else v
            for v in items]


def _fitting_python_ints(stacked: Proxy, target: np.dtype[Any]) -> Any:
    """``stacked`` on the condition that its values convert to ``target`` as Python ints do:
    ``np.array([s], dtype=int8)`` takes ``int(s)`` of a NumPy scalar ``s`` and raises
    OverflowError (ValueError for NaN) where that does not fit, where a cast would wrap. Calls
    whose values do not fit decline, so NumPy raises its own error."""
    from .declines import DECLINE_IF

    kind, info = stacked.value.dtype.kind, np.iinfo(target)
    if kind == "b" or kind == "c" or np.can_cast(stacked.value.dtype, target, "safe"):
        return stacked  # bools always fit; complex values are cast (ComplexWarning)
    whole = np.trunc(stacked) if kind == "f" else stacked
    high = whole > info.max
    bad = high if kind == "u" else (whole < info.min) | high
    if kind == "f":
        bad = bad | np.isnan(stacked)
    why = f"np.array() of a number outside {target.name}'s range: NumPy raises"
    return stacked.tracer.record(Opcode.CALL_FUNCTION, DECLINE_IF, (stacked, bad), {"why": why},
                                 lambda value, bad, why: np.array(value))


def _converter(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    convert = _CONVERSIONS[name]

    @functools.wraps(original)
    def conversion(*args: Any, **kwargs: Any) -> Any:
        if args and type(args[0]) in (list, tuple) and name in _FROM_SEQUENCES and \
                _holds_proxy(args[0]):
            result = _from_sequence(*args, **kwargs)
            if result is not NotImplemented:
                return result
        if args and type(args[0]) in (list, tuple) and name in _FROM_SEQUENCES:
            result = _from_scalar_arguments(original, *args, **kwargs)
            if result is not NotImplemented:
                return result
        if args and isinstance(args[0], Proxy) and isinstance(args[0].value, np.generic) and \
                name in _FROM_SEQUENCES and kwargs.get("copy", True) is not False:
            # a traced NumPy scalar (``np.asarray(x.sum())``): NumPy's 0-d array of it, a copy
            args = (np.copy(args[0]), *args[1:])
            kwargs = {**kwargs, "copy": None} if name == "array" else kwargs
        if args and isinstance(args[0], Proxy) and type(args[0].value) is np.ndarray:
            try:
                result = convert(*args, **kwargs)
            except TypeError:  # arguments NumPy would refuse: its own error below
                result = NotImplemented
            if result is not NotImplemented:
                return result
        made = original(*args, **kwargs)
        if args and type(args[0]) in _LITERALS and name in _FROM_SEQUENCES:
            _remember_literal(made, sys._getframe(1), conversion)
        return made
    conversion.__stax_original__ = original  # type: ignore[attr-defined]
    return conversion


#: what a literal array is written from: a list or tuple, or one number alone (``np.array(2.0)
#: * x``: a 0-d constant)
_LITERALS = (list, tuple, bool, int, float)
#: literal arrays (``np.array([-1, 1])``) up to this many elements are remade in the program
MAX_LITERAL = 4096


def _remember_literal(array: Any, caller: Any, conversion: Any) -> None:
    """An array the user's code wrote as a literal (``rng.choice(np.array([-1, 1]))``): how to
    make it again, recorded when it meets a traced call unchanged (as arrays NumPy's own code
    makes are), instead of refused there as an array from outside the function."""
    tracer = getattr(_active, "tracer", None)
    if tracer is None or type(array) is not np.ndarray or array.dtype.kind not in "biuf" or \
            array.size > MAX_LITERAL or library_frame(caller) or not calls(caller, conversion):
        return
    tracer.created[id(array)] = Created(array, "numpy.array", (array.tolist(),),
                                        {"dtype": array.dtype.name}, array.copy(), user_source())


def literal_view(created: dict[int, Created], value: np.ndarray, source: str | None
                 ) -> Created | None:
    """A view of an unchanged array the user's code wrote as a literal (``pts[None, :]``,
    ``pts[::-1]``, ``pts.reshape(1, 3)``: refused as an array from outside the function): a
    constant too, made again from its values, and remembered in ``created``."""
    base = value.base
    made = created.get(id(base)) if isinstance(base, np.ndarray) else None
    if made is None or made.array is not base or made.target != "numpy.array" or \
            not made.unchanged() or value.size > MAX_LITERAL:
        return None
    view = created[id(value)] = Created(value, "numpy.array", (value.tolist(),),
                                        {"dtype": value.dtype.name}, value.copy(), source)
    return view


#: other attributes replaced while captures run: (owner, name, wrap), added by ``intercept``
_INTERCEPTED: list[tuple[Any, str, Callable[[Any], Any]]] = []
#: functions a from-import may have bound in the user's globals, by id: (function, wrap)
_BINDABLE: dict[int, tuple[Any, Callable[[Any], Any]]] = {
    id(fn): (fn, functools.partial(_recorder, name)) for name, fn in _ORIGINALS.items()}

_PATCHES = Patches(lambda: [
    *((np, name, functools.partial(_recorder, name)) for name in CREATION_FUNCTIONS),
    *((np, name, functools.partial(_converter, name)) for name in _CONVERSIONS),
    *_INTERCEPTED,
])


def intercept(owner: Any, name: str, wrap: Callable[[Any], Any]) -> None:
    """While captures run, ``owner.name`` is replaced by ``wrap(its value)``, and so is every
    global of the user's code bound to the same function (``from builtins import max``)."""
    _INTERCEPTED.append((owner, name, wrap))
    fn = getattr(owner, name)
    _BINDABLE[id(fn)] = (fn, wrap)


def intercepted(value: Any) -> bool:
    """Whether ``value`` is a function capture intercepts, itself (a from-import's binding)."""
    entry = _BINDABLE.get(id(value))
    return entry is not None and entry[0] is value


@contextmanager
def _routed_to(tracer: Tracer | None) -> Iterator[None]:
    """This thread's creation calls go to ``tracer`` (None: to NumPy only) while the block runs."""
    previous = getattr(_active, "tracer", None)
    _active.tracer = tracer
    try:
        yield
    finally:
        _active.tracer = previous


def not_recording() -> Any:
    """NumPy's own calls while it computes a recorded call's value are not the user's: suspend."""
    return _routed_to(None)


#: NumPy functions answering with a dtype (or scalar type) from their operands' dtypes alone, not
#: their values (NEP 50): ``np.zeros(n, dtype=np.result_type(x, h))`` (a probe's FIR filter ran
#: eagerly, refused as "returned a Float64DType, not an array")
DTYPE_RESULTS = frozenset({"numpy.result_type", "numpy.promote_types", "numpy.common_type"})


#: the hint of a created array updated before it meets a traced value: where the user's code
#: does not update it, a NumPy function made and filled it (a generator's draw of an array,
#: ``default_rng(seed).normal(size=n)``, fills an ``np.empty`` it made: a probe's find)
MADE_AND_FILLED = ("write the update after the array meets a traced value; where your code does "
                   "not update it, a NumPy function made it and filled it in place (a draw of "
                   "an array from a generator made inside the function: pass the generator as "
                   "an argument)")


@contextmanager
def recording_creation(tracer: Tracer, bindings: list[tuple[dict[str, Any], str]] = ()
                       ) -> Iterator[None]:
    """Route this thread's ``np.<creation>`` calls (and those of every ``intercept``ed function)
    to ``tracer`` while the block runs; also the calls through ``bindings``, globals of the
    user's code bound to them by a from-import."""
    with _PATCHES.applied(), _user_bindings(bindings), _routed_to(tracer):
        yield


_bound_lock = threading.Lock()
_bound: dict[tuple[int, str], list[Any]] = {}  # -> [captures, original, wrapper, globals]


@contextmanager
def _user_bindings(bindings: list[tuple[dict[str, Any], str]]) -> Iterator[None]:
    """``from numpy import zeros`` bound NumPy's function before any capture: the name in the
    user's module is replaced by its wrapper while captures that reach it run (counted, so
    concurrent captures share one), then put back unless someone rebound it meanwhile."""
    keys = []
    with _bound_lock:
        for scope, name in bindings:
            key = (id(scope), name)
            entry = _bound.get(key)
            if entry is None:
                original = scope.get(name)
                wrapper = _BINDABLE[id(original)][1](original) if intercepted(original) else None
                if wrapper is None:
                    continue
                entry = _bound[key] = [0, original, wrapper, scope]
                scope[name] = entry[2]
            entry[0] += 1
            keys.append((key, name))
    try:
        yield
    finally:
        with _bound_lock:
            for key, name in keys:
                entry = _bound[key]
                entry[0] -= 1
                if entry[0] == 0:
                    del _bound[key]
                    scope = entry[3]
                    if scope.get(name) is entry[2]:
                        scope[name] = entry[1]


#: a returned array that capture did not trace (``np.array([np.cos(t), ...])`` of a scalar
#: argument ``t``) follows from the key; up to this many elements it is rebuilt on every call
MAX_CONSTANT_RESULT = 64


def constant_result(tracer: Tracer, value: np.ndarray) -> Proxy:
    """A fresh copy on every call (eager returns a new array each time, which the caller may
    change), recorded as ``np.array(<its elements>, dtype)``. Not of a subclass: a masked
    array's mask, a matrix's class would be lost."""
    if type(value) is not np.ndarray:
        raise UnsupportedError(f"the function returns an array of ndarray subclass "
                               f"{type(value).__name__} that it did not compute from its traced "
                               "arrays: its own semantics (a mask, a class) would be lost",
                               hint="return a plain numpy.ndarray")
    if value.size > MAX_CONSTANT_RESULT or value.dtype.kind not in "biuf" or value.ndim > 2:
        if tracer.gates:  # built in Python from numbers read from the data (``out.append(i)``)
            raise UnsupportedError(
                f"the function returns an array it built in Python from numbers it read from "
                f"the data ({len(tracer.gates)} data gates, the first at "
                f"{tracer.gates[0].source or 'an unknown line'})",
                hint="build it from whole arrays (np.nonzero(mask)[0], x[mask], np.where)")
        raise UnsupportedError("the function returns an array that does not depend on its "
                               "array arguments", hint="compute it outside the function")
    return tracer.created_array("numpy.array", (value.tolist(),), {"dtype": value.dtype.name},
                                np.array(value), None)
