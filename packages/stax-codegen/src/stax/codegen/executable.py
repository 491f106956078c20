"""Running an artifact: compile its module once, then allocate buffers and launch kernels per call."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from stax.ir import StaxError
from stax.ir.interpreter import call_method, resolve_function
from stax.loop.ir import decode_operands, map_buffer_refs

from . import errstate
from .arena import ALIGN
from .artifact import BufferPlan, ExternPlan, KernelArtifact
from .block_pool import MIN_BYTES, default_block_pool
from .cpu.entry import Entry, make_entry
from .cpu.entry_events import judge
from .cpu.fpevents import DIVIDE, INVALID, MAYBE, OVERFLOW, TIE, UNDERFLOW
from .cpu.item_loop import ItemLoop, make_item_loop
from .cpu.jit import CompiledModule, kernel_function
from .cpu.native_pool import MAX_ARITY, native_pool
from .cpu.objcache import ObjectCache
from .event_reports import event_reporter
from .extern_results import OUT_FUNCTIONS, takes_out
from .late_reports import reporter
from .python_pool import default_pool
from .straight_line import CallPlan, KernelStep, NumPyStep, write_call

#: after a call whose fast kernels reported ``MAYBE`` (and ran again with the precise ones), this
#: many calls of the executable start with the precise kernels; the next one tries the fast ones
#: again. Data with NaN or infinities that the fast kernels test tends to come back call after
#: call: each such call ran the fast and then the precise kernels (measured, float64 with one NaN:
#: ``exp`` of 100,000 elements 1104 -> 379 us, ``x // 2.5`` 539 -> 288 us, ``(x * 2).max()``
#: 126 -> 91 us, 8 elements 7.4 -> 5.4 us). The precise kernels cannot tell whether the fast ones
#: would have been enough (they check every operation, not finiteness), hence a fixed count: data
#: that stays non-finite pays one fast run in 33 calls, clean data after non-finite data at most
#: 32 precise runs (1.6-1.9x a fast one, ``cpu/fpevents.py``).
PRECISE_FIRST_CALLS = 32


class InputMismatch(StaxError, ValueError):
    """``Executable(...)`` called with inputs other than those its plan was made for: another
    count, type, shape, dtype or memory layout (strides). The message names the input."""


class ExternResultMismatch(StaxError):
    """An extern call returned something other than what capture saw (a shape that depends on the
    data, say). Nothing the caller can see has been written; the runtime runs the call eagerly."""


class ExternRaised(ExternResultMismatch):
    """An extern call (NumPy) raised. Nothing the caller can see has been written yet (an
    argument's update is copied back at the end), so the runtime runs the call eagerly, where
    NumPy raises its error again after the updates that came before it, as eager code leaves
    them."""


class FloatingPointEvents(ExternResultMismatch):
    """The kernels met floating-point events that NumPy's error state does not ignore, or the
    state does not ignore underflow, which kernels do not detect (``errstate.py``). Nothing the
    caller can see has been written; the runtime runs the call eagerly, and NumPy warns, raises
    or calls exactly as it does."""

    def __init__(self, bits: int) -> None:
        self.bits = bits
        what = "underflow is not ignored by np.errstate" if bits == UNDERFLOW else \
            f"floating-point events in the kernels ({errstate.describe(bits)})"
        super().__init__(what)


def _refuse_underflow() -> None:
    """At the start of a call of float kernels: declined while underflow is not ignored."""
    if errstate.heeded() & UNDERFLOW:
        raise FloatingPointEvents(UNDERFLOW)


def _settle(bits: int, precise: Callable[[], list[Any]] | None,
            report: Callable[[int], bool] | None = None) -> list[Any] | None:
    """After the kernels reported ``bits``: None to return the call's own results (events
    NumPy's state heeds reported by ``report`` where it can: ``event_reports.py``); the
    results of a run with the precise kernels when the fast ones only saw a non-finite value
    (which decides again, on exact events); or ``FloatingPointEvents``. An fmax/fmin tie of
    different bits (``TIE``) declines the call whatever else happened: NumPy decides it.
    Underflow comes only from the fast kernels (the CPU's flags): it is decided next."""
    if bits & TIE:
        raise ExternResultMismatch("fmax/fmin of 0.0 and -0.0 (or of two different NaNs): which "
                                   "one NumPy returns depends on the element's place in its loops")
    if bits & UNDERFLOW and errstate.heeded() & UNDERFLOW:
        raise FloatingPointEvents(UNDERFLOW)
    if bits & MAYBE:
        if precise is not None:  # runs the NumPy steps again: their warnings are its to give
            errstate.forget_held()
            return precise()
        bits |= DIVIDE | OVERFLOW | INVALID  # unknown: the worst
        report = None
    heeded = errstate.heeded() & bits & ~(MAYBE | UNDERFLOW)
    if heeded and (report is None or not report(bits & ~(MAYBE | UNDERFLOW))):
        raise FloatingPointEvents(heeded)
    return None


def _numpy_step(plan: ExternPlan, slot: dict[str, int], into: bool = False,
                allocate: Callable[[], np.ndarray] | None = None) -> NumPyStep:
    """An extern as a step of the written-out call (``straight_line.py``), its target checked
    against the allow-list now, when the plan is loaded: a document names data, never code.
    ``into``: the call writes into its slot's planned view (``out=``, ``extern_results.py``),
    or into what ``allocate`` gives just before it."""
    fn = None if plan.method else resolve_function(plan.target)
    if plan.method:
        call_method(None, plan.target, (), {}, check_only=True)
    if into:
        fn = OUT_FUNCTIONS[plan.target]
    return NumPyStep(plan, fn, decode_operands(plan.args), decode_operands(plan.kwargs),
                     slot[plan.buffer], into, allocate)


def _verified(plan: ExternPlan, result: Any) -> Any:
    """An extern's result as the plan stores it (a NumPy scalar as its 0-d array), or
    ``ExternResultMismatch`` where it is not what capture saw: another type, shape, dtype or
    layout (the stride of a length-1 axis aside), or another count of arrays."""
    if plan.sequence is not None:
        if not isinstance(result, (tuple, list)) or len(result) != plan.sequence:
            raise ExternResultMismatch(f"extern {plan.target}() returned "
                                       f"{type(result).__name__}; capture saw "
                                       f"{plan.sequence} arrays")
        return result
    array = np.asarray(result) if isinstance(result, np.generic) else result
    dtype = np.dtype(plan.dtype)
    strides = tuple(s * dtype.itemsize for s in plan.strides)
    if type(array) is not np.ndarray or array.shape != tuple(plan.shape) or \
            array.dtype != dtype or (array.size > 1 and any(
                n > 1 and got != want for n, got, want in zip(array.shape, array.strides,
                                                              strides))):
        got = (f"{type(result).__name__} {getattr(array, 'dtype', '')}"
               f"{list(getattr(array, 'shape', ()))} strides={getattr(array, 'strides', None)}")
        raise ExternResultMismatch(f"extern {plan.target}() returned {got}; capture saw "
                                   f"{plan.dtype}{list(plan.shape)} strides={strides}")
    return array


def _releases(artifact: KernelArtifact, slot: dict[str, int], kept: set[Any]
              ) -> list[tuple[int, ...]]:
    """Per step, the slots of NumPy steps' results it is the last reader of (not outputs): the
    call drops them there, so a chain of NumPy products (``r = r @ A`` in a loop) holds two
    results at a time, not all of them (matrix_power at 256x256: 1.3x faster)."""
    externs = {e.buffer: e for e in artifact.externs}
    kernels = {k.name: k for k in artifact.kernels}
    last: dict[int, int] = {}
    for n, step in enumerate(artifact.steps):
        names = _buffer_names((decode_operands(externs[step].args),
                               decode_operands(externs[step].kwargs))) if step in externs \
            else list(kernels[step].args)
        for name in names:
            if name in externs:
                last[slot[name]] = n
    kept = kept | {slot[c] for c in artifact.checks}
    releases: list[list[int]] = [[] for _ in artifact.steps]
    for i, n in last.items():
        if i not in kept:
            releases[n].append(i)
    return [tuple(r) for r in releases]


def _buffer_names(operands: Any) -> list[str]:
    """The buffers an extern call's operands refer to, nested containers included."""
    names: list[str] = []
    map_buffer_refs(operands, lambda ref: names.append(ref.name))
    return names


def _allocator(plan: BufferPlan) -> Callable[[], np.ndarray]:
    shape, dtype = plan.shape, np.dtype(plan.dtype)
    strides = tuple(s * dtype.itemsize for s in plan.strides)
    if math.prod(shape) * dtype.itemsize >= MIN_BYTES:  # pages already mapped: no first-touch cost
        pool = default_block_pool()
        return lambda: pool.empty(shape, dtype, strides)
    if np.empty(shape, dtype).strides == strides:
        return lambda: np.empty(shape, dtype)
    size = math.prod(shape)
    return lambda: np.ndarray(shape, dtype, buffer=np.empty(size, dtype), strides=strides)


def _block_allocator(nbytes: int) -> Callable[[], np.ndarray]:
    if nbytes >= MIN_BYTES:
        pool = default_block_pool()
        return lambda: pool.empty((nbytes,), np.dtype(np.uint8))
    return lambda: np.empty(nbytes, np.uint8)


def _arena_allocator(nbytes: int) -> Callable[[], np.ndarray]:
    """The call's arena (``arena.py``): ``nbytes`` from an ``ALIGN``-byte boundary."""
    allocate = _block_allocator(nbytes + ALIGN)

    def arena() -> np.ndarray:
        block = allocate()
        start = -block.ctypes.data % ALIGN
        return block[start:start + nbytes]
    return arena


class _Draws:
    """The states of the generators among a call's arguments when it began, to undo its draws."""

    def __init__(self, arrays: tuple[Any, ...], slots: list[int]) -> None:
        self.saved = [(arrays[i], arrays[i].bit_generator.state) for i in slots
                      if isinstance(arrays[i], np.random.Generator)]

    def undo(self) -> None:
        for generator, state in self.saved:
            generator.bit_generator.state = state


class Executable:
    """``executable(*arrays)`` runs the artifact on arrays given in input-buffer order and returns
    the flat list of output leaves (``artifact.outputs`` order)."""

    def __init__(self, artifact: KernelArtifact, cache_dir: str | Path | None = None, *,
                 modules: dict[str, CompiledModule] | None = None) -> None:
        if artifact.triton_source is not None or artifact.target.get("device", "cpu") != "cpu":
            raise ValueError(f"{artifact.name}: a {artifact.target.get('device', 'cuda')} artifact "
                             "(Triton kernels, no LLVM IR): run it with "
                             "stax.codegen.TritonExecutable on torch tensors or CuPy arrays")
        self.artifact = artifact
        self._cache = ObjectCache(cache_dir) if cache_dir is not None else None
        # a fast module in which LLVM folded an event away is replaced by the precise one
        # ``modules``: machine code by LLVM IR, shared by executables of the same IR (a
        # size-generic version's instances at each call's sizes: ``instantiate.py``)
        self._modules = modules
        module = modules.get(artifact.llvm_ir) if modules is not None else None
        if module is None:
            module = CompiledModule(artifact.llvm_ir, self._cache,
                                    unless_folded=artifact.precise_ir)
            if modules is not None:
                modules[artifact.llvm_ir] = module
        self.module = module
        self.input_names = [b.name for b in artifact.buffers if b.role == "input"]
        #: what each input must be, as ``(a.shape, a.strides, a.dtype)`` reads it (``__call__``);
        #: None for an object input (a ``Generator``, say), which only NumPy steps receive
        self.input_layouts = [None if np.dtype(b.dtype) == object else
                              (tuple(b.shape), tuple(s * np.dtype(b.dtype).itemsize for s in b.strides),
                               np.dtype(b.dtype)) for b in artifact.buffers if b.role == "input"]
        self._cache_dir = cache_dir
        self._precise_lock = threading.Lock()
        self._precise: Executable | None = None
        self._gates: tuple[int, Callable[..., None]] | None = None  # ``check_gates``
        #: calls whose fast kernels reported ``MAYBE`` and ran again with the precise ones
        self.reruns = 0
        #: calls that start with the precise kernels (``PRECISE_FIRST_CALLS``), and how many
        #: more will
        self.precise_first_runs = 0
        self._precise_left = np.zeros(1, np.int64)  # (an entry reads it: ``CTX_PRECISE``)
        pool = default_pool()
        native = native_pool(pool.size, self._cache) if any(k.parallel for k in artifact.kernels) \
            else None
        plan = self._call_plan(pool.size > 1, native is not None)
        # generators among the inputs (their draws are NumPy steps): a declined call undoes them
        generators = [i for i, layout in enumerate(self.input_layouts) if layout is None]
        steps = plan.steps

        def verify(k: int, result: Any) -> Any:
            return _verified(steps[k].plan, result)  # type: ignore[union-attr]

        def raised(k: int, exc: Exception) -> ExternRaised:  # NumPy's error: the eager run
            target = steps[k].plan.target  # type: ignore[union-attr]  # raises it again
            return ExternRaised(f"extern {target}() raised {type(exc).__name__}: {exc}")

        def failed(reason: str) -> None:  # an index out of bounds, say: NumPy's error comes
            raise ExternResultMismatch(f"a check failed: {reason}")  # from the eager run

        report = event_reporter(artifact.event_reports)  # (the entry's judge calls it too)

        def settle(bits: int, arrays: tuple[Any, ...], drawn: _Draws | None) -> list[Any] | None:
            return _settle(bits, self._precise_rerun(arrays, drawn), report)

        hooks = {"refuse_underflow": _refuse_underflow, "start_recording": errstate.start_recording,
                 "stop_recording": errstate.stop_recording,
                 "give_warnings": errstate.give_warnings, "verify": verify, "raised": raised,
                 "failed": failed, "settle": settle, "draws": lambda a: _Draws(a, generators),
                 "first": self._precise_first, "pool": pool, "native": native,
                 "declined": ExternResultMismatch,
                 "left": self._precise_left if artifact.precise_ir is not None else None,
                 "report_events": report,
                 "report_late": reporter(artifact.late_reports,
                                         {b.name: b.dtype for b in artifact.buffers})
                 if artifact.late_reports else None}
        self._plan, self._hooks = plan, hooks
        #: ``run(*arrays) -> [results]``: the call written out (``straight_line.py``)
        self.run = write_call(plan, hooks, keep=self.module)
        #: ``run_one(*arrays) -> result`` for a plan of one result, else None
        self.run_one = write_call(plan, hooks, one=True, keep=self.module) \
            if len(plan.outputs) == 1 else None

    def check_gates(self, count: int, check: Callable[..., None]) -> None:
        """The last ``count`` results are data-gate values: every call (precise ones too) hands
        them to ``check`` right after its steps, before its checks, events and NumPy's
        warnings; ``check`` raises when the call belongs to another version (its branch)."""
        self._gates = (count, check)
        self.run = write_call(replace(self._plan, gates=count), {**self._hooks, "gates": check},
                              keep=self.module)
        self.run_one = None
        if self._precise is not None:
            self._precise.check_gates(count, check)

    def _call_plan(self, parallel: bool, native: bool) -> CallPlan:
        """The artifact's call in slots: inputs first, then every buffer in plan order; each
        step reads and writes fixed slots (the written-out call's local variables). Parallel
        kernels go to the native pool (``native``), else to the Python pool (``parallel``: it
        has more than one thread), else run on the calling thread."""
        artifact, storage = self.artifact, self.artifact.storage
        unstored = artifact.unstored
        planned = [b for b in artifact.buffers if b.name not in unstored and
                   b.role not in ("input", "extern", "events", "overwrite")]
        shared = [b for b in planned if storage is not None and (
            storage.shared(b.name) or storage.storage.get(b.name) in storage.offsets)]
        allocs = [(b.name, _allocator(b)) for b in planned if b not in shared]
        # NumPy steps writing into the plan's storage (``extern_results.py``): views of blocks
        into = {e.buffer for e in artifact.externs if storage is not None and
                e.buffer in storage.storage and takes_out(e)}
        shared += [b for b in artifact.buffers if b.name in into]
        slot = {name: i for i, name in enumerate(self.input_names)}
        for name in [n for n, _ in allocs] + [b.name for b in shared]:
            slot[name] = len(slot)
        for e in artifact.externs:
            slot.setdefault(e.buffer, len(slot))
        if artifact.events is not None:  # floating-point events (``errstate.py``)
            slot[artifact.events] = len(slot)
        for name, over in artifact.overwrites.items():  # the argument's own memory
            slot[name] = slot[over]
        kernels = {k.name: k for k in artifact.kernels}
        externs = {e.buffer: e for e in artifact.externs}
        # a large product the program returns: into a block of the pool (pages mapped)
        results = {o["buffer"] for o in artifact.outputs if "buffer" in o}
        pooled = {e.buffer: _allocator(e) for e in artifact.externs
                  if e.buffer in results and e.buffer not in into and takes_out(e) and
                  math.prod(e.shape) * np.dtype(e.dtype).itemsize >= MIN_BYTES}
        steps: list[KernelStep | NumPyStep] = []
        for step in artifact.steps:
            if step in externs:
                steps.append(_numpy_step(externs[step], slot, step in into or step in pooled,
                                         pooled.get(step)))
                continue
            k = kernels[step]
            args = tuple(slot[a] for a in k.args)
            if k.parallel and native and len(k.args) <= MAX_ARITY:
                steps.append(KernelStep(self.module.address(k.name), args, k.outer_range, "native"))
            else:
                steps.append(KernelStep(kernel_function(self.module, k.name, len(k.args)), args,
                                        k.outer_range, "pool" if k.parallel and parallel else "call"))
        outputs = [(slot[o["buffer"]], o["scalar"]) if "buffer" in o else (None, o["const"])
                   for o in artifact.outputs]
        return CallPlan(
            len(self.input_names), slot, steps, _releases(artifact, slot, {i for i, _ in outputs}),
            outputs, [(slot[name], alloc) for name, alloc in allocs],
            # buffers sharing a block (spec §7.5): one block per call, a view of it per buffer
            {storage.storage[b.name]: _block_allocator(storage.sizes[storage.storage[b.name]])
             for b in shared if storage.storage[b.name] not in storage.offsets}
            if storage is not None else {},
            [(slot[b.name], storage.storage[b.name], tuple(b.shape), np.dtype(b.dtype),
              tuple(st * np.dtype(b.dtype).itemsize for st in b.strides)) for b in shared],
            {slot[name]: why for name, why in artifact.checks.items()},
            slot.get(artifact.events) if artifact.events is not None else None,
            artifact.underflow_unseen,  # a kernel may underflow without reporting it
            any(layout is None for layout in self.input_layouts), late=artifact.late_steps,
            late_reports=bool(artifact.late_reports),
            arena=(_arena_allocator(storage.arena_bytes),
                   {b: (o, storage.sizes[b]) for b, o in storage.offsets.items()})
            if storage is not None and storage.offsets else None)

    def __call__(self, *arrays: np.ndarray) -> list[Any]:
        """Run on ``arrays``, each checked to be an ``np.ndarray`` with the shape, dtype and
        strides the plan was made for (its kernels read memory by those): anything else raises
        ``InputMismatch`` naming the input. ``run`` is the same call unchecked, for callers that
        have checked the layouts themselves (the runtime's dispatcher)."""
        if [(a.shape, a.strides, a.dtype) if type(a) is np.ndarray else None
                for a in arrays] != self.input_layouts:
            self._check_inputs(arrays)
        return self.run(*arrays)

    def _check_inputs(self, arrays: tuple[Any, ...]) -> None:
        """Raise ``InputMismatch`` for the first input the kernels cannot read as planned; return
        when the differences do not matter (the stride of an axis of length 1, or of an empty
        array, is never used)."""
        names, layouts = self.input_names, self.input_layouts
        if len(arrays) != len(layouts):
            raise InputMismatch(f"{self.artifact.name}: expected {len(layouts)} input arrays "
                                f"({', '.join(names)}), got {len(arrays)}")
        for i, (a, layout) in enumerate(zip(arrays, layouts)):
            if layout is None:  # an object: NumPy steps take it as it is
                continue
            shape, strides, dtype = layout
            what = f"{self.artifact.name}: input {i} ({names[i]!r})"
            planned = f"{dtype}{list(shape)} strides {strides}"
            if type(a) is not np.ndarray:
                kind = "a subclass of np.ndarray" if isinstance(a, np.ndarray) else type(a).__name__
                raise InputMismatch(f"{what}: expected an np.ndarray ({planned}), got {kind}; "
                                    "pass np.asarray(...) of it")
            if a.shape != shape or a.dtype != dtype:
                raise InputMismatch(f"{what}: expected {planned}, got {a.dtype}{list(a.shape)}")
            if a.size and any(n != 1 and got != want
                              for n, got, want in zip(shape, a.strides, strides)):
                contiguous = tuple(dtype.itemsize * math.prod(shape[k + 1:])
                                   for k in range(len(shape)))
                hint = "; pass np.ascontiguousarray(...) of it" if strides == contiguous else ""
                raise InputMismatch(f"{what}: expected strides {strides} ({planned}), got "
                                    f"{a.strides}{hint}")

    def _precise_rerun(self, arrays: tuple[np.ndarray, ...], drawn: _Draws | None = None
                       ) -> Callable[[], list[Any]] | None:
        """The call on ``arrays`` again, with the kernels that check every operation exactly
        (``artifact.precise_ir``, compiled on first use), or None if the artifact has none.
        Generators among the arguments first go back to where the call found them (``drawn``)."""
        if self.artifact.precise_ir is None:
            return None
        if self._precise is None:
            with self._precise_lock:
                if self._precise is None:
                    exact = replace(self.artifact, llvm_ir=self.artifact.precise_ir,
                                    precise_ir=None)
                    precise = Executable(exact, self._cache_dir, modules=self._modules)
                    if self._gates is not None:
                        precise.check_gates(*self._gates)
                    self._precise = precise
        precise = self._precise

        def rerun() -> list[Any]:
            self.reruns += 1
            self._precise_left[0] = PRECISE_FIRST_CALLS
            if drawn is not None:
                drawn.undo()
            return precise.run(*arrays)
        return rerun

    def _precise_first(self, arrays: tuple[Any, ...]) -> list[Any] | None:
        """A call that starts with the precise kernels (a recent call's fast ones reported
        ``MAYBE``), or None to run the fast ones: always while NumPy's error state heeds
        underflow, which only the fast kernels see (the CPU's flags)."""
        precise = self._precise
        self._precise_left[0] = max(int(self._precise_left[0]) - 1, 0)  # (entries read it)
        if precise is None or errstate.heeded() & UNDERFLOW:
            return None
        self.precise_first_runs += 1
        return precise.run(*arrays)

    def entry(self, inputs: list[np.ndarray], slow: Callable[..., Any],
              scalars: tuple[tuple[int, str], ...] = (), gates: tuple[Any, ...] = (),
              live: np.ndarray | None = None) -> Entry | str:
        """A machine-code entry ``f(*arrays) -> output`` specialized to the layouts of ``inputs``
        that hands every other call to ``slow`` (``cpu/entry.py``), or why there is none;
        ``scalars``: inputs the call passes as Python or NumPy scalars, with their kinds
        (``inputs`` has their 0-d arrays); ``gates``: the outcomes of the data gates
        ``check_gates`` checks (``cpu/entry_gates.EntryGate``), tested while ``live[0]`` is
        not zero."""
        if len(gates) != (self._gates[0] if self._gates is not None else 0):
            return "its data gates are not the ones its call checks"
        return make_entry(self.artifact, self.module, inputs, slow, self._cache,
                          self._hooks["native"], self._hooks["report_late"], scalars,
                          judge(self._hooks["report_events"]), self._precise_left, gates, live)

    def item_loop(self, inputs: list[np.ndarray], item: int | None, carried: dict[int, int],
                  exit: int | None = None) -> ItemLoop | str:
        """A machine-code loop over a lifted loop's items (``cpu/item_loop.py``) for this
        artifact as a loop's body, at the layouts of ``inputs``, or why there is none; with
        ``exit``, the result that says whether another item runs (a ``while`` loop's test)."""
        return make_item_loop(self.artifact, self.module, inputs, item, carried, self._cache,
                              exit)
