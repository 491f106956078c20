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

import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stax.ir.scalar_inputs import value_kind  # noqa: F401 (which arguments are traced so)

from .traced_sizes import TracedNumber, TracedSize, traced_array

if TYPE_CHECKING:
    from .tracer import Tracer


class TracedScalar(TracedNumber):
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
        """The value, the argument marked read (its value stays part of the key)."""
        self.tracer.scalar_read.add(self.leaf)
        return self.value


    def __getattr__(self, name: str) -> Any:  # k.is_integer(), k.real: the value's own
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.read(), name)


def _scalar_binary(fn: Callable[[Any, Any], Any], swap: bool = False) -> Callable[..., Any]:
    def method(self: TracedScalar, other: Any) -> Any:
        if traced_array(other):
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
