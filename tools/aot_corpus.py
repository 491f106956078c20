"""Compile every kernel of a recorded CUDA corpus ahead of time for an H100/H200 (sm_90).

    STAX_TRITON_CORPUS=/tmp/corpus pytest packages/...   # the tests record what they run
    python tools/aot_corpus.py /tmp/corpus [--jobs N]

Each document (``stax.codegen.triton.corpus``) is compiled through ``aot.compile_ahead`` with the
options its executable launches it with, to PTX and cubin; kernels with the same source, name and
launch are compiled once. Exits non-zero, naming each, when a kernel fails to compile. Needs
Triton; runs with ``TRITON_INTERPRET`` unset whatever the caller's environment says.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def _compile(path: str) -> tuple[str, int, str | None]:
    os.environ.pop("TRITON_INTERPRET", None)
    from stax.codegen import KernelArtifact
    from stax.codegen.triton.aot import compile_ahead

    artifact = KernelArtifact.from_json(json.loads(Path(path).read_text()))
    try:
        compiled = compile_ahead(artifact)
    except Exception as exc:  # reported with the document that holds the kernel
        return path, 0, f"{type(exc).__name__}: {str(exc)[:2000]}"
    missing = [name for name, asm in compiled.items() if "cubin" not in asm]
    return path, len(compiled), f"no cubin for {missing}" if missing else None


def _identity(path: Path) -> str:
    """What decides the compiled code: the source and every kernel's launch and argument dtypes."""
    doc = json.loads(path.read_text())
    dtypes = {b["name"]: b["dtype"] for b in doc.get("buffers", [])}
    kernels = [(k.get("name"), k.get("launch"), [dtypes.get(a) for a in k.get("args", [])])
               for k in doc.get("kernels", [])]
    return hashlib.sha256(json.dumps([doc.get("triton_source"), kernels], sort_keys=True,
                                     default=repr).encode()).hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    paths = sorted(Path(args.directory).glob("*.json"))
    unique: dict[str, Path] = {}
    for path in paths:
        unique.setdefault(_identity(path), path)
    if not paths:
        print(f"aot_corpus: no documents in {args.directory}: the tests recorded nothing "
              "(is STAX_TRITON_CORPUS set, and are torch and Triton installed?)")
        return 1
    start = time.perf_counter()
    failures, kernels = [], 0
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for path, n, problem in pool.map(_compile, [str(p) for p in unique.values()]):
            kernels += n
            if problem is not None:
                failures.append((path, problem))
    print(f"aot_corpus: {len(paths)} documents ({len(unique)} distinct), {kernels} kernels "
          f"compiled for sm_90 in {time.perf_counter() - start:.1f} s; {len(failures)} failed")
    for path, problem in failures:
        print(f"  {path}: {problem}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
