"""Cache entries are bound to their key, read defensively, and never raise into a call
(issue 10 items 9 and 10): a copied, forged, special or unreadable entry is a miss."""

import ctypes
import logging
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from stax.codegen import diskcache
from stax.codegen.cpu.jit import CompiledModule
from stax.codegen.cpu.objfile import object_problem
from stax.codegen.diskcache import DiskCache, directory_problem

IR = textwrap.dedent("""
    define i64 @answer() {
      ret i64 42
    }
""")
OTHER_IR = IR.replace("@answer", "@other").replace("42", "7")


@pytest.fixture
def cache(tmp_path):
    diskcache._reported.clear()
    return DiskCache(tmp_path / "cache")


def key(n):
    return f"{n:064x}"


def test_an_entry_copied_over_another_key_is_a_miss(cache, caplog):
    cache.store(key(1), b"payload one")
    cache.store(key(2), b"payload two")
    assert cache.load(key(1)) == b"payload one"
    cache.path(key(1)).write_bytes(cache.path(key(2)).read_bytes())
    with caplog.at_level(logging.WARNING, logger="stax"):
        assert cache.load(key(1)) is None
        assert cache.load(key(1)) is None
    assert caplog.text.count("belongs to another key") == 1  # reported once
    assert not cache.path(key(1)).exists()  # removed, so the next store rebuilds it


def test_read_and_unlink_errors_are_misses_not_exceptions(cache, monkeypatch):
    cache.store(key(1), b"payload")
    path = cache.path(key(1))
    path.write_bytes(path.read_bytes()[:-1] + b"!")  # digest no longer matches

    def refuse(*args, **kwargs):
        raise PermissionError("read-only file system")
    monkeypatch.setattr(type(path), "unlink", refuse)
    assert cache.load(key(1)) is None  # unlinking fails: still a miss

    monkeypatch.setattr(diskcache.os, "read", refuse)
    cache.store(key(2), b"payload")
    assert cache.load(key(2)) is None  # reading fails: a miss


def test_special_files_do_not_block_and_are_misses(tmp_path):
    """Each in a child process with a timeout: the failure this guards against is a hang."""
    script = textwrap.dedent(f"""
        import os
        from pathlib import Path
        from stax.codegen.diskcache import DiskCache
        cache = DiskCache(Path({str(tmp_path)!r}) / "cache")
        keys = [f"{{n:064x}}" for n in range(1, 6)]
        for k in keys:
            cache.path(k).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(cache.path(keys[0]))                      # a FIFO
        os.symlink("/dev/zero", cache.path(keys[1]))        # endless bytes
        cache.path(keys[2]).mkdir()                          # a directory
        cache.store(keys[3], b"x")
        os.symlink(cache.path(keys[3]), cache.path(keys[4]))  # a link to a valid entry
        print([cache.load(k) for k in keys])
        cache.store(keys[0], b"fresh")                       # a FIFO is replaced on store
        print(cache.load(keys[0]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[None, None, None, b'x', None]", "b'fresh'"]


def test_entries_over_the_size_cap_are_not_read(cache, monkeypatch):
    cache.store(key(1), b"y" * 1000)
    monkeypatch.setattr(diskcache, "MAX_ENTRY_BYTES", 500)
    assert cache.load(key(1)) is None
    cache.store(key(2), b"z" * 1000)  # not written either
    assert not cache.path(key(2)).exists()


def test_a_failed_store_leaves_no_temporary_file(cache, monkeypatch):
    def refuse(*args):
        raise OSError("rename failed")
    monkeypatch.setattr(diskcache.os, "replace", refuse)
    cache.store(key(1), b"payload")
    assert not list(cache.directory.rglob("*"))[1:]  # only the shard directory itself
    assert [p for p in cache.directory.rglob("*") if p.is_file()] == []


def test_the_directory_is_created_private_and_checked(tmp_path, caplog):
    diskcache._reported.clear()
    cache = DiskCache(tmp_path / "new" / "cache")
    cache.store(key(1), b"payload")
    assert stat.S_IMODE((tmp_path / "new" / "cache").stat().st_mode) == 0o700
    assert stat.S_IMODE(cache.path(key(1)).parent.stat().st_mode) == 0o700

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert "writable by group and others" in directory_problem(shared)
    with caplog.at_level(logging.WARNING, logger="stax"):
        unsafe = DiskCache(shared / "objects", root=shared)
        unsafe.store(key(1), b"payload")
        assert unsafe.load(key(1)) is None
        DiskCache(shared).load(key(1))
    assert caplog.text.count("running without the disk cache") == 1
    assert not (shared / "objects").exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_a_directory_of_another_user_is_not_used(tmp_path):
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    os.chown(other, 65534, 65534)
    assert "not by you" in directory_problem(other)
    cache = DiskCache(other)
    cache.store(key(1), b"payload")
    assert cache.load(key(1)) is None and not list(other.iterdir())


def test_object_check_refuses_garbage_and_accepts_real_objects(tmp_path):
    cache = DiskCache(tmp_path)
    module = CompiledModule(IR, cache)
    (entry,) = [p for p in tmp_path.rglob("*.o")]
    payload = entry.read_bytes()[diskcache.HEADER:]
    assert object_problem(payload) is None
    assert object_problem(b"garbage" * 100) is not None
    assert object_problem(b"\x7fELF" + bytes(range(256)) * 4) is not None
    assert object_problem(payload[:200]) is not None
    del module


def test_forged_entries_with_a_valid_digest_are_rebuilt_not_run(tmp_path):
    """A garbage object, and an object of another module, stored under the key of ours (a
    valid digest: only a forger or a bug can make one): both rebuilt from IR. In a child
    process, since the failure this guards against is a segfault."""
    script = textwrap.dedent(f"""
        import ctypes, sys
        from stax.codegen import diskcache
        from stax.codegen.cpu.host import machine_key
        from stax.codegen.diskcache import DiskCache
        from stax.codegen.cpu.jit import CompiledModule
        IR, OTHER = {IR!r}, {OTHER_IR!r}
        cache = DiskCache({str(tmp_path)!r})
        key = cache.key(IR, "3", *machine_key())
        other = CompiledModule(OTHER, cache)
        other_key = cache.key(OTHER, "3", *machine_key())
        for forged in (b"garbage" * 100, cache.load(other_key)):
            diskcache._reported.clear()  # each problem is reported once per entry
            cache.store(key, forged)
            module = CompiledModule(IR, cache)
            answer = ctypes.CFUNCTYPE(ctypes.c_int64)(module.address("answer"))()
            print(answer, module.from_cache)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["42 False", "42 False"]
    assert "not a loadable object" in done.stderr and "lacks the symbol answer" in done.stderr


def test_a_sound_entry_is_still_loaded(tmp_path):
    CompiledModule(IR, DiskCache(tmp_path))
    warm = CompiledModule(IR, DiskCache(tmp_path))
    assert warm.from_cache
    assert ctypes.CFUNCTYPE(ctypes.c_int64)(warm.address("answer"))() == 42
    assert warm.from_cache  # the symbol was there: nothing rebuilt
