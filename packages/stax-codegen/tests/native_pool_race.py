"""Back-to-back native-pool launches of varying sizes for ``argv[1]`` seconds, each checked
against the one-thread result (run by ``test_fork_safety.py`` in its own process: a hang is a
timeout, a crash an exit code). Prints ``launches N bad M``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from conftest import OpBuilder

from stax.codegen import Executable, generate
from stax.codegen.cpu import native_pool as native
from stax.codegen.cpu.jit import kernel_function
from stax.loop import lower_opgraph

n = 64
x = np.random.default_rng(0).standard_normal(n)
b = OpBuilder(x=x)
ex = Executable(generate(lower_opgraph(b.program(b("exp", b.inputs["x"])))))
kernel = ex.artifact.kernels[0]
address = ex.module.address(kernel.name)


def arguments(out: np.ndarray) -> tuple[np.ndarray, ...]:
    """The kernel's arguments in its order: the input, the output, any events word."""
    return tuple(x if a == "x" else np.zeros(1, np.int32) if a == ex.artifact.events else out
                 for a in kernel.args)


want = np.empty(n)
kernel_function(ex.module, kernel.name, len(kernel.args))(*arguments(want), 0, n)
pool = native.NativePool(2)
bad = launches = 0
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for total in (3, 8, 2, 5, 8, 1 + launches % 8):
        out = np.full(n, np.nan)  # dropped after the check: a late chunk would write freed memory
        pool.parallel_for(address, arguments(out), total)
        launches += 1
        bad += not np.array_equal(out[:total], want[:total])
print(f"launches {launches} bad {bad}", flush=True)
