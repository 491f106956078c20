"""Symbolic sizes: a dynamic dimension as an expression of size symbols (issue 15, spec §2.2, §10).

A ``Size`` is a polynomial with integer coefficients over the symbols ``s0, s1, ...`` (and over
floor quotients and remainders of such polynomials by positive integers, which reshapes and
splits need). Arithmetic with ints and other sizes stays symbolic; a result that is a constant
is a plain ``int``, so a ``Size`` always depends on a symbol.

Every question whose answer depends on a symbol's value is a *decision*, answered at the
symbols' hints (the sizes the function was traced at) and recorded in the active ``ShapeEnv``
(``shape_env.py``) as a ``Guard``: a comparison (``n > 64``), an equality of two sizes (``a.shape[0] ==
b.shape[0]``), or a conversion to a plain number (``int(n)``, ``range(n)``, ``np.empty(n)``,
``float(n)``), which *specializes* the expression to its hint. A version compiled under guards
holds exactly where they all hold (corollary 2.1: guards are projections of the key), so a
decision taken anywhere in Stax, from capture to code generation, is valid or checked. A
``Size`` is deliberately not an ``int``: C code reads an ``int`` subclass's value without asking
it, which would bake a size in silently; a ``Size`` is asked (``__index__``) and records it.

The algebra is in-house rather than sympy, which costs about a millisecond an expression on a
compile path whose bars are milliseconds (the reason ``stax.loop.index`` exists); sympy is the
oracle of its tests.
"""

from __future__ import annotations

import ast
import contextvars
import dataclasses
import numbers
import operator
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Union

#: a monomial: the sorted atoms it multiplies (a symbol twice is its square)
Monomial = tuple["Atom", ...]
Atom = Union[str, "Quotient", "Remainder"]

UNBOUNDED = 2 ** 62
#: the smallest size a symbol stands for: 0 is specialized (empty loops), 1 is not, and a
#: decision that depends on it (a broadcast) is a guard like any other, which excludes it
SMALLEST = 1


@dataclass(frozen=True, eq=False)
class _Division:
    numerator: Size
    divisor: int

    def __eq__(self, other: Any) -> bool:  # structural: comparing atoms decides nothing
        return type(other) is type(self) and self.divisor == other.divisor and \
            self.numerator.terms == other.numerator.terms

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.numerator.terms, self.divisor))


class Quotient(_Division):
    """``numerator // divisor``, floor division by a positive integer."""

    def __str__(self) -> str:
        return f"({_operand(self.numerator)}//{self.divisor})"


class Remainder(_Division):
    """``numerator % divisor``, in ``[0, divisor)``."""

    def __str__(self) -> str:
        return f"({_operand(self.numerator)}%{self.divisor})"


def _operand(value: Any) -> str:
    """A division's numerator as text: parenthesized unless a symbol or a number."""
    text = str(value)
    return text if text.isalnum() else f"({text})"


_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}


def _atom_key(atom: Atom) -> tuple[int, str]:
    return (0, atom) if isinstance(atom, str) else (1, str(atom))


def _polynomial(terms: Mapping[Monomial, int]) -> int | Size:
    kept = {m: c for m, c in terms.items() if c}
    if not kept:
        return 0
    if set(kept) == {()}:
        return kept[()]
    return Size(tuple(sorted(kept.items(), key=lambda t: [_atom_key(a) for a in t[0]])))


def _terms(value: int | Size) -> dict[Monomial, int]:
    return dict(value.terms) if isinstance(value, Size) else {(): int(value)}


class Size:
    """A size that depends on size symbols. Immutable and hashable by its expression."""

    __slots__ = ("_hash", "terms")
    terms: tuple[tuple[Monomial, int], ...]

    def __init__(self, terms: tuple[tuple[Monomial, int], ...]) -> None:
        object.__setattr__(self, "terms", terms)
        object.__setattr__(self, "_hash", hash(terms))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Size is immutable")

    # -- building ---------------------------------------------------------------------------

    @staticmethod
    def symbol(name: str) -> Size:
        return Size((((name,), 1),))

    def __add__(self, other: Any) -> Any:
        if isinstance(other, float):
            return self._specialized("a float operand") + other
        if not isinstance(other, (int, Size)):
            return NotImplemented
        terms = _terms(self)
        for m, c in _terms(other).items():
            terms[m] = terms.get(m, 0) + c
        return _polynomial(terms)

    __radd__ = __add__

    def __neg__(self) -> int | Size:
        return _polynomial({m: -c for m, c in self.terms})

    def __pos__(self) -> Size:
        return self

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, float):
            return self._specialized("a float operand") - other
        if not isinstance(other, (int, Size)):
            return NotImplemented
        return self + (-other)

    def __rsub__(self, other: Any) -> Any:
        if isinstance(other, float):
            return other - self._specialized("a float operand")
        if not isinstance(other, int):
            return NotImplemented
        return (-self) + other

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, float):
            return self._specialized("a float operand") * other
        if not isinstance(other, (int, Size)):
            return NotImplemented
        terms: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in _terms(other).items():
                m = tuple(sorted(m1 + m2, key=_atom_key))
                terms[m] = terms.get(m, 0) + c1 * c2
        return _polynomial(terms)

    __rmul__ = __mul__

    def __pow__(self, exponent: Any) -> Any:
        if isinstance(exponent, int) and not isinstance(exponent, bool) and exponent >= 0:
            result: int | Size = 1
            for _ in range(exponent):
                result = result * self
            return result
        return self._specialized("a power") ** exponent

    def __floordiv__(self, other: Any) -> Any:
        if isinstance(other, Size):
            quotient = exact_quotient(self, other)
            if quotient is not None:
                return quotient
            return self._specialized("a division by a size") // other._specialized(
                "a division by a size")
        if isinstance(other, float):
            return self._specialized("a float operand") // other
        if not isinstance(other, int):
            return NotImplemented
        if other <= 0:
            return self._specialized("a division by a non-positive number") // other
        whole, rest = self._split(other)
        if not isinstance(rest, Size):
            return whole + rest // other
        return whole + _atom_size(Quotient(rest, other))

    def __rfloordiv__(self, other: Any) -> Any:
        if isinstance(other, (int, float)):
            return other // self._specialized("a division by a size")
        return NotImplemented

    def __mod__(self, other: Any) -> Any:
        if isinstance(other, int) and other > 0:
            _, rest = self._split(other)
            if not isinstance(rest, Size):
                return rest % other
            return _atom_size(Remainder(rest, other))
        if isinstance(other, (int, float, Size)):
            right = other._specialized("a remainder by a size") if isinstance(other, Size) else other
            return self._specialized("a remainder") % right
        return NotImplemented

    def __rmod__(self, other: Any) -> Any:
        if isinstance(other, (int, float)):
            return other % self._specialized("a remainder by a size")
        return NotImplemented

    def __divmod__(self, other: Any) -> Any:
        return self // other, self % other

    def __truediv__(self, other: Any) -> Any:
        right = other._specialized("a true division") if isinstance(other, Size) else other
        return self._specialized("a true division") / right

    def __rtruediv__(self, other: Any) -> Any:
        return other / self._specialized("a true division")

    def _split(self, divisor: int) -> tuple[int | Size, int | Size]:
        """``(q, r)`` with ``self == divisor * q + r``, ``q`` the terms whose coefficients
        ``divisor`` divides: then ``self // divisor == q + r // divisor`` exactly."""
        whole: dict[Monomial, int] = {}
        rest: dict[Monomial, int] = {}
        for m, c in self.terms:
            q, r = divmod(c, divisor)
            if m == ():
                rest[m] = c
            else:
                whole[m], rest[m] = q, r
        return _polynomial(whole), _polynomial(rest)

    # -- reading ----------------------------------------------------------------------------

    @property
    def symbols(self) -> frozenset[str]:
        found: set[str] = set()
        for m, _ in self.terms:
            for atom in m:
                found |= {atom} if isinstance(atom, str) else atom.numerator.symbols
        return frozenset(found)

    def evaluate(self, values: Mapping[str, int]) -> int:
        """The size's value where each symbol has the value ``values`` gives it."""
        total = 0
        for m, c in self.terms:
            product = c
            for atom in m:
                product *= _atom_value(atom, values)
            total += product
        return total

    @property
    def hint(self) -> int:
        """The value at the active environment's hints, recording nothing: for Stax's own
        bookkeeping that never decides anything (the example values of capture)."""
        return self.evaluate(current_env().hints)

    def bounds(self, env: Any) -> tuple[int, int]:
        low = high = 0
        for m, c in self.terms:
            lo, hi = 1, 1
            for atom in m:
                a_lo, a_hi = _atom_bounds(atom, env)
                products = (lo * a_lo, lo * a_hi, hi * a_lo, hi * a_hi)
                lo, hi = min(products), max(products)
            lo, hi = min(c * lo, c * hi), max(c * lo, c * hi)
            low, high = low + lo, high + hi
        return max(low, -UNBOUNDED), min(high, UNBOUNDED)

    # -- decisions --------------------------------------------------------------------------

    def _compare(self, other: Any, relation: str) -> Any:
        if isinstance(other, float):
            return _COMPARE[relation](self._specialized("a comparison with a float"), other)
        if not isinstance(other, (int, Size)):
            return NotImplemented
        return current_env().decide(self - other, relation)

    def __eq__(self, other: Any) -> Any:
        return self._compare(other, "==")

    def __ne__(self, other: Any) -> Any:
        return self._compare(other, "!=")

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, "<")

    def __le__(self, other: Any) -> Any:
        return self._compare(other, "<=")

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, ">")

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, ">=")

    def __hash__(self) -> int:
        return self._hash

    def same(self, other: Any) -> bool:
        """Whether ``other`` is this expression (structurally: decides nothing)."""
        return isinstance(other, Size) and other.terms == self.terms

    def _specialized(self, why: str) -> int:
        return current_env().specialize(self, why)

    def __index__(self) -> int:
        return self._specialized("a conversion to an integer")

    def __int__(self) -> int:
        return self._specialized("a conversion to an integer")

    def __float__(self) -> float:
        return float(self._specialized("a conversion to a float"))

    def __complex__(self) -> complex:
        return complex(self._specialized("a conversion to a complex number"))

    def __bool__(self) -> bool:
        return bool(current_env().decide(self, "!="))

    def __abs__(self) -> Any:
        return self if self >= 0 else -self

    def __round__(self, ndigits: int | None = None) -> Any:
        return self

    def __trunc__(self) -> Size:
        return self

    __floor__ = __ceil__ = __trunc__

    # -- text -------------------------------------------------------------------------------

    def __str__(self) -> str:
        pieces = []
        for m, c in sorted(self.terms, key=lambda t: t[0] == ()):  # the constant last
            factors = [str(a) for a in m]
            if not factors:
                pieces.append(str(c))
            elif c == 1:
                pieces.append("*".join(factors))
            elif c == -1:
                pieces.append("-" + "*".join(factors))
            else:
                pieces.append("*".join([str(c), *factors]))
        text = " + ".join(pieces)
        return text.replace("+ -", "- ")

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:  # as it reads in a shape: ``[s0, 16]``, ``(16*s1, 1)``
        return str(self)

    def __reduce__(self) -> Any:
        return (parse_size, (str(self),))


numbers.Integral.register(Size)  # user code asking isinstance(n, numbers.Integral) sees a size


def _atom_size(atom: Atom) -> Size:
    return Size((((atom,), 1),))


def _atom_value(atom: Atom, values: Mapping[str, int]) -> int:
    if isinstance(atom, str):
        try:
            return values[atom]
        except KeyError:
            raise KeyError(f"no value for the size symbol {atom}") from None
    number = atom.numerator.evaluate(values)
    return number // atom.divisor if isinstance(atom, Quotient) else number % atom.divisor


def _atom_bounds(atom: Atom, env: Any) -> tuple[int, int]:
    if isinstance(atom, str):
        return env.range_of(atom)
    if isinstance(atom, Remainder):
        return 0, atom.divisor - 1
    lo, hi = atom.numerator.bounds(env)
    return lo // atom.divisor, hi // atom.divisor


def exact_quotient(numerator: int | Size, divisor: int | Size) -> int | Size | None:
    """``numerator / divisor`` when ``divisor`` is one term dividing each of ``numerator``'s
    (``s0*s1*4 / (s1*2) = s0*2``: a reshape's ``-1``); None otherwise."""
    if not isinstance(divisor, Size) or len(divisor.terms) != 1:
        if isinstance(divisor, int) and divisor and isinstance(numerator, Size):
            if all(c % divisor == 0 for _, c in numerator.terms):
                return _polynomial({m: c // divisor for m, c in numerator.terms})
        return None
    (d_mono, d_coeff), = divisor.terms
    terms: dict[Monomial, int] = {}
    for m, c in _terms(numerator).items():
        rest = list(m)
        for atom in d_mono:
            if atom not in rest:
                return None
            rest.remove(atom)
        if c % d_coeff:
            return None
        terms[tuple(rest)] = c // d_coeff
    return _polynomial(terms)


#: the ``stax.ir.shape_env.ShapeEnv`` decisions are recorded in, during a size-generic compile
_ENV: contextvars.ContextVar[Any] = contextvars.ContextVar("stax_shape_env", default=None)


def current_env() -> Any:
    env = _ENV.get()
    if env is None:
        raise RuntimeError("a symbolic size was used outside a compile (no ShapeEnv is active): "
                           "a Stax bug; please report it")
    return env


@contextmanager
def shape_env(env: Any) -> Iterator[Any]:
    """Make ``env`` the one sizes record their decisions in."""
    token = _ENV.set(env)
    try:
        yield env
    finally:
        _ENV.reset(token)


# -- text form ------------------------------------------------------------------------------------

def parse_size(text: str) -> int | Size:
    """A size from its text form (``str(size)``): sums, products, ``//`` and ``%`` by integers
    of integers and symbols ``s<k>`` (and ``c<k>``, the lengths of masked selections capture
    follows until it resolves them: ``stax.trace.selection_counts``)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"not a size expression: {text!r}") from None
    return _build(tree.body, text)


def _build(node: ast.AST, text: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and \
            not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id[:1] in "sc" and node.id[1:].isdigit():
        return Size.symbol(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_build(node.operand, text)
    if isinstance(node, ast.BinOp):
        left, right = _build(node.left, text), _build(node.right, text)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and isinstance(right, int) and right > 0:
            if isinstance(left, int):
                return left // right if isinstance(node.op, ast.FloorDiv) else left % right
            return left // right if isinstance(node.op, ast.FloorDiv) else left % right
    raise ValueError(f"not a size expression: {text!r}")


def size_to_json(value: int | Size) -> int | str:
    """A dimension in a document: an int, or a size's text form."""
    return str(value) if isinstance(value, Size) else int(value)


def size_from_json(value: int | str) -> int | Size:
    return parse_size(value) if isinstance(value, str) else int(value)


def hint(value: Any) -> Any:
    """An int, or a size's value at the active hints, deciding nothing: for choices that change
    only speed (a cost model's element counts), never results."""
    return value.evaluate(current_env().hints) if isinstance(value, Size) else value


def product(values: Any) -> Any:
    """The product of sizes and ints (an element count), symbolic where they are."""
    total: Any = 1
    for v in values:
        total = total * v
    return total


def same_size(a: Any, b: Any) -> bool:
    """Whether two sizes are the same expression (ints: equal), deciding nothing; tuples of
    sizes and constants (shapes, strides, loop domains) element by element."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(map(same_size, a, b))
    if isinstance(a, Size) or isinstance(b, Size):
        return isinstance(a, Size) and a.same(b)
    return a == b


def active_env() -> Any:
    """The active ``ShapeEnv``, or None outside a size-generic compile."""
    return _ENV.get()


def is_symbolic(value: Any) -> bool:
    return isinstance(value, Size)


def holds_size(value: Any) -> bool:
    """Whether a size lies in ``value``, through tuples, lists, dicts and slices (a call's
    arguments, an index key)."""
    if isinstance(value, Size):
        return True
    if isinstance(value, slice):
        return any(isinstance(b, Size) for b in (value.start, value.stop, value.step))
    if isinstance(value, (tuple, list)):
        return any(holds_size(v) for v in value)
    if isinstance(value, dict):
        return any(holds_size(v) for v in value.values())
    return False


def concrete(value: Any, values: Mapping[str, int] | None = None) -> Any:
    """``value`` with every size replaced by its value (at ``values``, or the active hints),
    through tuples, lists, dicts and dataclasses (a size-generic artifact at a call's sizes);
    what holds no size is returned as it is."""
    if isinstance(value, Size):
        return value.evaluate(current_env().hints if values is None else values)
    if isinstance(value, tuple):
        return tuple(concrete(v, values) for v in value)
    if isinstance(value, list):
        return [concrete(v, values) for v in value]
    if isinstance(value, dict):
        return {k: concrete(v, values) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if f.init:
                old = getattr(value, f.name)
                new = concrete(old, values)
                if new is not old:
                    changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


def specialize(value: Any) -> Any:
    """``value`` with every size in it (through tuples, lists and slices) made an int: a
    decision taken at the traced sizes that holds only there (the version is exact in them)."""
    if isinstance(value, Size):
        return int(value)
    if isinstance(value, slice):
        return slice(specialize(value.start), specialize(value.stop), specialize(value.step))
    if isinstance(value, (tuple, list)):
        return type(value)(specialize(v) for v in value)
    return value
