"""A plan's call written out as one Python function: allocations, kernel launches, NumPy steps
with their result checks, releases, checks, events and results, in plan order, on local
variables.

A call with NumPy steps costs its steps plus what runs around them, and that decides it against
eager NumPy when the steps are most of the work: ``r = r @ A`` eight times on 64x64 is 83 us of
products in NumPy's 86 us. Run as a loop over step objects (an environment list, a closure per
step binding its operands, an ``np.errstate`` recording entered and left per step) the plan
cost 1.6 us per NumPy step beyond the product, 0.5 us of it the recording: 99 us. Written out,
a NumPy step is its call, a ``try`` that costs nothing until NumPy raises, and one tuple compare
of its result's layout, and the recording is entered once around all the steps (kernels between
them report their events into the same events word and never read NumPy's error state): 87 us.

The source is made from a fixed template, names of this module's own making and integers (slot
positions, loop ranges: each checked to be an ``int``): nothing of a document's text is ever
executed. Every other value (functions, shapes, dtypes, operand constants, a check's reason) is
a name bound in the function's globals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stax.ir.interpreter import bound_method, call_method
from stax.loop.ir import BufferRef, map_buffer_refs

from .artifact import ExternPlan
from .call_sites import call_site


@dataclass(frozen=True)
class KernelStep:
    """A kernel launch: ``function(*arrays, 0, outer)`` on the calling thread (``launch`` is
    ``"call"``), split by the Python pool (``"pool"``), or an address run by the native pool
    (``"native"``)."""

    function: Any
    args: tuple[int, ...]  # slots
    outer: int
    launch: str = "call"


@dataclass(frozen=True)
class NumPyStep:
    """An extern call: ``function`` (None: the method ``plan.target`` of the first operand) on
    the decoded operands, its result checked against the plan and stored in slot ``out``."""

    plan: ExternPlan
    function: Callable[..., Any] | None
    args: Any
    kwargs: Any
    out: int
    into: bool = False  # the result is written into slot ``out``'s planned view (``out=``)
    allocate: Callable[[], np.ndarray] | None = None  # ... or into this array, made just before


@dataclass
class CallPlan:
    """What one call does, in slots: inputs ``0 .. n_inputs - 1``, then the plan's buffers."""

    n_inputs: int
    slot: dict[str, int]
    steps: list[KernelStep | NumPyStep]
    releases: list[tuple[int, ...]]        # per step, the slots dropped after it
    outputs: list[tuple[int | None, Any]]  # (slot, scalar) or (None, constant)
    allocs: list[tuple[int, Callable[[], np.ndarray]]] = field(default_factory=list)
    blocks: dict[int, Callable[[], np.ndarray]] = field(default_factory=dict)
    #: (slot, block, shape, dtype, byte strides): a buffer as a view of a shared block
    views: list[tuple[int, int, Any, Any, Any]] = field(default_factory=list)
    checks: dict[int, str] = field(default_factory=dict)  # slot -> what a True means
    events: int | None = None
    unseen: bool = False       # a kernel may underflow unseen: look at the error state first
    generators: bool = False   # an input is a Generator: a declined call undoes its draws
    #: the last ``gates`` outputs are data-gate values: ``gates(*values)`` tests them right after
    #: the steps, before checks, events and NumPy's warnings (it raises: another branch's call)
    gates: int = 0
    #: the last ``late`` steps write over arguments (``KernelArtifact.overwrites``): they run
    #: once the call stands, after its gates, checks and events, just before it returns
    late: int = 0
    #: (allocate, {block: (offset, bytes)}): blocks as byte ranges of one arena per call
    arena: tuple[Callable[[], np.ndarray], dict[int, tuple[int, int]]] | None = None
    #: a late step reports its own events (``KernelArtifact.late_reports``): after the late
    #: steps, new bits in ``events`` go to ``report_late(bits)``, which warns or raises as
    #: NumPy's in-place ufunc would
    late_reports: bool = False


#: the functions a call needs from its executable: ``refuse_underflow()``; ``start_recording``,
#: ``stop_recording`` and ``give_warnings`` (``errstate``: NumPy's warnings, held, given when the
#: call stands); ``verify(step, result)`` (the result as the plan
#: stores it, or raise: another than capture saw) and ``raised(step, exc)`` (the exception for a
#: NumPy step's error); ``failed(reason)`` (a check);
#: ``settle(bits, arrays, drawn)`` (the call's results again, or None, or raise); ``draws(arrays)``
#: (generator states, with ``undo()``); ``first(arrays)`` (a precise-first call, or None) and
#: ``left`` (``[calls left]``: nonzero while calls start precise; None: never); ``pool`` and
#: ``native``; ``declined`` (the exception class of a declined call); ``gates(*values)``;
#: ``report_late(bits)`` (``late_reports.py``)
HOOKS = ("refuse_underflow", "start_recording", "stop_recording", "give_warnings", "verify",
         "raised", "failed", "settle", "draws", "first", "left", "pool", "native", "declined",
         "gates", "report_late")


def write_call(plan: CallPlan, hooks: dict[str, Any], one: bool = False,
               keep: Any = None) -> Callable[..., Any]:
    """``run(*arrays) -> [results]`` (``one``: ``run_one(*arrays) -> result``, for a plan of one
    result) for ``plan``. ``keep`` is held by the function (the kernels' machine code)."""
    if one and len(plan.outputs) != 1:
        raise ValueError("run_one is for a plan with one result")
    return _Writer(plan, hooks, one, keep).function()


class _Writer:
    def __init__(self, plan: CallPlan, hooks: dict[str, Any], one: bool, keep: Any) -> None:
        self.plan, self.one = plan, one
        self.scope: dict[str, Any] = {name: hooks.get(name) for name in HOOKS}
        # (Stax's code, not the user's: a capture around the call, a lifted loop's first run,
        # records no array this code makes: its events buffer was traced, a probe's find)
        self.scope["__name__"] = __name__
        self.scope.update({"ndarray": np.ndarray, "zeros": np.zeros, "int32": np.int32,
                           "method": call_method, "method_of": _method_of, "bound": bound_method,
                           "keep": keep})
        _integers(plan.n_inputs, *plan.slot.values())
        self.names = {i: f"a{i}" if i < plan.n_inputs else f"v{i}" for i in plan.slot.values()}
        if plan.events is not None:
            self.names[plan.events] = "events"
        self.arrays = f"({''.join(f'a{i}, ' for i in range(plan.n_inputs))})"
        self.results = "results[0]" if one else "results"

    def function(self) -> Callable[..., Any]:
        plan, arrays = self.plan, self.arrays
        lines = [f"def run({', '.join(f'a{i}' for i in range(plan.n_inputs))}):"]
        if self.scope["left"] is not None:
            lines += ["    if left[0]:", f"        results = first({arrays})",
                      "        if results is not None:", f"            return {self.results}"]
        body = self.body()
        if plan.generators:
            lines += [f"    drawn = draws({arrays})", "    try:"]
            lines += [f"        {line}" for line in body]
            lines += ["    except declined:", "        drawn.undo()", "        raise"]
        else:
            lines += ["    drawn = None", *[f"    {line}" for line in body]]
        source = "\n".join(lines) + "\n"
        exec(compile(source, f"<stax call {id(self.scope):x}>", "exec"), self.scope)
        return self.scope["run"]

    def body(self) -> list[str]:
        plan, names, scope = self.plan, self.names, self.scope
        lines = []
        if plan.unseen:
            lines.append("refuse_underflow()")
        if plan.events is not None:
            lines.append("events = zeros(1, int32)")
        for i, alloc in plan.allocs:
            scope[f"alloc{i}"] = alloc
            lines.append(f"{names[i]} = alloc{i}()")
        if plan.arena is not None:
            scope["arena_alloc"] = plan.arena[0]
            lines.append("arena = arena_alloc()")
            for block, (offset, nbytes) in plan.arena[1].items():
                _integers(block, offset, nbytes)
                lines.append(f"b{block} = arena[{offset}:{offset + nbytes}]")
        for block, alloc in plan.blocks.items():
            _integers(block)
            scope[f"block{block}"] = alloc
            lines.append(f"b{block} = block{block}()")
        for i, block, shape, dtype, strides in plan.views:
            _integers(block)
            scope[f"view{i}"] = (shape, dtype, strides)
            lines.append(f"{names[i]} = ndarray(view{i}[0], view{i}[1], buffer=b{block}, "
                         f"strides=view{i}[2])")
        lines += self.steps()
        if plan.gates:
            lines.append(f"gates({', '.join(self.output_values()[-plan.gates:])})")
        for i, reason in plan.checks.items():
            scope[f"reason{i}"] = reason
            lines += [f"if {names[i]}:", f"    failed(reason{i})"]
        if plan.events is not None:
            lines += ["bits = events.item()", "if bits:",
                      f"    results = settle(bits, {self.arrays}, drawn)",
                      "    if results is not None:", f"        return {self.results}"]
        values = self.output_values()
        if plan.events is not None and any(isinstance(s, NumPyStep) for s in plan.steps):
            lines += ["if held:", "    give_warnings(held)"]  # the call stands: NumPy's warnings
        reports = plan.late_reports and plan.events is not None
        if reports:  # the late kernels' own events: NumPy's flags for the in-place ufunc alone
            lines.append("events[0] = 0")
        for k in range(len(plan.steps) - plan.late, len(plan.steps)):
            lines += self.kernel(k, plan.steps[k])  # type: ignore[arg-type]
        if reports:  # the arguments are written
            lines += ["late = events.item()", "if late:", "    report_late(late)"]
        lines.append(f"return {values[0]}" if self.one else f"return [{', '.join(values)}]")
        return lines

    def output_values(self) -> list[str]:
        """Each output's expression: its local, a 0-d one as NumPy's scalar, or a constant."""
        values = []
        for k, (i, extra) in enumerate(self.plan.outputs):
            if i is None:
                self.scope[f"const{k}"] = extra
                values.append(f"const{k}")
            else:
                name = self.names[i]
                values.append(f"({name}[()] if {name}.ndim == 0 else {name})" if extra else name)
        return values

    def steps(self) -> list[str]:
        """Every step and its releases; NumPy's error state records from the first NumPy step
        to the last one (``errstate.start_recording``), once."""
        plan, lines = self.plan, []
        numpy = [k for k, step in enumerate(plan.steps) if isinstance(step, NumPyStep)]
        record = plan.events is not None and bool(numpy)
        early = len(plan.steps) - plan.late
        if not all(isinstance(step, KernelStep) for step in plan.steps[early:]):
            raise TypeError("a step writing over an argument is not a kernel launch")
        for k, (step, release) in enumerate(zip(plan.steps[:early], plan.releases)):
            inside = record and numpy[0] <= k <= numpy[-1]
            if record and k == numpy[0]:
                lines += ["token = start_recording(events)", "held = None", "try:"]
            written = self.kernel(k, step) if isinstance(step, KernelStep) else self.numpy(k, step)
            written += [f"{self.names[i]} = None" for i in release]
            lines += [("    " if inside else "") + line for line in written]
            if record and k == numpy[-1]:
                lines += ["finally:", "    held = stop_recording(token)"]
        return lines

    def kernel(self, k: int, step: KernelStep) -> list[str]:
        _integers(*step.args, step.outer)
        if not all(a in self.names for a in step.args):
            raise TypeError(f"kernel launch of unexpected form: args {step.args!r}")
        self.scope[f"kernel{k}"] = step.function
        args = ", ".join(self.names[a] for a in step.args)
        if step.launch == "call":
            return [f"kernel{k}({args}, 0, {step.outer})"]
        if step.launch not in ("pool", "native"):
            raise ValueError(f"kernel launch {step.launch!r}")
        steps = self.plan.steps
        if step.launch == "native" and k + 1 < len(steps) and isinstance(steps[k + 1], NumPyStep):
            # NumPy next (a matmul on BLAS's threads): the pool's workers sleep, not spin
            return [f"native.parallel_for(kernel{k}, ({args},), {step.outer}, True)"]
        return [f"{step.launch}.parallel_for(kernel{k}, ({args},), {step.outer})"]

    def numpy(self, k: int, step: NumPyStep) -> list[str]:
        """The call, its error as ``raised``, and the check of its result against the plan."""
        plan, out, scope = step.plan, self.names[step.out], self.scope
        args = self.operands(k, step.args)
        kwargs = self.keywords(k, step.kwargs)
        site = call_site(plan.source)  # NumPy's warnings name the user's line
        if site is not None:
            scope[f"site{k}"] = site
        keywords = [f"**{kwargs}"] if kwargs else []
        if step.into:
            keywords.append(f"out={out}")
        if step.function is None:  # a method: call_method checks its receiver's type
            scope[f"target{k}"] = plan.target
            if isinstance(step.args, tuple) and step.args and site is not None:
                receiver, *rest = args
                call = f"site{k}({', '.join([f'bound({receiver}, target{k})', *rest, *keywords])})"
            elif isinstance(step.args, tuple) and step.args:
                receiver, *rest = args
                call = f"method({receiver}, target{k}, ({''.join(a + ', ' for a in rest)}), " \
                       f"{kwargs or '{}'})"
            else:  # operands as one sequence (or none): the receiver is its first
                call = f"method_of(target{k}, ({''.join(a + ', ' for a in args)}), " \
                       f"{kwargs or '{}'})"
        else:
            scope[f"call{k}"] = step.function
            call = f"call{k}({', '.join([*args, *keywords])})" if site is None else \
                f"site{k}({', '.join([f'call{k}', *args, *keywords])})"
        lines = ["try:", f"    {out} = {call}", "except Exception as exc:",
                 f"    raise raised({k}, exc) from exc"]
        if step.allocate is not None:
            scope[f"result{k}"] = step.allocate
            lines.insert(0, f"{out} = result{k}()")
        if plan.sequence is not None:
            return lines + [f"{out} = verify({k}, {out})"]
        # the common result at the cost of one tuple compare; ``verify`` decides the rest (a
        # NumPy scalar for a 0-d array, another stride of a length-1 axis, an equal dtype)
        dtype = np.dtype(plan.dtype)
        scope[f"layout{k}"] = (tuple(plan.shape), tuple(s * dtype.itemsize for s in plan.strides),
                               dtype)
        return lines + [f"if type({out}) is not ndarray or "
                        f"({out}.shape, {out}.strides, {out}.dtype) != layout{k}:",
                        f"    {out} = verify({k}, {out})"]

    def operand(self, name: str, value: Any) -> str:
        """One operand's expression: a buffer's variable, a constant's name, or the rebuild of a
        container holding buffers from their variables (in ``map_buffer_refs``' order)."""
        if isinstance(value, BufferRef):
            return self.names[self.slot_of(value)]
        refs: list[BufferRef] = []
        map_buffer_refs(value, refs.append)
        if not refs:
            self.scope[name] = value
            return name

        def rebuild(*arrays: Any) -> Any:
            values = iter(arrays)
            return map_buffer_refs(value, lambda ref: next(values))
        self.scope[name] = rebuild
        return f"{name}({', '.join(self.names[self.slot_of(r)] for r in refs)})"

    def operands(self, k: int, args: Any) -> list[str]:
        if isinstance(args, tuple):
            return [self.operand(f"arg{k}_{j}", v) for j, v in enumerate(args)]
        return [f"*{self.operand(f'args{k}', args)}"]

    def keywords(self, k: int, kwargs: Any) -> str:
        """The keyword arguments as one mapping expression ('' for none)."""
        if isinstance(kwargs, dict) and not kwargs:
            return ""
        if isinstance(kwargs, dict) and any(isinstance(v, BufferRef) for v in kwargs.values()):
            items = []
            for j, (key, value) in enumerate(kwargs.items()):
                self.scope[f"key{k}_{j}"] = key
                items.append(f"key{k}_{j}: {self.operand(f'kwarg{k}_{j}', value)}")
            return "{" + ", ".join(items) + "}"
        return self.operand(f"kwargs{k}", kwargs)

    def slot_of(self, ref: BufferRef) -> int:
        if ref.name not in self.plan.slot:
            raise KeyError(f"an extern reads {ref.name!r}, which the plan lacks")
        return self.plan.slot[ref.name]


def _method_of(target: str, operands: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return call_method(operands[0], target, tuple(operands[1:]), kwargs)


def _integers(*values: Any) -> None:
    if not all(type(v) is int for v in values):
        raise TypeError(f"kernel launch of unexpected form: {values!r}")

