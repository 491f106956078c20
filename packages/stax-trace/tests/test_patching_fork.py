"""A child forked while another thread holds the capture patches' lock (applying them, as the
first capture of a burst does) could never capture: the lock was inherited held and the thread
that held it does not exist in the child (found by CI: test_fork_while_compiling hung a child in
``Patches.applied``). The child gets a new lock, and the patches of the parent's captures are put
back (they belong to threads the child does not have)."""

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import faulthandler, os, threading
    import numpy as np
    from stax.trace import creation, isolation, trace

    original = np.zeros
    held, release, started = threading.Event(), threading.Event(), threading.Event()
    patches = [creation._PATCHES, isolation._PATCHES]

    def hold():
        with patches[0]._lock, patches[1]._lock:
            held.set()
            release.wait()

    def capturing():  # a capture in flight in another thread: its patches are applied
        with patches[0].applied():
            started.set()
            release.wait()

    threading.Thread(target=capturing, daemon=True).start()
    started.wait()
    threading.Thread(target=hold, daemon=True).start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        faulthandler.dump_traceback_later(20, exit=True)  # a hang fails, never blocks
        program = trace(lambda a: np.zeros(3) + np.sin(a), (np.ones(3),))
        os._exit(0 if program.graph is not None and np.zeros is original else 3)
    _, status = os.waitpid(pid, 0)
    release.set()
    print("child", os.waitstatus_to_exitcode(status))
""")


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_child_forked_while_the_patches_lock_is_held_can_capture():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "child 0", done.stdout + done.stderr[-2000:]
