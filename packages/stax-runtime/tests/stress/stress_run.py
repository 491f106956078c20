"""Running a stress program compiled and eagerly, and comparing everything a caller can observe.

For every call of a program: build the arguments and free variables three times (eager, compiled,
probe), run the eager function and the compiled one under the call's ``np.errstate``, and compare

- results: the same tree of containers, the same types, dtypes and shapes; exact values bit for bit
  (signed zeros too), inexact ones within the error bound the probe computes (``stress_ops``);
- argument side effects: every array argument (container elements and attributes included) after
  the call, and every array free variable (which the program never writes: it must be unchanged);
- random streams: the ``rng`` argument's state, and NumPy's global state, after the call;
- exceptions: the same type where eager raises;
- warnings (category and message, as a set) when the ``errstate`` strategy is on.

The probe is a second copy of the function that records each step's operands and result, from which
the error bound of every inexact value is computed.

``python stress_run.py replay FILE [--warnings]`` runs a program saved as JSON (the last part of a
failure's report) and prints what differs. A crash leaves no report: the program that was running
is in ``LAST_PROGRAM`` (``$STAX_STRESS_LAST``, else ``stax-stress-last-program.json`` in the
temporary directory).
"""

from __future__ import annotations

import copy
import logging
import os
import sys
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import stress_flags as flags
import stress_ops as ops
from stress_program import Call, Program, State

import stax.runtime as stax

ERRSTATES = {
    "default": {"all": "warn", "under": "ignore"},
    "raise": {"all": "raise", "under": "ignore"},
    "ignore": {"all": "ignore"},
    "divide": {"divide": "raise", "over": "warn", "invalid": "ignore", "under": "ignore"},
}

#: what the suite ran, for the terminal summary (conftest.py)
STATS: Counter[str] = Counter()
REASONS: Counter[str] = Counter()


class Loaded:
    """A program's module: its function, probe and the setter of its closure cells."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.module: dict[str, Any] = {"__name__": f"stress_program_{program.seed}"}
        exec(compile(program.source(), f"<stress program {program.seed}>", "exec"), self.module)
        self.prog, self.probe, self.update = self.module["make"](*[None] * len(program.cells()))
        self.state = State(program, self.module)

    def prepare(self, call: Call) -> tuple[Any, ...]:
        """Build a call's values, bind the free variables, return the arguments."""
        args, globals_, cells = self.state.build(call)
        self.module.update(globals_)
        self.update(*cells)
        if self.program.global_random:
            np.random.seed(call.seed % 2**32)
        return args


def run_call(fn: Any, args: tuple[Any, ...], errstate: str) -> tuple[Any, BaseException | None, set[Any]]:
    with warnings.catch_warnings(record=True) as caught, np.errstate(**ERRSTATES[errstate]):
        warnings.simplefilter("always")
        try:
            out, exc = fn(*args), None
        except Exception as e:
            out, exc = None, e
    return out, exc, {(w.category.__name__, str(w.message)) for w in caught}


def observe(program: Program, args: tuple[Any, ...], loaded: Loaded) -> dict[str, Any]:
    """What a caller sees after a call besides the result: arguments, free arrays, streams."""
    ns = dict(zip(program.params(), args))
    seen: dict[str, Any] = {}
    for leaf in program.leaves:
        owner = next(o for o in program.owners if o.name == leaf.owner)
        if leaf.kind != "array":
            continue
        where = ns if owner.where == "arg" else loaded.module if owner.where == "global" else None
        if where is None:  # a cell: read through the function's closure
            cells = dict(zip(loaded.prog.__code__.co_freevars, loaded.prog.__closure__ or ()))
            if leaf.owner not in cells:
                continue
            where = {leaf.owner: cells[leaf.owner].cell_contents}
        seen[leaf.ref] = np.array(eval(leaf.ref, {"np": np}, where), copy=True)
    if "rng" in ns:
        seen["rng state"] = copy.deepcopy(ns["rng"].bit_generator.state)
    if program.global_random:
        state = np.random.get_state()
        seen["np.random state"] = (state[0], state[1].tolist(), *state[2:])
    return seen


@dataclass
class Outcome:
    """What a caller observes of one call."""

    result: Any
    exc: BaseException | None
    warnings: set[Any]
    seen: dict[str, Any]  # arguments, free arrays and random states after the call


@dataclass
class Expected:
    outcome: Outcome
    errors: list[float]  # per value id: how far a compiled value may lie from eager's


class Check:
    """Runs one program and collects what differs from eager NumPy."""

    def __init__(self, program: Program, *, warnings_too: bool,
                 scalar_types: bool | None = None) -> None:
        self.program = program
        self.warnings_too = warnings_too
        # a NumPy scalar result must come back as that type (else its value in another scalar
        # type passes): the scalar_types strategy
        self.scalar_types = flags.enabled("scalar_types") if scalar_types is None else scalar_types
        self.problems: list[str] = []

    def run(self) -> list[str]:
        program = self.program
        quiet = logging.getLogger("stax")
        level, quiet.level = quiet.level, logging.CRITICAL
        try:
            loaded = Loaded(program)
            if not program.late_binding:  # free variables bound when compile() runs
                loaded.prepare(program.calls[0])
            compiled = stax.compile(loaded.prog)
            for k, call in enumerate(program.calls):
                self._call(loaded, compiled, k, call)
                if self.problems:
                    break
        finally:
            quiet.level = level
        self._count(compiled)
        return self.problems

    def _count(self, compiled: Any) -> None:
        if not isinstance(compiled, stax.CompiledFunction):  # the harness's own tests
            return
        STATS["programs"] += 1
        STATS["calls"] += len(self.program.calls)
        STATS["failed programs"] += bool(self.problems)
        for version in compiled.versions():
            STATS["versions native" if version.native else "versions eager"] += 1
            if not version.native and version.reason:
                reason = version.reason.split(" at ")[0]
                # an internal error whole (it names the rule or pass at fault), the rest cut
                REASONS[reason if "internal compiler error" in reason else reason[:90]] += 1
        STATS["fallback calls"] += compiled.cache_info().fallbacks

    def _call(self, loaded: Loaded, compiled: Any, k: int, call: Call) -> None:
        expected = self.expect(loaded, call)
        args = loaded.prepare(call)
        got, got_exc, got_warn = run_call(compiled, args, call.errstate)
        self.verify(expected, Outcome(got, got_exc, got_warn, observe(self.program, args, loaded)),
                    f"call {k} (seed {call.seed}, shape {call.shape}, errstate {call.errstate})")

    def expect(self, loaded: Loaded, call: Call) -> Expected:
        """Eager NumPy's outcome of a call, and the error bound of every value."""
        args = loaded.prepare(call)
        want, want_exc, want_warn = run_call(loaded.prog, args, call.errstate)
        outcome = Outcome(want, want_exc, want_warn, observe(self.program, args, loaded))
        return Expected(outcome, self._bounds(loaded, call) if want_exc is None else [])

    def verify(self, expected: Expected, got: Outcome, where: str) -> None:
        """Record everything that differs between the compiled call's outcome and eager's."""
        program, want, errors = self.program, expected.outcome, expected.errors
        if want.exc is not None or got.exc is not None:
            STATS["calls raising"] += 1
            if want.exc is None or got.exc is None or not isinstance(got.exc, type(want.exc)):
                self.problems.append(f"{where}: eager {want.exc!r}, compiled {got.exc!r}")
            return
        self._compare(got.result, want.result, program.ret, errors, f"{where}: result")
        got_seen, want_seen = dict(got.seen), dict(want.seen)
        for leaf, *writers in program.effects:
            ref = program.leaves[leaf].ref
            bound = max((errors[w] for w in writers), default=0.0)
            exact = all(program.exact[w] for w in writers)
            self._leaf(got_seen.pop(ref), want_seen.pop(ref), exact, bound,
                       f"{where}: argument {ref} after the call")
        for key in sorted(set(want_seen) | set(got_seen)):
            if key in ("rng state", "np.random state"):
                if got_seen.get(key) != want_seen.get(key):
                    self.problems.append(f"{where}: {key} differs after the call")
            else:
                self._leaf(got_seen.get(key), want_seen.get(key), True, 0.0,
                           f"{where}: {key} after the call")
        if self.warnings_too and got.warnings != want.warnings:
            self.problems.append(f"{where}: warnings: eager {sorted(want.warnings)}, compiled "
                                 f"{sorted(got.warnings)}")

    def _bounds(self, loaded: Loaded, call: Call) -> list[float]:
        """Each value's error bound on this call, from the probe's record of every step."""
        record: dict[tuple[int, str], Any] = {}

        def rec(index: int, what: str, value: Any) -> None:
            record[index, what] = copy.deepcopy(value)

        args = loaded.prepare(call)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            loaded.probe(*args, rec)
        errors = [0.0] * self.program.n_values
        for i, step in enumerate(self.program.steps):
            if self.program.exact[step.out]:
                continue
            with np.errstate(all="ignore"):
                bound = ops.RULES[step.rule]([errors[o] for o in step.operands],
                                             list(record[i, "in"]), record[i, "out"], step.extra)
            errors[step.out] = float(bound) if np.isfinite(bound) else float("inf")
        return errors

    def _compare(self, got: Any, want: Any, tree: Any, errors: list[float], where: str) -> None:
        if isinstance(tree, int):
            self._leaf(got, want, self.program.exact[tree], errors[tree], where)
            return
        kind, items = tree
        if type(got) is not type(want):
            self.problems.append(f"{where}: {type(got).__name__} instead of {type(want).__name__}")
            return
        if kind == "dict":
            if list(got) != list(want):
                self.problems.append(f"{where}: keys {list(got)} instead of {list(want)}")
                return
            for key, sub in items:
                self._compare(got[key], want[key], sub, errors, f"{where}[{key!r}]")
            return
        if len(got) != len(want):
            self.problems.append(f"{where}: {len(got)} items instead of {len(want)}")
            return
        for j, sub in enumerate(items):
            self._compare(got[j], want[j], sub, errors, f"{where}[{j}]")

    def _leaf(self, got: Any, want: Any, exact: bool, bound: float, where: str) -> None:
        if not self.scalar_types and isinstance(want, np.generic) and \
                isinstance(got, (bool, int, float, np.ndarray)) and np.ndim(got) == 0:
            got = want.dtype.type(got)  # the same value in another scalar type: not compared
        problem = leaf_difference(got, want, exact, bound)
        if problem:
            self.problems.append(f"{where}: {problem}")


def leaf_difference(got: Any, want: Any, exact: bool, bound: float) -> str | None:
    """Why ``got`` is not ``want`` (None when it is): type, dtype, shape, then values."""
    if type(got) is not type(want):
        return f"type {type(got).__name__} instead of {type(want).__name__}"
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype != w.dtype or g.shape != w.shape:
        return f"{g.dtype}{list(g.shape)} instead of {w.dtype}{list(w.shape)}"
    if w.dtype.kind != "f":
        if not np.array_equal(g, w):
            return f"values differ at {_where(g != w)}: got {g[g != w][:4]}, eager {w[g != w][:4]}"
        return None
    nan = np.isnan(w)
    if not np.array_equal(np.isnan(g), nan):
        bad = np.isnan(g) != nan
        return f"NaN at other places {_where(bad)}: got {g[bad][:4]}, eager {w[bad][:4]}"
    if exact:
        same = (g == w) | nan
        same &= (np.signbit(g) == np.signbit(w)) | nan
        if not same.all():
            return (f"not bit-exact at {_where(~same)}: got {g[~same][:4].tolist()}, "
                    f"eager {w[~same][:4].tolist()}")
        return None
    finite = np.isfinite(w) & np.isfinite(g)
    if not np.array_equal(np.isfinite(g), np.isfinite(w)) or not np.array_equal(g[~finite & ~nan],
                                                                                  w[~finite & ~nan]):
        bad = (g != w) & ~finite & ~nan
        return f"Inf at other places {_where(bad)}: got {g[bad][:4]}, eager {w[bad][:4]}"
    tolerance = 2 * bound + 4 * float(np.finfo(w.dtype).smallest_subnormal)
    diff = np.abs(g[finite].astype(np.float64) - w[finite].astype(np.float64))
    if diff.size and diff.max() > tolerance:
        j = int(diff.argmax())
        return (f"off by {diff.max():.3g} > bound {tolerance:.3g}: got {g[finite][j]!r}, "
                f"eager {w[finite][j]!r}")
    return None


def _where(mask: np.ndarray) -> list[Any]:
    return [tuple(int(i) for i in ix) for ix in np.argwhere(mask)[:4]] if mask.ndim else [()]


#: the program running now: after a crash (no Python left to report it), replay this file
LAST_PROGRAM = Path(os.environ.get("STAX_STRESS_LAST") or
                    Path(tempfile.gettempdir()) / "stax-stress-last-program.json")


def check(program: Program, *, warnings_too: bool = False) -> None:
    """Assert that a program agrees with eager NumPy on every call, with a reproducer if not."""
    LAST_PROGRAM.write_text(program.to_json())
    problems = Check(program, warnings_too=warnings_too).run()
    if problems:
        raise AssertionError(report(program, problems))


def report(program: Program, problems: list[str]) -> str:
    leaves = "\n".join(f"  {leaf.ref}: {leaf.kind} {leaf.dtype} {leaf.shape} {leaf.layout} "
                       f"(changes: {leaf.change}{', alias ' + str(leaf.alias) if leaf.alias else ''})"
                       for leaf in program.leaves)
    return ("stress program differs from eager NumPy:\n  " + "\n  ".join(problems[:6])
            + f"\n\n{program.program_text()}\n\nleaves:\n{leaves}\n\nreplay: python stress_run.py "
            f"replay FILE, with FILE holding:\n{program.to_json()}\n")


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "replay":
        with open(sys.argv[2]) as f:
            prog = Program.from_json(f.read())
        print(prog.source())
        found = Check(prog, warnings_too=sys.argv[3:] == ["--warnings"]).run()
        print("\n".join(found) or "agrees with eager NumPy")
        sys.exit(1 if found else 0)
    sys.exit("usage: python stress_run.py replay FILE [--warnings]")
