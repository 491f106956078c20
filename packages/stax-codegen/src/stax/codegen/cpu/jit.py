"""Compiling LLVM IR text to machine code for the host CPU (parse, verify, optimize, JIT).

Building IR (``emit``) is kept apart from compiling it (this module), as llvmlite itself does.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import threading
from collections.abc import Callable
from typing import Any

import llvmlite.binding as llvm
import numpy as np

from ..diskcache import DiskCache
from . import host, libm
from .objfile import object_problem


def _llvm_lock() -> Any:
    """llvmlite's lock around every call into LLVM (``ffi.lib._lock``, an ``_LLVMLock``), or
    None where this llvmlite has none of that shape."""
    lock = getattr(getattr(getattr(llvm, "ffi", None), "lib", None), "_lock", None)
    return lock if hasattr(getattr(lock, "_lock", None), "acquire") else None


def _before_fork() -> None:
    """Fork only between two calls into LLVM. A thread compiling while another forks held
    llvmlite's lock, which the child inherited locked: its first compile hung (and LLVM's own
    state could be half way through a change). The fork waits for the call in flight (one pass
    pipeline at most); the child gets a fresh lock, the parent releases its own."""
    lock = _llvm_lock()
    if lock is not None:
        lock._lock.acquire()


def _after_fork_in_parent() -> None:
    lock = _llvm_lock()
    if lock is not None:
        lock._lock.release()


def _after_fork_in_child() -> None:
    lock = _llvm_lock()
    if lock is not None:
        lock._lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


@functools.cache
def _target_machine() -> Any:
    """The target machine used for optimization passes and assembly listings (never handed to
    an engine, which would take ownership of it)."""
    return _new_target_machine()


def _new_target_machine() -> Any:
    llvm = host.llvm()
    identity = host.host_identity()
    target = llvm.Target.from_triple(identity.triple)
    return target.create_target_machine(cpu=identity.cpu, features=identity.features, opt=3)


@functools.cache
def array_data_offset() -> int:
    """Byte offset of the data pointer inside a NumPy array object (``PyArrayObject.data``).

    It follows the object header (16 bytes on a normal CPython build); found by looking, once,
    so a build with a larger header still works.
    """
    probe = np.arange(4.0)
    want = probe.ctypes.data
    for offset in range(8, 129, 8):
        if ctypes.c_void_p.from_address(id(probe) + offset).value == want:
            return offset
    raise RuntimeError("cannot locate the data pointer inside numpy.ndarray")


def array_dims_offset() -> int:
    """Byte offset of the dimensions pointer inside a NumPy array object
    (``PyArrayObject.dimensions``): size-generic kernels read a dynamic size from it."""
    probe = np.empty((3, 5, 7, 11), np.int8)
    base = id(probe) + array_data_offset()
    # NumPy's layout after the data pointer: ``int nd``, then the dimensions and the strides,
    # one allocation of 2 * nd sizes: checked without following either pointer, then read
    nd = ctypes.c_int.from_address(base + 8).value
    dims, strides = (ctypes.c_void_p.from_address(base + k).value for k in (16, 24))
    if nd == probe.ndim and dims and strides == dims + 8 * nd and \
            list((ctypes.c_int64 * nd).from_address(dims)) == list(probe.shape):
        return array_data_offset() + 16
    raise RuntimeError("cannot locate the dimensions inside numpy.ndarray")


class CompiledModule:
    """Machine code of one LLVM module; keeps the JIT engine (and so the code) alive, and frees
    it when collected: whatever can call into the code holds this object (``kernel_function``,
    the native pool's launch steps, a machine-code entry's ``__self__``).

    With a ``cache``, the object code is looked up by content first (a warm start parses and
    optimizes nothing) and stored after a compile."""

    def __init__(self, llvm_ir: str | Callable[[], str], cache: DiskCache | None = None,
                 speed_level: int = 3, key: str | None = None, *,
                 unless_folded: str | None = None) -> None:
        """``llvm_ir`` may be a function making it, with ``key`` standing for its content in
        the cache (a module whose text is costly to build: a warm start does not build it).
        ``unless_folded``: another module compiled (and cached under this module's key) instead
        when optimizing this one computed an infinity or NaN at compile time
        (``folded_non_finite``): the fast kernels' flags never see such an operation's event,
        the precise kernels' checks fold with it to the right answer."""
        self.speed_level = speed_level
        self.from_cache = False
        self.unless_folded = unless_folded
        self.folded: list[str] = []  # the non-finite constants that made it compile the other
        content = key if key is not None else llvm_ir
        assert isinstance(content, str)
        key = cache.key(content, str(speed_level), *host.machine_key()) if cache is not None \
            else None
        payload = cache.load(key) if cache is not None and key is not None else None
        self._source = llvm_ir
        self._cache, self._key = cache, key
        self._stale: list[Any] = []  # engines of a cached object found wanting (their code lives)
        problem = object_problem(payload) if payload is not None else None
        if payload is not None and problem is None:
            self._engine = _engine_for_object(payload)
            self.from_cache = True
            return
        if problem is not None and cache is not None and key is not None:
            cache.discard(key, f"it is not a loadable object: {problem}")
        self._compile(cache, key)

    def _compile(self, cache: DiskCache | None, key: str | None) -> None:
        """Optimize and compile the IR, then keep only its object code, loaded into an engine of
        its own as a cached object is: an engine that owns an optimized IR module holds about
        800 KB for as long as the code lives, one over its object code about 70 KB."""
        self.folded = nan_operands(self.llvm_ir) if self.unless_folded is not None else []
        if self.folded:  # the fast module would lose events: not worth optimizing it first
            module = _optimized_module(self.unless_folded, self.speed_level)
        else:
            module = _optimized_module(self.llvm_ir, self.speed_level)
            if self.unless_folded is not None:
                self.folded = folded_non_finite(self.llvm_ir, str(module))
                if self.folded:
                    module = _optimized_module(self.unless_folded, self.speed_level)
        # The engine takes ownership of the target machine it is given: give it its own.
        compiler = host.llvm().create_mcjit_compiler(module, _new_target_machine())
        objects: list[bytes] = []
        compiler.set_object_cache(notify_func=lambda _module, buffer: objects.append(bytes(buffer)))
        compiler.finalize_object()
        if len(objects) != 1:  # not expected: keep the IR's engine, whatever it costs
            self._engine = compiler
            return
        if cache is not None and key is not None:
            cache.store(key, objects[0])
        self._engine = _engine_for_object(objects[0])
        compiler.close()  # the IR module and its engine; no address of theirs was handed out

    @property
    def llvm_ir(self) -> str:
        if not isinstance(self._source, str):
            self._source = self._source()
        return self._source

    @property
    def optimized_ir(self) -> str:
        """The optimized IR, made again (only the object code is kept)."""
        return str(_optimized_module(self.llvm_ir, self.speed_level))

    def address(self, name: str) -> int:
        return self._symbol(name, function=True)

    def global_address(self, name: str) -> int:
        return self._symbol(name, function=False)

    def _symbol(self, name: str, function: bool) -> int:
        """A symbol's address, never 0: a cached object without it is a miss, rebuilt from IR
        (the engine it came from stays alive: addresses already handed out keep working)."""
        engine = self._engine
        address = engine.get_function_address(name) if function else \
            engine.get_global_value_address(name)
        if address == 0 and self.from_cache:
            if self._cache is not None and self._key is not None:
                self._cache.discard(self._key, f"it lacks the symbol {name}")
            self._stale.append(engine)
            self.from_cache = False
            self._compile(self._cache, self._key)
            return self._symbol(name, function)
        if address == 0:
            raise RuntimeError(f"compiled module has no symbol {name!r}")
        return address

    def assembly(self) -> str:
        return _target_machine().emit_assembly(_optimized_module(self.llvm_ir, self.speed_level))


#: an infinity or NaN in LLVM's text form: the hex of a double (floats print as doubles too)
_NON_FINITE = re.compile(r"0x[7F]FF[0-9A-F]{13}", re.IGNORECASE)


def nan_operands(source: str) -> list[str]:
    """The NaN constants ``source`` computes with (not merely selects or stores): LLVM answers
    ``x * NaN`` (and +, -, /, comparisons) without ``x``, so the computation of ``x`` and the
    event it raises in the CPU's flags are gone (found by the stress suite: ``v0 = x * -inf;
    v0 * float(v0.max())`` with a NaN maximum lost the invalid ``0 * -inf``)."""
    found = set()
    for line in source.splitlines():
        instruction = line.split("=", 1)[1].split() if "=" in line else line.split()
        if not instruction or instruction[0] in _KEEPS_OPERANDS:
            continue
        for constant in _NON_FINITE.findall(line):
            if int(constant, 16) & ~(1 << 63) > 0x7FF0000000000000:  # a NaN, not an infinity
                found.add("0x" + constant[2:].upper())
    return sorted(found)


#: instructions that pass a constant on without computing with it
_KEEPS_OPERANDS = frozenset({"select", "store", "phi", "ret", "insertelement", "shufflevector",
                             "bitcast"})


#: words LLVM's optimizer puts before ``call`` (``tail call``): the same instruction as the
#: source's ``call`` (an opaque infinity, ``"=x,0"(double 0x7FF0...)``, was taken for a folded
#: one, and every complex ``abs`` ran its precise kernels: 2x slower)
_CALL_MARKERS = frozenset({"tail", "musttail", "notail"})


def folded_non_finite(before: str, after: str) -> list[str]:
    """The infinities and NaNs the optimized module ``after`` uses in an instruction that its
    source ``before`` does not use them in: values LLVM computed at compile time (``x - x`` of
    integers is 0, then ``0.0 / 0.0`` a NaN constant stored), so no instruction raises the CPU's
    flag for them. Compared by instruction and constant: a NaN the source only selects (arctan2's
    special cases) does not hide the same NaN folded into a store (found by the stress suite:
    ``l[0] -= l[0]; np.abs(l[0]) / np.abs(l[0])`` beside an ``np.arctan2``)."""
    def found(text: str) -> set[tuple[str, str]]:
        uses = set()
        for line in text.splitlines():
            constants = _NON_FINITE.findall(line)
            if not constants:
                continue
            words = (line.split("=", 1)[1] if "=" in line.split("(", 1)[0] else line).split()
            while words and words[0] in _CALL_MARKERS:  # LLVM marks calls it may tail-call
                words = words[1:]
            for c in constants:
                uses.add((words[0] if words else "", "0x" + c[2:].upper()))
        return uses
    return sorted({c for _, c in found(after) - found(before)})


#: the end of a precise module's name (``generate.py``): kernels checking every operation
PRECISE_SUFFIX = ".precise"


#: a module of more IR than this (characters) is optimized without the SLP vectorizer: a plan
#: of hundreds of kernels (a data-dependent ``while`` unrolled 200 times, one kernel reading 200
#: buffers) spent 1.3 s in O3, 0.9 s of it in SLP on its long straight-line bodies (0.4 s
#: without); the loop vectorizer, which the kernels' loops rely on, still runs
SLP_IR_LIMIT = 300_000


def _optimized_module(llvm_ir: str, speed_level: int = 3) -> Any:
    """The module optimized for the host. A precise module (every operation checked, run only
    for calls whose fast kernels reported a possible event) is optimized without the SLP
    vectorizer, which takes seconds on its long straight-line checks (complex arithmetic: a
    row of 4 complex products, 0.1 s -> 12 s); its loops still vectorize. So is a module of
    more than ``SLP_IR_LIMIT`` characters of IR."""
    llvm = host.llvm()
    module = llvm.parse_assembly(llvm_ir)
    module.triple = host.host_identity().triple
    module.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    vectorize = speed_level >= 2
    precise = f'{PRECISE_SUFFIX}"' in llvm_ir[:llvm_ir.find("\n")]  # its ModuleID line
    pto.loop_vectorization = vectorize
    pto.slp_vectorization = vectorize and not precise and len(llvm_ir) <= SLP_IR_LIMIT
    pto.loop_interleaving = vectorize
    pto.loop_unrolling = vectorize
    builder = llvm.create_pass_builder(_target_machine(), pto)
    passes = builder.getModulePassManager()
    try:
        passes.run(module, builder)
    finally:
        _dispose_pass_manager(passes)
    return module


def _dispose_pass_manager(passes: Any) -> None:
    """Free a module pass manager now. llvmlite's ``ModulePassManager`` never frees itself (its
    base ``ObjectRef._dispose``, a no-op, comes before ``NewPassManager._dispose`` in its method
    order): each compile kept its O3 pipeline and the passes' state, about 150 KB."""
    try:
        from llvmlite.binding.newpassmanagers import NewPassManager
        dispose = NewPassManager._dispose
    except (ImportError, AttributeError):  # another llvmlite: its own close() decides
        passes.close()
        return
    try:
        dispose(passes)
    finally:
        passes.detach()  # never disposed a second time


def _engine_for_object(payload: bytes) -> Any:
    llvm = host.llvm()
    libm.bind_symbols()  # the symbols of our own kernels call (``libm.py``)
    empty = llvm.parse_assembly("")
    empty.triple = host.host_identity().triple
    engine = llvm.create_mcjit_compiler(empty, _new_target_machine())
    engine.add_object_file(llvm.ObjectFileRef.from_data(payload))
    engine.finalize_object()
    return engine


def kernel_function(module: CompiledModule, name: str, nargs: int) -> Any:
    """A ctypes callable ``f(array, ..., start, stop)``; calling it releases the GIL. It keeps
    ``module`` (its machine code) alive."""
    proto = ctypes.CFUNCTYPE(None, *([ctypes.py_object] * nargs), ctypes.c_int64, ctypes.c_int64)
    function = proto(module.address(name))
    function.module = module
    return function
