"""The size symbols of one size-generic compile and the shape guards its decisions recorded
(issue 15, spec §10.4): a ``ShapeEnv`` is made active by ``stax.ir.sizes.shape_env``; every
decision a ``Size`` is asked for lands here, with the site that asked."""

from __future__ import annotations

import contextvars
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .sizes import SMALLEST, UNBOUNDED, Size, parse_size

_RELATIONS = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}
_NEGATED = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


@dataclass(frozen=True)
class Guard:
    """``expression <relation> 0`` must hold for the version to apply (a shape guard, §10.4).
    ``site`` says which decision recorded it (a file and line of Stax or of the user's code)."""

    expression: Size
    relation: str
    site: str = ""

    def holds(self, values: Mapping[str, int]) -> bool:
        return _RELATIONS[self.relation](self.expression.evaluate(values), 0)

    def __str__(self) -> str:
        return f"{self.expression} {self.relation} 0"

    def to_json(self) -> dict[str, Any]:
        return {"expression": str(self.expression), "relation": self.relation, "site": self.site}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Guard:
        expression = parse_size(doc["expression"])
        if not isinstance(expression, Size):
            raise ValueError(f"a guard on a constant: {doc!r}")
        return cls(expression, doc["relation"], doc.get("site", ""))


@dataclass
class SymbolInfo:
    hint: int
    low: int = SMALLEST
    high: int = UNBOUNDED
    origin: str = ""  # where its value is read at a call: "inputs[0].shape[0]"


@dataclass
class ShapeEnv:
    """The size symbols of one compile, and the guards its decisions recorded."""

    symbols: dict[str, SymbolInfo] = field(default_factory=dict)
    guards: list[Guard] = field(default_factory=list)
    #: the sites that turned a size into a number: the version is exact in those symbols
    specializations: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def from_table(cls, table: Mapping[str, Any], guards: Any = ()) -> ShapeEnv:
        """An environment of a document's sizes (``{name: [smallest, largest, traced]}``, loop
        IR 1.7 and kernels 1.9) and guards, to compile or check it again."""
        env = cls()
        for name, (low, high, traced) in table.items():
            env.symbols[str(name)] = SymbolInfo(int(traced), int(low), int(high))
        env.guards = [g if isinstance(g, Guard) else Guard.from_json(g) for g in guards]
        return env

    def new_symbol(self, hint: int, origin: str = "") -> Size:
        if hint < 2:
            raise ValueError(f"a dynamic size is traced at 2 or more, not {hint}")
        name = f"s{len(self.symbols)}"
        self.symbols[name] = SymbolInfo(hint, origin=origin)
        return Size.symbol(name)

    @property
    def hints(self) -> dict[str, int]:
        return {name: info.hint for name, info in self.symbols.items()}

    def range_of(self, name: str) -> tuple[int, int]:
        info = self.symbols[name]
        return info.low, info.high

    def decide(self, expression: int | Size, relation: str) -> bool:
        """The answer at the hints to ``expression <relation> 0``; unless the symbols' ranges
        prove it, recorded as a guard (the relation that held)."""
        if not isinstance(expression, Size):
            return _RELATIONS[relation](expression, 0)
        outcome = _RELATIONS[relation](expression.evaluate(self.hints), 0)
        held = relation if outcome else _NEGATED[relation]
        if not self._proved(expression, held):
            self._record(Guard(expression, held, _site()))
        return outcome

    def specialize(self, expression: Size, why: str) -> int:
        value = expression.evaluate(self.hints)
        if self._proved(expression - value, "=="):
            return value  # already exact (a symbol specialized before)
        site = _site()
        self.specializations.append((str(expression), f"{why} at {site}"))
        self._record(Guard(expression - value, "==", site))
        return value

    def _proved(self, expression: Size, relation: str) -> bool:
        lo, hi = expression.bounds(self)
        return {"==": lo == hi == 0, "!=": lo > 0 or hi < 0, "<": hi < 0, "<=": hi <= 0,
                ">": lo > 0, ">=": lo >= 0}[relation]

    def _record(self, guard: Guard) -> None:
        if any(g.relation == guard.relation and g.expression.terms == guard.expression.terms
               for g in self.guards):
            return  # asked before (an != narrows no range)
        self.guards.append(guard)
        self._narrow(guard)

    def _narrow(self, guard: Guard) -> None:
        """A guard linear in one symbol (``a*s + b rel 0``) narrows that symbol's range, so later
        decisions it settles are proved rather than recorded again."""
        terms = dict(guard.expression.terms)
        constant = terms.pop((), 0)
        if len(terms) != 1:
            return
        (monomial, a), = terms.items()
        if len(monomial) != 1 or not isinstance(monomial[0], str):
            return
        info = self.symbols[monomial[0]]
        relation = guard.relation if a > 0 else {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(
            guard.relation, guard.relation)
        # a*s + b rel 0  <=>  s rel' -b/a
        bound = -constant / a
        if relation == "!=" and bound in (info.low, info.high):  # an end of the range excluded
            info.low, info.high = (info.low + 1, info.high) if bound == info.low else \
                (info.low, info.high - 1)
        elif relation == "==" and bound == int(bound):
            info.low = info.high = int(bound)
        elif relation == "<":
            info.high = min(info.high, _ceil(bound) - 1)
        elif relation == "<=":
            info.high = min(info.high, _floor(bound))
        elif relation == ">":
            info.low = max(info.low, _floor(bound) + 1)
        elif relation == ">=":
            info.low = max(info.low, _ceil(bound))

    def specialized_symbols(self) -> frozenset[str]:
        return frozenset(name for name, info in self.symbols.items() if info.low == info.high)

    def holds(self, values: Mapping[str, int]) -> bool:
        """Whether sizes ``values`` satisfy every symbol's range and every guard."""
        for name, info in self.symbols.items():
            if not info.low <= values[name] <= info.high:
                return False
        return all(guard.holds(values) for guard in self.guards)

    def failing(self, values: Mapping[str, int]) -> list[str]:
        """What fails for ``values``, each as ``condition (expected, got)``: for explain()."""
        failures = []
        for name, info in self.symbols.items():
            if not info.low <= values[name] <= info.high:
                failures.append(f"{info.origin or name} in [{info.low}, {info.high}] "
                                f"(got {values[name]})")
        for guard in self.guards:
            if not guard.holds(values):
                failures.append(f"{guard} (got {guard.expression.evaluate(values)} "
                                f"{guard.relation} 0 false; from {guard.site})")
        return failures


def _floor(x: float) -> int:
    return int(x // 1)


def _ceil(x: float) -> int:
    return -int((-x) // 1)


_OWN = frozenset({__file__, os.path.join(os.path.dirname(__file__), "sizes.py")})


#: the user's source line of the op a lowering is at (``stax.loop.lowering``): a decision Stax's
#: own code asks for there is the user's line's (it named ``updates.py:267`` alone)
LOWERING_SOURCE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "stax_lowering_source", default=None)


def _site() -> str:
    """Where the decision was asked for: the first frame outside this module, and when that is
    a library's (NumPy's ``np.prod``), the Stax or user frame that called it; Stax's own frame
    during a lowering, with the line of the user's operation being lowered."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in _OWN:
        frame = frame.f_back
    if frame is None:
        return "?"
    first = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
    lowering = LOWERING_SOURCE.get()
    if lowering and str(frame.f_globals.get("__name__", "")).startswith("stax."):
        return f"{lowering} (lowered at {first})"
    caller = frame
    while caller is not None and _library(caller.f_code.co_filename):
        caller = caller.f_back
    if caller is None or caller is frame:
        return first
    return f"{first} via {os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"


def _library(filename: str) -> bool:
    return f"{os.sep}numpy{os.sep}" in filename or filename.startswith("<")
