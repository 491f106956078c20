"""Python's builtin ``max`` and ``min`` on traced NumPy scalars: selects, not data gates.

``max(out[i - 1], x[i])`` compares its arguments with ``>`` and asks Python for the truth of each
answer: on proxies, a data gate per call (a loop of them is replayed on every call). While capture
runs, ``builtins.max`` and ``builtins.min`` (and the user's globals bound to them by a
from-import) are replaced by wrappers (``creation.intercept``). Called by the user's code
(``calls.py`` tells that call from one made by C code or by NumPy's and Stax's own Python, which
get the builtin unchanged) with two or more positional arguments, or one list, tuple or
generator, and no ``key`` or ``default``, they record Python's own algorithm as selects (in
other threads, outside capture and on Python 3.10, whose frames tell no call apart, they only
call the builtin)::

    best = items[0]
    for item in items[1:]:
        best = where(item > best, item, best)        # min: item < best

An item replaces the best only when it is strictly greater, so this is Python's answer bit for
bit: the first of equal items (``max(0.0, -0.0)`` is ``0.0``, ``max(-0.0, 0.0)`` is ``-0.0``), and
a NaN wins only in first place (``max(nan, 1.0)`` is nan, ``max(1.0, nan)`` is 1.0).

Which items are lifted. Python returns one of its arguments, so the type of its result is the
chosen item's: a fact of the data. The select's result is a NumPy scalar of one dtype, which is
exactly Python's answer when every item is one of:

- a traced NumPy scalar, all of one scalar type (bool, integer or float). Not a 0-d array: Python
  would return that very array, which an in-place update (``m += 1``) then changes;
- a NumPy scalar constant of that same type;
- a Python float, or a weak result of another max/min (``min(max(v, 0.0), 1.0)``), when that
  type is float64 (see below).

Everything else keeps the builtin, whose gates are always right: mixed dtypes; Python ints (they
never overflow, and NEP 50 makes them weak: ``int32_array * 0`` stays int32 where
``np.int64(0)`` makes it int64); bools; Python floats with any other dtype (``max(0.5,
np.float32(v)) * 1e-50`` is float64 arithmetic when 0.5 is chosen, float32 arithmetic otherwise;
and 0.1 is not a float32); arrays with dimensions (NumPy's own truth-value error), and one
traced array argument, which Python iterates as before. (The result is a new object: ``is``
between it and an argument, meaningless for NumPy scalars anyway, is not reproduced.)

Python floats with float64. ``np.float64`` subclasses ``float`` and computes the same IEEE
doubles, but a chosen Python float is still not the same as an ``np.float64``: it is weak in
NumPy's promotion (``max(1.0, s) * x32`` is float32 when 1.0 is chosen, float64 otherwise), and
its own arithmetic raises (``1.0 / 0.0``) where NumPy's reports. So the result is *weak*
(``_Weak``): it stands for either, and each later use is checked (``settle``, from
``Tracer.record``). Uses whose answer is the same either way keep it weak or make an ordinary
traced value:

- a NumPy ufunc with one output and no keywords whose other operands are Python numbers or NumPy
  values of dtype bool, integer, float64 or complex128, or an operator with such a NumPy value:
  NEP 50 promotes a weak Python float with those exactly as it does float64 (float16, float32
  and complex64 keep their own precision with a Python float), and Python's operators on a
  Python float and a NumPy value defer to NumPy. The result is an ordinary traced value;
- ``+``, ``-``, ``*`` with Python numbers (ints exact in a float) and unary ``-``, ``+``,
  ``abs``: the same double either way; the result is weak in turn. (Where NumPy would report a
  floating-point event the compiled kernel reports it too, and the call then runs eagerly.)
  When capture's own example chose the Python float, NumPy's reports are off for that step, as
  Python's float arithmetic gives none;
- an element assignment into a float64 array;
- an item of another max/min (its result is weak in turn, settled with its own choice).

Any other use (another function or operator, an attribute, ``isinstance``, being returned)
first settles what it is: a data gate on the index of the Python float chosen (or -1 for a traced
one). The value is then either an ordinary traced value or, for the rest of capture, that Python
float (``_Pinned``: every operation is made on the float, as eager Python would).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import operator
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from stax.ir import Opcode

from .calls import calls
from .creation import active_tracer, intercept
from .generator_proxy import GeneratorProxy
from .loops import ITEM_ARGUMENT
from .proxy import Proxy, ScalarProxy
from .source import library_frame

if TYPE_CHECKING:
    from .tracer import Tracer

#: Tracer.record goes on with the call (settle's answer when it did not compute it itself)
PROCEED = object()
_COMPARE = {"max": np.greater, "min": np.less}
_BUILTINS = {"max": builtins.max, "min": builtins.min}
_SET_CLASS = object.__dict__["__class__"].__set__  # Proxy's __class__ is a read-only property
_OPERATORS = frozenset(f"operator.{name}" for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor",
    "lshift", "rshift", "lt", "le", "eq", "ne", "gt", "ge", "neg", "pos", "abs", "invert"))
#: Python's float arithmetic that computes NumPy's float64 double, and never raises
_FLOAT_ARITHMETIC = frozenset(f"operator.{name}" for name in ("add", "sub", "mul", "neg", "pos",
                                                              "abs"))
_EXACT_INT = 2 ** 53  # a Python int converts to this double exactly, in Python and in NumPy
_NUMBERS = 2 ** 16  # Python float items of one choice are numbered apart from others'


@dataclass(eq=False)
class _Choice:
    """A lifted max/min that may have chosen a Python float: what settles it."""

    conds: list[Any]  # each item's comparison with the best before it (traced, or a bool)
    # per item: -1 (a NumPy scalar), a number of its own (a Python float), or the choice of a
    # weak item (``min(max(v, 0.0), 1.0)``: the Python float that one chose, if any)
    codes: list[Any]
    example: int  # the code capture's example chose
    members: list[Proxy] = field(default_factory=list)  # the weak values that stand or fall with it
    settled: bool = False
    chosen: Any = None  # the traced code of the chosen item, once made

    def code(self) -> Any:
        """The code of the chosen item: -1 or a Python float's number (traced, or an int)."""
        if self.chosen is None:
            codes = [c.code() if isinstance(c, _Choice) else c for c in self.codes]
            chosen = codes[0]
            for cond, code in zip(self.conds, codes[1:]):
                if isinstance(cond, Proxy):
                    chosen = np.where(cond, code, chosen)
                elif cond:
                    chosen = code
            self.chosen = chosen
        return self.chosen


def _wrapper(name: str, original: Callable[..., Any]) -> Callable[..., Any] | None:
    if original is not _BUILTINS[name]:  # someone's own replacement: theirs, untouched
        return None

    @functools.wraps(original)
    def choose(*args: Any, **kwargs: Any) -> Any:
        tracer = active_tracer()
        if tracer is None or kwargs or not args:
            return original(*args, **kwargs)
        items = args[0] if len(args) == 1 else args
        generator = type(items) is types.GeneratorType
        if not generator and (type(items) not in (tuple, list) or
                              not any(isinstance(v, Proxy) for v in items)):
            return original(*args)
        caller = sys._getframe(1)
        if library_frame(caller) or not calls(caller, choose):  # not the user's own call
            return original(*args)
        if generator:  # consumed once, in order, as the builtin would
            items = tuple(items)
            args = (items,)
        chosen = select(tracer, name, list(items))
        return original(*args) if chosen is None else chosen
    return choose


for _name in ("max", "min"):
    intercept(builtins, _name, functools.partial(_wrapper, _name))


def select(tracer: Tracer, name: str, items: list[Any]) -> Proxy | None:
    """``max(*items)`` (or ``min``) as selects, or None where Python's answer is not a NumPy
    scalar of one type (then the builtin runs, with its gates)."""
    if len(items) < 2 or len(items) >= _NUMBERS:
        return None
    items = [float(v.value) if type(v) is _Pinned else v for v in items]
    traced = [v for v in items if isinstance(v, Proxy)]
    if not traced or any(v.tracer is not tracer for v in traced):
        return None
    scalar = type(traced[0].value)
    if not issubclass(scalar, np.generic) or np.dtype(scalar).kind not in "biuf":
        return None
    numbers = len(tracer.selections) * _NUMBERS  # distinct from every other choice's
    # in a lifted loop's body, a Python int beside int64 values computed from the item (``max(0,
    # i - w + 1)``) is taken as an int64: every use of the result is checked to mean what the
    # Python int would (``stax.runtime.item_uses``), or the loop runs in NumPy
    ints = getattr(tracer, "item_slices", False) and scalar is np.int64 and \
        all(_from_item(v.node) for v in traced)
    codes: list[Any] = []
    for i, item in enumerate(items):
        if type(item) is _Weak:
            codes.append(tracer.selections[item.node])
        elif type(item.value if isinstance(item, Proxy) else item) is scalar:
            codes.append(-1)
        elif type(item) is float and scalar is np.float64:
            codes.append(numbers + i)
        elif ints and type(item) is int and -2 ** 63 <= item < 2 ** 63:
            items[i] = np.int64(item)
            codes.append(-1)
        else:
            return None
    weak = [v for v in traced if type(v) is _Weak]
    for value in weak:  # compared and selected as they are, either way
        _SET_CLASS(value, ScalarProxy)
    try:
        best, conds = _chain(_COMPARE[name], items)
    finally:
        for value in weak:
            _SET_CLASS(value, _Weak)
    if not isinstance(best, Proxy):
        return None
    result = best[()]  # np.where makes a 0-d array; Python's answer is a scalar
    if type(result.value) is not scalar:
        return None
    if all(isinstance(code, int) and code < 0 for code in codes):
        return result
    example = 0
    for i, cond in enumerate(conds, 1):
        if bool(cond.value if isinstance(cond, Proxy) else cond):
            example = i
    code = codes[example]
    choice = _Choice(conds, codes, code.example if isinstance(code, _Choice) else code, [result])
    _SET_CLASS(result, _Weak)
    tracer.selections[result.node] = choice
    return result


def _from_item(node: Any, budget: int = 64) -> bool:
    """Whether ``node`` is computed from a lifted loop's item alone (and constants): the
    values whose every use ``stax.runtime.item_uses`` checks. A carried NumPy scalar is not."""
    todo, seen, found = [node], set(), False
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        budget -= 1
        if budget < 0:
            return False
        if current.op is Opcode.PLACEHOLDER:
            if current.target != ITEM_ARGUMENT:
                return False
            found = True
        todo.extend(current.inputs)
    return found


def _chain(compare: Any, items: list[Any]) -> tuple[Any, list[Any]]:
    """Python's loop: the best so far, replaced by an item that compares strictly better."""
    best, conds = items[0], []
    for item in items[1:]:
        if isinstance(item, Proxy) or isinstance(best, Proxy):
            cond = compare(item, best)  # Python evaluates ``item > best``
            best = np.where(cond, item, best)
        else:  # two constants
            cond = bool(compare(item, best))
            best = item if cond else best
        conds.append(cond)
    return best, conds


def _resolve(tracer: Tracer, choice: _Choice) -> None:
    """A data gate on which Python float was chosen (-1: a traced item): its members become
    ordinary traced values or that float."""
    if choice.settled:
        return
    code = choice.code()
    chosen = tracer.gate(code, "int") if isinstance(code, Proxy) else code
    choice.settled = True
    for member in choice.members:
        _SET_CLASS(member, ScalarProxy if chosen < 0 else _Pinned)


# -- the uses of weak and pinned values ---------------------------------------------------------

def settle(tracer: Tracer, op: Any, target: str | None, args: Any, kwargs: dict[str, Any],
           fn: Callable[..., Any] | None) -> tuple[Any, dict[str, Any], Any]:
    """``Tracer.record(op, target, args, kwargs, fn)`` while weak or pinned values exist:
    ``(args, kwargs, PROCEED)`` to record the call with pinned values replaced by their floats
    (weak ones settled unless the use is the same either way), or ``(.., .., result)`` when the
    call was made here: on Python floats alone (eager Python's own arithmetic), or weak again.
    ``target`` None: a use that is never the same (settled, never computed here)."""
    pinned: list[_Pinned] = []
    args, kwargs = _substitute(args, pinned), _substitute(kwargs, pinned)
    weak: list[_Weak] = []
    _collect((args, kwargs), weak)
    if weak:
        use = _use(tracer, target, args, kwargs, weak) if target is not None else None
        if use == "weak":
            return args, kwargs, _weak_again(tracer, op, target, args, kwargs, fn, weak)
        if use is None:
            for value in weak:
                _resolve(tracer, tracer.selections[value.node])
            args, kwargs = _substitute(args, pinned), _substitute(kwargs, pinned)
    if pinned and fn is not None and not _traced((args, kwargs)):
        with np.errstate(all="ignore"):  # NumPy's reports come from the recorded call below
            value = fn(*args, **kwargs)  # Python floats alone: as eager computes
        if not isinstance(value, (np.ndarray, np.generic)):
            return args, kwargs, value
    return args, kwargs, PROCEED  # NumPy's answer: a constant node


def _use(tracer: Tracer, target: str, args: Any, kwargs: dict[str, Any],
         weak: list[_Weak]) -> str | None:
    """"same": the call gives the same answer for a Python float as for an np.float64 (its result
    is an ordinary value); "weak": the same double, a Python float or an np.float64 in turn;
    None: the value must be settled first."""
    if target == "stax.functional.setitem":
        dest, key, value = args if len(args) == 3 else (None, None, None)
        held: list[_Weak] = []
        _collect((dest, key), held)
        return "same" if type(value) is _Weak and not held and not kwargs and \
            isinstance(dest, Proxy) and isinstance(dest.value, np.ndarray) and \
            dest.value.dtype == np.float64 else None
    ufunc = getattr(np, target[len("numpy."):], None) if target.startswith("numpy.") else None
    if kwargs or type(args) not in (tuple, list) or not (
            target in _OPERATORS or (isinstance(ufunc, np.ufunc) and ufunc.nout == 1)):
        return None
    others = [a for a in args if type(a) is not _Weak]
    numpy_values = [a for a in others if type(a) not in (int, float, bool)]
    if not all(_same_either_way(a) for a in others):
        return None
    if ufunc is not None or numpy_values:
        return "same"
    choices = {id(tracer.selections[w.node]) for w in weak}
    return "weak" if target in _FLOAT_ARITHMETIC and len(choices) == 1 else None


def _same_either_way(value: Any) -> bool:
    """Whether NumPy promotes ``value`` with a weak Python float as with float64 (NEP 50)."""
    if type(value) in (float, bool):
        return True
    if type(value) is int:
        return abs(value) <= _EXACT_INT
    concrete = value.value if isinstance(value, Proxy) else value
    if not isinstance(concrete, (np.ndarray, np.generic)):
        return False
    return concrete.dtype.kind in "biu" or concrete.dtype in (np.float64, np.complex128)


def _weak_again(tracer: Tracer, op: Any, target: str, args: Any, kwargs: dict[str, Any],
                fn: Any, weak: list[_Weak]) -> Proxy:
    """Python's float arithmetic on a weak value: recorded as NumPy's (the same double), and
    weak in turn, settled with it."""
    choice = tracer.selections[weak[0].node]
    for value in weak:
        _SET_CLASS(value, ScalarProxy)
    quiet = np.errstate(all="ignore") if choice.example >= 0 else contextlib.nullcontext()
    try:
        with quiet:  # the example computed Python's float arithmetic: no NumPy reports
            result = tracer.record(op, target, args, kwargs, fn)
    finally:
        for value in weak:
            _SET_CLASS(value, _Weak)
    _SET_CLASS(result, _Weak)
    tracer.selections[result.node] = choice
    choice.members.append(result)
    return result


def _collect(value: Any, found: list[_Weak]) -> None:
    kind = type(value)
    if kind is _Weak:
        found.append(value)
    elif kind in (tuple, list):
        for item in value:
            _collect(item, found)
    elif kind is dict:
        for item in value.values():
            _collect(item, found)
    elif kind is slice:
        _collect((value.start, value.stop, value.step), found)


def _substitute(value: Any, pinned: list[_Pinned]) -> Any:
    """``value`` with every pinned value (listed in ``pinned``) replaced by its Python float."""
    kind = type(value)
    if kind is _Pinned:
        pinned.append(value)
        return float(value.value)
    if kind in (tuple, list):
        return kind(_substitute(v, pinned) for v in value)
    if kind is dict:
        return {k: _substitute(v, pinned) for k, v in value.items()}
    if kind is slice:
        return slice(*_substitute((value.start, value.stop, value.step), pinned))
    return value


def _traced(value: Any) -> bool:
    if isinstance(value, (Proxy, GeneratorProxy)):
        return True
    if type(value) in (tuple, list):
        return any(_traced(v) for v in value)
    if type(value) is dict:
        return any(_traced(v) for v in value.values())
    return type(value) is slice and _traced((value.start, value.stop, value.step))


def settled_result(tracer: Tracer, leaves: list[Any]) -> list[Any]:
    """A function's result leaves: weak values settled, pinned ones their Python floats."""
    return list(settle(tracer, None, None, tuple(leaves), {}, None)[0])


class _Weak(ScalarProxy):
    """A max/min result standing for an np.float64 or a Python float (module docstring)."""

    __slots__ = ()

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        """``isinstance`` in the user's code settles it (Stax's and NumPy's own checks do not)."""
        if not self.tracer.finished and not library_frame(sys._getframe(1)):
            return _resolved(self).__class__
        return type(self.value)

    def __getattr__(self, name: str) -> Any:
        return getattr(_resolved(self), name)


def _resolved(value: _Weak) -> Proxy:
    _resolve(value.tracer, value.tracer.selections[value.node])
    return value


def _settling(name: str) -> Callable[..., Any]:
    def method(self: _Weak, *args: Any) -> Any:
        return getattr(type(_resolved(self)), name)(self, *args)
    return method


class _Pinned(ScalarProxy):
    """A weak value the gate found to be a Python float: that float for the rest of capture
    (recorded calls get the float, ``settle``; Python's own protocols answer from it here)."""

    __slots__ = ()

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return float

    def __getattr__(self, name: str) -> Any:
        return getattr(float(self.value), name)


def _on_float(name: str) -> Callable[..., Any]:
    def method(self: _Pinned, *args: Any) -> Any:
        return getattr(float(self.value), name)(*args)
    return method


# Python's protocols that reach a proxy other than through Tracer.record (operators, ufuncs and
# NumPy functions do, and settle takes them there). A weak value's truth, int() and float() are
# the same either way (data gates on its value, as any traced value's).
for _name in ("__round__", "__divmod__", "__rdivmod__", "__setitem__", "__contains__",
              "__copy__", "__deepcopy__"):
    setattr(_Weak, _name, _settling(_name))
for _name in ("__bool__", "__int__", "__float__", "__round__", "__divmod__", "__rdivmod__",
              "__hash__"):
    setattr(_Pinned, _name, _on_float(_name))
_Pinned.__index__ = lambda self: operator.index(float(self.value))  # type: ignore[method-assign]
_Pinned.__complex__ = lambda self: complex(float(self.value))  # type: ignore[method-assign]
_Pinned.__setitem__ = lambda self, key, value: operator.setitem(  # type: ignore[method-assign]
    float(self.value), key, value)
_Pinned.__contains__ = lambda self, item: operator.contains(  # type: ignore[method-assign]
    float(self.value), item)
_Pinned.__len__ = lambda self: len(float(self.value))  # type: ignore[method-assign]
_Pinned.__iter__ = lambda self: iter(float(self.value))  # type: ignore[method-assign]
_Pinned.__copy__ = lambda self: float(self.value)  # type: ignore[method-assign]
_Pinned.__deepcopy__ = lambda self, memo: float(self.value)  # type: ignore[method-assign]
