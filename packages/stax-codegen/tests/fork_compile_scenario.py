"""Fork while another thread is inside a call into LLVM (run by ``test_fork_safety.py`` in its
own process). A thread compiles modules in a loop; the main thread forks when llvmlite's lock
is taken; each child compiles a module of its own and runs its kernel. Prints ``ok``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from conftest import OpBuilder

from stax.codegen import Executable, generate
from stax.codegen.cpu import jit
from stax.loop import lower_opgraph

DEADLINE = 30


def program(n: int):
    x = np.linspace(-1, 1, n)
    b = OpBuilder(x=x)
    return generate(lower_opgraph(b.program(b("sin", b.inputs["x"])))), x


def main() -> None:
    artifact, _ = program(1000)
    stop = threading.Event()

    def compiling() -> None:
        i = 0
        while not stop.is_set():  # a module of its own each time: the passes run every time
            jit.CompiledModule(artifact.llvm_ir + f"\n@distinct{i} = global i64 {i}\n")
            i += 1
    thread = threading.Thread(target=compiling, daemon=True)
    thread.start()
    lock = llvm.ffi.lib._lock._lock  # llvmlite's lock around every call into LLVM
    failures, forks = [], 0
    end = time.monotonic() + DEADLINE
    while forks < 4 and time.monotonic() < end:
        if lock.acquire(blocking=False):  # not held by the compiling thread: try again
            lock.release()
            time.sleep(0)
            continue
        pid = os.fork()  # the compiling thread held llvmlite's lock a moment ago
        if pid == 0:
            signal.alarm(DEADLINE)
            art, x = program(777)
            os._exit(0 if np.allclose(Executable(art)(x)[0], np.sin(x), rtol=1e-14) else 1)
        forks += 1
        deadline = time.monotonic() + DEADLINE
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                if os.waitstatus_to_exitcode(status) != 0:
                    failures.append(f"child exit {os.waitstatus_to_exitcode(status)}")
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                failures.append("child hung")
                break
            time.sleep(0.01)
    stop.set()
    thread.join(DEADLINE)
    if forks < 4:
        failures.append(f"only {forks} forks while the lock was held")
    print("ok" if not failures else f"FAILED: {failures}", flush=True)
    os._exit(0 if not failures else 1)


if __name__ == "__main__":
    main()
