#!/usr/bin/env python3
"""Bootstrap: needs only python3 (with venv and pip). Creates .venv with nox, then runs nox.

    python3 dev.py demo     # example 1.1 through every layer, on the CPU
    python3 dev.py test     # every test: lint, all packages together, each package in isolation
    python3 dev.py bench    # benchmarks against eager NumPy
    python3 dev.py -- ARGS  # any nox arguments, e.g. python3 dev.py -- -s tests -- -k relu
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
COMMANDS = {
    "demo": ["-s", "demo"],
    "test": ["-s", "lint", "tests", "isolated"],
    "bench": ["-s", "bench"],
}


def python_in_venv() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv() -> Path:
    python = python_in_venv()
    if not python.exists():
        print(f"dev.py: creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    probe = subprocess.run([str(python), "-c", "import nox"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "nox>=2024.3"], check=True)
    return python


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv[0] == "--":
        nox_args = argv[1:]
    elif argv[0] in COMMANDS:
        nox_args = COMMANDS[argv[0]] + (["--", *argv[1:]] if len(argv) > 1 else [])
    else:
        print(f"dev.py: unknown command {argv[0]!r}; use one of {sorted(COMMANDS)}", file=sys.stderr)
        return 2
    python = ensure_venv()
    return subprocess.run([str(python), "-m", "nox", "--noxfile", str(ROOT / "noxfile.py"),
                           *nox_args], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
