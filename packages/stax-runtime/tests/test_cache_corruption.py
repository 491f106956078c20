"""Stress: random corruption of the disk cache never gives a wrong result, a crash or a hang
(issue 10, "What must exist": the corruption half of the stress suite).

Each trial damages the cache at random — bits flipped, entries truncated, replaced with garbage,
swapped with entries of the same kind or copied over entries of another kind, made unreadable,
directories made read-only or world-writable, FIFOs, links to ``/dev/zero``, directories in place
of entries and files in place of directories — then compiles a few functions through it (captures,
plans, kernel objects, machine-code entries, the native pool's object) and compares their results
with eager NumPy (``cache_corruption_worker.py``). Trials run in batches, each batch in a fresh
process on a copy of a filled cache, damaged once before the process loads anything.

Size: ``STAX_STRESS_CORRUPTION_TRIALS`` (default 50, about 20-40 s here; ``nox -s stress`` runs
1,000). Seed: ``STAX_STRESS_SEED`` (default: random, printed on failure). Running as root, the
workers drop the capabilities that let root ignore permissions, so that those damages count.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("cache_corruption_worker.py")
TRIALS = int(os.environ.get("STAX_STRESS_CORRUPTION_TRIALS", "50"))
PER_BATCH = 10
BATCH_TIMEOUT_S = 60 + 15 * PER_BATCH  # far more than a batch takes: a timeout is a hang
CAPABILITIES_IGNORING_PERMISSIONS = (1, 2, 3)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER


def _respect_permissions() -> None:
    """In the worker before exec, when we are root: drop the capabilities by which root ignores
    file permissions (from the bounding set, so the worker never has them), so that 0o000
    entries and read-only directories mean what they mean for a user."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in CAPABILITIES_IGNORING_PERMISSIONS:
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _unlock(path: Path) -> None:
    """Make a damaged cache removable (a worker may leave read-only or unreadable directories)."""
    if not path.exists():
        return
    path.chmod(0o700)
    for root, dirs, _ in os.walk(path):  # top-down: each directory opened before it is listed
        for d in dirs:
            if not (Path(root) / d).is_symlink():
                (Path(root) / d).chmod(0o700)


def _worker(cache: Path, seed: int, trials: int, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "STAX_CACHE_DIR": str(cache), "STAX_LOGS": ""}
    return subprocess.run([sys.executable, str(WORKER), str(cache), str(seed), str(trials)],
                          env=env, capture_output=True, text=True, timeout=BATCH_TIMEOUT_S,
                          cwd=str(home),
                          preexec_fn=_respect_permissions if os.geteuid() == 0 else None)


@pytest.mark.slow
def test_random_cache_corruption_never_gives_a_wrong_result_crash_or_hang():
    seed = int(os.environ.get("STAX_STRESS_SEED", random.randrange(1 << 30)))
    work = Path(tempfile.mkdtemp(prefix="stax-corruption-"))
    try:
        seed_cache = work / "seed"
        seed_cache.mkdir(mode=0o700)
        filled = _worker(seed_cache, seed, 0, work)
        assert filled.returncode == 0, filled.stderr[-3000:]
        assert json.loads(filled.stdout.splitlines()[-1])["results"] == {
            name: "ok" for name in json.loads(filled.stdout.splitlines()[-1])["results"]}

        failures: list[str] = []
        damages: Counter[str] = Counter()
        reports: Counter[str] = Counter()
        done = 0
        for batch in range((TRIALS + PER_BATCH - 1) // PER_BATCH):
            trials = min(PER_BATCH, TRIALS - done)
            cache = work / f"batch{batch}"
            shutil.copytree(seed_cache, cache, symlinks=True)
            where = f"seed {seed} batch {batch}"
            try:
                ran = _worker(cache, seed + batch, trials, work)
            except subprocess.TimeoutExpired as exc:
                out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
                failures.append(f"{where}: hang after {out.splitlines()[-1:]}")
                continue
            finally:
                _unlock(cache)
                shutil.rmtree(cache, ignore_errors=True)
            if ran.returncode != 0:
                failures.append(f"{where}: exit status {ran.returncode} after "
                                f"{ran.stdout.splitlines()[-1:]}: {ran.stderr[-2000:]}")
            for line in ran.stdout.splitlines():
                if not line.startswith("{"):
                    continue
                record = json.loads(line)
                if "reports" in record:
                    reports.update(record["reports"])
                    continue
                done += 1
                damages.update(d.split("|")[0] for d in record["damages"])
                bad = {k: v for k, v in record["results"].items() if v != "ok"}
                if bad:
                    failures.append(f"{where} trial {record['trial']} after "
                                    f"{record['damages']}: {bad}")
        summary = (f"corruption stress: {done} trials (seed {seed}), damages "
                   f"{dict(sorted(damages.items()))}, cache reports {dict(sorted(reports.items()))}")
        print(summary)
        assert not failures, summary + "\n" + "\n".join(failures[:20])
        assert done == TRIALS, summary
    finally:
        _unlock(work)
        shutil.rmtree(work, ignore_errors=True)
