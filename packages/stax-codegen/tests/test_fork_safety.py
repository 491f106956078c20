"""Both thread pools, and compiling, survive a fork whatever the parent's threads were doing
(issue 10, item 8).

Each case runs ``fork_scenario.py`` in its own process: a thread launches a parallel kernel in a
loop and the main thread forks (``os.fork``, then a ``multiprocessing`` fork pool) at moments
when that launch holds the pool's lock. Every child must compute the right result and exit.
Before the at-fork handlers, every child hung (the lock inherited locked; the Python pool's
workers and queues are the parent's). Every wait has a deadline, here and in the scenario.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stax.codegen.cpu import native_pool as native

HERE = Path(__file__).parent
NATIVE = native.native_available()


def run_script(script: str, *args: str, env: dict[str, str] | None = None,
               timeout: float = 150) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env or {})}
    if not env.get("STAX_THREADS"):
        env.pop("STAX_THREADS", None)
    return subprocess.run([sys.executable, str(HERE / script), *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("method", ["os.fork", "pool"])
@pytest.mark.parametrize("kernel,threads", [
    pytest.param("exp", "", id="native-pool",
                 marks=pytest.mark.skipif(not NATIVE, reason="no native pool here")),
    pytest.param("exp", "python", id="python-pool"),
    pytest.param("wide", "", id="python-pool-18-buffers"),
])
def test_fork_during_a_parallel_launch(kernel, threads, method):
    done = run_script("fork_scenario.py", kernel, method,
                      env={"STAX_THREADS": threads, "FORK_DEADLINE": "30"})
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr


def test_thread_pool_is_rebuilt_in_a_forked_child():
    """The Python pool made (and its workers started) before the fork works in the child."""
    from stax.codegen.python_pool import ThreadPool
    pool = ThreadPool(2)
    seen = []
    pool.parallel_for(lambda lo, hi: seen.append((lo, hi)), (), 4)  # the parent's workers run
    assert sorted(seen) == [(0, 2), (2, 4)]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            import signal
            signal.alarm(30)
            got = []
            pool.parallel_for(lambda lo, hi: got.append((lo, hi)), (), 4)
            os.write(write, b"ok" if sorted(got) == [(0, 2), (2, 4)] else b"wrong")
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    message = os.read(read, 16)
    os.close(read)
    assert os.waitstatus_to_exitcode(status) == 0 and message == b"ok"


@pytest.mark.slow
@pytest.mark.skipif(not NATIVE, reason="no native pool here")
def test_native_launches_of_varying_sizes_never_mix():
    """Back-to-back native launches whose chunk counts differ (totals 3, 8, 2, ...): a worker
    still looping from one launch must never claim a chunk of the next. Before the claim word
    carried the generation, this hung or crashed within 10 s about half the time (a worker
    read the next launch's chunk count and ran a chunk on its arguments, or counted it done)."""
    done = run_script("native_pool_race.py", "6", timeout=120)
    assert done.returncode == 0 and "bad 0" in done.stdout, done.stdout + done.stderr


def test_fork_while_another_thread_compiles():
    """llvmlite holds one lock around every call into LLVM; a child forked while another thread
    was compiling inherited it locked and hung on its first compile. The fork now waits for the
    call in flight, and the child gets a fresh lock."""
    done = run_script("fork_compile_scenario.py", timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr
