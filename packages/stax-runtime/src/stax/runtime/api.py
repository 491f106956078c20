"""``compile`` and ``CompiledFunction``: the call layer (spec §2).

A call computes the specialization key, looks up the compiled version for it, and runs it; on a
miss it captures the function on these arguments, hands the capture to the backend, and caches the
result. Whatever Stax cannot compile runs eagerly for that key, with one log line saying why
(or, under ``strict_native=True``, raises the same message as a typed error).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stax.ir import StaxError, UnsupportedError, tree_flatten, tree_unflatten, write_json
from stax.trace import trace

from . import config, logs
from .backends import dump_path, get_backend
from .signature import array_signature, signature


@dataclass(frozen=True)
class CacheInfo:
    """``hits`` counts cache hits per dispatch level (spec algorithm 2.1)."""

    versions: int
    compiles: int
    hits: dict[int, int]
    misses: int
    fallbacks: int


@dataclass
class Version:
    """One specialization: the backend's callable, or eager execution with the reason."""

    run: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    native: bool
    reason: str | None = None
    artifact: Any = None
    stats: dict[str, float] = field(default_factory=dict)


class CompiledFunction:
    def __init__(self, fn: Callable[..., Any], *, device: str | None = None, dynamic: bool = False,
                 strict_native: bool = False, backend: str = "stax",
                 options: dict[str, Any] | None = None) -> None:
        if device not in (None, "cpu"):
            raise StaxError(f"device {device!r} is not available yet; Stax compiles for 'cpu'")
        self.fn = fn
        self.device = device or "cpu"
        self.dynamic = dynamic
        self.strict_native = strict_native
        self.backend_name = backend
        self.backend = get_backend(backend)
        self.options = dict(options or {})
        self._versions: dict[Any, Version] = {}
        self._fast: dict[Any, Callable[..., Any]] = {}
        self._compiles = 0
        self._hits = {1: 0, 2: 0, 3: 0}
        self._misses = 0
        self._fallbacks = 0
        functools.update_wrapper(self, fn)
        if dynamic:
            logs.warn(f"stax: {self._name}: dynamic=True is not implemented yet; "
                      "compiling one version per exact shape (results are unaffected)")

    @property
    def _name(self) -> str:
        return getattr(self.fn, "__qualname__", repr(self.fn))

    # -- calling -------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs:
            key = array_signature(args)
            if key is not None:
                fast = self._fast.get(key)
                if fast is not None:
                    self._hits[3] += 1
                    return fast(*args)
        key = signature(args, kwargs)
        version = self._versions.get(key)
        if version is None:
            version = self._compile(key, args, kwargs)
        else:
            self._hits[3] += 1
        if not version.native:
            self._fallbacks += 1
        return version.run(args, kwargs)

    def cache_info(self) -> CacheInfo:
        return CacheInfo(len(self._versions), self._compiles, dict(self._hits), self._misses,
                         self._fallbacks)

    def versions(self) -> list[Version]:
        return list(self._versions.values())

    # -- compiling -----------------------------------------------------------------------------
    def _compile(self, key: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Version:
        self._misses += 1
        settings = config.current()
        number = len(self._versions)
        if self._versions:
            logs.emit("recompiles", settings.logs,
                      f"recompiling {self._name}: no cached version matches the arguments' "
                      f"signature ({number} cached)")
        start = time.perf_counter()
        timings: dict[str, float] = {}
        try:
            version = self._build(args, kwargs, settings, number, timings)
        except (UnsupportedError, _InternalError) as exc:
            if self.strict_native:
                raise (exc.__cause__ if isinstance(exc, _InternalError) else exc) from None
            reason = str(exc)
            logs.warn(f"stax: {self._name} falls back to eager NumPy for this signature: {reason}")
            fn = self.fn
            version = Version(lambda a, k: fn(*a, **k), native=False, reason=reason)
        self._compiles += 1
        version.stats["compile_s"] = time.perf_counter() - start
        version.stats.update(timings)
        logs.emit("perf", settings.logs, f"compiled {self._name} v{number} in "
                  f"{version.stats['compile_s'] * 1e3:.1f} ms: " + ", ".join(
                      f"{k} {v * 1e3:.1f} ms" for k, v in timings.items()))
        self._versions[key] = version
        if version.native:
            fast_key = array_signature(args) if not kwargs else None
            fast = getattr(version, "fast", None)
            if fast_key is not None and fast is not None:
                self._fast[fast_key] = fast
        return version

    def _build(self, args: tuple[Any, ...], kwargs: dict[str, Any], settings: config.Settings,
               number: int, timings: dict[str, float]) -> Version:
        name = getattr(self.fn, "__name__", "fn")
        clock = time.perf_counter()
        capture = trace(self.fn, args, kwargs, name=name)  # user errors propagate unchanged
        timings["capture"] = time.perf_counter() - clock
        dump = self._dumper(settings, name, number)
        dump("capture", capture)
        logs.emit("graph", settings.logs, str(capture))
        leaves = tree_flatten((args, kwargs))[0]
        slots = [i for i, s in enumerate(capture.inputs) if s is not None]
        examples = [leaves[i] for i in slots]
        try:
            run_flat = self.backend(capture, examples, dump=dump, timings=timings, **self.options)
        except UnsupportedError:
            raise
        except Exception as exc:  # a compiler bug: never a wrong result, say so and run eagerly
            raise _InternalError(f"internal compiler error in backend {self.backend_name!r}: "
                                 f"{type(exc).__name__}: {exc}") from exc
        artifact = getattr(run_flat, "artifact", None)
        if artifact is not None:
            logs.emit("loop", settings.logs, "(loop IR dumped with STAX_DUMP_DIR)")
            logs.emit("kernels", settings.logs, str(artifact))
        output_tree = capture.output_tree
        version = Version(_tree_runner(run_flat, slots, output_tree), native=True,
                          artifact=artifact)
        positional_arrays_only = slots == list(range(len(slots))) and not kwargs
        if output_tree.kind == "leaf" and positional_arrays_only:
            version.fast = lambda *arrays: run_flat(*arrays)[0]  # type: ignore[attr-defined]
        return version

    def _dumper(self, settings: config.Settings, name: str, number: int
                ) -> Callable[[str, Any], None]:
        directory = settings.dump_dir
        if directory is None:
            return lambda stage, doc: None

        def dump(stage: str, doc: Any) -> None:
            directory.mkdir(parents=True, exist_ok=True)
            write_json(dump_path(directory, name, number, stage), doc.to_json())
        return dump


class _InternalError(StaxError):
    pass


def _tree_runner(run_flat: Callable[..., list[Any]], slots: list[int], output_tree: Any
                 ) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    def run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        leaves = tree_flatten((args, kwargs))[0]
        return tree_unflatten(output_tree, run_flat(*[leaves[i] for i in slots]))
    return run


def compile(fn: Callable[..., Any] | None = None, *, device: str | None = None,
            dynamic: bool = False, strict_native: bool = False, backend: str = "stax",
            options: dict[str, Any] | None = None) -> Any:
    """Compile a NumPy function; usable as ``@compile`` or ``@compile(strict_native=True)``."""
    def wrap(f: Callable[..., Any]) -> CompiledFunction:
        return CompiledFunction(f, device=device, dynamic=dynamic, strict_native=strict_native,
                                backend=backend, options=options)
    return wrap if fn is None else wrap(fn)


