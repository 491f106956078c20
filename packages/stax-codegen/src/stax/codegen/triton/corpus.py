"""Every CUDA artifact a process runs, recorded for compilation ahead of time.

Under ``TRITON_INTERPRET=1`` (how the tests run the CUDA path without a GPU) Triton executes a
kernel as Python: code its compiler would reject (a type it cannot lower, a shape it cannot lay
out) still runs. With ``STAX_TRITON_CORPUS=dir`` set, each ``TritonExecutable`` made writes its
artifact's kernels document into ``dir`` (one file per distinct document), and
``tools/aot_corpus.py dir`` then compiles every kernel of every document for ``sm_90`` with the
options the executable launches it with. The test session does both, so every kernel the test
suite generates is compiled for the GPU in CI (issue 12 item 7)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..artifact import KernelArtifact

ENVIRONMENT = "STAX_TRITON_CORPUS"


def record(artifact: KernelArtifact) -> None:
    """Write ``artifact`` into the corpus directory, if one is set (nothing otherwise)."""
    directory = os.environ.get(ENVIRONMENT)
    if not directory:
        return
    text = json.dumps(artifact.to_json(), sort_keys=True)
    path = Path(directory) / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}.json"
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    partial.write_text(text)
    partial.replace(path)  # whole documents only, whatever processes record at once


def documents(directory: str | Path) -> list[tuple[Path, KernelArtifact]]:
    """The recorded artifacts, in a stable order."""
    return [(path, KernelArtifact.from_json(json.loads(path.read_text())))
            for path in sorted(Path(directory).glob("*.json"))]


__all__ = ["ENVIRONMENT", "documents", "record"]
