"""Compiling one Triton kernel of a CUDA artifact, and its binaries on disk.

A kernel is compiled by Triton's own compiler (``triton.compile`` on an ``ASTSource``) for the
GPU at hand, with the signature the executable launches it with: each buffer a pointer of its
dtype, the block sizes constants, and the pointers assumed 16-byte aligned (Triton's ``D``
specialization, which lets it vectorize loads) where the caller says so.

``BinaryCache`` keeps the compiled binary (cubin and Triton's metadata) under the cache
directory (``<cache_dir>/triton/<key[:2]>/<key>.cubin``) through ``DiskCache``, so entries are
bound to their key and checked on read (a corrupt, truncated or swapped entry is a miss, removed
and rebuilt, never launched) and the directory must be the user's own and private. The key is a
hash of everything that decides the binary: the module's source, the kernel's name, signature,
constants and aligned pointers, the compile options, the GPU target (backend, compute
capability, warp size), Triton's version and the environment variables Triton itself says
invalidate its cache. An entry is data: JSON metadata and the binary; nothing read is executed
as Python.

A warm process builds Triton's ``CompiledKernel`` from the entry (as Triton does from its own
cache) without running the compiler.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..diskcache import DiskCache

#: each loop dtype's pointer type in a Triton signature
POINTERS = {"bool": "*i1", "int8": "*i8", "int16": "*i16", "int32": "*i32", "int64": "*i64",
            "uint8": "*u8", "uint16": "*u16", "uint32": "*u32", "uint64": "*u64",
            "float32": "*fp32", "float64": "*fp64"}
FORMAT = "stax.triton-binary/1"
_log = logging.getLogger("stax.cache")


@dataclass(frozen=True)
class KernelSpec:
    """What decides one kernel's binary, but the target: the module ``source`` and the
    kernel's ``name``, its parameters (``signature``: name -> pointer type or ``constexpr``, in
    order), ``constants`` and the parameter positions assumed 16-byte ``aligned``, ``options``."""

    source: str
    name: str
    signature: tuple[tuple[str, str], ...]
    constants: tuple[tuple[str, Any], ...]
    aligned: tuple[int, ...]
    options: tuple[tuple[str, Any], ...]

    @staticmethod
    def of(source: str, fn: Any, dtypes: list[str], constants: dict[str, Any],
           aligned: tuple[int, ...], options: dict[str, Any], sizes: int = 0,
           size_type: str = "i64") -> KernelSpec:
        """The spec of ``fn`` (a ``triton.jit`` function of ``source``) whose first parameters
        are buffers of ``dtypes``, then ``sizes`` integers of ``size_type`` (a size-generic
        kernel's sizes, issue 15), and the others ``constants``."""
        names = list(fn.arg_names)
        signature = [(n, POINTERS[d]) for n, d in zip(names, dtypes)]
        given = len(dtypes) + sizes
        signature += [(n, size_type) for n in names[len(dtypes):given]]
        signature += [(n, "constexpr") for n in names[given:]]
        missing = [n for n in names[given:] if n not in constants]
        if missing or given > len(names):
            raise ValueError(f"{fn.__name__}: parameters {names} do not match {len(dtypes)} "
                             f"buffers and constants {sorted(constants)}")
        return KernelSpec(source, fn.__name__, tuple(signature), tuple(sorted(constants.items())),
                          tuple(aligned), tuple(sorted(options.items())))

    def key_parts(self, target: Any) -> list[str]:
        import triton

        env = _invalidating_env()
        return [FORMAT, f"triton {triton.__version__}",
                f"target {target.backend} {target.arch} {target.warp_size}",
                json.dumps([self.name, self.signature, self.constants, self.aligned, self.options,
                            sorted(env.items())], default=str)]

    def compile(self, fn: Any, target: Any) -> Any:
        """Triton's ``CompiledKernel`` of this spec for ``target``."""
        import triton

        return triton.compile(self.ast_source(fn, target), target=target, options=dict(self.options))

    def ast_source(self, fn: Any, target: Any) -> Any:
        from triton.compiler import ASTSource

        return ASTSource(fn=fn, signature=dict(self.signature), constexprs=dict(self.constants),
                         attrs={(i,): _divisibility(target) for i in self.aligned})


def _divisibility(target: Any) -> Any:
    """Triton's attribute for a pointer divisible by 16 (its specialization ``D``)."""
    from triton.compiler.compiler import make_backend

    parse = getattr(make_backend(target), "parse_attr", None)
    return parse("D") if parse is not None else [["tt.divisibility", 16]]


def _invalidating_env() -> dict[str, Any]:
    """The environment variables Triton keys its own cache with (none where this Triton does
    not say)."""
    try:
        from triton.compiler import compiler

        found = getattr(compiler, "get_cache_invalidating_env_vars", None)
        return dict(found()) if found is not None else {}
    except Exception:
        return {}


def pack(compiled: Any, key: str) -> bytes:
    """An entry's payload: a JSON line (format, the entry's key, kernel name, binary extension,
    Triton's metadata text) and the binary's bytes."""
    group = compiled.metadata_group
    metadata = next(Path(p).read_text() for name, p in group.items() if name.endswith(".json"))
    ext = _binary_ext(compiled.metadata.target)
    header = {"format": FORMAT, "key": key, "name": compiled.name, "ext": ext, "metadata": metadata}
    return json.dumps(header).encode() + b"\n" + bytes(compiled.asm[ext])


def unpack(payload: bytes, spec: KernelSpec, target: Any, key: str) -> tuple[str, str, bytes]:
    """(binary extension, metadata text, binary) of a payload made for ``spec`` on ``target``
    under ``key``; ValueError for anything else."""
    head, sep, binary = payload.partition(b"\n")
    if not sep:
        raise ValueError("no header line")
    header = json.loads(head)
    if not isinstance(header, dict) or header.get("format") != FORMAT or \
            header.get("key") != key or header.get("name") != spec.name or \
            header.get("ext") != _binary_ext(target):
        raise ValueError("the binary of another kernel, format or target")
    metadata = json.loads(header["metadata"])
    want = [target.backend, target.arch, target.warp_size]
    got = metadata.get("target") if isinstance(metadata, dict) else None
    if not isinstance(got, dict) or [got.get("backend"), got.get("arch"), got.get("warp_size")] != want \
            or metadata.get("name") != spec.name or not binary:
        raise ValueError("metadata of another kernel or target")
    return header["ext"], header["metadata"], binary


def _binary_ext(target: Any) -> str:
    from triton.compiler.compiler import make_backend

    return str(getattr(make_backend(target), "binary_ext", "cubin"))


def load_compiled(payload: bytes, spec: KernelSpec, fn: Any, target: Any, key: str) -> Any:
    """Triton's ``CompiledKernel`` of a payload (built as Triton builds one from its own cache:
    from a metadata file and a binary file, here in a private temporary directory removed
    once read)."""
    from triton.compiler import CompiledKernel

    ext, metadata, binary = unpack(payload, spec, target, key)
    directory = Path(tempfile.mkdtemp(prefix="stax-cubin-"))
    try:
        meta_path = directory / f"{spec.name}.json"
        bin_path = directory / f"{spec.name}.{ext}"
        meta_path.write_text(metadata)
        bin_path.write_bytes(binary)
        group = {meta_path.name: str(meta_path), bin_path.name: str(bin_path)}
        return CompiledKernel(spec.ast_source(fn, target), group, key)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class BinaryCache:
    """Triton binaries under ``<cache_dir>/triton``, verified on read (``DiskCache``)."""

    def __init__(self, cache_dir: str | Path) -> None:
        self.disk = DiskCache(Path(cache_dir) / "triton", suffix=".cubin", root=cache_dir)
        self.hits = 0
        self.misses = 0

    def key(self, spec: KernelSpec, target: Any) -> str:
        return self.disk.key(spec.source, *spec.key_parts(target))

    def load(self, spec: KernelSpec, fn: Any, target: Any) -> Any:
        """The ``CompiledKernel`` stored for ``spec`` on ``target``, or None (a miss; a bad
        entry is reported and removed)."""
        key = self.key(spec, target)
        payload = self.disk.load(key)
        if payload is None:
            self.misses += 1
            return None
        try:
            compiled = load_compiled(payload, spec, fn, target, key)
        except Exception as exc:
            self.disk.discard(key, f"it is not a Triton binary of {spec.name} ({exc})")
            self.misses += 1
            return None
        self.hits += 1
        return compiled

    def store(self, spec: KernelSpec, target: Any, compiled: Any) -> None:
        try:
            key = self.key(spec, target)
            payload = pack(compiled, key)
        except Exception as exc:  # a Triton that keeps its binaries otherwise: no caching
            _log.warning("stax: not caching the binary of %s: %s", spec.name, exc)
            return
        self.disk.store(key, payload)


#: size-generic kernels compiled in this process, by spec and target: a generic version's
#: instances (one per size) launch the same binaries, with or without a disk cache
_COMPILED: dict[tuple[KernelSpec, str], Any] = {}


def compiled_kernel(spec: KernelSpec, fn: Any, target: Any, cache: BinaryCache | None) -> Any:
    """The ``CompiledKernel`` of ``spec`` for ``target``: compiled in this process before, from
    ``cache`` when it holds it, else compiled (and stored)."""
    if not any(kind in ("i32", "i64") for _, kind in spec.signature):
        return _compiled_kernel(spec, fn, target, cache)  # (its launcher keeps it)
    key = (spec, f"{target.backend} {target.arch} {target.warp_size}")
    found = _COMPILED.get(key)
    if found is None:
        found = _COMPILED[key] = _compiled_kernel(spec, fn, target, cache)
    return found


def _compiled_kernel(spec: KernelSpec, fn: Any, target: Any, cache: BinaryCache | None) -> Any:
    if cache is not None:
        found = cache.load(spec, fn, target)
        if found is not None:
            return found
    compiled = spec.compile(fn, target)
    if cache is not None:
        cache.store(spec, target, compiled)
    return compiled


__all__ = ["POINTERS", "BinaryCache", "KernelSpec", "compiled_kernel", "load_compiled", "pack",
           "unpack"]
