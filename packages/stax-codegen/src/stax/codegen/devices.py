"""The target of each device: how the runtime picks a backend without knowing its modules."""

from __future__ import annotations

from .cpu.target import cpu_target
from .target import Target
from .triton.target import triton_target

#: the devices the runtime compiles for end to end (``stax.compile(device=...)``; without it the
#: device follows the data: NumPy arrays the CPU, torch CUDA tensors and CuPy arrays ``cuda``)
DEVICES = ("cpu", "cuda")
#: the devices with a target
TARGET_DEVICES = ("cpu", "cuda")


def target_for(device: str) -> Target:
    """The target that compiles for ``device`` (made on first use): ``cpu`` the host's LLVM
    kernels, ``cuda`` Triton kernels (``triton/target.py``; Triton itself is needed only to run
    them, ``triton/executable.py``)."""
    if device == "cpu":
        return cpu_target()
    if device == "cuda":
        return triton_target()
    raise ValueError(f"no target for device {device!r}; known devices: {', '.join(TARGET_DEVICES)}")
