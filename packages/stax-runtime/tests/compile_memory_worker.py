"""RSS over compile-and-drop cycles (run by ``test_compile_memory.py`` in a fresh process).

``python compile_memory_worker.py MODE N``: MODE ``new`` compiles a new function (its own
constant, so its own capture, plan and machine code) each cycle; ``same`` compiles a new function
object of one text each cycle (with a disk cache, every cycle after the first is a hit);
``live`` keeps N new functions alive. Each function is called once. Prints the RSS growth in
bytes over the N cycles (per function for ``live``), after 20 warm-up cycles.
"""

from __future__ import annotations

import gc
import os
import sys

import numpy as np

import stax.runtime as stax


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


X = np.linspace(-1.0, 1.0, 64)


def function(i: int, mode: str):
    k = 1.5 if mode == "same" else 1.5 + i
    scope = {"np": np}
    exec(compile(f"def f(a):\n    return np.sin(a) * {k!r} + a\n", f"<cycle {i}>", "exec"), scope)
    return stax.compile(scope["f"])


def cycle(i: int, mode: str):
    f = function(i, mode)
    np.testing.assert_allclose(f(X), np.sin(X) * (1.5 if mode == "same" else 1.5 + i) + X,
                               rtol=1e-12)
    return f


def main() -> None:
    mode, n = sys.argv[1], int(sys.argv[2])
    keep = [cycle(i, mode) for i in range(20)]
    if mode != "live":
        keep.clear()
    gc.collect()
    before = rss()
    for i in range(20, 20 + n):
        f = cycle(i, mode)
        if mode == "live":
            keep.append(f)
        del f
    gc.collect()
    growth = rss() - before
    print(growth / n if mode == "live" else growth, flush=True)


if __name__ == "__main__":
    main()
