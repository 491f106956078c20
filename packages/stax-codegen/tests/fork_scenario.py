"""Fork while another thread is inside a parallel kernel launch (run as a script by
``test_fork_safety.py``, in its own process, so a hang is a timeout and not a stuck test run).

``python fork_scenario.py KERNEL METHOD``: KERNEL is ``exp`` (one parallel kernel of two buffers:
the native pool, or the Python pool under ``STAX_THREADS=python``) or ``wide`` (a kernel of 18
buffers, more than the native pool's trampolines take: always the Python pool); METHOD is
``os.fork`` or ``pool`` (a ``multiprocessing`` fork pool). Prints ``ok`` and exits 0 when every
child computed the right result and exited; every wait has a deadline.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from conftest import OpBuilder

from stax.codegen import Executable, generate
from stax.codegen.cpu import native_pool as native
from stax.codegen.python_pool import default_pool
from stax.loop import lower_opgraph

N = 1 << 21
DEADLINE = float(os.environ.get("FORK_DEADLINE", "60"))


def build(kernel: str) -> tuple[Executable, list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(0)
    if kernel == "exp":
        x = rng.standard_normal(N)
        b = OpBuilder(x=x)
        out = b("exp", b.inputs["x"])
        arrays, want = [x], np.exp(x)
    else:  # 17 inputs summed with sin: one fused kernel of 18 buffers
        arrays = [rng.standard_normal(N // 4) for _ in range(17)]
        b = OpBuilder(**{f"x{i}": a for i, a in enumerate(arrays)})
        out = b("sin", b.inputs["x0"])
        for i in range(1, 17):
            out = b("add", out, b.inputs[f"x{i}"])
        want = np.sin(arrays[0])
        for a in arrays[1:]:
            want = want + a
    ex = Executable(generate(lower_opgraph(b.program(out))))
    assert any(k.parallel for k in ex.artifact.kernels), "the kernel must be a parallel launch"
    return ex, arrays, want


EX, ARRAYS, WANT = build(sys.argv[1])


def check(_: int = 0) -> bool:
    return bool(np.allclose(EX(*ARRAYS)[0], WANT))


def busy_lock() -> threading.Lock:
    """The lock a launch holds, of whichever pool this kernel uses."""
    uses_native = any(k.parallel and len(k.args) <= native.MAX_ARITY for k in EX.artifact.kernels) \
        and native.native_pool(default_pool().size) is not None
    return native.native_pool(default_pool().size)._lock if uses_native else default_pool()._lock


def main() -> None:
    method = sys.argv[2]
    assert check()  # the parent's workers exist before the fork
    lock, stop = busy_lock(), threading.Event()

    def launches() -> None:
        while not stop.is_set():
            EX(*ARRAYS)
    thread = threading.Thread(target=launches, daemon=True)
    thread.start()

    def in_flight() -> None:  # return while the other thread holds the pool's lock
        end = time.monotonic() + DEADLINE
        while not lock.locked():
            if time.monotonic() > end:
                raise TimeoutError("the launching thread never held the lock")
            time.sleep(0)

    failures = []
    if method == "os.fork":
        children = []
        for _ in range(5):
            in_flight()
            pid = os.fork()
            if pid == 0:
                signal.alarm(int(DEADLINE))  # a hang in the child ends it (SIGALRM) instead
                os._exit(0 if check() and check() else 1)
            children.append(pid)
        end = time.monotonic() + DEADLINE
        while children and time.monotonic() < end:
            for pid in list(children):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    children.remove(pid)
                    if os.waitstatus_to_exitcode(status) != 0:
                        failures.append(f"child exit {os.waitstatus_to_exitcode(status)}")
            time.sleep(0.01)
        for pid in children:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            failures.append("child hung")
    else:
        for _ in range(2):
            in_flight()
            pool = multiprocessing.get_context("fork").Pool(2)
            try:
                results = pool.map_async(check, range(4)).get(DEADLINE)
                if not all(results):
                    failures.append("wrong result in a pool worker")
            except multiprocessing.TimeoutError:
                failures.append("pool hung")
            finally:
                pool.terminate()
                pool.join()
    stop.set()
    thread.join(DEADLINE)
    print("ok" if not failures else f"FAILED: {failures}", flush=True)
    os._exit(0 if not failures else 1)


if __name__ == "__main__":
    main()
