"""Machine code lives exactly as long as something can call it (issue 10, item 13).

- callables made from an executable (``run``, ``run_one``, a native-pool step, a machine-code
  entry's builtin function) keep its code alive after the executable is dropped; before, calling
  ``run_one`` of a dropped executable crashed;
- compiling does not leak: llvmlite's module pass manager never freed itself (about 150 KB per
  compile); an engine that owned its optimized IR held about 860 KB per live module (now only
  the object code is kept, about 75 KB).
RSS is measured in a fresh process each time.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).parent

MEASURE = textwrap.dedent("""
    import gc, os, sys
    sys.path.insert(0, {here!r})
    import numpy as np
    from conftest import OpBuilder
    from stax.codegen import generate
    from stax.codegen.cpu import jit
    from stax.loop import lower_opgraph

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    x = np.linspace(-1, 1, 1000)
    b = OpBuilder(x=x)
    text = generate(lower_opgraph(b.program(b("sin", b.inputs["x"])))).llvm_ir

    def step(i):  # a module of its own each time (as every new function's is)
        return {step}(text + f"\\n@distinct{{i}} = global i64 {{i}}\\n")

    keep = [step(i) for i in range(5)]
    gc.collect()
    before = rss()
    keep += [step(i) for i in range(5, 5 + {n})]
    gc.collect()
    print((rss() - before) / {n})
""")


def per_step_bytes(step: str, n: int) -> float:
    script = MEASURE.format(here=str(HERE), step=step, n=n)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return float(done.stdout.split()[-1])


def test_callables_keep_their_code_alive():
    done = subprocess.run([sys.executable, str(HERE / "code_lifetime_scenario.py")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", \
        f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"


def test_optimizing_a_module_keeps_nothing():
    # before: ~150 KB per module (the pass manager and its passes' state, never freed)
    per = per_step_bytes("(lambda t: (jit._optimized_module(t), None)[1])", 60)
    assert per < 20_000, f"{per / 1024:.0f} KiB kept per optimized module"


def test_a_live_module_keeps_only_its_object_code():
    # before: ~860 KB per live module (its engine owned the optimized IR)
    per = per_step_bytes("jit.CompiledModule", 40)
    assert per < 300_000, f"{per / 1024:.0f} KiB per live compiled module"
