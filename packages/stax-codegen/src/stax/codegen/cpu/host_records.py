"""Decisions measured once per machine and recorded in the cache directory: the vector width
(``vector_width.py``) and the work worth a thread split (``parallel_work.py``).

A record's key names the machine as LLVM sees it (llvmlite's version, triple, CPU name and
features) and everything the measurement depends on (its format and probes), so a record made
on another machine, or by another measuring procedure, is never read. A record that does not
parse is discarded and measured again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import llvmlite

from ..diskcache import DiskCache


def remembered(directory: Path | None, key_parts: tuple[str, ...],
               decide: Callable[[], tuple[dict[str, Any], bool]],
               valid: Callable[[dict[str, Any]], bool]) -> tuple[dict[str, Any], bool]:
    """(record, whether it was read back): the record in ``directory`` under ``key_parts``
    (with llvmlite's version) that ``valid`` accepts, else ``decide()``'s, stored there unless
    ``decide`` says it is not to be kept (a measurement the machine's load made doubtful).
    ``directory`` None: no records, ``decide()`` every time."""
    if directory is None:
        return decide()[0], False
    records = DiskCache(directory / "host", suffix=".json", root=directory)
    key = records.key(llvmlite.__version__, *key_parts)
    blob = records.load(key)
    if blob is not None:
        try:
            record = json.loads(blob)
            if isinstance(record, dict) and valid(record):
                return record, True
        except ValueError:
            pass
        records.discard(key, "it is not a valid host record")
    record, keep = decide()
    if keep:
        records.store(key, json.dumps(record).encode())
    return record, False
