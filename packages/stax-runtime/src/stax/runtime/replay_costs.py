"""When a version's call costs more than the function's eager run: measured, per key, and the
key then runs eagerly.

A version whose gates the program cannot check (a value read into Python, a slice whose bits the
kernels may round otherwise) replays their slice in the NumPy reference interpreter before every
call (``gates.GateReplay``), then runs its program. Where the slice is most of the function — a
greedy loop reading ``int(np.argmax(s))`` forty times, a selection's first element — the replay
alone costs several eager calls (1-D non-maximum suppression: 1.7 ms against NumPy's 0.2). Such a
version's calls are timed (replay and program), two of them run eagerly instead and are timed
too (their results are eager's: any call may run so), and where the compiled calls took more
than ``SLOWER`` times the eager ones, the key runs eagerly from then on, said once
(``STAX_LOGS=perf`` prints the times).

The same holds for a version without a machine-code entry whose program has NumPy steps: its
call goes through the Python runner (a few microseconds of allocation, error-state recording
and kernel launches around the steps), which decides it against NumPy where the steps are the
work (``np.linalg.solve`` of an 8x8 system and three element-wise operations: 11 us, NumPy 7.5).
A version whose gates the program checks is timed so too where it has NumPy steps (gradient
clipping of 16 floats, its float sum a NumPy step: 10.8 us a call, NumPy 1.5). A version whose
calls its machine-code entry takes, on a device, or of only kernels is not timed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: the version's replayed calls (counted from 1) that run eagerly, timed; the last decides
EAGER_CALLS = (3, 8)
#: compiled calls timed before the decision (calls 2, 4-7): the first calls after a capture
#: may each take several times a steady one (a lifted loop's halving `while` loop, 3,000
#: elements: 88, 386 and 241 us, then 50-60 us, the eager ones 140), so the median of five
COMPILED_SAMPLES = 5
#: the compiled calls (their median) slower than the eager ones (the fastest) by this factor:
#: eager (the median: a call may miss its replay's time, the first after a capture does)
SLOWER = 1.25
#: a version the first look keeps is looked at again once warm: from call ``WARM_FROM`` its
#: calls are timed, those of ``WARM_EAGER_CALLS`` eagerly, and the fastest compiled call
#: slower than the fastest eager one by ``WARM_SLOWER`` makes the key eager. Cold calls of
#: both kinds take up to twice their steady time, too noisy for a 1.4x difference (Jacobi
#: iterations on a 60x60 system: 64 us a call compiled, 45 eager; its first calls 73-162 us
#: against eager's 78-95). Seven eager calls: an eager call among compiled ones runs on caches
#: they left, and the fastest of three was 166 us for Gauss-Seidel sweeps whose eager calls
#: take 145 in a row (compiled 172: kept, 0.86x NumPy; with seven, 152: eager)
WARM_FROM = 20
WARM_EAGER_CALLS = (22, 25, 28, 31, 34, 37, 40)
WARM_SLOWER = 1.05


@dataclass
class ReplayCosts:
    """The timings of one version's calls with replayed gates, in seconds: a first look over
    its first calls, then (where that kept it) a second over warm ones. Each time comes with
    its call's ``call_key``: only calls alike are compared (a generic version's calls of other
    sizes or loop counts do other work: a lifted time-stepping loop judged at 8-14 steps, 38 us
    against eager's 31, ran every later count eagerly, 100 steps 5.4x slower than compiled)."""

    calls: int = 0
    compiled: list[float] = field(default_factory=list)
    eager: list[float] = field(default_factory=list)
    compiled_keys: list[Any] = field(default_factory=list)
    eager_keys: list[Any] = field(default_factory=list)
    decided: bool = False
    warm: bool = False  # the second look: its samples replace the first's

    def next_call(self) -> str | None:
        """How this call runs: "eager" (timed), "compiled" (timed) or None (not timed)."""
        if self.decided:
            return None
        self.calls += 1
        if not self.warm and self.calls > EAGER_CALLS[-1]:  # a call declined (no sample):
            self._look_again()  # the first look could not decide, the warm one may
        if not self.warm:
            if self.calls == 1:  # the first after the compile runs cold (its code, its memory)
                return None
            return "eager" if self.calls in EAGER_CALLS else "compiled"
        if self.calls > WARM_EAGER_CALLS[-1]:  # nor could the warm one: kept, timed no more
            self.decided = True
        if self.calls < WARM_FROM or self.decided:
            return None
        return "eager" if self.calls in WARM_EAGER_CALLS else "compiled"

    def _look_again(self) -> None:
        self.warm = True
        self.compiled, self.eager, self.compiled_keys, self.eager_keys = [], [], [], []

    def add(self, how: str, seconds: float, key: Any = None) -> None:
        """A timed call's time: ``how`` it ran ("eager" or "compiled"), its ``call_key``."""
        eager = how == "eager"
        (self.eager if eager else self.compiled).append(seconds)
        (self.eager_keys if eager else self.compiled_keys).append(key)

    def slower_than_eager(self) -> bool | None:
        """Whether the compiled calls are slower than eager ones; None until a look is done
        (then the decision is made once: slower at the first look, or at the second; a look
        without alike calls of both kinds keeps the version)."""
        if self.decided:  # (two threads given one eager call: decided by the first)
            return None
        if not self.warm:
            if len(self.eager) < len(EAGER_CALLS) or len(self.compiled) < COMPILED_SAMPLES:
                return None
            compiled, eager = self._alike()
            if compiled and self._time(compiled) > SLOWER * min(eager):
                self.decided = True
                return True
            self._look_again()
            return None
        if len(self.eager) < len(WARM_EAGER_CALLS):
            return None
        self.decided = True
        compiled, eager = self._alike()
        return bool(compiled) and self._time(compiled) > WARM_SLOWER * min(eager)

    def counts_vary(self) -> bool:
        """Whether the timed calls differ in integer arguments alone (a loop count): a
        generic version then does other work per call, and slower at the counts timed
        (its fixed cost over a few steps) it may be much faster at others."""
        keys = set(self.compiled_keys) | set(self.eager_keys)
        shapes = {tuple(k if type(k) is tuple and k and type(k[0]) is not type else None
                        for k in key) for key in keys}
        return len(keys) > 1 and len(shapes) == 1

    def _alike(self) -> tuple[list[float], list[float]]:
        """The compiled and eager times of the calls whose key a call of the other kind had."""
        keys = set(self.compiled_keys) & set(self.eager_keys)
        return ([t for t, k in zip(self.compiled, self.compiled_keys) if k in keys],
                [t for t, k in zip(self.eager, self.eager_keys) if k in keys])

    def _time(self, compiled: list[float]) -> float:
        """The compiled calls' time: the fastest once warm, else the median."""
        return min(compiled) if self.warm else sorted(compiled)[len(compiled) // 2]

    def summary(self, replayed: bool) -> str:
        what = "replaying its data gates and running its program" if replayed else \
            "its program (NumPy steps and kernels, launched from Python)"
        compiled, eager = self._alike()
        if not compiled:
            compiled, eager = self.compiled, self.eager
        if not compiled:  # every compiled call timed declined (an event, a check): none stood
            return f"{what} stood in no call timed; the function itself took " \
                f"{min(eager) * 1e6:.0f} us a call"
        return (f"{what} took {self._time(compiled) * 1e6:.0f} us a call, the function itself "
                f"{min(eager) * 1e6:.0f} us")


def instances_made(version: Any) -> int:
    """The instances a size-generic version's executable made so far: a call that made one
    (the machine code of its sizes, linked) took that time too, no sample of a steady call's
    (``np.clip`` over sizes cycling 5, 7, 9: "636 us a call" for NumPy's 9, then eagerly)."""
    return getattr(version.generic, "instances_made", 0)


def call_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What makes two calls alike for timing: their arrays' shapes and their integers' values
    (sizes, loop counts); floats are taken to scale values, not work (a noise amplitude)."""
    return tuple(a.shape if isinstance(a, np.ndarray) else (type(a), a)
                 if isinstance(a, (int, np.integer)) and not isinstance(a, bool) else None
                 for a in (*args, *kwargs.values()))


def timed_against_eager(version: Any) -> bool:
    """Whether ``version``'s calls are timed against eager ones: its gates are replayed, or it
    has NumPy steps (on the CPU; a version with a machine-code entry runs through the
    dispatcher once, its later calls in the entry)."""
    if version.replays_gates:
        return True
    artifact = version.artifact
    return version.native and artifact is not None and bool(getattr(artifact, "externs", None)) \
        and getattr(artifact, "target", {}).get("device", "cpu") == "cpu"


def replayed_seconds(version: Any) -> float:
    """The time this call's dispatch spent replaying the version's gates (taken: a later call
    that replays none adds nothing), 0 for gates its program checks: a replay outside calls
    (``explain``, a check of another version) leaves a time that is not the call's (a lifted
    ``while`` loop's 120 us replay made its 50 us calls look slower than eager ones)."""
    gates = version.gates
    if gates is None:
        return 0.0
    seconds, gates.seconds = gates.seconds, 0.0
    return seconds if version.replays_gates else 0.0
