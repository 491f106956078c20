"""The on-disk cache of compiled machine code (spec §11: content-addressed, never invalidated).

The key is a hash of everything that decides the machine code: the kernels' LLVM IR, the codegen
and llvmlite versions, and the host CPU's name and features. A different input gives a different
key, so an entry never needs invalidating. Each entry carries a digest of its bytes: a corrupted
or truncated entry is reported once, removed and rebuilt — never loaded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

MAGIC = b"STAXOBJ1"
_log = logging.getLogger("stax.cache")
_reported: set[str] = set()


class ObjectCache:
    def __init__(self, directory: str | Path, suffix: str = ".o") -> None:
        self.directory = Path(directory)
        self.suffix = suffix

    def key(self, llvm_ir: str, *parts: str) -> str:
        digest = hashlib.sha256()
        for part in (*parts, llvm_ir):
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}{self.suffix}"

    def load(self, key: str) -> bytes | None:
        path = self.path(key)
        try:
            blob = path.read_bytes()
        except OSError:
            return None
        header = len(MAGIC) + 32
        payload = blob[header:]
        if blob[: len(MAGIC)] != MAGIC or hashlib.sha256(payload).digest() != blob[len(MAGIC):header]:
            if key not in _reported:
                _reported.add(key)
                _log.warning("stax: cache entry %s is corrupted or truncated; rebuilding it", path)
            path.unlink(missing_ok=True)
            return None
        return payload

    def store(self, key: str, payload: bytes) -> None:
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
                tmp.write(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp.name, path)  # atomic: a reader sees the old entry or the whole new one
        except OSError as exc:  # a read-only or full disk costs speed, never correctness
            _log.warning("stax: cannot write cache entry %s: %s", path, exc)
