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

#: the version's replayed calls (counted from 1) that run eagerly, timed
EAGER_CALLS = (3, 6)
#: compiled calls timed before the decision
COMPILED_SAMPLES = 3
#: the compiled calls (their median) slower than the eager ones (the fastest) by this factor:
#: eager (the median: a call may miss its replay's time, the first after a capture does)
SLOWER = 1.25


@dataclass
class ReplayCosts:
    """The timings of one version's calls with replayed gates, in seconds."""

    calls: int = 0
    compiled: list[float] = field(default_factory=list)
    eager: list[float] = field(default_factory=list)
    decided: bool = False

    def next_call(self) -> str | None:
        """How this call runs: "eager" (timed), "compiled" (timed) or None (not timed)."""
        if self.decided:
            return None
        self.calls += 1
        if self.calls == 1:  # the first after the compile runs cold (its code, its memory)
            return None
        return "eager" if self.calls in EAGER_CALLS else "compiled"

    def slower_than_eager(self) -> bool | None:
        """Whether the compiled calls are slower than eager ones; None until both are timed
        (then the decision is made once)."""
        if len(self.eager) < len(EAGER_CALLS) or len(self.compiled) < COMPILED_SAMPLES:
            return None
        self.decided = True
        return self._compiled() > SLOWER * min(self.eager)

    def _compiled(self) -> float:
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
