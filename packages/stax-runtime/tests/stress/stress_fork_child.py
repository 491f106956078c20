"""Forks in the middle of a run (run by test_stress_fork.py in a subprocess with a timeout).

Reads stress programs (JSON, one per line) on stdin, compiles them, then keeps two threads calling
compiled functions — a large element-wise one whose kernel runs on the thread pool, and the
programs — while the main thread forks several times. Each child calls the warm compiled functions,
compiles the programs afresh and compares both with eager NumPy, then exits; the parent waits for it
with a timeout (a child that does not finish is a hang: it is killed and reported). Last, a
``multiprocessing`` fork pool calls a compiled function. Exit status 0: all agreed.
"""

from __future__ import annotations

import faulthandler
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np
from stress_program import Program
from stress_run import ERRSTATES, Check, Loaded, Outcome, observe, report, run_call

import stax.runtime as stax

FORKS = 3
CHILD_S = 60.0
BIG = np.random.default_rng(0).standard_normal((512, 2048)).astype(np.float32)


def big(x):
    """Element-wise over a million elements: launched on the thread pool."""
    return np.tanh(x) * 2 + 1


def pool_task(i):
    return float(BIG_COMPILED(BIG + i).sum(dtype=np.float64))


BIG_COMPILED = stax.compile(big)


def agree_big(got):
    return np.allclose(got, big(BIG), rtol=0, atol=1e-5)


def check_programs(programs, loaded, compiled):
    """The warm compiled functions and fresh compiles, against eager: the problems found."""
    problems = []
    for i, program in enumerate(programs):
        check = Check(program, warnings_too=False)
        for k, call in enumerate(program.calls):
            expected = check.expect(loaded[i], call)
            args = loaded[i].prepare(call)
            got, exc, _ = run_call(compiled[i], args, call.errstate)
            check.verify(expected, Outcome(got, exc, set(), observe(program, args, loaded[i])),
                         f"after fork, warm function, call {k}")
        problems += [report(program, check.problems)] if check.problems else []
        fresh = Check(program, warnings_too=False).run()
        problems += [report(program, fresh)] if fresh else []
    return problems


def wait(pid, timeout):
    """The child's exit status, or None when it is still running after ``timeout`` (killed)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def main():
    warnings.simplefilter("ignore")
    logging.getLogger("stax").setLevel(logging.CRITICAL)
    programs = [Program.from_json(line) for line in sys.stdin.read().splitlines() if line.strip()]
    loaded = [Loaded(p) for p in programs]
    compiled = [stax.compile(item.prog) for item in loaded]
    failures = check_programs(programs, loaded, compiled)  # warm: every version compiled
    if not agree_big(BIG_COMPILED(BIG)):
        failures.append("the large element-wise function differs before any fork")
    args = [item.prepare(p.calls[0]) for item, p in zip(loaded, programs)]
    stop = threading.Event()

    def spin(with_programs):
        while not stop.is_set():
            BIG_COMPILED(BIG)
            if with_programs:
                for fn, a, p in zip(compiled, args, programs):
                    with np.errstate(**ERRSTATES[p.calls[0].errstate]):
                        try:
                            fn(*a)
                        except Exception:
                            pass

    spinners = [threading.Thread(target=spin, args=(j == 0,), daemon=True) for j in range(2)]
    for t in spinners:
        t.start()
    rng = np.random.default_rng(len(programs))
    for trial in range(FORKS):
        time.sleep(float(rng.uniform(0.0, 0.05)))
        pid = os.fork()
        if pid == 0:  # the child: only this thread exists here
            faulthandler.dump_traceback_later(CHILD_S - 5, exit=True)
            try:
                problems = [] if agree_big(BIG_COMPILED(BIG)) else ["large function differs"]
                problems += check_programs(programs, loaded, compiled)
                for p in problems:
                    print(f"fork {trial}: {p}", flush=True)
                os._exit(1 if problems else 0)
            except BaseException as exc:
                print(f"fork {trial}: child raised {exc!r}", flush=True)
                os._exit(2)
        code = wait(pid, CHILD_S)
        if code is None:
            failures.append(f"fork {trial}: the child hung (killed after {CHILD_S:.0f} s)")
        elif code != 0:
            failures.append(f"fork {trial}: the child failed with status {code} (its output above)")
    stop.set()
    for t in spinners:
        t.join(CHILD_S)
        if t.is_alive():
            failures.append("a calling thread of the parent did not stop (a hang)")
    with multiprocessing.get_context("fork").Pool(2) as pool:
        result = pool.map_async(pool_task, range(4))
        try:
            sums = result.get(timeout=CHILD_S)
            want = [float(big(BIG + i).sum(dtype=np.float64)) for i in range(4)]
            if not np.allclose(sums, want, rtol=1e-6):
                failures.append(f"multiprocessing fork pool: {sums} instead of {want}")
        except multiprocessing.TimeoutError:
            failures.append(f"multiprocessing fork pool: no result after {CHILD_S:.0f} s (a hang)")
            pool.terminate()
    for f in failures:
        print(f, flush=True)
    print(f"{len(programs)} programs, {FORKS} forks, {len(failures)} failures", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
