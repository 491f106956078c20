"""The specialization key's input signature sigma (spec definition 2.2), static mode.

``signature(args, kwargs)`` is a nested tuple ``(positional, keywords)`` whose structure is the
path structure guards report (``inputs[0][0][2][0]``: positional part, first argument, shape item,
dimension 0). Every leaf is described by *value* wherever the trace could have read its value, so
that two calls with the same signature trace the same program (proposition 2.1):

- an array: ``("ndarray", device, shape, dtype, strides)`` — strides in bytes, as numbers, because
  kernels are written for the traced layout (§2.2); the dynamic-mode expression form replaces this
  item when dynamic shapes land. The device is ``"cpu"`` for a NumPy array and names the library
  and device of a torch tensor or CuPy array (``"torch:cuda:0"``, ``"cupy:cuda:0"``,
  ``devices.device_key``), so a CPU and a CUDA version of one function never share a key;
- None, bool, int, str, bytes: ``(type, value)``; float: ``("float", float.hex(x))`` so that -0.0
  and 0.0 differ and a NaN matches itself; complex likewise per part; a NumPy scalar:
  ``(type, dtype, bytes)``; a dtype, a slice, Ellipsis: by value;
- a tuple, list or dict: ``(type, elements)`` with a dict's elements as ``(key, signature)`` pairs;
- an instance of a Python class (a config object, say): ``("object", class, state, class
  state)``, its state the signatures of its attributes (``__dict__`` and ``__slots__``),
  recursively, and its class's the signatures of what the class and its Python bases define
  (class attributes; methods and properties as the functions they run, with the globals those
  read): a method of an argument reading a global is keyed like the function's own code;
- a ``collections.deque`` by its items; an ``array.array`` or ``memoryview`` by its bytes (up to
  ``SMALL_ARRAY_BYTES``); an iterator is never keyed (each call advances it: ``Unguardable``);
- a ``functools.partial``, a bound method: their parts; a Python function: its identity together
  with the values it reads (defaults, closure cells, the globals its code names);
- classes, modules, NumPy and builtin callables, and objects with no visible state: their identity,
  held by a strong reference so that the address can never be reused by another object while a key
  holds it (an ``id()`` alone could name a new object at a reused address).

What cannot be described within ``MAX_VALUES`` values (a huge list, a large array inside an object)
raises :class:`Unguardable`: the call then runs eagerly, saying why.
"""

from __future__ import annotations

import array
import collections
import collections.abc
import enum
import functools
import inspect
import struct
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from stax.ir import tree_leaves
from stax.ir.pytree import is_namedtuple

from . import devices
from .code_reads import attribute_names, held_attributes, method_names, own_module, reads, user_holder
from .object_arrays import LiftedAttributes, hidden

ARRAY = "ndarray"
MAX_VALUES = 256  # values described per argument or free value before it is Unguardable
SMALL_ARRAY_BYTES = 4096  # an array inside an object is keyed by its bytes up to this size
CLASS_VALUES = 128  # values describing an argument object's class before it is keyed by identity
_BY_VALUE = (int, bool, str, bytes, type(None))

class Unguardable(Exception):
    """A value whose state Stax cannot put in a key within ``MAX_VALUES`` values."""


class HeldDeviceArray(Unguardable):
    """An argument object (not a tuple, list or dict) holds a device array: ``library`` is its
    array library's name ("torch", "cupy")."""

    def __init__(self, message: str, library: str) -> None:
        super().__init__(message)
        self.library = library


class Identity:
    """An object keyed by identity. The key holds it (a strong reference), so its address cannot
    be reused by another object while any version's key names it."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return type(other) is Identity and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __repr__(self) -> str:
        name = getattr(self.obj, "__qualname__", None) or type(self.obj).__qualname__
        module = getattr(self.obj, "__module__", None) or type(self.obj).__module__
        return f"<{module}.{name} at {id(self.obj):#x}>"


def leaf_signature(x: Any, names: frozenset[str] = frozenset(),
                   skip: dict[int, frozenset[str]] | None = None) -> Any:
    """The signature of one argument leaf (see the module docstring); raises Unguardable.
    ``names``: the attribute names the function's code loads (``Describer``)."""
    t = type(x)
    if t is np.ndarray:
        return (ARRAY, "cpu", x.shape, x.dtype, x.strides)
    if t is float:
        return ("float", float_key(x))
    if t in _BY_VALUE:
        return (t.__name__, x)
    if t in (tuple, list):
        return (t.__name__, tuple(leaf_signature(v, names) for v in x))
    if t is dict:  # keys by type and value: 1, True and 1.0, or 0.0 and -0.0, are equal keys
        keys = Describer(names)
        return ("dict", tuple((keys.describe(k), leaf_signature(v, names)) for k, v in x.items()))
    if is_namedtuple(x):  # a tree node (``stax.ir.pytree``)
        return ("namedtuple", Identity(t), tuple(leaf_signature(v, names) for v in x))
    if isinstance(x, np.generic):
        return (t.__name__, x.dtype.str, x.tobytes())
    if t is np.random.Generator:  # traced as an input: only the kind of its bit generator matters
        return ("numpy.random.Generator", type(x.bit_generator).__qualname__)
    on_device = devices.layout(x)  # a torch tensor or CuPy array
    if on_device is not None:
        return (ARRAY, *on_device)
    if t is LiftedAttributes:
        return ("lifted attributes", x.paths)
    if isinstance(x, np.ndarray):
        # a subclass (np.memmap, a masked array) runs eagerly (capture refuses it): keyed by
        # its class and layout, not its attributes; keyed by those, every np.memmap of a
        # file was a new key (its ``_mmap``), one eager version each until the limit
        return ("ndarray subclass", Identity(t), x.shape, x.dtype, x.strides)
    return Describer(names, skip or {}).describe(x)


class Describer:
    """Describes any Python value by the state a trace could read from it, within a budget.

    ``names``: the attribute names the code being keyed loads (``code_reads.attribute_names``).
    A user module or class reached through a value (held by an object, in a list, an argument)
    is described by its identity and the values of those of its attributes (``H.mod.scale``,
    ``m.scale`` for a module argument ``m``); a function's own names join while it is
    described."""

    def __init__(self, names: frozenset[str] = frozenset(),
                 skip: dict[int, frozenset[str]] | None = None) -> None:
        #: ``id`` of an argument object -> its attributes lifted as arrays (not described here)
        self.skip = skip or {}
        self.budget = MAX_VALUES
        self.active: set[int] = set()  # objects being described (a cycle is keyed by identity)
        self.names = names

    def describe(self, x: Any) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise Unguardable(f"it holds more than {MAX_VALUES} values")
        t = type(x)
        if t is float:
            return ("float", float_key(x))
        if t in _BY_VALUE:
            return (t.__name__, x)
        if t is complex:
            return ("complex", float_key(x.real), float_key(x.imag))
        if isinstance(x, np.generic):
            return (t.__name__, x.dtype.str, x.tobytes())
        if t is np.dtype or isinstance(x, np.dtype):
            return ("dtype", x)
        if x is Ellipsis or x is NotImplemented:
            return (repr(x),)
        if id(x) in self.active:
            return ("cycle", Identity(x))
        self.active.add(id(x))
        try:
            return self._compound(x, t)
        finally:
            self.active.discard(id(x))

    def _compound(self, x: Any, t: type) -> Any:
        d = self.describe
        if t in (tuple, list, set, frozenset, bytearray, collections.deque):
            # a set in its iteration order, which a loop over it follows ({1, 9} and {9, 1} are
            # equal sets iterated in different orders)
            return (t.__name__, tuple(d(v) for v in x))
        if t in (array.array, memoryview):  # C containers with no attributes: their contents
            data = x.tobytes()
            if len(data) > SMALL_ARRAY_BYTES:
                raise Unguardable(f"it holds a {t.__name__} of {len(data)} bytes, more than "
                                  f"Stax keys by value ({SMALL_ARRAY_BYTES})")
            return (t.__name__, x.typecode if t is array.array else x.format, data)
        if isinstance(x, collections.abc.Iterator):  # its next value differs on every call
            raise Unguardable(f"it is an iterator ({t.__qualname__}), whose state a call changes")
        if t is dict:
            return ("dict", tuple((d(k), d(v)) for k, v in x.items()))
        if t is slice:
            return ("slice", d(x.start), d(x.stop), d(x.step))
        if t is np.ndarray:
            layout = (ARRAY, "cpu", x.shape, x.dtype, x.strides)
            if x.nbytes > SMALL_ARRAY_BYTES or x.dtype.hasobject:
                raise Unguardable(f"it holds an array of {x.nbytes} bytes, more than Stax keys by "
                                  f"value ({SMALL_ARRAY_BYTES})")
            return (*layout, np.ascontiguousarray(x).tobytes())
        if isinstance(x, (type, types.ModuleType)) and user_holder(x):
            held = tuple((a, d(getattr(x, a))) for a in held_attributes(x, self.names))
            if held:
                return ("holder", Identity(x), held)
        if isinstance(x, (type, types.ModuleType, enum.Enum)) or t in CALLABLE_TYPES:
            return ("identity", Identity(x))
        library = devices.library_of(x)
        if library is not None:
            raise HeldDeviceArray(f"it holds a {type(x).__module__}.{t.__qualname__}, a device "
                                  "array Stax keys only as an argument", library.name)
        if isinstance(x, types.FunctionType):
            return self._function(x)
        if isinstance(x, types.MethodType):
            return ("method", d(x.__func__), d(x.__self__))
        if isinstance(x, functools.partial):
            return ("partial", d(x.func), d(x.args), d(x.keywords))
        keyed = getattr(t, "__stax_key__", None)  # a compiled function: what it compiles
        if keyed is not None:
            return ("keyed", Identity(x), d(keyed(x)))
        return self._instance(x, t)

    def _function(self, fn: types.FunctionType) -> Any:
        """A Python function: itself, and every value it reads that is not an argument."""
        if own_module(fn.__module__):
            return ("identity", Identity(fn))
        d = self.describe
        names, self.names = self.names, self.names | attribute_names(fn.__code__)
        try:
            # its code too: one swapped in place (IPython's autoreload) is another function
            return ("function", Identity(fn), Identity(fn.__code__),
                    tuple((path, d(read())) for path, read in reads(fn)))
        finally:
            self.names = names

    def _instance(self, x: Any, t: type) -> Any:
        """An instance: its class and the values of its attributes, builtin base values included
        (a named tuple's fields, an int subclass's value)."""
        d = self.describe
        base, slots = layout_of(t)
        state: list[Any] = []
        # the names its methods load too: ``self.module`` read by a method as
        # ``getattr(self.module, "factor")`` is a holder of ``factor``
        names, self.names = self.names, method_names(t, self.names)
        try:
            if base is not None:
                state.append(d(base(x)))
            attrs = getattr(x, "__dict__", None)
            if type(attrs) is dict:
                lifted = self.skip.get(id(x), ())
                state.append(tuple((k, d(v) if k not in lifted else ("lifted",))
                                   for k, v in attrs.items()))
            if slots:
                state.append(tuple((s, d(getattr(x, s, _MISSING))) for s in slots))
            if not state:  # no visible state (a C object): its identity
                return ("identity", Identity(x))
            return ("object", Identity(t), tuple(state), self._class(t))
        finally:
            self.names = names

    def _class(self, t: type) -> Any:
        """What a user class gives its instances (a method's globals, a class attribute, a
        property): the values of its own attributes, through its Python bases; classes of
        NumPy, Stax and the standard library by identity (``own_module``). A class too rich to
        describe within what is left of the budget (``CLASS_VALUES`` at most) is keyed by its
        identity, as before classes were described: its instances' calls still compile."""
        d = self.describe
        budget = self.budget
        allowed = self.budget = min(budget, CLASS_VALUES)
        state = []
        try:
            for c in t.__mro__:
                if c is object or own_module(c.__module__):
                    continue
                state.append((Identity(c), tuple((k, d(_unwrapped(v)))
                                                 for k, v in vars(c).items() if class_state(k))))
        except Unguardable as exc:
            if isinstance(exc, HeldDeviceArray):
                raise
            self.budget = budget - 1
            return ("class", Identity(t))
        self.budget = budget - (allowed - self.budget)
        return tuple(state)


#: the special methods a traced function runs through an instance's attribute, item or
#: number protocols; other dunder entries (``__dict__``, ``__module__``...) are not read state
_PROTOCOLS = frozenset({"__getattr__", "__getattribute__", "__getitem__", "__call__", "__len__",
                        "__iter__", "__float__", "__int__", "__index__", "__bool__", "__array__",
                        "__array_ufunc__", "__array_function__", "__mul__", "__rmul__",
                        "__add__", "__radd__", "__sub__", "__rsub__", "__truediv__",
                        "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__", "__pow__",
                        "__rpow__", "__pos__", "__abs__", "__invert__", "__floordiv__",
                        "__rfloordiv__", "__mod__", "__rmod__", "__divmod__", "__and__",
                        "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__lshift__",
                        "__rshift__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                        "__ipow__", "__imatmul__", "__lt__", "__le__", "__gt__", "__ge__",
                        "__eq__", "__ne__", "__contains__", "__round__", "__complex__",
                        "__reversed__", "__next__", "__get__", "__set__", "__enter__",
                        "__exit__"})


def class_state(name: str) -> bool:
    return not (name.startswith("__") and name.endswith("__")) or name in _PROTOCOLS


def _unwrapped(value: Any) -> Any:
    """A class attribute as the code it runs: a property's accessors, a static or class
    method's function."""
    if isinstance(value, property):
        return (value.fget, value.fset, value.fdel)
    if isinstance(value, (staticmethod, classmethod)):
        return value.__func__
    return value


_LAYOUTS: dict[type, tuple[type | None, tuple[str, ...]]] = {}


def layout_of(t: type) -> tuple[type | None, tuple[str, ...]]:
    """Where a class keeps its instances' state: a builtin base's value, and its slots."""
    layout = _LAYOUTS.get(t)
    if layout is None:
        base = next((b for b in (tuple, list, dict, int, float, str, bytes, complex)
                     if issubclass(t, b)), None)
        slots = tuple(s for c in t.__mro__ for s in ([c.__dict__["__slots__"]] if isinstance(
            c.__dict__.get("__slots__"), str) else c.__dict__.get("__slots__", ()))
                      if s not in ("__dict__", "__weakref__"))
        layout = _LAYOUTS[t] = (base, slots)
    return layout


_MISSING = ("missing",)
#: leaves one object of which in two places says nothing the key does not (``aliased``)
_SHARED = (type(None), bool, str, bytes, type, types.ModuleType, types.FunctionType,
           types.BuiltinFunctionType, np.ufunc, np.dtype, enum.Enum)
CALLABLE_TYPES = (types.BuiltinFunctionType, types.BuiltinMethodType, np.ufunc,
                   types.WrapperDescriptorType, types.MethodWrapperType, types.MethodDescriptorType,
                   types.ClassMethodDescriptorType, types.GetSetDescriptorType,
                   types.MemberDescriptorType, types.CodeType)


def holds_identity(description: Any) -> bool:
    """Whether a signature keys some object by identity (such a key means nothing in another
    process: a capture under it is not stored on disk)."""
    if isinstance(description, Identity):
        return True
    if isinstance(description, tuple):
        return any(holds_identity(d) for d in description)
    return False


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _MISSING


def float_key(x: float) -> str:
    """A float by its exact value: -0.0 and 0.0 differ, and a NaN by its bits (sign and payload
    reach the result through np.maximum, copysign...), where ``float.hex`` says 'nan' for all."""
    if x != x:
        return f"nan:{struct.unpack('<Q', struct.pack('<d', x))[0]:016x}"
    return x.hex()


def _show_float(key: str) -> str:
    if key.startswith("nan:"):
        return f"nan (bits 0x{key[4:]})"
    return repr(float.fromhex(key))


def signature(args: tuple[Any, ...], kwargs: dict[str, Any],
              names: frozenset[str] = frozenset()) -> tuple[Any, Any]:
    """``names``: the attribute names the function's code loads (``Describer``). After a
    ``LiftedAttributes`` leaf come the lifted arrays, then the arguments whose objects they
    are attributes of: those objects are described without them (``object_arrays.py``)."""
    skip: dict[int, frozenset[str]] = {}
    for k, a in enumerate(args):
        if type(a) is LiftedAttributes:
            skip = hidden(a, args[k + a.leaves:])
            break
    return (tuple(leaf_signature(a, names, skip) for a in args),
            tuple((k, leaf_signature(v, names, skip)) for k, v in kwargs.items()))


def array_signature(args: tuple[Any, ...]) -> Any:
    """Dispatch level 2's fingerprint for the common call ``f(array, array, ...)``: the arrays'
    layouts only; None when an argument is not a plain array."""
    keys = []
    for a in args:
        if type(a) is np.ndarray:
            keys.append((a.shape, a.strides, a.dtype))
            continue
        key = devices.layout_key(a)  # a torch tensor or CuPy array: with its device
        if key is None:
            return None
        keys.append(key)
    return tuple(keys)


@dataclass(frozen=True)
class GuardFailure:
    """One guard that does not hold: ``path`` should equal ``expected`` but is ``actual``."""

    path: str
    expected: Any
    actual: Any

    @property
    def condition(self) -> str:
        return f"{self.path} == {_show(self.expected)}"

    def __str__(self) -> str:
        return f"{self.condition} (got {_show(self.actual)})"


def diff_state(expected: Any, actual: Any, path: str) -> list[GuardFailure]:
    """An object's attributes that differ, each as ``path.attribute``."""
    e_attrs, a_attrs = dict(_attributes(expected)), dict(_attributes(actual))
    if e_attrs.keys() != a_attrs.keys() or len(expected) != len(actual) or any(
            not _is_attributes(e) and e != a for e, a in zip(expected, actual)):
        return [GuardFailure(path, ("object", expected), ("object", actual))]
    out: list[GuardFailure] = []
    for name, e in e_attrs.items():
        a = a_attrs[name]
        if e == a:
            continue
        out += diff_description(e, a, f"{path}.{name}")
    return out


def _diff_class(expected: Any, actual: Any, path: str) -> list[GuardFailure]:
    """The class attributes that differ between two descriptions of an object's class (each
    class of its MRO's attributes by name: ``type(inputs[0][1]).scale``)."""
    if expected == actual:
        return []
    if not (isinstance(expected, tuple) and isinstance(actual, tuple)) or \
            len(expected) != len(actual) or \
            any(not isinstance(e, tuple) or len(e) != 2 for e in (*expected, *actual)) or \
            [e[0] for e in expected] != [a[0] for a in actual]:
        return [GuardFailure(path, expected, actual)]  # other classes, or keyed by identity
    out: list[GuardFailure] = []
    for (_, e_items), (_, a_items) in zip(expected, actual):
        e_attrs, a_attrs = dict(e_items), dict(a_items)
        for name in dict.fromkeys([*e_attrs, *a_attrs]):
            if name not in e_attrs or name not in a_attrs:
                out.append(GuardFailure(f"{path}.{name}", e_attrs.get(name, _MISSING),
                                        a_attrs.get(name, _MISSING)))
            else:
                out += diff_description(e_attrs[name], a_attrs[name], f"{path}.{name}")
    return out


def diff_description(expected: Any, actual: Any, path: str) -> list[GuardFailure]:
    """The failing guards between two descriptions of a value, as deep as both have one shape:
    ``cfg.scale``, ``globals['helper'].globals['K']`` rather than two whole descriptions."""
    if expected == actual:
        return []
    same_kind = isinstance(expected, tuple) and isinstance(actual, tuple) and expected and \
        actual and expected[0] == actual[0]
    if same_kind and expected[0] == "object" and expected[1] == actual[1]:
        return diff_state(expected[2], actual[2], path) + _diff_class(
            expected[3], actual[3], f"type({path})")
    if same_kind and expected[0] == "function" and expected[1:3] == actual[1:3]:
        # (the function, its code, then the values it reads by path: ``f.globals['K']``)
        e_reads, a_reads = dict(expected[3]), dict(actual[3])
        if e_reads.keys() != a_reads.keys():
            return [GuardFailure(f"{path}.reads", expected[3], actual[3])]
        out: list[GuardFailure] = []
        for name, e in e_reads.items():
            out += diff_description(e, a_reads[name], f"{path}.{name}")
        return out
    return [GuardFailure(path, expected, actual)]


def _is_attributes(part: Any) -> bool:
    return isinstance(part, tuple) and all(isinstance(p, tuple) and len(p) == 2 and
                                           isinstance(p[0], str) for p in part)


def _attributes(state: Any) -> list[tuple[str, Any]]:
    return [item for part in state if _is_attributes(part) for item in part]


def _show(value: Any) -> str:
    if isinstance(value, np.dtype):
        return str(value) if value.isnative else value.str
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "float":
        return _show_float(value[1])
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) \
            and value[0] in ("int", "bool", "str", "NoneType", "bytes"):
        return repr(value[1])
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "identity":
        return repr(value[1])
    if isinstance(value, tuple) and len(value) == 3 and value[0] == "complex":
        return f"complex({_show_float(value[1])}, {_show_float(value[2])})"
    dtype = numpy_scalar_dtype(value)  # a NumPy scalar: np.int64(99), not its bytes
    if dtype is not None and dtype.kind in "biufc":
        return repr(np.frombuffer(value[2], dtype)[0])
    return repr(value)


def numpy_scalar_dtype(leaf: Any) -> np.dtype | None:
    """The dtype of a key leaf that describes a NumPy scalar (``(type name, dtype, bytes)``),
    else None: a ``memoryview`` or ``array.array`` leaf has that form too, with a format that
    may be no dtype (``T{d:a:}``) or another type's (``'i'``)."""
    if not (isinstance(leaf, tuple) and len(leaf) == 3 and isinstance(leaf[1], str) and
            isinstance(leaf[2], bytes)):
        return None
    try:
        dtype = np.dtype(leaf[1])
    except (TypeError, ValueError):
        return None
    return dtype if dtype.type.__name__ == leaf[0] else None


def diff_signature(expected: Any, actual: Any, path: str = "inputs") -> list[GuardFailure]:
    """The guards (projections of sigma, definition 2.3) that fail for ``actual``.

    Empty exactly when the signatures are equal; otherwise every differing component, each with its
    path in the signature, so a miss always explains itself (corollary 2.1).
    """
    (exp_pos, exp_kw), (act_pos, act_kw) = expected, actual
    out = _diff_sequence(exp_pos, act_pos, f"{path}[0]")
    exp_names, act_names = tuple(k for k, _ in exp_kw), tuple(k for k, _ in act_kw)
    if exp_names != act_names:
        return [*out, GuardFailure(f"keys({path}[1])", exp_names, act_names)]
    for i, ((_, e), (_, a)) in enumerate(zip(exp_kw, act_kw)):
        out += _diff_leaf(e, a, f"{path}[1][{i}][1]")
    return out


def _diff_sequence(expected: tuple[Any, ...], actual: tuple[Any, ...], path: str
                   ) -> list[GuardFailure]:
    if len(expected) != len(actual):
        return [GuardFailure(f"len({path})", len(expected), len(actual))]
    out: list[GuardFailure] = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        out += _diff_leaf(e, a, f"{path}[{i}]")
    return out


def _diff_leaf(expected: Any, actual: Any, path: str) -> list[GuardFailure]:
    if expected == actual:
        return []
    if expected[0] != actual[0]:
        return [GuardFailure(f"{path}[0]", expected[0], actual[0])]
    kind = expected[0]
    if kind == ARRAY:
        out = [GuardFailure(f"{path}[{i}]", expected[i], actual[i]) for i in (1, 3)
               if expected[i] != actual[i]]
        for item in (2, 4):  # shape, strides: per dimension, as in ``inputs[0][0][2][0] == 4``
            e, a = expected[item], actual[item]
            if len(e) != len(a):
                out.append(GuardFailure(f"len({path}[{item}])", len(e), len(a)))
            else:
                out += [GuardFailure(f"{path}[{item}][{d}]", x, y)
                        for d, (x, y) in enumerate(zip(e, a)) if x != y]
        return out
    if kind in ("tuple", "list"):
        return _diff_sequence(expected[1], actual[1], f"{path}[1]")
    if kind == "object" and expected[1] == actual[1]:
        return diff_description(expected, actual, path)
    if kind == "dict":
        e_keys, a_keys = tuple(k for k, _ in expected[1]), tuple(k for k, _ in actual[1])
        if e_keys != a_keys:
            return [GuardFailure(f"keys({path}[1])", e_keys, a_keys)]
        out = []
        for i, ((_, e), (_, a)) in enumerate(zip(expected[1], actual[1])):
            out += _diff_leaf(e, a, f"{path}[1][{i}][1]")
        return out
    return [GuardFailure(path, expected, actual)]


def check_arguments(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The TypeError calling ``fn`` with these arguments raises, without calling it."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: the call itself checks
        return
    try:
        sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{getattr(fn, '__qualname__', fn)}(): {exc}") from None


#: why such a call runs eagerly
ALIASED = "two of its arguments are one object, and the function compares identities (is)"


def aliased(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether two of a call's leaves that are arrays, scalars or objects are one object
    (``f(x, x)``, ``f(cfg, cfg)``): a function comparing identities
    (``code_reads.compares_identity``) decides from it; the key describes each by value."""
    seen: set[int] = set()
    for leaf in tree_leaves((args, kwargs)):
        if not isinstance(leaf, _SHARED):
            if id(leaf) in seen:
                return True
            seen.add(id(leaf))
    return False
