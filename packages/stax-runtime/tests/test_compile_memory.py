"""Compiling and dropping functions gives the memory back (issue 10, item 13).

Bar: 1,000 compile-and-drop cycles (``stax.compile`` of a small new function, called once, then
dropped) grow RSS by less than 20 MiB, with the disk cache off and with every compile a disk
cache hit. Before, each compile kept about 150-210 KB of native memory (llvmlite's module pass
manager was never freed), and each live function about 1.7 MB (its engines owned the optimized
IR). Each case runs in a fresh process (``compile_memory_worker.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
MiB = 1 << 20


def growth(mode: str, n: int, cache: str) -> float:
    env = {**os.environ, "STAX_CACHE_DIR": cache}
    done = subprocess.run([sys.executable, str(HERE / "compile_memory_worker.py"), mode, str(n)],
                          capture_output=True, text=True, timeout=580, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return float(done.stdout.split()[-1])


@pytest.mark.slow
def test_a_thousand_compiles_without_cache():
    grew = growth("new", 1000, "off")
    assert grew < 20 * MiB, f"RSS grew {grew / MiB:.1f} MiB over 1000 compile-and-drop cycles"


@pytest.mark.slow
def test_a_thousand_compiles_from_the_disk_cache(tmp_path):
    grew = growth("same", 1000, str(tmp_path / "cache"))
    assert grew < 20 * MiB, f"RSS grew {grew / MiB:.1f} MiB over 1000 cached compile cycles"


@pytest.mark.slow
def test_live_functions_cost():
    per = growth("live", 100, "off")
    assert per < 600 * 1024, f"{per / 1024:.0f} KiB per live compiled function"
