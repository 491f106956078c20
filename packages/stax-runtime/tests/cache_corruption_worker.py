"""One process of the cache-corruption stress test (``test_cache_corruption.py``).

``python cache_corruption_worker.py CACHE SEED TRIALS``: with ``STAX_CACHE_DIR=CACHE``, runs
``TRIALS`` trials; each damages the cache at random, then compiles every function of ``PROGRAMS``
afresh (through the disk cache: captures, plans, kernel objects, machine-code entries, the native
pool) and calls it, comparing with eager NumPy. Trial 0 damages the cache before anything in this
process has loaded it (a cold start); ``TRIALS == 0`` only fills the cache. One JSON line per
trial on stdout; a line ``start <n>`` before each, so that a hang shows where it happened.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import random
import stat
import sys
import traceback
from collections import Counter
from pathlib import Path

import numpy as np

import stax.runtime as stax
from stax.runtime import nn

W = np.linspace(-1.0, 1.0, 16)  # a lifted free variable: its layout is in the capture's key
scale = functools.partial(np.multiply, 3.0)


def affine(x):
    return x * 2 + 1


def layer(x, w, b):
    return nn.layer_norm(x * 2 + 1, (8,), w, b).sum(-1)


def sort(a, b):
    return np.sort(b - a) + 1  # an extern between kernels


def gram(x):
    return (x @ x.T).sum(0)


def big(x):
    return np.abs(x) * 2 + x  # large enough for the parallel pool


def free(x):
    return x * W + scale(x)


def reductions(x):
    return x.sum(0) + x.max(0) - x.min(0)


def _inputs():
    rng = np.random.default_rng(7)
    return {
        "affine": (rng.standard_normal((5, 7)),),
        "layer": (rng.standard_normal((4, 8)).astype(np.float32), np.ones(8, np.float32),
                  np.zeros(8, np.float32)),
        "sort": (np.arange(24, dtype=np.int64), np.full(24, 18, dtype=np.int64)),
        "gram": (rng.standard_normal((6, 5)),),
        "big": (rng.standard_normal((512, 1024)).astype(np.float32),),
        "free": (rng.standard_normal((3, 16)),),
        "reductions": (rng.standard_normal((9, 4)).astype(np.float32),),
    }


PROGRAMS = {"affine": affine, "layer": layer, "sort": sort, "gram": gram, "big": big,
            "free": free, "reductions": reductions}
TOLERANCE = {"layer": 1e-4, "reductions": 1e-5, "big": 1e-6}  # float32; float64 1e-12


class Counting(logging.Handler):
    """Counts the cache's reports by kind (what the trials exercised)."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        for marker in ("belongs to another key", "cannot be read", "does not load",
                       "not a loadable object", "lacks the symbol", "not using the cache directory",
                       "cannot write"):
            if marker in text:
                self.kinds[marker] += 1
                return
        self.kinds["other: " + text[:80]] += 1


def _entries(cache: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(cache):
        for name in files + dirs:
            path = Path(root) / name
            if name.endswith((".o", ".json")):
                found.append(path)
    return found


def _shards(cache: Path) -> list[Path]:
    return [Path(root) / d for root, dirs, _ in os.walk(cache) for d in dirs
            if not d.endswith((".o", ".json"))]


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        for child in path.iterdir():
            _remove(child)
        path.rmdir()


def corrupt(cache: Path, rng: random.Random) -> str:
    """One random damage to the cache; what it was: ``kind|detail`` (kind "none" when the damage
    could not be made)."""
    entries = [p for p in _entries(cache) if p.is_file() and not p.is_symlink()]
    kinds = ["flip", "truncate", "garbage", "swap same", "swap other", "chmod 000",
             "read-only dir", "fifo", "dev zero", "directory", "delete", "root 777",
             "file for dir"]
    kind = rng.choice(kinds)
    if not entries and kind not in ("root 777", "read-only dir", "file for dir"):
        return "none|no entries"
    target = rng.choice(entries) if entries else cache
    label = f"{kind}|{target.parent.parent.name}/{target.name[:8]}{target.suffix}"
    try:
        if kind == "flip":
            data = bytearray(target.read_bytes())
            for _ in range(rng.randint(1, 4)):
                if data:
                    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            target.write_bytes(bytes(data))
        elif kind == "truncate":
            data = target.read_bytes()
            target.write_bytes(data[:rng.randrange(max(1, len(data)))])
        elif kind == "garbage":
            target.write_bytes(rng.randbytes(rng.choice([0, 1, 50, 104, 200, 5000])))
        elif kind in ("swap same", "swap other"):
            same = [p for p in entries if (p.suffix == target.suffix and
                                           p.parent.parent == target.parent.parent) and p != target]
            other = [p for p in entries if p.parent.parent != target.parent.parent]
            pool = same if kind == "swap same" else other
            if not pool:
                return f"none|{kind}: no partner"
            partner = rng.choice(pool)
            a, b = target.read_bytes(), partner.read_bytes()
            target.write_bytes(b)
            if kind == "swap same":
                partner.write_bytes(a)
        elif kind == "chmod 000":
            target.chmod(0)
        elif kind == "read-only dir":
            rng.choice(_shards(cache) or [cache]).chmod(0o500)
        elif kind == "fifo":
            target.unlink()
            os.mkfifo(target)
        elif kind == "dev zero":
            target.unlink()
            os.symlink("/dev/zero", target)
        elif kind == "directory":
            target.unlink()
            target.mkdir()
            (target / "inside").write_bytes(b"x")
        elif kind == "delete":
            target.unlink()
        elif kind == "root 777":
            cache.chmod(0o777)
            label = f"{kind}|{cache.name}"
        elif kind == "file for dir":
            sub = cache / rng.choice(["captures", "plans"])
            if sub.exists():
                _remove(sub)
            sub.write_bytes(b"not a directory")
            label = f"{kind}|{sub.name}"
    except OSError as exc:  # a damage that the previous ones made impossible
        return f"none|{label}: {exc}"
    return label


def repair(cache: Path) -> None:
    """Permissions back to normal and directories back in place (the cache heals entries)."""
    cache.chmod(0o700)
    for sub in ("captures", "plans"):
        if (cache / sub).exists() and not (cache / sub).is_dir():
            (cache / sub).unlink()
    for root, dirs, files in os.walk(cache):
        for d in dirs:
            path = Path(root) / d
            if not path.is_symlink():
                path.chmod(0o700)
        for f in files:
            path = Path(root) / f
            if not path.is_symlink() and stat.S_ISREG(path.lstat().st_mode):
                path.chmod(0o600)


def agree(name: str, got: object, want: object) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if want.dtype.kind in "iub":
        return bool(np.array_equal(got, want))
    return bool(np.allclose(got, want, rtol=TOLERANCE.get(name, 1e-12), atol=1e-6))


def run_trial(inputs: dict[str, tuple[np.ndarray, ...]]) -> dict[str, str]:
    results = {}
    for name, fn in PROGRAMS.items():
        args = inputs[name]
        want = fn(*args)
        try:
            compiled = stax.compile(fn)
            outcomes = [compiled(*args) for _ in range(2)]
        except Exception as exc:  # an error in the user's call: a failure of the trial
            results[name] = f"error: {type(exc).__name__}: {exc} " + \
                traceback.format_exc(limit=-3).replace("\n", " | ")
            continue
        results[name] = "ok" if all(agree(name, got, want) for got in outcomes) else \
            f"wrong: got {np.asarray(outcomes[0]).ravel()[:4]} want {np.asarray(want).ravel()[:4]}"
    return results


def main() -> None:
    cache, seed, trials = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    os.environ["STAX_CACHE_DIR"] = str(cache)
    counting = Counting()
    logging.getLogger("stax").addHandler(counting)
    logging.getLogger("stax").setLevel(logging.WARNING)
    rng = random.Random(seed)
    inputs = _inputs()
    if trials == 0:
        print(json.dumps({"trial": "fill", "results": run_trial(inputs)}), flush=True)
        return
    for trial in range(trials):
        print(f"start {trial}", flush=True)
        if trial and rng.random() < 0.3:
            repair(cache)
        damages = [corrupt(cache, rng) for _ in range(rng.randint(1, 3))]
        results = run_trial(inputs)
        print(json.dumps({"trial": trial, "damages": damages, "results": results}), flush=True)
    print(json.dumps({"reports": dict(counting.kinds)}), flush=True)


if __name__ == "__main__":
    main()
