"""The target of each device: how the runtime picks a backend without knowing its modules."""

from __future__ import annotations

from .cpu.target import cpu_target
from .target import Target

DEVICES = ("cpu",)


def target_for(device: str) -> Target:
    """The target that compiles for ``device`` (made on first use)."""
    if device == "cpu":
        return cpu_target()
    raise ValueError(f"no target for device {device!r}; known devices: {', '.join(DEVICES)}")
