"""The program under construction: its values (each exact or inexact, with a sample), the
candidate step (``Draft``) and how a step is tried on the samples and committed (``Builder``).
Used by stress_steps.py (the operations) and stress_gen.py (the strategy)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st
from stress_program import Leaf, Owner, Step

DTYPES = ["float64", "float32", "int64", "int32", "bool"]
SHAPES = [[3, 4], [5, 7], [2, 3], [4, 1], [1, 6], [6, 6]]
BIG_SHAPES = [[64, 257], [200, 96]]  # large enough for parallel kernels
LAYOUTS = ["C", "C", "F", "T", "S", "N", "B"]
CONSTANTS = ["2", "3", "-1", "0.5", "-1.5", "2.5"]  # never 0: x + 0 -> x may flip a zero's sign
MAX_STEPS = 10


@dataclass
class Value:
    text: str
    exact: bool
    sample: Any
    origin: str  # "leaf" | "const" | "step"
    stale: bool = False
    view_of: int | None = None  # the value this one may be a view of (for in-place updates)
    draw: bool = False  # a random draw
    leaf: int | None = None
    tags: frozenset[str] = frozenset()  # what made it, where a known defect needs to know


@dataclass
class Draft:
    """A candidate step: its statements and what decides the exactness of its result."""

    lines: list[str]
    result: str
    operands: list[int]
    probe_ops: list[str] | None = None  # what the probe records (default: the operands' texts)
    approx: bool = False                # rounds differently from NumPy on a float result
    smooth: str | None = None           # rule when an operand is inexact (None: refused)
    exact_rule: str = "approx"          # rule when the operands are exact and approx is set
    extra: dict[str, Any] = field(default_factory=dict)
    target: int | None = None           # an in-place update of this (argument) value
    view: int | None = None             # the result may be a view of this value
    draw: bool = False                  # a random draw (its generator advances)
    tags: frozenset[str] = frozenset()  # marks on the result; a view's result keeps its operand's
    refuse: frozenset[str] = frozenset()  # refused when an operand carries one of these marks


class Builder:
    """Holds one program while hypothesis draws it."""

    def __init__(self, draw: Callable[[Any], Any], *, rng_draws: bool, known: frozenset[str]) -> None:
        self.draw = draw
        self.known = known  # the known-defect strategies drawn from (stress_flags)
        self.owners: list[Owner] = []
        self.leaves: list[Leaf] = []
        self.values: list[Value] = []
        self.lines: list[str] = []
        self.probe: list[str] = []
        self.steps: list[Step] = []
        self.namespace: dict[str, Any] = {}
        self.uses_rng = rng_draws
        self.global_random = False
        self.current: dict[int, int] = {}  # leaf index -> value id of its current content

    # -- drawing helpers -------------------------------------------------------------------------
    def choice(self, items: list[Any]) -> Any:
        return self.draw(st.sampled_from(items))

    def flag(self, p: float = 0.5) -> bool:
        return self.draw(st.integers(0, 99)) < p * 100

    def pick(self, ok: Callable[[Value], bool]) -> int | None:
        """A live value satisfying ``ok``, recent ones first (shrinking moves towards the last)."""
        found = [i for i, v in enumerate(self.values) if not v.stale and ok(v)]
        if not found:
            return None
        return found[-1 - self.draw(st.integers(0, len(found) - 1))]

    def array(self, *, exact: bool | None = None, ndim: int = 0, kinds: str = "fiub") -> int | None:
        def ok(v: Value) -> bool:
            a = v.sample
            return (isinstance(a, (np.ndarray, np.generic)) and a.ndim >= ndim
                    and a.dtype.kind in kinds and (exact is None or v.exact == exact)
                    and v.origin != "const")
        return self.pick(ok)

    def scalar(self) -> int:
        """A scalar operand: a scalar leaf (argument, attribute, global, cell) or a constant."""
        found = self.pick(lambda v: v.origin == "leaf" and not isinstance(v.sample, np.ndarray)
                          and not callable(v.sample))
        if found is not None and self.flag(0.6):
            return found
        return self.constant(self.choice(CONSTANTS))

    def operand(self) -> int | None:
        return self.array() if self.flag(0.7) else self.scalar()

    def constant(self, text: str) -> int:
        for i, v in enumerate(self.values):
            if v.origin == "const" and v.text == text:
                return i
        self.values.append(Value(text, True, eval(text), "const"))
        return len(self.values) - 1

    def t(self, i: int) -> str:
        return self.values[i].text

    # -- committing a step -----------------------------------------------------------------------
    def commit(self, draft: Draft | None) -> bool:
        if draft is None or any(o is None for o in draft.operands):
            return False
        if any(self.values[o].tags & draft.refuse for o in draft.operands):
            return False
        inexact = any(not self.values[o].exact for o in draft.operands)
        if inexact and draft.smooth is None:
            return False
        ns = self.namespace
        saved = None
        if draft.target is not None:  # restored if the step is refused after it ran
            live = self.namespace_value(self.values[draft.target].leaf)
            saved = (live, live.copy()) if live.flags.writeable else None
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                for line in draft.lines:
                    exec(line, ns)
                result = eval(draft.result, ns)
        except Exception:
            return self._refuse(saved)
        if not _acceptable(result, self.max_size):
            return self._refuse(saved)
        out_float = np.asarray(result).dtype.kind == "f"
        if inexact:
            if not out_float:
                return self._refuse(saved)
            exact, rule = False, draft.smooth
        elif draft.approx and out_float:
            exact, rule = False, draft.exact_rule
        else:
            exact, rule = True, "exact"
        index = len(self.steps)
        probe_ops = draft.probe_ops or [self.t(o) for o in draft.operands]
        self.probe.append(f"_rec({index}, 'in', ({''.join(p + ', ' for p in probe_ops)}))")
        self.lines += draft.lines
        self.probe += draft.lines
        self.probe.append(f"_rec({index}, 'out', {draft.result})")
        if draft.target is not None:
            self._update_in_place(draft, result, exact)
        else:
            view = draft.view
            if view is not None and self.values[view].view_of is not None:
                view = self.values[view].view_of
            tags = draft.tags | (self.values[draft.view].tags if draft.view is not None else frozenset())
            self.values.append(Value(draft.result, exact, copy_value(result), "step", view_of=view,
                                     draw=draft.draw, tags=tags))
        self.steps.append(Step(len(self.values) - 1, rule, list(draft.operands), draft.extra))
        return True

    @staticmethod
    def _refuse(saved: tuple[np.ndarray, np.ndarray] | None) -> bool:
        if saved is not None:
            saved[0][...] = saved[1]
        return False

    def _update_in_place(self, draft: Draft, result: Any, exact: bool) -> None:
        old = draft.target
        assert old is not None
        leaf = self.values[old].leaf
        live = self.namespace_value(leaf)
        for i, v in enumerate(self.values):  # views of the updated argument now hold other data
            if v.origin == "const" or callable(v.sample):
                continue
            base = v.view_of if v.view_of is not None else i
            if base == old or i == old or shares_memory(eval(v.text, self.namespace), live):
                v.stale = True
        self.values.append(Value(self.values[old].text, exact and self.values[old].exact,
                                 copy_value(result), "step", leaf=leaf))
        self.current[leaf] = len(self.values) - 1

    def namespace_value(self, leaf: int | None) -> Any:
        assert leaf is not None
        return eval(self.leaves[leaf].ref, self.namespace)

    max_size = 4096

    def avoid(self, defect: str, tag: str) -> frozenset[str]:
        """``{tag}`` unless the strategy of ``defect`` is on: what a step that meets it refuses."""
        return frozenset() if defect in self.known else frozenset({tag})

    def fits(self, target: str, value: int) -> bool:
        """Whether ``target = value`` keeps to the value's dimensions: a value with more (leading
        length-1) dimensions than the slot is the ``setitem_broadcast`` defect, off by default."""
        if "setitem_broadcast" in self.known:
            return True
        try:
            slot = eval(target, self.namespace)
        except Exception:
            return True  # NumPy refuses it anyway when the step runs
        return np.ndim(self.values[value].sample) <= np.ndim(slot)

    def owner(self, leaf: int) -> Owner:
        name = self.leaves[leaf].owner
        return next(o for o in self.owners if o.name == name)


def copy_value(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def shares_memory(a: Any, b: Any) -> bool:
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.may_share_memory(a, b)


def _acceptable(result: Any, max_size: int) -> bool:
    if isinstance(result, (bool, int, float)) and not isinstance(result, np.generic):
        return True
    if not isinstance(result, (np.ndarray, np.generic)):
        return False
    dt = result.dtype
    return (dt.kind in "fiub" and dt != np.float16 and dt.itemsize <= 8 and result.ndim <= 4
            and result.size <= max_size)
