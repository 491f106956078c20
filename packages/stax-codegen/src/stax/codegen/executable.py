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
from stax.loop.ir import BufferRef, decode_operands, map_buffer_refs

from . import errstate
from .artifact import BufferPlan, ExternPlan, KernelArtifact
from .block_pool import MIN_BYTES, default_block_pool
from .cpu.entry import Entry, make_entry
from .cpu.fpevents import DIVIDE, INVALID, MAYBE, OVERFLOW, TIE, UNDERFLOW
from .cpu.item_loop import ItemLoop, make_item_loop
from .cpu.jit import CompiledModule, kernel_function
from .cpu.native_pool import MAX_ARITY, NativePool, native_pool
from .cpu.objcache import ObjectCache
from .python_pool import default_pool

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


def _settle(bits: int, precise: Callable[[], list[Any]] | None) -> list[Any] | None:
    """After the kernels reported ``bits``: None to return the call's own results; the results
    of a run with the precise kernels when the fast ones only saw a non-finite value (which
    decides again, on exact events); or ``FloatingPointEvents``. An fmax/fmin tie of different
    bits (``TIE``) declines the call whatever else happened: NumPy decides it. Underflow comes
    only from the fast kernels (the CPU's flags): it is decided next."""
    if bits & TIE:
        raise ExternResultMismatch("fmax/fmin of 0.0 and -0.0 (or of two different NaNs): which "
                                   "one NumPy returns depends on the element's place in its loops")
    if bits & UNDERFLOW and errstate.heeded() & UNDERFLOW:
        raise FloatingPointEvents(UNDERFLOW)
    if bits & MAYBE:
        if precise is not None:
            return precise()
        bits |= DIVIDE | OVERFLOW | INVALID  # unknown: the worst
    heeded = errstate.heeded() & bits & ~(MAYBE | UNDERFLOW)
    if heeded:
        raise FloatingPointEvents(heeded)
    return None


def _extern_step(plan: ExternPlan, slot: dict[str, int], events: int | None = None
                 ) -> Callable[[list[Any]], None]:
    """``step(env)``: call NumPy with the operands from ``env``, check the result, store it.
    With ``events`` (the events buffer's slot) NumPy's floating-point events go there instead of
    warning or raising: the kernels' events may yet decline the call (``errstate.recording``)."""
    args, kwargs = decode_operands(plan.args), decode_operands(plan.kwargs)
    # the allow-list, checked when the plan is loaded: a document names data, never code
    fn = None if plan.method else resolve_function(plan.target)
    if plan.method:
        call_method(None, plan.target, (), {}, check_only=True)
    dtype = np.dtype(plan.dtype)
    strides = tuple(s * dtype.itemsize for s in plan.strides)
    out, shape = slot[plan.buffer], plan.shape

    bind_args, bind_kwargs = _binder(args, slot), _binder(kwargs, slot)

    def step(env: list[Any]) -> None:
        a, k = bind_args(env), bind_kwargs(env)
        try:
            if events is None:
                result = call_method(a[0], plan.target, a[1:], k) if fn is None else fn(*a, **k)
            else:
                token = errstate.start_recording(env[events])
                try:
                    result = call_method(a[0], plan.target, a[1:], k) if fn is None else \
                        fn(*a, **k)
                finally:
                    errstate.stop_recording(token)
        except Exception as exc:  # NumPy's error: raised again by the eager run
            raise ExternRaised(f"extern {plan.target}() raised {type(exc).__name__}: {exc}") \
                from exc
        if plan.sequence is not None:
            if not isinstance(result, (tuple, list)) or len(result) != plan.sequence:
                raise ExternResultMismatch(f"extern {plan.target}() returned "
                                           f"{type(result).__name__}; capture saw "
                                           f"{plan.sequence} arrays")
            env[out] = result
            return
        array = np.asarray(result) if isinstance(result, np.generic) else result
        if type(array) is not np.ndarray or array.shape != shape or array.dtype != dtype or (
                array.strides != strides and array.size > 1):
            got = (f"{type(result).__name__} {getattr(array, 'dtype', '')}"
                   f"{list(getattr(array, 'shape', ()))} strides={getattr(array, 'strides', None)}")
            raise ExternResultMismatch(f"extern {plan.target}() returned {got}; capture saw "
                                       f"{plan.dtype}{list(shape)} strides={strides}")
        env[out] = array
    return step


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


def _binder(operands: Any, slot: dict[str, int]) -> Callable[[list[Any]], Any]:
    """``bind(env)``: ``operands`` (an extern call's args or kwargs) with each ``BufferRef`` the
    array in ``env``. A flat tuple or dict of operands is filled in place of a copy of it; nested
    containers are walked (``map_buffer_refs``)."""
    def nested(value: Any) -> bool:  # a container holding a buffer (a shape tuple holds none)
        return isinstance(value, (tuple, list, dict, slice)) and bool(_buffer_names(value))
    if isinstance(operands, tuple) and not any(nested(v) for v in operands):
        template = list(operands)
        refs = [(i, slot[v.name]) for i, v in enumerate(operands) if isinstance(v, BufferRef)]
        if not refs:
            return lambda env: operands

        def bind_tuple(env: list[Any]) -> tuple[Any, ...]:
            values = template.copy()
            for i, s in refs:
                values[i] = env[s]
            return tuple(values)
        return bind_tuple
    if isinstance(operands, dict) and not any(nested(v) for v in operands.values()):
        fixed = {k: v for k, v in operands.items() if not isinstance(v, BufferRef)}
        named = [(k, slot[v.name]) for k, v in operands.items() if isinstance(v, BufferRef)]
        if not named:
            return lambda env: fixed

        def bind_dict(env: list[Any]) -> dict[str, Any]:
            values = dict(fixed)
            for k, s in named:
                values[k] = env[s]
            return values
        return bind_dict
    return lambda env: map_buffer_refs(operands, lambda ref: env[slot[ref.name]])


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


def _native_step(native: NativePool, module: CompiledModule, name: str, args: list[int], outer: int
                 ) -> Callable[[list[Any]], None]:
    """A kernel launched on the native pool, as a step over the environment (it keeps the
    kernel's machine code alive: a step may outlive its executable)."""
    address = module.address(name)

    def launch(env: list[Any]) -> None:
        native.parallel_for(address, tuple([env[a] for a in args]), outer)
    launch.module = module  # type: ignore[attr-defined]
    return launch


def _straight_line(launches: list[Any], alloc_slots: list[tuple[int, Any]],
                   outputs: list[tuple[Any, Any]], n_inputs: int, events: int | None = None,
                   settle: Callable[..., Any] | None = None, unseen: bool = False,
                   precise_first: tuple[list[int], Callable[..., Any]] | None = None
                   ) -> Callable[..., Any] | None:
    """For the common plan — one kernel on the calling thread, one array output — a function
    ``run_one(*arrays) -> output`` written out as straight-line Python (no environment list, no
    loops), which is what a tiny call's time is made of. None for any other plan. A kernel that
    reports floating-point events gets its events buffer (slot ``events``); ``settle(bits, out,
    *arrays)`` decides when it reports any; a kernel that may underflow ``unseen`` first looks
    at NumPy's error state. With ``precise_first = (left, first)``, while ``left[0]`` is not
    zero the call is ``first(*arrays)``, unless that returns None.

    The source is made from a fixed template and integers only (slot positions and the loop
    range, each checked to be an ``int``): nothing of a document's text is ever executed."""
    if len(launches) != 1 or callable(launches[0]) or launches[0][3] or len(outputs) != 1:
        return None
    fn, args, outer, _ = launches[0]
    (out_slot, scalar), = outputs
    if out_slot is None or scalar or len(alloc_slots) != 1 or alloc_slots[0][0] != out_slot:
        return None
    if not all(type(v) is int for v in (*args, outer, out_slot, n_inputs)):
        raise TypeError(f"kernel launch of unexpected form: args {args!r}, range {outer!r}")
    if not all(0 <= a < n_inputs or a in (out_slot, events) for a in args):
        return None
    params = [f"a{i}" for i in range(n_inputs)]
    names = {**{i: p for i, p in enumerate(params)}, out_slot: "out", events: "events"}
    call = f"    kernel({', '.join(names[a] for a in args)}, 0, {outer})\n"
    source = f"def run_one({', '.join(params)}):\n"
    if events is not None and precise_first is not None:
        source += (f"    if left[0]:\n"
                   f"        out = first({', '.join(params)})\n"
                   f"        if out is not None:\n"
                   f"            return out\n")
    if unseen:
        source += "    refuse_underflow()\n"
    if events is None:
        source += f"    out = alloc()\n{call}    return out\n"
    else:
        source += (f"    out = alloc()\n"
                   f"    events = zeros(1, int32)\n{call}"
                   f"    bits = events.item()\n"
                   f"    return settle(bits, out, {', '.join(params)}) if bits else out\n")
    scope: dict[str, Any] = {"alloc": alloc_slots[0][1], "kernel": fn, "zeros": np.zeros,
                             "int32": np.int32, "settle": settle,
                             "refuse_underflow": _refuse_underflow,
                             "left": precise_first[0] if precise_first else None,
                             "first": precise_first[1] if precise_first else None}
    exec(compile(source, f"<stax kernel call {id(fn):x}>", "exec"), scope)
    return scope["run_one"]


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

    def __init__(self, artifact: KernelArtifact, cache_dir: str | Path | None = None) -> None:
        if artifact.triton_source is not None or artifact.target.get("device", "cpu") != "cpu":
            raise ValueError(f"{artifact.name}: a {artifact.target.get('device', 'cuda')} artifact "
                             "(Triton kernels, no LLVM IR): run it with "
                             "stax.codegen.TritonExecutable on torch tensors or CuPy arrays")
        self.artifact = artifact
        self._cache = ObjectCache(cache_dir) if cache_dir is not None else None
        # a fast module in which LLVM folded an event away is replaced by the precise one
        self.module = CompiledModule(artifact.llvm_ir, self._cache,
                                     unless_folded=artifact.precise_ir)
        self.input_names = [b.name for b in artifact.buffers if b.role == "input"]
        #: what each input must be, as ``(a.shape, a.strides, a.dtype)`` reads it (``__call__``);
        #: None for an object input (a ``Generator``, say), which only NumPy steps receive
        self.input_layouts = [None if np.dtype(b.dtype) == object else
                              (tuple(b.shape), tuple(s * np.dtype(b.dtype).itemsize for s in b.strides),
                               np.dtype(b.dtype)) for b in artifact.buffers if b.role == "input"]
        storage = artifact.storage
        planned = [b for b in artifact.buffers if b.role not in ("input", "extern", "events")]
        shared = [b for b in planned if storage is not None and storage.shared(b.name)]
        allocs = [(b.name, _allocator(b)) for b in planned if b not in shared]
        pool = default_pool()
        native = native_pool(pool.size, self._cache) if any(k.parallel for k in artifact.kernels) \
            else None
        # The environment is a list: inputs first, then every buffer in plan order; each step
        # reads and writes fixed positions in it, so a call does no name lookups.
        slot = {name: i for i, name in enumerate(self.input_names)}
        for name in [n for n, _ in allocs] + [b.name for b in shared]:
            slot[name] = len(slot)
        for e in artifact.externs:
            slot[e.buffer] = len(slot)
        if artifact.events is not None:  # floating-point events (``errstate.py``)
            slot[artifact.events] = len(slot)
        events = slot.get(artifact.events) if artifact.events is not None else None
        unseen = artifact.underflow_unseen  # a kernel may underflow without reporting it
        self._cache_dir = cache_dir
        self._precise_lock = threading.Lock()
        self._precise: Executable | None = None
        #: calls whose fast kernels reported ``MAYBE`` and ran again with the precise ones
        self.reruns = 0
        #: calls that start with the precise kernels (``PRECISE_FIRST_CALLS``), and how many
        #: more will
        self.precise_first_runs = 0
        self._precise_left = [0]
        size = len(slot)
        n_inputs = len(self.input_names)
        # generators among the inputs (their draws are NumPy steps): a declined call undoes them
        generators = [i for i, b in enumerate(b for b in artifact.buffers if b.role == "input")
                      if np.dtype(b.dtype) == object]
        alloc_slots = [(slot[name], alloc) for name, alloc in allocs]
        # buffers sharing a block (spec §7.5): one block per call, a view of it per buffer
        blocks = {storage.storage[b.name]: _block_allocator(storage.sizes[storage.storage[b.name]])
                  for b in shared} if storage is not None else {}
        views = [(slot[b.name], storage.storage[b.name], b.shape, np.dtype(b.dtype),
                  tuple(st * np.dtype(b.dtype).itemsize for st in b.strides)) for b in shared]
        kernels = {k.name: k for k in artifact.kernels}
        externs = {e.buffer: e for e in artifact.externs}
        launches: list[Any] = []
        for step in artifact.steps:
            if step in externs:
                launches.append(_extern_step(externs[step], slot, events))
                continue
            k = kernels[step]
            args = [slot[a] for a in k.args]
            if k.parallel and native is not None and len(k.args) <= MAX_ARITY:
                launches.append(_native_step(native, self.module, k.name, args, k.outer_range))
                continue
            fn = kernel_function(self.module, k.name, len(k.args))
            launches.append((fn, args, k.outer_range, k.parallel and pool.size > 1))
        outputs = [(slot[o["buffer"]], o["scalar"]) if "buffer" in o else (None, o["const"])
                   for o in artifact.outputs]
        releases = _releases(artifact, slot, {i for i, _ in outputs})
        check_slots = [slot[name] for name in artifact.checks]
        check_reasons = {slot[name]: why for name, why in artifact.checks.items()}

        def run(*arrays: np.ndarray) -> list[Any]:
            if self._precise_left[0]:
                results = self._precise_first(arrays)
                if results is not None:
                    return results
            if not generators:
                return launch_all(arrays, None)
            drawn = _Draws(arrays, generators)
            try:
                return launch_all(arrays, drawn)
            except ExternResultMismatch:  # declined: the eager run draws the same numbers
                drawn.undo()
                raise

        def launch_all(arrays: tuple[Any, ...], drawn: _Draws | None) -> list[Any]:
            env: list[Any] = [*arrays, *([None] * (size - n_inputs))]
            if unseen:
                _refuse_underflow()
            if events is not None:
                env[events] = np.zeros(1, np.int32)
            for i, alloc in alloc_slots:
                env[i] = alloc()
            if views:
                made = {block: alloc() for block, alloc in blocks.items()}
                for i, block, shape, dtype, strides in views:
                    env[i] = np.ndarray(shape, dtype, buffer=made[block], strides=strides)
            for launch, release in zip(launches, releases):
                if callable(launch):
                    launch(env)
                else:
                    fn, args, outer, parallel = launch
                    if parallel:
                        pool.parallel_for(fn, tuple([env[a] for a in args]), outer)
                    else:
                        fn(*[env[a] for a in args], 0, outer)
                for i in release:
                    env[i] = None
            for i in check_slots:
                if env[i]:  # an index out of bounds, say: NumPy's error comes from the eager run
                    raise ExternResultMismatch(f"a check failed: {check_reasons[i]}")
            if events is not None:
                bits = env[events].item()
                if bits:
                    precise = _settle(bits, self._precise_rerun(arrays, drawn))
                    if precise is not None:
                        return precise
            results = []
            for i, extra in outputs:
                if i is None:
                    results.append(extra)
                else:
                    value = env[i]
                    results.append(value[()] if extra and value.ndim == 0 else value)
            return results

        def settle(bits: int, out: np.ndarray, *arrays: np.ndarray) -> Any:
            precise = _settle(bits, self._precise_rerun(arrays))
            return out if precise is None else precise[0]

        def first_one(*arrays: np.ndarray) -> Any:
            results = self._precise_first(arrays)
            return None if results is None else results[0]

        self.run = run
        self.run_one = None if check_slots else _straight_line(
            launches, alloc_slots, outputs, n_inputs, events, settle, unseen,
            (self._precise_left, first_one) if artifact.precise_ir is not None else None)

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
                    self._precise = Executable(exact, self._cache_dir)
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
        if precise is None or errstate.heeded() & UNDERFLOW:
            return None
        self._precise_left[0] = max(self._precise_left[0] - 1, 0)
        self.precise_first_runs += 1
        return precise.run(*arrays)

    def entry(self, inputs: list[np.ndarray], slow: Callable[..., Any]) -> Entry | str:
        """A machine-code entry ``f(*arrays) -> output`` specialized to the layouts of ``inputs``
        that hands every other call to ``slow`` (``cpu/entry.py``), or why there is none."""
        return make_entry(self.artifact, self.module, inputs, slow, self._cache)

    def item_loop(self, inputs: list[np.ndarray], item: int, carried: dict[int, int]
                  ) -> ItemLoop | str:
        """A machine-code loop over a lifted loop's items (``cpu/item_loop.py``) for this
        artifact as a loop's body, at the layouts of ``inputs``, or why there is none."""
        return make_item_loop(self.artifact, self.module, inputs, item, carried, self._cache)
