"""``compile`` and ``CompiledFunction``: the call layer (spec §2).

A call computes the specialization key kappa = (sigma, gamma_s, gamma_g, rho), finds the compiled
version for it through three dispatch levels (algorithm 2.1), and runs it. On a miss it explains
which guards of which version failed (corollary 2.1), captures the function on these arguments,
hands the capture to the backend and caches the result. Whatever Stax cannot compile runs eagerly
for that key, with one log line saying why (or, under ``strict_native=True``, raises it).

The device follows the data: torch CUDA tensors and CuPy arrays run through the CUDA target, and
the device is part of sigma (``devices.py`` says how a miss on device arrays is captured).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from stax.codegen import DEVICES, Executable, ExternResultMismatch, FloatingPointEvents, TritonExecutable
from stax.codegen.errstate import HEEDING_UNDERFLOW, forget_held, heeding_all
from stax.codegen.instantiate import GenericExecutable
from stax.codegen.program_plan import TooManySteps, kernel_budget
from stax.ir import StaxError, UnsupportedError, holds_lifted_loop, tree_flatten, tree_leaves
from stax.trace import Outcome, leaf_names, loops, trace
from stax.trace.gate_budget import TooManyGates, budgeted, gate_budget

from . import config, devices, logs
from .backends import get_backend, stax_backend
from .branches import OtherBranches
from .capture_cache import captures_for
from .code_changes import code_of, refresh
from .code_reads import callable_names, compares_identity, heeds_underflow, sets_error_state
from .device_calls import DeviceCalls
from .direct_calls import DirectCalls
from .dumps import dump_stem, dumper
from .dynamic_memory import DecisionStore
from .freevars import FreeVariables
from .gate_checks import GateMismatch, check_in_program, program_gates, with_gate_outputs
from .gates import GateReplay
from .generic import GenericVersions, eager_entry_key, entry_key, served_exactly, sized_scalars
from .guards import FreeGuards, rebinds_free_names, rescanned, snapshot_for_capture
from .key_entry import (
    CallValues,
    answers_its_key,
    compiled_entry,
    eager_entry,
    paused_entry,
    version_entry,
    with_free_values,
)
from .keyword_calls import as_called, call_form, defaults_unread
from .object_arrays import LiftedAttributes, ObjectArrays, as_plain_callable, with_lifted, with_object_arrays
from .recapture import captured_lifted
from .recent_entries import RecentCalls, RecentEntries
from .replay_costs import call_key, instances_made, replayed_seconds, timed_against_eager
from .reports import Reports
from .runners import (
    RunEagerly,
    accepted_services,
    bound_in_its_module,
    flat_runner,
    generator_states,
    guarded_entry,
    named_parameters,
    traced_arguments,
    tree_runner,
    untraced_state,
    without_writeback,
    writeback_runner,
)
from .scalar_arguments import ScalarArguments, example_inputs
from .signature import ALIASED, Unguardable, aliased, array_signature, signature
from .sized_entries import own_key
from .versions import PLAIN, Limits, Version, check_no_side_effects


class CompiledFunction(RecentCalls, OtherBranches, Reports, DirectCalls, DeviceCalls):
    def __init__(self, fn: Callable[..., Any], *, device: str | None = None,
                 dynamic: bool | None = None,
                 strict_native: bool = False, backend: str = "stax",
                 options: dict[str, Any] | None = None, limits: Limits | None = None) -> None:
        if device not in (None, *DEVICES):
            raise StaxError(f"device {device!r} is not available yet; Stax compiles for "
                            f"{', '.join(map(repr, DEVICES))}")
        #: how it binds in a class body (``__get__``): above @classmethod or @staticmethod, the
        #: function they wrap is compiled
        self._binds = "class" if isinstance(fn, classmethod) else \
            "static" if isinstance(fn, staticmethod) else "instance"
        fn = fn.__func__ if isinstance(fn, (classmethod, staticmethod)) else fn
        fn = as_plain_callable(fn)  # compile(model), compile(obj.compiled_method): methods
        self.fn = fn
        #: the device asked for: None follows the data (NumPy on the CPU, CUDA arrays on their GPU)
        self.requested_device = device
        self.device = device or "cpu"
        self.dynamic = dynamic
        self.strict_native = strict_native
        self.backend_name = backend
        self.backend = get_backend(backend)
        self.options = dict(options or {})
        self.limits = limits or Limits()
        # for a lifted loop's body (lifted_loops.py): a test of each capture before it compiles
        # (UnsupportedError refuses it); updated arguments taken from the results, not copied
        # back; a declined call raised (ExternResultMismatch, RunEagerly), not run eagerly
        self.capture_check: Callable[[Any], None] | None = None
        self.donates_arguments = self.declines_to_caller = False
        #: the key's rho (definition 2.2): the transform its versions apply (a gradient's mode)
        self.rho = PLAIN
        self._form, self._identity = call_form(fn), compares_identity(fn)  # keyword_calls.py
        self._coded, self._code = code_of(fn)  # its own code (``code_changes``)
        #: the function called with a placed call's arguments (keyword-only values last)
        self._plain = self._form.calling(fn) if self._form is not None else fn
        self._free = FreeVariables(fn)
        self._guards = FreeGuards(fn, lifted=set(self._free.names))
        self._names = callable_names(fn)  # what the key describes of modules it meets
        #: array attributes of its argument objects, lifted per call (None: it names none)
        self._objects = ObjectArrays(self._names) if self._names else None
        self._sets_errstate = sets_error_state(fn)  # np.errstate inside: events decline
        self._rebinds = rebinds_free_names(fn)
        # one compile at a time: threads making one first call wait for its version
        self._compile_lock = getattr(self, "_compile_lock", None) or threading.RLock()  # (kept
        _LIVE.add(self)  # where ``code_changes.refresh`` runs this again under it)
        self._unguardable_reported: set[str] = set()
        self._versions: list[Version] = []
        self._by_sigma: dict[Any, list[Version]] = {}
        self._by_layout: dict[Any, list[Version]] = {}
        # the previous call's (layouts, candidates): one tuple, never paired across threads
        self._last: tuple[Any, list[Version]] = (None, [])
        self._compiles, self._hits = 0, {1: 0, 2: 0, 3: 0}
        self._hit_level = 3  # of the last hit counted (0: none): a version whose gates then
        # fail was none
        self._misses = self._fallbacks = 0
        self._limit_warned = False
        self._raising: dict[Any, None] = {}  # keys whose capture raised the function's own error
        # what a call runs: the dispatcher below, or the (machine-code) entry of the version the
        # previous call used (which hands every other call back to the dispatcher)
        self._call: Callable[..., Any] = self._dispatch
        self._recent = RecentEntries()  # entries of the last few kinds of call (level 0)
        functools.update_wrapper(self, fn)
        self._generic = GenericVersions(dynamic)  # size-generic versions (issue 15)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """A compiled function in a class body is a compiled method: ``obj.forward(x)`` calls it
        with ``obj`` as its first argument, one cache for every object of the class (as for
        ``f(obj, x)``: the object is keyed by its attributes). Above ``@classmethod`` it binds
        the class; above ``@staticmethod``, nothing."""
        if self._binds == "static":
            return self
        if self._binds == "class":
            return types.MethodType(self, owner if owner is not None else type(instance))
        return self if instance is None else types.MethodType(self, instance)

    def __reduce__(self) -> Any:
        """Pickled by reference, like a function (multiprocessing sends it to workers): the
        module-level name it is bound to, or its function and settings, compiled afresh (a new
        process has its own versions; the disk cache makes its first compile cheap)."""
        if bound_in_its_module(self):
            return self.__qualname__
        return (_recompile, (self.fn, self.requested_device, self.dynamic, self.strict_native,
                             self.backend_name, self.options, self.limits))

    @property
    def _name(self) -> str:
        return getattr(self.fn, "__qualname__", repr(self.fn))

    # -- calling (algorithm 2.1) -----------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._coded.__code__ is not self._code:  # replaced in place: autoreload
            refresh(self)  # (``code_changes``: compiled again)
        form = self._form  # f(x, k=3.0) as f(x, 3.0); keyword-only values placed last
        if form is not None and (kwargs or form.always):
            placed = form.place(args, kwargs)
            if placed is None:  # a call Python refuses: its own TypeError
                return self.fn(*args, **kwargs)
            args, kwargs = placed
        return self._run_unguardable(ALIASED, args, kwargs) if self._identity and \
            aliased(args, kwargs) else self._call(*args, **kwargs)  # ``a is b`` of f(x, x)

    def __stax_key__(self) -> Any:
        """What a key describes of it where another function calls it (inlined in its capture):
        the function it compiles, not its caches (which change with every call)."""
        return self.fn

    def _find_and_run(self, *args: Any, **kwargs: Any) -> Any:
        user_args = args
        args = own_args = with_lifted(self._objects, args)  # arrays of argument objects
        if self._free:
            args = (*self._free.read(), *args)
        if not kwargs:
            layout = array_signature(args)
            if layout is not None:
                last_layout, last_candidates = self._last
                if layout == last_layout:
                    candidates, level = last_candidates, 1
                else:
                    candidates, level = self._by_layout.get(layout, ()), 2
                for version in candidates:
                    if not version.guarded or version.applies(args, kwargs):
                        self._hits[level] += 1
                        self._hit_level = level
                        self._last = (layout, candidates)
                        return self._run(version, args, kwargs)
        if traced_arguments(user_args, kwargs):  # called inside another function's capture: inline it
            return self._plain(*user_args, **kwargs)
        placement = self._place(args, kwargs)
        if placement is not None and placement.eager_reason is not None:
            return self._run_unguardable(placement.eager_reason, args, kwargs)
        try:
            sigma = signature(args, kwargs, self._names)
        except Unguardable as exc:
            return self._run_unkeyable(exc, placement, args, kwargs)
        version = self._lookup(sigma, args, kwargs) or self._eager_while_raising(sigma)
        if version is None and self._at_limit():  # new keys run eagerly: no rescan, no capture
            return self._past_limit(sigma, args, kwargs, placement)
        if version is None:
            with self._compile_lock:  # another thread may have compiled it meanwhile
                if self._rescan_free_variables():  # bound after compile(): lifted from now on
                    args = (*self._free.read(), *own_args)
                    try:
                        sigma = signature(args, kwargs, self._names)
                    except Unguardable as exc:
                        return self._run_unkeyable(exc, placement, args, kwargs)
                version = self._lookup(sigma, args, kwargs) or \
                    self._eager_if_gates_keep_changing(sigma)
                if version is None:
                    outcome = Outcome()
                    version = self._miss(sigma, args, kwargs, outcome, placement)
                    if version.native and placement is not None:
                        return self._first_device_run(version, args, kwargs, outcome, placement)
                    if not version.native:
                        return self._captured_result(version, args, kwargs, outcome, placement)
        return self._run(version, args, kwargs)

    def _rescan_free_variables(self) -> bool:
        """Which globals, cells and module attributes are arrays, decided again at each miss
        (``guards.rescanned``); True when the lifted set changed."""
        self._free, self._guards, changed = rescanned(self.fn, self._free, self._guards)
        if changed:
            self._recent.clear()  # (entries reading the old free values)
        return changed

    def _lookup(self, sigma: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                skipped: Any = ()) -> Version | None:
        memo: dict[str, Any] = {}  # gate outcomes this call replayed (GateReplay.fingerprint)
        def applies(version: Version) -> bool:
            return id(version) not in skipped and version.applies(args, kwargs, memo)

        found = next(filter(applies, self._by_sigma.get(sigma, ())), None) or \
            self._generic.find(sigma, args, kwargs, applies, self._by_sigma, self._by_layout)
        if found is not None:
            self._hits[3] += 1
            self._hit_level = 3
        return found

    def _run_unkeyable(self, exc: Unguardable, placement: devices.Placement | None,
                       args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call with an argument that cannot be keyed runs eagerly (not a device call whose
        argument object holds a torch tensor: ``devices.refuse_held_tensor``)."""
        devices.refuse_held_tensor(exc, placement, self._name, "an argument object (not a tuple, "
                                   "list or dict)")
        return self._run_unguardable(f"an argument cannot be keyed: {exc}", args, kwargs)

    def _run_unguardable(self, reason: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call whose key cannot be computed runs eagerly, with one warning per reason."""
        self._fallbacks += 1
        if reason not in self._unguardable_reported:
            self._unguardable_reported.add(reason)
            logs.warn(f"stax: {self._name} runs eagerly for such calls: {reason}")
        return self._eager(args, kwargs)

    def _run(self, version: Version, args: tuple[Any, ...], kwargs: dict[str, Any],
             other_branches: bool = True, entered: bool = False) -> Any:
        """Run ``version`` (``entered``: from the entry ``_enter`` made for calls like this)."""
        if version.eager_for_now():  # it declined its last calls (``Version.declines``)
            self._fallbacks += 1
            # the key's eager entry for the calls it skips, then the dispatch (which tries it);
            # while its free values hold (changed, another version may serve: the dispatch)
            self._call = self._dispatch if self._free else paused_entry(
                version, self._eager_function(version.sigma), self._dispatch,
                lambda: setattr(self, "_call", self._dispatch),
                own_key(version, args, kwargs, self._names))
            if version.free is not None and self._call is not self._dispatch:
                self._call = guarded_entry(self._call, version.free, self._dispatch)
            return self._eager(args, kwargs)
        if not entered:
            self._enter(version, args, kwargs)  # the next call's entry (``branches.py``)
        if not version.native:
            self._fallbacks += 1
            if version.entry is None and version.free is None and not self._free and \
                    answers_its_key(version, self._by_sigma.get(version.sigma, ())):
                version.entry = eager_entry(self._eager_function(version.sigma), eager_entry_key(
                    version, self._versions), self._dispatch,  # (a scalar's value or any)
                    given=CallValues(args, self._names))
            if version.entry is not None:  # the next call: one comparison per argument
                self._install(version.entry.function)
            return version.run(args, kwargs)
        # a version that draws from generator arguments may decline after its draws: the eager
        # run must start from the states the caller passed, or the stream advances twice
        states = generator_states(version.generators, args, kwargs) if version.generators else None
        timed = None if version.replay_costs.decided or self.strict_native or \
            not timed_against_eager(version) else version.replay_costs.next_call()
        if timed == "eager":  # eager's time, against the replay's (``replay_costs``)
            return self._timed_eager(version, args, kwargs)
        try:
            start, made = (time.perf_counter(), instances_made(version)) if timed else (0.0, 0)
            with heeding_all(self._sets_errstate):
                result = version.fast(*args) if version.fast is not None else \
                    version.run(args, kwargs)
            if timed is not None and instances_made(version) == made:  # (else no sample)
                version.replay_costs.add("compiled", time.perf_counter() - start +
                                         replayed_seconds(version), call_key(args, kwargs))
            version.declines = version.skipped = 0
            return result
        except (ExternResultMismatch, RunEagerly, GateMismatch) as exc:  # nothing written yet
            forget_held()  # its held warnings are the eager run's to give
            if states:
                for generator, state in states:
                    generator.bit_generator.state = state
            mismatch = self._gate_mismatch(version, exc, args, kwargs)  # declined: whose?
            if mismatch is not None:
                return self._gates_failed(version, args, kwargs, other_branches, mismatch)
            if self.declines_to_caller:
                raise
            self._fallbacks += 1
            self._declined(version, exc)  # (its entries' come here too)
            if isinstance(exc, FloatingPointEvents):  # NumPy's own warning or error follows
                logs.emit("perf", config.current().logs, f"{self._name} v{version.index}: {exc}; "
                          "the call runs eagerly so that NumPy reports it")
            elif not version.declined_reported:
                version.declined_reported = True
                logs.warn(f"stax: {self._name} v{version.index}: {exc}; calls like this one run "
                          "eagerly")
            # a failed check (an index out of bounds) is NumPy's error, which CuPy does not raise
            return self._eager(args, kwargs, host=isinstance(exc, ExternResultMismatch))

    # -- a miss ------------------------------------------------------------------------------------
    def _miss(self, sigma: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
              outcome: Outcome, placement: devices.Placement | None = None) -> Version:
        self._misses += 1
        self._hit_level = 0  # this call counted no hit (none to take back: ``_other_branch``)
        self._recent.clear()  # (the entries of the versions there were)
        settings = config.current()
        if self._versions and "recompiles" in settings.logs:
            reasons = [str(f) for v in self._versions for f in v.failures(sigma, args, kwargs)]
            logs.emit("recompiles", settings.logs,
                      f"recompiling {self._name!r}: " + "; ".join(reasons))
        if self._at_limit():
            self._warn_limit(sigma, args, kwargs)
            return Version(-1, sigma, self._eager, native=False,
                           reason="version or compile limit reached")
        counted = self._count_changed(sigma)  # (a refused generic key is tried again)
        pattern = self._generic.pattern_for(sigma, [v.sigma for v in self._versions if v.native],
                                            DecisionStore.of(self.fn, settings.cache_dir), retry=counted)
        version = self._compile(sigma, args, kwargs, settings, outcome, placement, pattern, counted)
        if version.generic is not None and pattern is not None:
            self._generic.add(sigma, getattr(version.generic, "pattern", None) or pattern,
                              version)
        self._versions.append(version)
        self._by_sigma.setdefault(sigma, []).append(version)
        layout = array_signature(args) if not kwargs else None
        if layout is not None:
            self._by_layout[layout] = self._by_sigma[sigma]
        return version

    def _traced_function(self) -> Callable[..., Any]:
        inner = self._free.lifted() if self._free else self.fn
        inner = self._form.calling(inner, True, len(self._free.names)) if self._form else inner
        return with_object_arrays(inner, len(self._free.names)) if self._objects else inner

    def _compile(self, sigma: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                 settings: config.Settings, outcome: Outcome,
                 placement: devices.Placement | None = None, pattern: Any = None,
                 counted: bool = False) -> Version:
        """A new version for this key (``counted``: its loops over a changing count lift at any
        count). When it falls back after the capture ran to its end, ``outcome`` holds that
        run's result: the caller returns it, not running it again."""
        number, start, timings = len(self._versions), time.perf_counter(), {}
        # unrolled loops' kernels limited (LLVM's time); past that, captured again lifted
        again, budget = loops.recapturable(self.fn, tree_leaves((args, kwargs))), budgeted(self.fn)
        build = functools.partial(self._build, sigma, args, kwargs, settings, number, timings,
                                  outcome, placement, pattern)
        try:
            try:
                with kernel_budget() if again else contextlib.nullcontext(), gate_budget(budget), \
                        loops.lifting_counted_loops() if again and counted else \
                        contextlib.nullcontext():
                    version = build()
            except (TooManySteps, TooManyGates) as why:
                if not again or outcome.generators:
                    raise
                version = captured_lifted(build, why, outcome, budget, settings.logs, self._name)
        except (UnsupportedError, _InternalError) as exc:
            if self.strict_native:
                raise (exc.__cause__ if isinstance(exc, _InternalError) else exc) from None
            reason = str(exc)
            eager = "eager NumPy" if placement is None else \
                f"eager NumPy through CuPy on {placement.key}"
            logs.warn(f"stax: {self._name} falls back to {eager} for this signature: {reason}")
            version = Version(number, sigma, self._eager, native=False, reason=reason)
            if not getattr(exc, "values_read", True):  # a refusal no value decided
                self._generic.fell_back(sigma, version)
        self._compiles += 1
        version.stats["compile_s"] = time.perf_counter() - start
        version.stats.update(timings)
        logs.emit("perf", settings.logs, f"compiled {self._name} v{number} in "
                  f"{version.stats['compile_s'] * 1e3:.1f} ms: " + ", ".join(
                      f"{k} {v * 1e3:.1f} ms" for k, v in timings.items()))
        return version

    def _build(self, sigma: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
               settings: config.Settings, number: int, timings: dict[str, float],
               outcome: Outcome, placement: devices.Placement | None,
               pattern: Any = None) -> Version:
        """The version for sigma; with a ``placement`` the device arguments are captured on host
        copies of one layout (``devices.py``) and compiled for the CUDA target."""
        device_args, device_kwargs = args, kwargs
        if placement is not None:
            args, kwargs = placement.host_call(args, kwargs)
        name = getattr(self.fn, "__name__", "fn")
        user_args, lifted = args[len(self._free.names):], []
        if user_args and type(user_args[0]) is LiftedAttributes:
            marker = user_args[0]
            user_args = user_args[marker.leaves:]
            lifted = ["lifted", *(f"arg{i}.{a}" for i, a in marker.paths)]
        names = [*self._free.names, *lifted,
                 *leaf_names(self.fn, *as_called(self._form, user_args, kwargs))]
        clock = time.perf_counter()
        try:
            free = snapshot_for_capture(self._guards, self._rebinds,
                                        defaults_unread(self._form, user_args))
        except UnsupportedError as exc:
            devices.refuse_held_tensor(exc.__context__, placement, self._name, "a value it reads")
            raise
        # (not the disk's capture where every loop is lifted: that one is the unrolled one)
        captures, key = captures_for(self.fn, sigma, names, settings.cache_dir, lambda text: logs.emit(
            "perf", settings.logs, f"{self._name}: capture not cached on disk: {text}")) \
            if not loops.lifting() else (None, None)
        capture = captures.load(key) if captures is not None and key is not None else None
        if capture is not None:
            timings["capture (disk cache)"] = time.perf_counter() - clock
        else:
            outcome.keep_contents(*untraced_state((args, kwargs, getattr(self.fn, "__self__", None))))
            try:
                capture = trace(self._traced_function(), args, kwargs, name=name,
                                arg_names=names, outcome=outcome)
            except StaxError:
                raise
            except Exception as exc:  # the function's own error ends the call, its updates made
                self._capture_raised(sigma, outcome, placement, exc, args, kwargs)
                raise
            timings["capture"] = time.perf_counter() - clock
            check_no_side_effects(free, sigma, device_args, device_kwargs, self._names)
            if captures is not None and key is not None and not capture.gates and \
                    not holds_lifted_loop(capture.graph):  # a lifted loop lives in this process
                captures.store(key, capture)
        if self.capture_check is not None:
            self.capture_check(capture)
        if self.donates_arguments and capture.writeback:
            capture = without_writeback(capture)
        dump = dumper(settings.dump_dir, dump_stem(self, settings.dump_dir, name), number)
        dump("capture", capture)
        logs.emit("graph", settings.logs, str(capture))
        numpy_calls = program_gates(capture, lambda text: logs.emit("perf", settings.logs, text)) \
            if capture.gates and placement is None else None
        in_program = numpy_calls is not None
        leaves = tree_flatten((args, kwargs))[0]
        slots = [i for i, s in enumerate(capture.inputs) if s is not None]
        try:
            # services a backend gets when its signature asks for them (spec §1.2 keeps the
            # contract backend(graph, example_inputs, **options))
            services = {"dump": dump, "timings": timings, "cache_dir": settings.cache_dir,
                        "device": "cpu" if placement is None else "cuda",
                        "log": lambda category, text: logs.emit(category, settings.logs, text)}
            accepted = accepted_services(self.backend, services)
            if placement is not None and self.backend is not stax_backend and \
                    "device" not in named_parameters(self.backend):
                raise UnsupportedError(f"backend {self.backend_name!r} compiles for the CPU only "
                                       "(its signature takes no device)")
            if heeds_underflow(capture.info, self.fn):  # its own block heeds underflow: so
                self._sets_errstate = HEEDING_UNDERFLOW  # does every call (``heeding_all``)
            if self._sets_errstate:  # its own np.errstate decides its warnings: never a late
                capture.info["sets_errstate"] = True  # report (``stax.loop.overwrites``)
            compiled = with_gate_outputs(capture, numpy_calls) if numpy_calls is not None \
                else capture
            run_flat = self._generic.compile(self._name, sigma, pattern, capture, args, lambda c: (
                self.backend(c, example_inputs(c, leaves), **accepted, **self.options)),
                services["log"], DecisionStore.of(self.fn, settings.cache_dir)) \
                if pattern is not None and numpy_calls is None else None
            slots = getattr(run_flat, "slots", slots)  # scalar arguments made inputs
            run_flat = run_flat or self.backend(compiled, [leaves[i] for i in slots], **accepted,
                                                **self.options)
        except UnsupportedError:
            raise
        except Exception as exc:  # a compiler bug: never a wrong result, say so and run eagerly
            raise _InternalError(f"internal compiler error in backend {self.backend_name!r}: "
                                 f"{type(exc).__name__}: {exc}") from exc
        artifact = getattr(run_flat, "artifact", None)
        # an Executable's __call__ validates its inputs for replay users; sigma already has
        call_flat = run_flat.run if isinstance(run_flat, (Executable, TritonExecutable)) else run_flat
        call_flat, gate_check = check_in_program(run_flat, call_flat, capture) if in_program \
            else (call_flat, None)
        if artifact is not None:
            logs.emit("kernels", settings.logs, str(artifact))
        # a backend that arranges its results otherwise says how (a gradient's: the result,
        # then the gradients)
        output_tree = getattr(run_flat, "output_tree", None) or capture.output_tree
        runner = tree_runner(call_flat, slots, output_tree) if not capture.writeback else \
            writeback_runner(call_flat, slots, capture,
                             placement.library if placement is not None else None)
        version = Version(number, sigma, runner, native=True, artifact=artifact, rho=self.rho,
                          flat=(run_flat, slots),
                          gates=GateReplay(capture) if capture.gates else None, free=free,
                          gate_check=gate_check, generic=run_flat if isinstance(
                              run_flat, (GenericExecutable, ScalarArguments)) else None,
                          generators=[i for i, leaf in enumerate(leaves)
                                      if type(leaf) is np.random.Generator])
        # f(array, scalar, ...): every argument a top-level positional leaf (nothing written back)
        flat_args = not kwargs and len(args) == len(leaves) and \
            all(a is leaf for a, leaf in zip(args, leaves))
        flat_call = flat_args and not capture.writeback
        plain_args = flat_args and slots == list(range(len(leaves)))  # every one an input
        plain_call = plain_args and not capture.writeback
        if plain_call and output_tree.kind == "leaf":
            run_one = None if in_program else getattr(run_flat, "run_one", None)  # one kernel
            version.fast = run_one or (lambda *arrays: call_flat(*arrays)[0])
        elif flat_call:  # the others (scalars) constants of the code: no tree to walk
            version.fast = flat_runner(call_flat, slots, output_tree)
        # the pattern with the other scalars the generic version took as inputs; its key (none
        # for a size-generic one) compares the scalars' types, other arguments by value
        pattern = getattr(version.generic, "pattern", None) or pattern
        key = entry_key(sigma, pattern, version.generic)
        make_entry = getattr(run_flat, "entry", None) if plain_args or not version.generic or \
            key is not None else None
        freed = len(self._free.names)  # free arrays first in a key: an entry reads them
        dispatch = self._dispatch if not freed else lambda *a, **k: self._dispatch(*a[freed:], **k)
        predicates = getattr(version.generic, "predicates", ())
        given, served = CallValues(args, self._names) if not kwargs else None, \
            served_exactly(sigma, pattern, self._versions) if version.generic else None
        make_entry, tested = (make_entry, False) if gate_check is None or make_entry is None \
            else gate_check.testing(make_entry)  # its gates tested by the entry itself
        if (predicates or tested) and not freed:  # another outcome's version's entry before
            version.entry_key = key  # dispatch (another branch's: ``entry_gates``)
            dispatch = next((v.entry.function for v in reversed(self._versions) if v.entry_key ==
                             key and v.entry is not None and v.free is None), dispatch)
        if make_entry is not None and (version.gates is None or tested) and \
                placement is None and not kwargs and not self._sets_errstate and \
                not (capture.writeback and capture.writeback_plan().views):
            clock = time.perf_counter()  # the entry decides which results it can return
            entry = compiled_entry(make_entry, key, leaves, slots, plain_args, dispatch,
                                   predicates, given, served)
            timings["entry"] = time.perf_counter() - clock
            version.entry = None if isinstance(entry, str) else entry
            if isinstance(entry, str):
                logs.emit("kernels", settings.logs, f"no machine-code entry: {entry}")
        version.plain_entries = version.generic is not None and plain_call and \
            version.gates is None and not self._free and placement is None and \
            not self._sets_errstate  # machine-code entries per size, as calls repeat one
        if version.generic is not None and flat_call and version.gates is None and \
                not self._free and placement is None and not self._sets_errstate and \
                (not plain_args or sized_scalars(version.generic)):  # scalars among them
            version.sized_entries = {}  # key entries per layout (``sized_entries.py``)
        if version.entry is None and (version.gates is None or gate_check is not None) and \
                placement is None and key is not None:
            version.entry = version_entry(key, self._entry_run(version, len(args) - len(
                user_args)), dispatch, predicates, given, served)
        if freed and version.entry is not None:
            version.entry = with_free_values(version.entry, self._free.read)
        return version


class _InternalError(StaxError): ...


# a child forked while another thread compiled would inherit that function's lock held: each
# live function gets a new one in the child (the compile in flight does not exist there)
_LIVE: weakref.WeakSet[CompiledFunction] = weakref.WeakSet()


def _new_locks_in_child() -> None:
    global _DUMP_NAMES_LOCK
    _DUMP_NAMES_LOCK = threading.Lock()
    for function in list(_LIVE):
        function._compile_lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_in_child)


def _recompile(fn: Callable[..., Any], device: str | None, dynamic: bool | None, strict_native: bool,
               backend: str, options: dict[str, Any], limits: Limits) -> CompiledFunction:
    return CompiledFunction(fn, device=device, dynamic=dynamic, strict_native=strict_native,
                            backend=backend, options=options, limits=limits)
