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
#: against eager's 78-95)
WARM_FROM = 20
WARM_EAGER_CALLS = (24, 30, 36)
WARM_SLOWER = 1.05


@dataclass
class ReplayCosts:
    """The timings of one version's calls with replayed gates, in seconds: a first look over
    its first calls, then (where that kept it) a second over warm ones."""

    calls: int = 0
    compiled: list[float] = field(default_factory=list)
    eager: list[float] = field(default_factory=list)
    decided: bool = False
    warm: bool = False  # the second look: its samples replace the first's

    def next_call(self) -> str | None:
        """How this call runs: "eager" (timed), "compiled" (timed) or None (not timed)."""
        if self.decided:
            return None
        self.calls += 1
        if not self.warm:
            if self.calls == 1:  # the first after the compile runs cold (its code, its memory)
                return None
            return "eager" if self.calls in EAGER_CALLS else "compiled"
        if self.calls < WARM_FROM:
            return None
        return "eager" if self.calls in WARM_EAGER_CALLS else "compiled"

    def slower_than_eager(self) -> bool | None:
        """Whether the compiled calls are slower than eager ones; None until a look is done
        (then the decision is made once: slower at the first look, or at the second)."""
        if not self.warm:
            if len(self.eager) < len(EAGER_CALLS) or len(self.compiled) < COMPILED_SAMPLES:
                return None
            if self._compiled() > SLOWER * min(self.eager):
                self.decided = True
                return True
            self.warm = True
            self.compiled, self.eager = [], []
            return None
        if len(self.eager) < len(WARM_EAGER_CALLS):
            return None
        self.decided = True
        return self._compiled() > WARM_SLOWER * min(self.eager)

    def _compiled(self) -> float:
        if self.warm:
            return min(self.compiled)
        return sorted(self.compiled)[len(self.compiled) // 2]

    def summary(self, replayed: bool) -> str:
        what = "replaying its data gates and running its program" if replayed else \
            "its program (NumPy steps and kernels, launched from Python)"
        return (f"{what} took {self._compiled() * 1e6:.0f} us a call, the function itself "
                f"{min(self.eager) * 1e6:.0f} us")


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
