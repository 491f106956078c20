"""Callables made from an executable keep its machine code alive after the executable is gone
(run by ``test_code_lifetime.py`` in its own process: freed code is a crash, not a failure).

Each callable is kept alone, everything else dropped and collected, other modules compiled
over the freed memory, then the callable is called and its result compared. Prints ``ok``.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from conftest import OpBuilder

from stax.codegen import Executable, generate
from stax.codegen.cpu.jit import CompiledModule
from stax.loop import lower_opgraph


def executable(n: int, op: str = "exp") -> tuple[Executable, np.ndarray]:
    x = np.random.default_rng(n).standard_normal(n)
    b = OpBuilder(x=x)
    return Executable(generate(lower_opgraph(b.program(b(op, b.inputs["x"]))))), x


def churn() -> None:
    """Collect, then make and drop other machine code where the freed code was."""
    gc.collect()
    for i in range(3):
        ex, x = executable(64 + i, "sin")
        ex(x)
        del ex
    gc.collect()


def main() -> None:
    ex, x = executable(1000)
    want = ex(x)[0].copy()
    run_one, run = ex.run_one, ex.run
    assert run_one is not None
    del ex
    churn()
    np.testing.assert_array_equal(run_one(x), want)
    np.testing.assert_array_equal(run(x)[0], want)
    del run_one, run

    big, y = executable(1 << 22)  # a parallel kernel (the native pool where there is one)
    assert any(k.parallel for k in big.artifact.kernels)
    want = big(y)[0].copy()
    run = big.run
    del big
    churn()
    np.testing.assert_array_equal(run(y)[0], want)
    del run

    ex, x = executable(256)
    want = ex(x)[0].copy()
    entry = ex.entry([x], lambda *args: "slow")
    assert not isinstance(entry, str), entry
    function = entry.function
    del ex, entry
    churn()
    (got,) = function(x)  # the program returns a tuple of one array
    np.testing.assert_array_equal(got, want)
    assert function(x[:3]) == "slow"
    del function
    gc.collect()
    # and once nothing can call the code, it is freed
    alive = [o for o in gc.get_objects() if isinstance(o, CompiledModule)]
    assert len(alive) <= 1, f"{len(alive)} compiled modules alive (the native pool's may be)"
    print("ok", flush=True)


if __name__ == "__main__":
    main()
