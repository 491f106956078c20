"""Compile time in a fresh process, imports excluded: cold (empty disk cache; bar 200 ms for
example 1.1, 250 ms for the layer-norm program) and warm (capture, plan and machine code from the
disk cache; bar 20 ms). Both the compile and the whole first call (compile + run) are printed."""

import os
import subprocess
import sys
import tempfile

PROGRAMS = {
    "example 1.1 (64,128)": """
x = np.random.default_rng(0).standard_normal((64, 128), dtype=np.float32)
args = (x, x)
fn = lambda x, w: (np.maximum(x + w, 0) * 2).sum(-1)
""",
    "layer norm (8192,1024)": """
x = np.random.default_rng(0).standard_normal((8192, 1024), dtype=np.float32)
args = (x,)
def fn(x):
    mean = x.mean(-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(-1, keepdims=True)
    return centered / np.sqrt(var + 1e-5)
""",
}
TIMER = """
import time, numpy as np
import stax.runtime as stax
{program}
cf = stax.compile(fn, strict_native=True)
t = time.perf_counter(); cf(*args); total = time.perf_counter() - t
stats = cf.versions()[0].stats
print(total, stats["compile_s"])
"""


def first_call(program: str, cache: str) -> tuple[float, float]:
    """(the first call's time, of which compiling), in a fresh process."""
    env = {**os.environ, "STAX_CACHE_DIR": cache}
    out = subprocess.run([sys.executable, "-c", TIMER.format(program=program)], env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1])


def test_compile_times(benchmark, note):
    for name, program in PROGRAMS.items():
        cold, warm = [], []
        for _ in range(3):
            with tempfile.TemporaryDirectory() as cache:
                cold.append(first_call(program, cache))
                warm.append(first_call(program, cache))
        total = lambda runs: sorted(t * 1e3 for t, _ in runs)[1]  # noqa: E731
        compiling = lambda runs: sorted(c * 1e3 for _, c in runs)[1]  # noqa: E731
        note(f"{name}: fresh process, imports excluded, medians of 3: cold compile "
             f"{compiling(cold):.1f} ms (first call {total(cold):.1f} ms); warm start from the disk "
             f"cache: compile {compiling(warm):.1f} ms (first call {total(warm):.1f} ms, the run "
             "included: a fresh process touches its output pages for the first time)")
    benchmark.pedantic(lambda: None, rounds=1)
