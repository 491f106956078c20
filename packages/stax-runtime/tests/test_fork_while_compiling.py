"""Issue 10, item 8: a child forked while another thread compiles a function can call it (the
function's compile lock is not inherited held)."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os, threading, time, faulthandler
    import numpy as np
    import stax.runtime as stax

    functions = []
    for i in range(200):
        scope = {"np": np}
        exec(f"def g(a):\\n    return np.sin(a) * {i}.5 + a\\n", scope)
        functions.append((stax.compile(scope["g"]), scope["g"]))
    current, stop = [0], threading.Event()

    def compiling():
        for i, (f, _) in enumerate(functions):
            if stop.is_set():
                break
            current[0] = i
            f(np.linspace(0, 1, 64))

    threading.Thread(target=compiling, daemon=True).start()
    time.sleep(0.5)
    bad = 0
    for _ in range(6):
        time.sleep(0.03)
        f, g = functions[current[0]]  # most likely the one being compiled right now
        pid = os.fork()
        if pid == 0:
            faulthandler.dump_traceback_later(20, exit=True)  # a hang fails, never blocks
            x = np.linspace(0, 1, 5000)
            os._exit(0 if np.allclose(f(x), g(x)) else 1)
        _, status = os.waitpid(pid, 0)
        bad += os.waitstatus_to_exitcode(status) != 0
    stop.set()
    print("bad", bad)
""")


def test_children_forked_mid_compile_call_the_function(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=240, env={"STAX_CACHE_DIR": "off", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("bad 0"), done.stdout + done.stderr[-2000:]
