"""The on-disk cache of machine code: warm starts skip LLVM, corrupted entries are rebuilt."""

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np

import stax.runtime as stax
from stax.runtime import nn


def f(x, w, b):
    return nn.layer_norm(x * 2 + 1, (8,), w, b).sum(-1)


def args():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((4, 8)).astype(np.float32), np.ones(8, np.float32),
            np.zeros(8, np.float32))


def stages(cf):
    return cf.versions()[0].stats


def test_second_compile_loads_machine_code_from_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", str(tmp_path))
    first = stax.compile(f, strict_native=True)
    want = first(*args())
    assert "jit" in stages(first)
    assert list(tmp_path.rglob("*.o"))
    second = stax.compile(f, strict_native=True)
    np.testing.assert_array_equal(second(*args()), want)
    assert "jit (disk cache)" in stages(second)


def test_corrupted_entries_are_reported_once_and_rebuilt(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("STAX_CACHE_DIR", str(tmp_path))
    want = stax.compile(f, strict_native=True)(*args())
    entries = list(tmp_path.rglob("*.o"))  # the kernels, and the machine-code entry
    assert len(entries) == 2
    damages = (lambda b: b[: len(b) // 2], lambda b: b[:40] + bytes([b[40] ^ 0xFF]) + b[41:])
    for i, damage in enumerate(damages):
        for entry in entries:
            entry.write_bytes(damage(entry.read_bytes()))
        with caplog.at_level(logging.WARNING, logger="stax"):
            cf = stax.compile(f, strict_native=True)
            np.testing.assert_array_equal(cf(*args()), want)
        assert "jit" in stages(cf)  # rebuilt, not loaded
        assert ("corrupted or truncated" in caplog.text) == (i == 0)  # reported once per entry
        caplog.clear()


def test_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", "off")
    cf = stax.compile(f, strict_native=True)
    cf(*args())
    assert "jit" in stages(cf)


def test_warm_start_in_a_fresh_process(tmp_path):
    script = textwrap.dedent("""
        import time, numpy as np
        import stax.runtime as stax
        from stax.runtime import nn
        x = np.random.default_rng(0).standard_normal((8192, 1024)).astype(np.float32)
        w, b = np.ones(1024, np.float32), np.zeros(1024, np.float32)
        cf = stax.compile(lambda x, w, b: nn.layer_norm(x, (1024,), w, b), strict_native=True)
        t = time.perf_counter(); cf(x[:2], w, b); print(time.perf_counter() - t)
        print(sorted(cf.versions()[0].stats))
    """)
    env = {**os.environ, "STAX_CACHE_DIR": str(tmp_path)}
    cold = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          check=True).stdout.split("\n")
    warm = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          check=True).stdout.split("\n")
    assert "jit (disk cache)" in warm[1] and "jit (disk cache)" not in cold[1]
    # the capture too: a warm start does not run the program eagerly on the (large) arguments
    assert "capture (disk cache)" in warm[1] and "capture (disk cache)" not in cold[1]


def test_plans_are_reused_by_capture_content(tmp_path, monkeypatch):
    """The kernel plan of an identical capture comes from disk (no passes, lowering or IR
    emission); another program, or dumping documents, makes the plan afresh."""
    monkeypatch.setenv("STAX_CACHE_DIR", str(tmp_path))
    first = stax.compile(f, strict_native=True)
    want = first(*args())
    assert "kernels" in stages(first)
    again = stax.compile(f, strict_native=True)
    np.testing.assert_array_equal(again(*args()), want)
    assert "plan (disk cache)" in stages(again) and "kernels" not in stages(again)
    other = stax.compile(lambda x, w, b: f(x, w, b) + 1, strict_native=True)
    other(*args())
    assert "kernels" in stages(other)
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path / "dumps"))
    dumped = stax.compile(f, strict_native=True)
    dumped(*args())
    assert "kernels" in stages(dumped) and list((tmp_path / "dumps").glob("*.loopir.json"))
