"""What a compiled function keeps per specialization (spec §2.1-2.4): a ``Version`` with its key
and how it runs, the reports ``explain()`` gives, the counters of ``cache_info()`` and the limits
on versions and compiles."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stax.ir import UnsupportedError, tree_leaves

from .gates import GATE_CONDITION, GateReplay
from .generic import generic_failures
from .guards import Snapshot
from .replay_costs import ReplayCosts
from .signature import GuardFailure, Unguardable, diff_signature, signature

PLAIN = "plain"  # rho: the transform applied (a gradient's: ``grad(argnums=(0,))``, autodiff.py)


@dataclass(frozen=True)
class CacheInfo:
    """``hits`` counts cache hits per dispatch level (spec algorithm 2.1): 1, the same argument
    layouts as the previous call (a tuple compare); 2, a lookup by the arrays' layouts; 3, a lookup
    by the full signature."""

    versions: int
    compiles: int
    hits: dict[int, int]
    misses: int
    fallbacks: int


@dataclass(frozen=True)
class GateFailure:
    """The guard on gamma_g: the replayed data-gate outcomes differ from the traced ones."""

    expected: list[Any]
    actual: list[Any] | None

    condition = GATE_CONDITION

    def __str__(self) -> str:
        got = "replay failed" if self.actual is None else f"got {self.actual}"
        return f"{GATE_CONDITION} ({got}; traced {self.expected})"


@dataclass(frozen=True)
class VersionReport:
    """Why version ``index`` does (``failures`` empty) or does not apply to some arguments."""

    index: int
    native: bool
    failures: list[GuardFailure | GateFailure]

    @property
    def matches(self) -> bool:
        return not self.failures


#: calls a version of a function with its own ``np.errstate`` block (whose every event
#: declines: ``heeding_all``) declined in a row from which its key's calls run eagerly at
#: once, its program tried again after ``RETRY_EVERY`` such calls, then after twice as many
#: each time, at most ``MAX_RETRY_GAP`` apart (the first call it serves resets it): ``np.sqrt``
#: of negatives inside ``np.errstate(invalid="ignore")`` ran its program, then NumPy, every
#: call (3.6x NumPy's time). Other functions' declines (an event, a failed check) depend on
#: the data: ``DATA_DECLINE_STREAK`` of them in a row (an int32 sum that overflows at every
#: call, a diverging iteration: each ran its program, then NumPy) pause the version the same
#: way, and a call it serves resets it.
DECLINE_STREAK = 3
DATA_DECLINE_STREAK = 8
RETRY_EVERY = 32
MAX_RETRY_GAP = 1024


@dataclass
class Version:
    """One specialization: its key, and the backend's callable or eager execution with a reason."""

    index: int
    sigma: Any
    run: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    native: bool
    reason: str | None = None
    artifact: Any = None
    gates: GateReplay | None = None
    rho: str = PLAIN
    fast: Callable[..., Any] | None = None  # run(*arrays) for f(array, ...) calls
    entry: Any = None  # the machine-code entry (stax.codegen.cpu.entry.Entry), if it has one
    #: (the backend's callable over flat inputs, the argument leaves it takes), for a compiled one
    flat: tuple[Any, list[int]] | None = None
    stats: dict[str, float] = field(default_factory=dict)
    declined_reported: bool = False  # a call it declined (and ran eagerly) was logged
    #: calls of a function with its own ``np.errstate`` it declined in a row, and calls since
    #: run eagerly without trying it (``eager_for_now``)
    declines: int = 0
    skipped: int = 0
    streak: int = DATA_DECLINE_STREAK  # declines in a row that pause it (``DECLINE_STREAK``)
    #: measured slower than eager calls (``replay_costs``): its key runs eagerly, and so do a
    #: generic version's calls of other keys (a scalar's other values)
    slower: bool = False
    eager_key: Any = None  # the key its paused calls' eager entry compares (else ``sigma``)
    #: those entries, per key (``key_entry.paused_entry``)
    eager_entries: dict[Any, Any] = field(default_factory=dict)
    entry_key: Any = None  # the key its key entry compares (``generic.entry_key``)
    served: int = 0  # its machine-code entry's hits at its last decline
    free: Snapshot | None = None  # the free values (globals, cells, attributes) it was traced under
    generators: list[int] = field(default_factory=list)  # leaves that are np.random.Generator
    #: the gates are checked by the compiled program as it runs (``gate_checks.GateCheck``),
    #: not replayed before: ``applies`` leaves them to the run, which raises ``GateMismatch``
    gate_check: Any = None
    #: a size-generic version's executable (``generic.py``): its shape guards checked per call
    generic: Any = None
    #: its calls are plain (every argument an array input): entries per size (``_run``)
    plain_entries: bool = False
    #: key entries per layout of a size-generic version whose flat calls pass more than its
    #: array inputs (scalars, as inputs or constants: ``sized_entries.sized_entry``); None where its
    #: calls take no such entry
    sized_entries: dict[Any, Any] | None = None
    #: a generic version's dynamic dimensions, as (argument, dimension) pairs
    pattern: Any = None
    #: timings of its calls with replayed gates against eager ones (``replay_costs``)
    replay_costs: ReplayCosts = field(default_factory=ReplayCosts)

    @property
    def gates_in_program(self) -> bool:
        return self.gate_check is not None and self.gate_check.active

    @property
    def replays_gates(self) -> bool:
        """Whether its data gates are replayed in NumPy before each call (not checked in its
        program)."""
        return self.gates is not None and not self.gates_in_program

    @property
    def guarded(self) -> bool:
        """Whether guards beyond sigma apply (free values, data gates)."""
        return self.free is not None or self.gates is not None

    def eager_for_now(self) -> bool:
        """Whether this call runs eagerly without trying the version (``DECLINE_STREAK``). A
        version with gates too (a call of another branch meanwhile runs eagerly, as any
        skipped call: its gates replayed, then NumPy, at every call cost 35x NumPy's time)."""
        if self.slower:
            return True
        if self.declines < self.streak or not self.native:
            return False
        self.skipped += 1
        return _skips(self.skipped)

    def declined(self, own_errstate: bool) -> None:
        """A call it declined (an event, a failed check); a function with its own
        ``np.errstate`` (every event declines) is paused after fewer. Calls its machine-code
        entry served in between (its hits count only calls that stood) break the streak; a
        key entry over machine code counts the calls it hands on too: its machine-code entry's
        hits tell (a function with a scalar argument declining every call ran its program, then
        NumPy, at every call: 20 us for NumPy's 2)."""
        entry = self.entry
        if getattr(entry, "inner", None) is not None:
            entry = entry.inner
        elif entry is not None and not getattr(entry, "dispatches", True):
            return
        served = getattr(entry, "hits", 0) if entry is not None and \
            not getattr(entry, "dispatches", False) else 0
        if served != self.served:
            self.served, self.declines = served, 0
        self.declines += 1
        if own_errstate:
            self.streak = DECLINE_STREAK

    def skips_ahead(self) -> int:
        """How many of the calls after this one ``eager_for_now`` would run eagerly before the
        version is tried again (a key entry answers them: ``api._paused``)."""
        if self.slower:
            return MAX_RETRY_GAP
        ahead = 0
        while _skips(self.skipped + ahead + 1) and ahead < MAX_RETRY_GAP:
            ahead += 1
        return ahead

    def applies(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                memo: dict[str, Any] | None = None) -> bool:
        """The guards beyond sigma (sigma already matched): the free values the trace read still
        describe the same, and the data gates replay to the traced outcomes (gamma_g; ``memo``:
        the outcomes of replays this call made already, ``GateReplay.outcomes``)."""
        if self.free is not None and not self.free.matches():
            return False
        if self.generic is not None and self.flat is not None:  # its sizes' relations
            leaves = tree_leaves((args, kwargs))
            if self.generic.failures([leaves[i] for i in self.flat[1]]):
                return False
        return self.gates is None or self.gates_in_program or \
            self.gates.matches(tree_leaves((args, kwargs)), memo)

    def failures(self, sigma: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> list[GuardFailure | GateFailure]:
        if self.generic is not None and self.pattern is not None:  # sizes by shape guards
            return generic_failures(self, sigma, tree_leaves((args, kwargs)))
        out: list[GuardFailure | GateFailure] = list(diff_signature(self.sigma, sigma))
        if self.free is not None:
            out += self.free.failures()
        if self.gates is not None:
            outcomes = self.gates.outcomes(tree_leaves((args, kwargs)))
            if outcomes != self.gates.expected:
                out.append(GateFailure(self.gates.expected, outcomes))
        return out


@dataclass(frozen=True)
class Limits:
    """Spec §2.4: versions kept per function, and compiles per function over its lifetime."""

    max_versions: int = 8
    max_compiles: int = 256


def first_for_its_key(by_sigma: dict[Any, list[Version]], by_layout: dict[Any, list[Version]],
                      sigma: Any, version: Version) -> None:
    """``version`` made the first one tried for its key (its gates held where another's did
    not): the lists are replaced, never changed in place, as another thread may be reading
    one."""
    old = by_sigma.get(sigma)
    if not old or old[0] is version or all(v is not version for v in old):
        return
    new = [version, *(v for v in old if v is not version)]
    by_sigma[sigma] = new
    for layout, versions in list(by_layout.items()):
        if versions is old:
            by_layout[layout] = new


def limit_warning(name: str, limits: Limits, versions: list[Version], sigma: Any,
                  args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """What a function that reached its version or compile limit says, naming the key
    component that failed most often across its versions for this call."""
    counts: dict[str, int] = {}
    for v in versions:
        for failure in v.failures(sigma, args, kwargs):
            key = failure.path if isinstance(failure, GuardFailure) else \
                "gamma_g (data gates)" if isinstance(failure, GateFailure) else \
                f"a shape guard of a size-generic version ({failure})"
            counts[key] = counts.get(key, 0) + 1
    changing = max(counts, key=counts.__getitem__) if counts else "nothing"
    return (f"stax: {name} reached its limit ({limits.max_versions} versions, "
            f"{limits.max_compiles} compiles); the key component that keeps changing "
            f"is {changing}: new keys now run eagerly. {_limit_hint(changing, sigma)}")


def _limit_hint(changing: str, sigma: Any) -> str:
    """What to do about the component that keeps changing, by what it is."""
    if changing.startswith("gamma_g"):
        return "A number read from the data into Python (int(), float(), .item(), a branch) " \
            "is a data gate: stax.runtime.gate(...) keeps such a value out of the key."
    found = re.match(r"inputs\[0\]\[(\d+)\](?:\[(\d+)\])?", changing)
    leaf = sigma[0][int(found[1])] if found and int(found[1]) < len(sigma[0]) else None
    part = int(found[2]) if found and found[2] is not None else None
    if isinstance(leaf, tuple) and leaf and leaf[0] == "ndarray":
        if part == 2:
            return "An array's sizes change: they stay generic after two sizes unless the " \
                "function reads them in Python (STAX_LOGS=recompiles says why); " \
                "compile(..., dynamic=True) starts generic."
        if part == 4:
            return "An array's layout changes (its strides: views, transposes): pass " \
                "np.ascontiguousarray(x) for one layout."
        return "An array's dtype changes: each dtype is a version."
    return "A scalar whose value changes is a run-time input unless the function decides " \
        "something from it in Python (STAX_LOGS=recompiles says where); a 0-d array argument " \
        "is never keyed by its value."


def check_no_side_effects(free: Snapshot | None, sigma: Any, args: tuple[Any, ...],
                          kwargs: dict[str, Any], names: frozenset[str] = frozenset()) -> None:
    """A trace that changed a value it reads (a global list appended to, an attribute of an
    argument set) did a side effect the compiled version would not repeat."""
    changed = [f.path for f in free.failures()] if free is not None else []
    try:
        if signature(args, kwargs, names) != sigma:
            changed.append("an argument's attributes or contents")
    except Unguardable:
        changed.append("an argument's attributes or contents")
    if changed:
        raise UnsupportedError(f"the function changes {', '.join(changed)} when it runs: a "
                               "side effect a compiled version would not repeat",
                               hint="return the new value instead")


def _skips(tried: int) -> bool:
    """Whether the ``tried``-th call since a streak of declines skips the version: all before
    ``RETRY_EVERY``, then all but the powers of two and multiples of ``MAX_RETRY_GAP``."""
    return tried < RETRY_EVERY or bool(tried & (tried - 1) and tried % MAX_RETRY_GAP)
