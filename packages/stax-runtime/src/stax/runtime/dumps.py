"""Where a compiled function's dumps go (``STAX_DUMP_DIR``): one file-name stem per live function
in a directory, and the writer of each stage's document."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stax.ir import write_json

from .backends import dump_path

_stems: dict[str, dict[str, weakref.ref[Any]]] = {}  # directory -> stem -> owner
_lock = threading.Lock()


def dump_stem(owner: Any, directory: Path | None, name: str) -> str:
    """The file-name stem of ``owner``'s dumps in ``directory``: its name, with a suffix where
    another live compiled function of this process already writes there under it."""
    if directory is None:
        return name
    with _lock:
        stems = _stems.setdefault(str(directory), {})
        for stem, known in stems.items():
            if known() is owner:
                return stem
        stem, n = name, 1
        while (known := stems.get(stem)) is not None and known() is not None:
            n += 1
            stem = f"{name}-{n}"
        stems[stem] = weakref.ref(owner)
        return stem


def dumper(directory: Path | None, name: str, number: int) -> Callable[[str, Any], None]:
    """``dump(stage, document)`` for version ``number``: a JSON file per stage, or nothing."""
    if directory is None:
        return lambda stage, doc: None

    def dump(stage: str, doc: Any) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        write_json(dump_path(directory, name, number, stage), doc.to_json())
    return dump
