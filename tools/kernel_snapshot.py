"""Snapshot the LLVM IR of every kernel the coverage table compiles, and compare two snapshots.

A refactoring of the pipeline (issue 11: targets, registries, module splits) must not change the
code it generates, or must explain each difference. Take a snapshot before the change, another
after, and compare:

    STAX_CACHE_DIR=off python tools/kernel_snapshot.py write /tmp/ir-before
    ... change ...
    STAX_CACHE_DIR=off python tools/kernel_snapshot.py write /tmp/ir-after
    python tools/kernel_snapshot.py compare /tmp/ir-before /tmp/ir-after

Each coverage case (``stax.runtime.coverage.cases``) is compiled on its own inputs and on every
layout/dtype variant (``coverage.VARIANTS``); every plan the default backend generates is written as
one ``.ll`` file (the module without its header line, the host CPU name masked) plus the plan's
document, so a difference in either the IR or the schedule shows.
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from stax.runtime import CompiledFunction, coverage
from stax.runtime.backends import register_backend, stax_backend

_COLLECTED: list[Any] = []


def _collecting_backend(capture: Any, example_inputs: list[np.ndarray], **options: Any) -> Any:
    def dump(stage: str, doc: Any) -> None:
        if stage == "kernels":
            _COLLECTED.append(doc)
    options.pop("dump", None)
    return stax_backend(capture, example_inputs, dump=dump, **options)


def _fresh(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The case's arguments, arrays copied and generators re-seeded (calls must not share them)."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else
                 np.random.default_rng(0) if isinstance(a, np.random.Generator) else a for a in args)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")


def _text(artifact: Any) -> str:
    ir = artifact.llvm_ir.split("\n", 3)[-1]
    cpu = (artifact.target or {}).get("cpu", "")
    document = json.dumps({k: v for k, v in artifact.to_json().items() if k != "llvm_ir"},
                          indent=1, sort_keys=True, default=repr)
    text = f"{document}\n\n{ir}"
    return text.replace(cpu, "<cpu>") if cpu else text


def write(directory: Path) -> int:
    if os.environ.get("STAX_CACHE_DIR", "") != "off":
        print("set STAX_CACHE_DIR=off: a plan from the disk cache is not regenerated", file=sys.stderr)
        return 2
    register_backend("snapshot", _collecting_backend)
    directory.mkdir(parents=True, exist_ok=True)
    logging.getLogger("stax").setLevel(logging.CRITICAL)
    written = 0
    for index, case in enumerate(coverage.cases()):
        if case.fn is None:
            continue
        for variant in ("as-is", *coverage.VARIANTS):
            change = coverage.VARIANTS.get(variant, lambda a: a)
            args = tuple(change(a) if isinstance(a, np.ndarray) else a
                         for a in _fresh(case.args))
            _COLLECTED.clear()
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    CompiledFunction(case.fn, backend="snapshot")(*args)
                except Exception:  # eager's own error: nothing compiled
                    pass
            for n, artifact in enumerate(_COLLECTED):
                path = directory / f"{index:04d}.{_safe(case.group)}.{_safe(case.name)}.{variant}.{n}.ll"
                path.write_text(_text(artifact))
                written += 1
    print(f"{written} kernel plans written to {directory}")
    return 0


def _ir_part(text: str) -> str:
    """The LLVM IR of a snapshot file (after the plan document and its blank line)."""
    return text.split("\n}\n\n", 1)[-1]


def compare(before: Path, after: Path, context: int, ir_only: bool = False) -> int:
    old = {p.name for p in before.glob("*.ll")}
    new = {p.name for p in after.glob("*.ll")}
    status = 0
    for name in sorted(old - new):
        print(f"only before: {name}")
        status = 1
    for name in sorted(new - old):
        print(f"only after: {name}")
        status = 1
    changed = 0
    for name in sorted(old & new):
        a, b = (before / name).read_text(), (after / name).read_text()
        if ir_only:
            a, b = _ir_part(a), _ir_part(b)
        if a != b:
            changed += 1
            status = 1
            sys.stdout.writelines(difflib.unified_diff(
                a.splitlines(True), b.splitlines(True), f"before/{name}", f"after/{name}", n=context))
    print(f"{len(old & new)} plans compared, {changed} differ, "
          f"{len(old - new)} only before, {len(new - old)} only after")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="compile every coverage case and write its plans")
    w.add_argument("directory", type=Path)
    c = sub.add_parser("compare", help="diff two snapshots")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--context", type=int, default=2)
    c.add_argument("--ir-only", action="store_true",
                   help="compare the LLVM IR only (a plan document's new fields ignored)")
    args = parser.parse_args(argv)
    if args.command == "write":
        return write(args.directory)
    return compare(args.before, args.after, args.context, args.ir_only)


if __name__ == "__main__":
    sys.exit(main())
