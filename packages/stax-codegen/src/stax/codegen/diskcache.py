"""The on-disk cache of compiled machine code, captures and plans (spec §11: content-addressed,
never invalidated). The JIT stores object code in it, the runtime captures and kernel plans.

The key is a hash of everything that decides the entry: for machine code, the kernels' LLVM IR
and the target's ``cache_key`` (the codegen and llvmlite versions, and the host CPU's triple, name
and features). A different input gives
a different key, so an entry never needs invalidating.

Each entry is bound to its key: its header holds the key and a digest of key and payload, so an
entry copied over another, truncated, flipped or replaced is a miss (reported once, removed when
possible, rebuilt) — never loaded. Reading is defensive: the file is opened without following a
link and without blocking (a FIFO, a link to ``/dev/zero``, a directory are misses), only a
regular file of bounded size owned by the user is read, and no read, parse or unlink error ever
reaches the user's call.

The cache directory is trusted (its entries become machine code and extern calls), so it is used
only when it is owned by the current user and not writable by group or others, as ssh checks its
keys; it is created with mode 0o700. Otherwise Stax warns once and runs without the disk cache.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import tempfile
from pathlib import Path

MAGIC = b"STAXOBJ2"
KEY_BYTES = 64  # a sha256 in hex
HEADER = len(MAGIC) + 32 + KEY_BYTES
MAX_ENTRY_BYTES = 512 << 20  # larger files are not entries Stax writes: a miss, never read whole
_FORMAT = "stax.objcache/2"  # part of every key: entries of the older format are never looked up
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | \
    getattr(os, "O_CLOEXEC", 0)
_log = logging.getLogger("stax.cache")
_reported: set[str] = set()


def _report_once(what: str, message: str, *args: object) -> None:
    if what not in _reported:
        _reported.add(what)
        _log.warning(message, *args)


#: the cache directory's environment variable; "off", "none" or "0" turn the disk cache off
ENVIRONMENT = "STAX_CACHE_DIR"


def directory_from_environment() -> Path | None:
    """The cache directory ``STAX_CACHE_DIR`` names (default ``~/.cache/stax``), or None when
    it turns the cache off: read here only, for the runtime's settings and the host's records."""
    chosen = os.environ.get(ENVIRONMENT) or str(Path.home() / ".cache" / "stax")
    return None if chosen.lower() in ("off", "none", "0") else Path(chosen)


def directory_problem(directory: Path) -> str | None:
    """Why ``directory`` cannot hold trusted entries (None when it can): it must be a directory
    owned by the current user and not writable by group or others. A missing one is created 0o700.
    """
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
    except OSError as exc:
        return f"it cannot be created or read ({exc})"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    geteuid = getattr(os, "geteuid", None)
    if geteuid is not None and info.st_uid != geteuid():
        return f"it is owned by uid {info.st_uid}, not by you (uid {geteuid()})"
    if geteuid is not None and info.st_mode & 0o022:
        return f"it is writable by {'group and others' if info.st_mode & 0o002 else 'group'} " \
               f"(mode {stat.S_IMODE(info.st_mode):o}; chmod 700 it to use it)"
    return None


class DiskCache:
    """Entries ``directory/<key[:2]>/<key><suffix>``. ``root`` is the cache directory the user
    chose (``directory`` itself, or its parent for captures and plans): both must pass
    ``directory_problem`` before anything is read or written."""

    def __init__(self, directory: str | Path, suffix: str = ".o", root: str | Path | None = None
                 ) -> None:
        self.directory = Path(directory)
        self.root = Path(root) if root is not None else self.directory
        self.suffix = suffix
        self._usable: bool | None = None

    def key(self, content: str, *parts: str) -> str:
        """The key of ``content`` (LLVM IR, a capture or plan document) with the ``parts`` that
        also decide the entry (for machine code: ``Target.cache_key``)."""
        digest = hashlib.sha256()
        for part in (_FORMAT, *parts, content):
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}{self.suffix}"

    def usable(self) -> bool:
        """Whether the directories are trusted (checked once per cache object, warned once)."""
        if self._usable is None:
            for directory in dict.fromkeys((self.root, self.directory)):
                problem = directory_problem(directory)
                if problem is not None:
                    _report_once(f"dir:{directory}", "stax: not using the cache directory %s: %s; "
                                 "running without the disk cache", directory, problem)
                    self._usable = False
                    return False
            self._usable = True
        return self._usable

    def load(self, key: str) -> bytes | None:
        """The payload stored under ``key``, or None (a miss) — never an exception."""
        if not _is_key(key) or not self.usable():
            return None
        path = self.path(key)
        try:
            blob = _read_entry(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # a special file, a link, too large, unreadable
            self.discard(key, f"it cannot be read as a cache entry ({exc})")
            return None
        if len(blob) < HEADER or blob[: len(MAGIC)] != MAGIC:
            self.discard(key, "it is corrupted or truncated, or belongs to another key")
            return None
        digest, stored_key, payload = blob[len(MAGIC):len(MAGIC) + 32], \
            blob[len(MAGIC) + 32:HEADER], blob[HEADER:]
        if stored_key != key.encode() or _digest(key, payload) != digest:
            self.discard(key, "it is corrupted or truncated, or belongs to another key")
            return None
        return payload

    def discard(self, key: str, reason: str) -> None:
        """A bad entry: reported once, removed when possible (a later store rebuilds it)."""
        path = self.path(key)
        _report_once(f"entry:{path}", "stax: cache entry %s is not used: %s; rebuilding it",
                     path, reason)
        try:
            if not path.is_dir() or path.is_symlink():
                path.unlink(missing_ok=True)
        except OSError:  # a read-only cache costs speed, never correctness
            pass

    def store(self, key: str, payload: bytes) -> None:
        if not _is_key(key) or not self.usable():
            return
        if len(payload) + HEADER > MAX_ENTRY_BYTES:
            _report_once(f"large:{key}", "stax: not caching an entry of %d bytes", len(payload))
            return
        path = self.path(key)
        tmp: str | None = None
        try:
            path.parent.mkdir(mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=self.suffix)
            with os.fdopen(fd, "wb") as file:
                file.write(MAGIC + _digest(key, payload) + key.encode() + payload)
            os.replace(tmp, path)  # atomic: a reader sees the old entry or the whole new one
            tmp = None
        except OSError as exc:  # a read-only or full disk costs speed, never correctness
            _report_once(f"write:{path.parent}", "stax: cannot write cache entry %s: %s", path, exc)
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def _is_key(key: str) -> bool:
    return len(key) == KEY_BYTES and all(c in "0123456789abcdef" for c in key)


def _digest(key: str, payload: bytes) -> bytes:
    digest = hashlib.sha256(_FORMAT.encode() + b"\0" + key.encode() + b"\0")
    digest.update(payload)
    return digest.digest()


def _read_entry(path: Path) -> bytes:
    """The bytes of a regular file owned by the user, at most ``MAX_ENTRY_BYTES``; raises
    OSError or ValueError for anything else, without blocking."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        geteuid = getattr(os, "geteuid", None)
        if geteuid is not None and info.st_uid != geteuid():
            raise ValueError(f"owned by uid {info.st_uid}")
        if info.st_size > MAX_ENTRY_BYTES:
            raise ValueError(f"{info.st_size} bytes")
        chunks, size = [], 0
        while size <= info.st_size:  # one byte more than announced shows a file that grew
            chunk = os.read(fd, info.st_size + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size != info.st_size:
            raise ValueError("its size changed while it was read")
        return b"".join(chunks)
    finally:
        os.close(fd)
