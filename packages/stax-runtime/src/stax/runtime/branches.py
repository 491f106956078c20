"""How a call goes on when the version it ran found, in its own program, that the call's data
gates took another branch (``gate_checks.py``): the version whose gates hold runs instead, or
one is compiled for this branch; and when a key goes eager for good (its gates keep changing,
or its calls measured slower than eager ones: ``replay_costs``). A mixin of
``CompiledFunction``, whose dispatch state it uses."""

from __future__ import annotations

import time
from typing import Any

from stax.ir import tree_leaves
from stax.trace import Outcome

from . import config, devices, logs
from .code_changes import current
from .gate_checks import GateMismatch
from .generic import entry_key, sizes_entry
from .key_entry import eager_entry
from .lifted_first_runs import Unstable
from .replay_costs import call_key
from .runners import guarded_entry, keep_updates_of_a_failed_call
from .signature import numpy_scalar_dtype, signature
from .sized_entries import sized_entry
from .versions import Version, first_for_its_key, limit_warning

#: versions of one key replaying the same gates, differing in a number read from the data, past
#: which the key runs eagerly (``OtherBranches._gates_keep_changing``)
CHANGING_GATES = 3
#: ... and versions of one key for outcomes of branches alone: past them, eager from now on
CHANGING_BRANCHES = 6


#: versions left under the limit when a loop over a changing count is lifted at any count
SPARE_VERSIONS = 2
#: keys whose capture raised, kept to run eagerly until a call returns (``_capture_raised``)
MAX_RAISING_KEYS = 64


class OtherBranches:
    """``_gates_failed`` for ``CompiledFunction._run``: the attributes named here are its, and
    so are the methods called on ``self`` (``_run``, ``_lookup``, ``_miss``,
    ``_captured_result``)."""

    _by_sigma: dict[Any, list[Version]]
    _by_layout: dict[Any, list[Version]]
    _hits: dict[int, int]
    _hit_level: int
    _last: tuple[Any, list[Version]]
    _compile_lock: Any
    _name: str
    _versions: list[Version]
    _eager: Any
    _traced_function: Any
    _plain: Any
    _run: Any
    _dispatch: Any
    _install: Any
    _recent: Any
    _misses: int
    _fallbacks: int
    _compiles: int
    _limit_warned: bool
    limits: Any
    strict_native: bool
    _sets_errstate: bool
    _raising: dict[Any, None]

    def _gates_failed(self, version: Version, args: tuple[Any, ...], kwargs: dict[str, Any],
                      other_branches: bool, error: Exception | None = None) -> Any:
        """``version`` ran, and its gates say another branch: try the others. A version whose
        program disagreed on the very first call it served (the inputs it was traced on) has
        gate values that are not NumPy's, a compiler defect: its gates are replayed from then
        on, instead of a new version compiled at every call until the limit."""
        check = version.gate_check
        if check is not None and check.active and not check.passed:
            check.active = False
            logs.emit("perf", config.current().logs, f"{self._name} v{version.index}: the "
                      "program's gate values differ from NumPy's on the inputs it was traced on; "
                      "its gates are replayed from now on")
            if version.gates is not None and version.gates.matches(tree_leaves((args, kwargs))):
                return self._run(version, args, kwargs, other_branches)
        if not other_branches:
            raise GateMismatch("a data gate took another branch", getattr(error, "outcomes", None))
        return self._other_branch(version, args, kwargs, error)

    def _other_branch(self, tried: Version, args: tuple[Any, ...], kwargs: dict[str, Any],
                      error: Exception | None = None) -> Any:
        """The version whose gates hold (then tried first for its key), or a new one traced on
        this call (looked for again under the compile lock: another thread may have made it)."""
        sigma, skipped = signature(args, kwargs, self._names), {id(tried)}
        self._skip_by_outcomes(tried, error, skipped)
        if self._hit_level:  # counted for ``tried``, which did not apply (0: a miss made it)
            self._hits[self._hit_level] -= 1
        while True:
            found = self._lookup(sigma, args, kwargs, skipped)
            counted = found is not None  # a level-3 hit, taken back if it does not apply
            if found is None:
                with self._compile_lock:
                    found = self._lookup(sigma, args, kwargs, skipped)
                    counted = found is not None
                    changing = None if found is not None else \
                        self._gates_keep_changing(tried, sigma)
                    if changing is not None:
                        found = self._eager_from_now_on(tried, sigma, changing)
                    if found is None and self._at_limit():  # no version is compiled for it
                        self._eager_at_limit(sigma)
                        first = self._by_sigma.get(sigma, [None])[0]
                        found = first if first is not None and not first.native else None
                    if found is None:
                        found = self._miss(sigma, args, kwargs, outcome := Outcome())
                        if not found.native:
                            return self._captured_result(found, args, kwargs, outcome, None)
            try:
                result = self._run(found, args, kwargs, other_branches=False)
            except GateMismatch as mismatch:
                if counted:
                    self._hits[3] -= 1
                skipped.add(id(found))
                self._skip_by_outcomes(found, mismatch, skipped)
                continue
            with self._compile_lock:  # ``_miss`` appends to these lists under it
                first_for_its_key(self._by_sigma, self._by_layout, sigma, found)
            self._last = (None, [])
            return result

    def _timed_eager(self, version: Version, args: tuple[Any, ...], kwargs: dict[str, Any]
                     ) -> Any:
        """This call run eagerly and timed; once timed enough, the key runs eagerly from now
        on where replaying the version's gates made its calls slower (``replay_costs``)."""
        costs = version.replay_costs
        fn = self._traced_function() if devices.device_leaf(tree_leaves((args, kwargs))) is None \
            else None  # the function's own time, not that of Stax's eager path around it
        start = time.perf_counter()
        result = fn(*args, **kwargs) if fn is not None else self._eager(args, kwargs)
        costs.add("eager", time.perf_counter() - start, call_key(args, kwargs))
        slower = costs.slower_than_eager()
        if slower is not None:
            summary = costs.summary(version.replays_gates)
            kept = slower and version.generic is not None and costs.counts_vary()
            logs.emit("perf", config.current().logs, f"{self._name} v{version.index}: "
                      f"{summary}" + ("; kept: its calls differ in a count (slower at the "
                                      "counts timed, a run's fixed cost; faster where a call "
                                      "runs more items)" if kept else
                                      "; its key runs eagerly" if slower else ""))
            if slower and not kept:
                with self._compile_lock:
                    self._eager_from_now_on(version, version.sigma, summary, slower=True)
                    version.slower = True  # (a generic version's other keys too: their
                    version.eager_key = entry_key(  # types compared, not a scalar's value)
                        version.sigma, version.pattern, version.generic)
        return result

    def _gates_keep_changing(self, tried: Version, sigma: Any) -> str | None:
        """Why this key's gates are new at almost every call on new data, so that each version
        compiled for them would serve few calls, or None: its versions replaying the gates of
        ``tried`` are already ``CHANGING_GATES`` and differ in a gate that is a number read
        from the data (a count of NaNs, a size of a selection); or its versions have gates of
        ``CHANGING_GATES`` different numbers (a loop's exit tested per item), or are
        ``CHANGING_BRANCHES`` for branch outcomes alone."""
        gates = tried.gates
        if gates is None or not gates.fingerprint:
            return None
        # the same gates: the same graph, or the same kinds of gates in the same order (a
        # selection's size read by later gates is a constant of their graph, which then differs
        # at every call: k-means' ``if m.any(): C[c] = X[m].mean(0)`` compiled eight versions,
        # then tried all eight at every call, 70x NumPy's time)
        gated = [v.gates for v in self._by_sigma.get(sigma, ()) if v.gates is not None]
        if len({repr(g.kinds) for g in gated}) >= CHANGING_GATES:
            return f"its data decide how many gates it has (a loop's exit tested per item: " \
                   f"{len(gated)} versions compiled for it)"
        if len(gated) >= CHANGING_BRANCHES:
            return f"its branches take new outcomes ({len(gated)} versions compiled for them)"
        alike = [g.expected for g in gated
                 if g.fingerprint == gates.fingerprint or g.kinds == gates.kinds]
        if len(alike) >= CHANGING_GATES and any(
                kind != "bool" and len({repr(e[k]) for e in alike}) > 1
                for k, kind in enumerate(gates.kinds)):
            return f"its data gates take a new value at each call (a number read from the " \
                   f"data; {CHANGING_GATES} versions compiled for it)"
        return None

    def _entry_run(self, version: Version, user: int = 0) -> Any:
        """What a version's key entry runs: the version, whose run takes another branch where
        its gates, checked in its program, say so; the dispatcher where they are replayed
        (``Version.gates_in_program`` can turn off: their values were not NumPy's), with the
        call's own arguments (from ``user`` on: the free and lifted arrays before them are the
        dispatcher's to read)."""
        def run(*args: Any) -> Any:
            if not version.replays_gates:
                self._hit_level = 1  # (the entry's hit: taken back where another branch runs)
                return self._run(version, args, {})
            return self._dispatch(*args[user:])
        return run

    def _eager_function(self, sigma: Any) -> Any:
        """What an eager entry of a key with no free values calls: the function itself where
        the key has no object arrays (the wrapper placing them cost 0.7 us a call)."""
        positional = sigma[0] if isinstance(sigma, tuple) and sigma else ()
        if any(isinstance(leaf, tuple) and leaf and leaf[0] == "lifted attributes"
               for leaf in positional):
            return self._traced_function()
        return self._plain  # (keyword-only values given back as keywords)

    def _declined(self, version: Version, exc: Exception) -> None:
        """A call ``version`` declined (it then ran eagerly). A generic version whose lifted
        loop found a local the body binds other than at capture (``Unstable``: ``j`` after an
        inner ``range(m)`` of a run-time ``m``) declines every other value the same way: its
        key runs eagerly from now on (each call ran the loop to find it out, 8x NumPy)."""
        version.declined(own_errstate=self._sets_errstate)
        self._recent.clear()  # (its entries: the dispatcher decides how such calls run now)
        if version.generic is not None and isinstance(exc.__cause__, Unstable):
            version.slower = True
            version.eager_key = entry_key(version.sigma, version.pattern, version.generic)

    def _count_changed(self, sigma: Any) -> bool:
        """Whether all but ``SPARE_VERSIONS`` of the version limit are taken by versions whose
        keys differ from ``sigma`` only in the values of int arguments (a loop count,
        ``range(nsteps)``, that keeps changing): the capture then lifts the loops over such a
        count (``loops.lifting_counted_loops``), one version for every further count, where
        each new count was eager past the limit. The counts before keep their unrolled versions
        (a few microseconds a call, against a lifted loop's 35 or so: a function called with a
        few counts in turn never lifts)."""
        positional, keywords = sigma
        alike = 0
        for version in self._versions:
            other, other_keywords = version.sigma
            if len(other) != len(positional) or other_keywords != keywords:
                continue
            changed = [(a, b) for a, b in zip(positional, other) if a != b]
            if changed and all(_int_leaves(a, b) for a, b in changed):
                alike += 1
        return alike >= max(2, self.limits.max_versions - SPARE_VERSIONS)

    def _at_limit(self) -> bool:
        return len(self._versions) >= self.limits.max_versions or \
            self._compiles >= self.limits.max_compiles

    def _warn_limit(self, sigma: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not self._limit_warned:
            self._limit_warned = True
            logs.warn(limit_warning(self._name, self.limits, self._versions, sigma, args, kwargs))

    def _past_limit(self, sigma: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                    placement: Any) -> Any:
        """A call no version of a function past its version limit serves: eager, without the
        miss's rescan of free variables (125 us a call) or a capture."""
        self._misses += 1
        self._fallbacks += 1
        self._warn_limit(sigma, args, kwargs)
        if any(v.gates is not None for v in self._by_sigma.get(sigma, ())):
            with self._compile_lock:  # its gates failed every version: eager from now on,
                self._eager_at_limit(sigma)  # not every version's replay at every call
        elif placement is None and not self._free:  # new scalar values again and again:
            found = self._generic.past_limit(sigma, self._versions)  # an eager entry comparing
            entry = eager_entry(self._eager_function(sigma), found[0], self._dispatch,  # their
                                found[1:]) if found is not None else None  # types
            if entry is not None:
                self._install(entry.function)
        return self._eager(args, kwargs) if placement is not None else \
            self._traced_function()(*args, **kwargs)  # no device array among them

    def _eager_at_limit(self, sigma: Any) -> None:
        """Past the version limit, a key none of whose versions' gates held this call: its
        calls run eagerly from now on (each would otherwise replay every version's gates, 8
        replays of a loop's per-iteration gates: 380 us a call for NumPy's 17)."""
        versions = self._by_sigma.get(sigma, ())
        gated = [v for v in versions if v.gates is not None]
        if gated and versions[0].native:  # (an eager version put first already answers)
            self._eager_from_now_on(gated[-1], sigma, "the version limit is reached and its "
                                    "data gates took outcomes no version was compiled for")

    def _enter(self, version: Version, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Make the entry of the calls like this one that ``version`` runs the next call's:
        its machine-code (or key) entry; a size-generic version's entry for these sizes, where
        its calls pass scalars too a key entry around it (``sized_entries.sized_entry``, kept per
        layout on the version)."""
        if version.entry is not None and current(self, version):  # level 1 in machine code
            self._install(self._guarded(version, version.entry.function))
            return
        if version.generic is None or kwargs or not current(self, version):
            return
        if version.plain_entries and version.sized_entries is None:
            entry = version.generic.entry_for(args, self._dispatch, lambda a: sizes_entry(  # these
                a, self._names, lambda *b: self._run(version, b, {}), self._dispatch))  # sizes' own
            if entry is not None:  # (guarded too: a global rebound since ran the old one)
                self._install(self._guarded(version, entry.function))
                return
        if version.sized_entries is not None:
            entry = sized_entry(version, args, self._names,
                                lambda *b: self._run(version, b, {}, entered=True),
                                self._dispatch, self._versions)
            if entry is not None:  # (behind its free values' guard: ``range`` itself is one)
                self._install(self._guarded(version, entry.function))

    def _guarded(self, version: Version, entry: Any) -> Any:
        """``entry``, behind a check of the free values ``version`` was traced under, if any."""
        return entry if version.free is None else \
            guarded_entry(entry, version.free, self._dispatch)

    def _capture_raised(self, sigma: Any, outcome: Any, placement: Any, error: Exception,
                        args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """The function raised its own error while it was captured for key ``sigma`` (a
        validator's ``ValueError``, NumPy's ``TypeError`` of a bool subtraction): its updates
        are kept (``keep_updates_of_a_failed_call``) and the key's next calls run eagerly until
        one returns (``_eager_while_raising``), where each was captured again, to raise again
        (0.8-2.8 ms a call for NumPy's 1 us: a ``try``/``except`` loop)."""
        keep_updates_of_a_failed_call(outcome, placement, error, lambda: self._eager(args, kwargs))
        if not self.strict_native:  # (there every call is captured: nothing runs eagerly)
            self._raising[sigma] = None
            while len(self._raising) > MAX_RAISING_KEYS:
                self._raising.pop(next(iter(self._raising)), None)  # (another thread may pop)

    def _eager_while_raising(self, sigma: Any) -> Version | None:
        """For a call of a key that has no version: an eager one where its capture raised the
        function's own error, until a call returns (the next is captured); else None."""
        if sigma not in self._raising:
            return None

        def until_it_returns(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            result = self._eager(args, kwargs)
            self._raising.pop(sigma, None)  # returned: the data let it through
            return result
        return Version(-1, sigma, until_it_returns, native=False,
                       reason="its capture raised the function's own error")

    def _eager_if_gates_keep_changing(self, sigma: Any) -> Version | None:
        """For a call whose key has versions but none whose gates hold (their replays said so,
        not a program): the eager version from now on where those gates keep changing
        (``_gates_keep_changing`` of the latest), else None (a new version is compiled)."""
        if self.strict_native:  # never eager: a version for each outcome, up to the limit
            return None
        gated = [v for v in self._by_sigma.get(sigma, ()) if v.gates is not None]
        changing = self._gates_keep_changing(gated[-1], sigma) if gated else None
        if changing is not None:
            return self._eager_from_now_on(gated[-1], sigma, changing)
        return None

    def _eager_from_now_on(self, tried: Version, sigma: Any, reason: str,
                           slower: bool = False) -> Version:
        """An eager version put first for this key: its calls run as NumPy at the cost of the
        key's lookup (not of a version's program that computes the gates to find they differ
        again), said once, with ``reason``. ``slower``: the key's replayed gates made its calls
        slower than eager ones (``replay_costs``), as measured."""
        eager = Version(-1, sigma, self._eager, native=False, reason=reason)
        self._by_sigma[sigma].insert(0, eager)  # the layout's list too: the same list
        self._recent.clear()
        self._call = self._dispatch  # not the entry of a version of this key: the next call
        # finds the eager version first (and installs its own entry, ``key_entry.answers_its_key``)
        hint = "" if slower or "number" not in reason else \
            "; stax.runtime.gate(...) keeps such a value out of the key"
        logs.warn(f"stax: {self._name} runs eagerly for this signature from now on: {reason}"
                  f"{hint}")
        return eager

    def _skip_by_outcomes(self, tried: Version, error: Exception | None, skipped: set[int]
                          ) -> None:
        """The program of ``tried`` computed this call's gate outcomes (``GateMismatch.outcomes``):
        every version whose gates replay the same graph (``GateReplay.fingerprint``) and expect
        other outcomes does not apply either, and is not run to find that out (a NaN count as
        a gate: each of eight versions ran the whole program before the call went eager)."""
        got = getattr(error, "outcomes", None)
        if got is None or tried.gates is None or not tried.gates.fingerprint:
            return
        for version in list(self._versions):
            gates = version.gates
            if gates is not None and gates.fingerprint == tried.gates.fingerprint and \
                    not gates.expects(got):
                skipped.add(id(version))

    def _gate_mismatch(self, version: Version, error: Exception, args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> GateMismatch | None:
        """Whether ``version`` declined this call because its gates took another branch: its
        program said so, or a NumPy step's result differed from capture's and the gates,
        replayed, disagree (the mismatch then carries the replayed outcomes)."""
        if isinstance(error, GateMismatch):
            return error
        if not version.gates_in_program or version.gates is None:
            return None
        got = version.gates.outcomes(tree_leaves((args, kwargs)))
        if version.gates.expects(got):
            return None
        return GateMismatch("a data gate took another branch", got)


def _int_leaves(a: Any, b: Any) -> bool:
    """Whether two key leaves are ints of one kind: Python ints, or NumPy integers of one dtype
    (``(type name, dtype, bytes)``: a count read from an array, ``np.int64(n)``)."""
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == "int" == b[0]:
        return True
    dtype = numpy_scalar_dtype(a)
    return dtype is not None and dtype.kind in "iu" and isinstance(b, tuple) and a[:2] == b[:2]
