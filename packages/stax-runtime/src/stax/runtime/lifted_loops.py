"""Lifted loops: a Python loop whose unrolled capture would be large runs as one step of the
compiled program (issue 13 item 2).

``stax.trace.loops`` rewrites each loop into a body function of the item and of the locals it
touches (and the whole loop as a function), traces the first iteration, and offers the loop
here (``lift``) when unrolling it would record more than ``stax.trace.loops.UNROLL_LIMIT``
operations: a ``range`` loop, or a loop over a traced array's rows. Every item, from the locals
as they were before the loop (``stax.trace.loop_state``; else the items after the traced first
one), becomes one capture node, ``stax.functional.lifted_loop(*traced locals, loop=key)``, a
NumPy step whose results are the final values of the locals the body binds or updates. The
step's runner (``Runner``) either

- runs the body compiled once (``strict_native``; the item a 0-d int64 traced as the Python int
  it stands for where an int64 means the same, ``item_uses.py``; carried NumPy scalars traced as
  scalars; a view of another local made inside from its base, ``taking_bases``): through the
  dispatcher for the first items, then, once the layouts are steady, in one machine-code loop
  over the remaining items (``stax.codegen.cpu.item_loop``, ``ItemLoopRun``), made once per
  layout and reused by later calls; or
- runs the loop as written, in NumPy: where the body does not compile so (``x32 * i``: NEP 50
  keeps float32 for a Python int; ``if x[i] > 0``), where a call the compiled body declines
  (events NumPy reports, index arithmetic past int64), or where NumPy ran the first items faster
  than the compiled body does (measured at capture).

The loop unrolls instead (it is captured as before) when neither keeps eager semantics: a
Python value the body binds changes from item to item (``count += 1``); the body binds the loop
variable; an array it updates in place is viewed, aliased or bound anew; the body calls
something with a Python effect (``print``, ``list.append``: ``stax.trace.loop_body``).

At run time the step is checked as NumPy steps are: anything unexpected (the body raises, a new
type, results that are other objects than at capture) makes the call run eagerly.
Floating-point events of the loop reach the call's error handling as a NumPy step's do; the
compiled body's kernels ignore underflow, and the step reports to the call that an item may
have underflowed, so a call under a state that heeds underflow runs eagerly.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import numpy as np

from stax.codegen import ExternResultMismatch, errstate
from stax.codegen.cpu.fpevents import UNDERFLOW
from stax.trace.isolation import not_watching
from stax.trace.loop_index import loop_index_argument
from stax.trace.loop_ranges import DYNAMIC_ITEMS
from stax.trace.loops import UNBOUND, LoopSite, install_lifter
from stax.trace.proxy import Proxy
from stax.trace.source import traced_value
from stax.trace.traced_scalars import TracedScalar
from stax.trace.traced_sizes import TracedNumber

from . import config, logs
from .api import CompiledFunction
from .enclosing_items import begin_span, enclosing_items, spanning
from .item_loop_runs import LAST_ITEM, ItemLoopRun
from .item_uses import ITEM, check_item_uses
from .lift_plan import carried_scalar, plan_step, scalar_inputs, taking_bases, uncarried_group
from .lifted_first_runs import Unstable, first_run
from .lifted_steps import record_step, unrolls
from .result_identities import identities, standing_order
from .steady_loops import SteadyCall, Tested
from .stepped_locals import after_loop, count_at, counted_locals, counting


def lift(tracer: Any, site: LoopSite, body: Any, whole: Any, items: range,
         state: dict[str, Any], stop: TracedScalar | None = None, begin: Any = None,
         nested: bool = False) -> dict[str, Any] | None:
    """The state after running ``body`` for ``items`` as one recorded step, or None (with the
    reason logged under ``STAX_LOGS=loops``) when the loop must unroll. ``stop``: the traced
    end of ``items``, then an input of the step, whose items each call takes from it
    (``stax.trace.loop_ranges``); ``begin``: the traced start, computed from the enclosing
    lifted body's item (``enclosing_items.begin_span``), an input the same way. ``nested``: the
    body holds a lifted loop; run by NumPy, its inner loop would run as Python, so it unrolls
    unless its body compiles."""
    counted = counted_locals(site, state, items, stop is not None or begin is not None)
    starts = begin_span(begin, tracer) if begin is not None else None
    # a stop computed from the enclosing item (``range(i)``), not an argument's count
    ends = begin_span(stop, tracer) if stop is not None and \
        not isinstance(stop, TracedScalar) else None
    if (begin is not None and starts is None) or (ends is None and stop is not None and
                                                  not isinstance(stop, TracedScalar)) or \
            ((begin is not None or ends is not None) and counted):
        return unrolls(site, "its start or stop is computed from data (not the enclosing "
                             "loop's item plus an int), or it steps a counter")
    plan = uncarried_group(site, state) or plan_step(tracer, site, state, counted)
    if isinstance(plan, str):
        return unrolls(site, plan)
    inputs, constants, outputs, views = plan
    outer = enclosing_items(tracer, state, inputs, {*site.assigned, *site.mutated})
    compiled, key = None, _body_key(site, body, items, views, {**counted, **outer})
    bodies = tracer.__dict__.setdefault("lifted_bodies", {})  # this capture's, by loop
    cells = [c.cell_contents for c in body.__closure__ or ()]
    if key is not None:  # the same closure: the very objects
        compiled = next((c for held, c in bodies.get(key, ())
                         if len(held) == len(cells) and all(a is b for a, b in zip(held, cells))),
                        None)
    if compiled is None:
        params, stepped = site.params, body
        if counted:
            params = tuple(p for p in params if p not in counted)
            stepped = counting(body, site.params, counted, items)
        allowed = items if stop is None else range(items.start, items.start + DYNAMIC_ITEMS) \
            if ends is None else range(items.start, max(items.start + 1, ends[1]))
        if starts is not None:  # every start the enclosing items give
            allowed = range(starts[0], max(allowed.stop, starts[1], starts[0] + 1))
        compiled = CompiledFunction(spanning(  # (the span: for loops lifted inside the body)
            taking_bases(stepped, params, site.returned, views, site.scratch)
            if views or site.scratch else stepped, allowed), strict_native=True)
        compiled.capture_check = functools.partial(  # a run-time count: every item it allows
            check_item_uses, items=allowed, others=outer)
        compiled.donates_arguments = True  # it returns what it updates: no copy back per item
        compiled.declines_to_caller = True  # a call it declines: the loop runs in NumPy
        compiled.item_loops = {}  # machine-code loops, by argument layouts (its runners')
        if key is not None:
            bodies.setdefault(key, []).append((cells, compiled))
    start = [state[n].value if isinstance(state[n], (Proxy, TracedNumber)) else state[n]
             for n in inputs]
    runner = Runner(compiled, whole, site, items, inputs, constants, outputs, stop is not None,
                     scalars={n for n, v in zip(inputs, start) if isinstance(v, np.generic) and
                              (not isinstance(state[n], TracedScalar) or
                               carried_scalar(site, n, state[n]))},
                     views=views, counted=counted, start_input=begin is not None)
    runner.body, runner.numbers = body, scalar_inputs(state, inputs)
    runner.outer_items = outer  # the enclosing lifted loop's item: a Python int eagerly
    runner.starts, runner.ends = starts, ends  # the spans of a start and a stop computed
    # from it (``begin``, ``stop``)
    runner.carried = frozenset(n for n in runner.numbers if n in site.floats)
    runner.loops = compiled.item_loops
    with traced_value():  # NumPy's reports here are the recorded step's (not a constant's)
        first = first_run(runner, [*start, *([] if begin is None else [begin.value]),
                                   *([] if stop is None else [stop.value])])
    runner.capturing = False
    if isinstance(first, str):
        return unrolls(site, first)
    results, how = first
    if nested and runner.refusal is not None:
        return unrolls(site, how)
    after = record_step(tracer, runner, state, results, stop, begin)
    after.update(after_loop(counted, items))  # Python ints, as the loop leaves them
    if site.target is not None:  # a range of two items at least (run_loop); after a break,
        # the last item run: the step's last result, a traced int64 returned as a Python int
        # (a run-time count's: no read after the loop sees it, ``LoopSite.target_unread``)
        after[site.target] = runner.recorded_item if site.item_returned else items[-1]
    if site.row is not None:  # the last row: a view of the array, as iterating it gives
        after[site.row] = state[site.array][items[-1]]
    logs.emit("loops", config.current().logs,
              f"loop at {site.source}: {len(items)} iterations lifted into one step "
              f"({'the count a run-time input; ' if stop is not None else ''}"
              f"{'the start a run-time input; ' if begin is not None else ''}{how}; "
              f"inputs {', '.join(inputs)}; results {', '.join(outputs)})")
    return after


def _body_key(site: LoopSite, body: Any, items: range, views: dict[str, Any],
              counted: dict[str, Any]) -> Any:
    """What a loop's compiled body is shared by within one capture (an inner loop lifted at each
    item of an outer loop that unrolls: Gauss-Seidel's row loop per sweep compiled its body
    again each time, 5.8 s for a first call): the loop, its body's code, its items and views
    (its closure is compared by identity); None where these cannot be compared."""
    try:
        key = (site, body.__code__, items, tuple(sorted(views.items())),
               tuple(sorted(counted.items())))
        hash(key)
    except (TypeError, ValueError):
        return None
    return key


class Runner:
    """The lifted step: the remaining items through the compiled body, on private copies of the
    arrays it updates in place (its other inputs read-only: an update the analysis missed fails
    and the call runs eagerly). NumPy scalars go in as 0-d arrays (a scalar argument is keyed by
    its value: each would be a version). Once the body's version for a signature of its
    arguments is known, later items with that signature call it without dispatch. With
    ``eager`` set (the body measured faster in NumPy at capture), the body function itself runs
    per item, on the values as eager Python has them."""

    going_input: str | None = None  # the input saying whether a ``while`` step runs at all

    def __init__(self, compiled: Any, whole: Any, site: LoopSite, items: range,
                 inputs: list[str], constants: dict[str, Any], outputs: list[str],
                 stop_input: bool, scalars: set[str], views: dict[str, Any],
                 counted: dict[str, tuple[int, int]] | None = None, start_input: bool = False
                 ) -> None:
        self.compiled, self.whole, self.site, self.items = compiled, whole, site, items
        self.stop_input = stop_input  # the last input: the end of this call's items
        self.start_input = start_input  # the one before it (or the last): their start
        self.inputs, self.constants, self.outputs = inputs, constants, outputs
        self.scalars = scalars  # inputs that were NumPy scalars at capture (0-d buffers here)
        self.views = views  # name -> (the input it views, the key), made again on a copy
        self.counted = counted or {}  # counters the body computes from its item (stepped_locals)
        self.outer_items: dict[str, tuple[int, int]] = {}  # (``enclosing_items``)
        self.starts: tuple[int, int] | None = None  # (``accepted_operand``)
        self.ends: tuple[int, int] | None = None
        self.copied = set(site.mutated) | {base for base, _ in views.values()}
        # the compiled body's parameters after the item: a view is made inside it from its
        # base, which it returns after the body's own results (``lift_plan.taking_bases``)
        self.call_params = [p for p in site.params if p not in views and
                            p not in site.scratch and p not in self.counted]
        self.bases = list(dict.fromkeys(base for base, _ in views.values()))
        self.eager = False
        self.refusal: str | None = None  # why the body does not compile on its own (capture)
        self.seconds_per_item = float("inf")  # the compiled body's, measured at capture
        self.loops: dict[Any, ItemLoopRun | None] = {}  # machine-code loops, by argument layouts
        self.may_underflow = False  # the body's kernels, called per item, may underflow
        #: per result, the earlier result or the input it is the very object of (``a = b =
        #: c``, ``v = u``), as capture found (Python then sees one object by two names)
        self.identities: tuple[Any, ...] | None = None
        self.count = len(items)  # items the last compiled run ran (fewer: the body ended it)
        self.body: Any = None  # the body function the lift was given (``_body_eagerly``)
        self.numbers: dict[str, type] = {}  # scalar inputs, and their types (``scalar_inputs``)
        self.carried: frozenset[str] = frozenset()  # of them, Python floats the body rebinds
        self._order = standing_order(outputs, site.mutated)  # (``identities``)
        self._kept = self._kept_results()  # what ``_keep`` binds after a compiled item
        self.capturing = True  # the capture's runs (``first_run``): a version per carried value
        # then sends the loop to NumPy (later calls compile what they must, to the limit)
        self.steady: SteadyCall | None = None  # calls like the last one that ran in machine code

    def call_items(self, arrays: tuple[Any, ...]) -> tuple[tuple[Any, ...], range]:
        """A call's inputs less its stop and start (the last two, where they are inputs), and
        the items they give: a stop at least the fewest its version lifts; any start (none
        where it is past the stop)."""
        items = self.items
        if self.stop_input:
            *arrays, stop = arrays
            items = range(items.start, int(stop), items.step)
        if self.start_input:
            *arrays, begin = arrays
            items = range(int(begin), items.stop, items.step)
        return tuple(arrays), items

    def _values(self, arrays: Any, made: list[Any] | None = None) -> dict[str, Any]:
        """The locals the step starts from: its constants, and its inputs as the body takes
        them (``made``: as a steady call made them, ``steady_loops.Tested``)."""
        values = dict(self.constants)
        values.update(dict.fromkeys(self.site.scratch, UNBOUND))  # the body binds them first
        if made is not None:
            values.update(zip(self.inputs, made))
            arrays = ()
        for name, array in zip(self.inputs, arrays):
            if name in self.numbers:  # a Python float or int, as the body takes it
                values[name] = self.numbers[name](array)
            elif self.eager and name in self.outer_items:  # the enclosing loop's item
                values[name] = int(array)
            elif self.eager and name in self.scalars:  # ``s += v`` rebinds a NumPy scalar:
                # NumPy's scalar math then reports integer overflow, as eager's does
                values[name] = array[()] if isinstance(array, np.ndarray) else array
            elif name in self.copied:  # the body's eager runs update it
                values[name] = np.array(array, copy=True, order="K")
            elif isinstance(array, np.ndarray) and array.ndim:
                view = array.view()
                view.flags.writeable = False
                values[name] = view
            else:
                values[name] = np.asarray(array)
        for name, (base, key) in self.views.items():
            values[name] = values[base][key]
        return values

    def __call__(self, *arrays: Any) -> tuple[Any, ...]:
        steady, tested = self.steady, None
        if steady is not None:
            results = steady(arrays)
            if isinstance(results, Tested):  # handed over after the ``while`` step's test
                tested = results
            elif results is not None:
                return results
        arrays_given = arrays
        arrays, items = self.call_items(arrays)
        values = self._values(arrays, None if tested is None else tested.values)
        given = {name: values[name] for name in self.inputs if name not in self.copied}
        if tested is not None:  # (the test as an input: not run twice, nor its warnings)
            values[self.going_input] = tested.going
        if self.eager:
            self._run_eagerly(values, items)
        else:
            self._run_compiled(values, items)
        self._settle(values, given)
        results = self._results(values, given, items)
        if MACHINE_CODE in values:  # every item ran in the machine-code loop: later calls
            self.steady = SteadyCall.of(self, values[MACHINE_CODE], arrays_given)  # like it
        return results

    def _results(self, values: dict[str, Any], given: dict[str, Any] | None, items: range
                 ) -> tuple[Any, ...]:
        """The step's results from the locals after a run, checked to be the objects capture
        found them to be (``identities``; ``given`` None: known to be, ``SteadyCall``)."""
        if given is not None:
            same = identities([None if name in self.scalars else values[name]
                                for name in self.outputs], given, self._order)
            if self.identities is None:
                self.identities = same
            elif same != self.identities:  # the results would not be what capture made
                raise Unstable("the loop's results are other objects than at capture")
        results = tuple(values[name][()] if name in self.scalars and
                        isinstance(values[name], np.ndarray) and not values[name].ndim
                        else np.float64(values[name]) if name in self.carried
                        else values[name] for name in self.outputs)
        if self.site.item_returned:  # the target after a ``break``: the last item this run ran
            results += (np.int64(values.get(LAST_ITEM, items[-1])),)
        return results

    def _settle(self, values: dict[str, Any], given: dict[str, Any]) -> None:
        """After a run, before its results' identities are checked (``WhileRunner``)."""

    def _run_eagerly(self, values: dict[str, Any], items: range) -> tuple[Any, ...]:
        """The loop as written, in NumPy: its locals bound in ``values``; its results."""
        site, constants = self.site, self.constants
        walked: Any = items
        values.update(count_at(self.counted, self.items, items.start))
        if site.array is not None:  # the rows, as iterating the array gives them
            rows = values[site.array]
            walked = ((i, rows[i]) for i in items) if site.target else (rows[i] for i in items)
        out = self.whole(walked, *[values[p] for p in site.params])
        for name, value in zip(site.returned, out):
            if name == site.target:
                values[LAST_ITEM] = value  # the call's own (not the runner's: threads)
            if name in (site.target, site.row) or name in site.scratch:
                continue
            if name in constants:
                check_stable(name, value, constants[name])
            elif name in self.carried and type(value) is not float:  # (as ``_keep`` checks)
                raise Unstable(f"the loop's local {name!r} is not a Python float after the "
                               "loop (its first items left it one)")
            values[name] = value
        return out

    def eager_seconds_per_item(self, arrays: Any) -> float | None:
        """The body's time per item in NumPy, over a few items from ``arrays`` (copies); for a
        loop a test may end (``break``, a ``while`` loop's), the whole loop's, per item it ran
        compiled."""
        arrays = arrays[:len(self.inputs)]  # not the stop, where it is an input
        if self.site.stops or self.site.kind == "while":
            self.eager = True
            try:
                values = self._values(arrays)
                clock = time.perf_counter()
                self._run_eagerly(values, self.items)
                return (time.perf_counter() - clock) / max(self.count, 1)
            except Exception:
                return None
            finally:
                self.eager = False
        # one to warm NumPy's first calls, then up to eight timed, spread over the items (a
        # lower triangle's first outer items run few inner ones: timed first, NumPy looked
        # 5x cheaper than the compiled run's average and the outer body ran in NumPy)
        items = self.items[::max(len(self.items) // 8, 1)][:9]
        if len(items) < 2:
            return None
        self.eager = True
        try:
            values = self._values(arrays)
            self._run_eagerly(values, items[:1])  # warm: first calls of NumPy's functions
            clock = time.perf_counter()
            self._run_eagerly(values, items[1:])
            return (time.perf_counter() - clock) / (len(items) - 1)
        except Exception:
            return None
        finally:
            self.eager = False

    def _run_compiled(self, values: dict[str, Any], items: range) -> None:
        site, compiled = self.site, self.compiled
        kept = self._kept
        flag = len(site.returned) + len(self.bases)  # a body that ends the loop: goes on?
        entry = None  # the body's machine code, which checks the layouts itself
        direct: dict[Any, Any] = {}  # else: the layouts of the arrays -> the version's run
        # the remaining items in machine code (``ItemLoopRun``) once steady: from the first, when
        # an earlier call made one for these layouts
        looped = self.loops.get(layouts_of(values, self.call_params)) if items else None
        tries = LOOP_TRIES
        clock, t, stopped = None, 0, -1
        # underflow is ignored inside (a body's kernels may underflow unseen: heeding it would
        # send every item to NumPy); whether an item may have underflowed is reported after
        underflowed = False
        if looped is not None:  # the common call: every item in machine code, nothing else
            ran = looped.run(values, self._args(values, items[0]), items, 0)
            exited = False
            if ran is not None:
                t, underflowed, exited = ran
                stopped = t
                self._views_again(values)
            else:
                looped = None
            if t == len(items) or exited:
                self._ran(values, t, underflowed, items)
                values[MACHINE_CODE] = looped
                return
        with loop_index_argument(ITEM, *self.scalars, *self.outer_items), \
                np.errstate(under="ignore"), not_watching():
            if t == 0 and len(items) > 2 and not compiled.versions():
                self._compile_at(values, items[len(items) // 2])
            while t < len(items):
                args = self._args(values, items[t])
                if looped is not None and t != stopped:
                    ran = looped.run(values, args, items, t)
                    if ran is None:  # the arguments changed layout
                        looped = None
                    else:
                        ran, under, exited = ran
                        underflowed = underflowed or under
                        t += ran
                        self._views_again(values)
                        if t == len(items) or exited:
                            break
                        # item t stopped it (an event, a check): it goes through the dispatcher
                        args = self._args(values, items[t])
                out = None
                if entry is not None:
                    run, layout = entry, None
                else:
                    layout = tuple((a.dtype, a.shape, a.strides) for a in args
                                   if type(a) is np.ndarray)
                    run = direct.get(layout)
                try:
                    if run is not None:
                        out = run(*args)
                    if out is None:
                        out = compiled(*args)
                    if self.carried and self.capturing and _per_value(compiled) > 2:
                        raise Unstable("the body decides something from a carried float")
                except ExternResultMismatch:  # a check failed, an event: nothing written yet
                    goes = self._item_eagerly(values, items[t])  # NumPy's slice, error, warning
                    t += 1
                    if not goes:
                        break
                    continue
                if entry is None and layout not in direct:
                        run, checks, version = compiled.direct(*args)
                        if checks:
                            entry = run
                        # a carried float changes at every item: a version exact in it (the
                        # first item's) must not run the next, which the dispatcher keys
                        direct[layout] = run if checks or not self.carried else None
                        self.may_underflow |= version is None or may_underflow(version)
                underflowed = underflowed or self.may_underflow
                self._keep(out, kept, values)
                self._views_again(values)
                t += 1
                if site.stops and not out[flag]:  # the body ended the loop (``break``)
                    break
                if clock is None:  # the first item compiles: timed from the second
                    clock = time.perf_counter()
                if looped is None and tries and t < len(items):
                    tries -= 1
                    building = time.perf_counter()
                    looped = self._item_loop(values, items[t])
                    clock += time.perf_counter() - building  # not the items' time
        if underflowed:  # the call declines where NumPy's error state heeds underflow
            errstate.report(UNDERFLOW)
        if t > 1 and clock is not None and self.seconds_per_item == float("inf"):
            self.seconds_per_item = (time.perf_counter() - clock) / (t - 1)
        self.count = t
        if t:
            values[LAST_ITEM] = items[t - 1]

    def _ran(self, values: dict[str, Any], count: int, underflowed: bool, items: range
             ) -> None:
        """After a run in the machine-code loop of the first ``count`` of ``items``."""
        if underflowed:  # the call declines where NumPy's error state heeds underflow
            errstate.report(UNDERFLOW)
        self.count, values[LAST_ITEM] = count, items[count - 1]

    def _kept_results(self) -> list[tuple[int, str, Any]]:
        """(position in the body's results, name, the constant it must stay) of what a
        compiled item's results bind: the locals it returns, then the bases of views."""
        site = self.site
        return [(k, name, self.constants.get(name, NO_CONSTANT))
                for k, name in enumerate(site.returned)
                if name not in (site.target, site.row) and name not in site.scratch and
                name not in self.counted] + \
            [(len(site.returned) + j, base, NO_CONSTANT) for j, base in enumerate(self.bases)]

    def _compile_at(self, values: dict[str, Any], item: int) -> None:
        """Compile the body at a typical item (the middle one) before the first: a window that
        starts before the array (``x[i - 4:i + 1]``, empty at ``i = 0``) traced at the first
        item makes a version every later item declines (its slice another length), and the
        loop then ran in NumPy. The run's results are dropped (the body returns what it
        updates; nothing is written into its arguments); where it declines or raises, the
        items in order decide as before."""
        try:
            self.compiled(*self._args(values, item))
        except Exception:  # the first item's compile says it again
            pass

    def _item_eagerly(self, values: dict[str, Any], item: int) -> bool:
        """One item the compiled body declined (a slice at the item that NumPy clips, an index
        out of bounds, a floating-point event) run by the loop's own code, as eagerly; carried
        NumPy scalars go in as scalars and come back as the body's 0-d buffers. Whether the
        loop goes on after it (a body that ends the loop at a test runs as its body function,
        which says)."""
        for name in self.scalars:
            if isinstance(values.get(name), np.ndarray):
                values[name] = values[name][()]
        given = {name: values[name] for name in self.outer_items}
        values.update((name, int(value)) for name, value in given.items())
        goes = True
        if self.site.stops:
            goes = bool(self._body_eagerly(values, item))
        else:
            self._run_eagerly(values, range(item, item + 1))
        for name in self.scalars:
            if isinstance(values.get(name), np.generic):
                values[name] = np.asarray(values[name])
        values.update(given)
        return goes

    def _body_eagerly(self, values: dict[str, Any], item: int) -> Any:
        """The body function (of the item's index, for a loop over rows) on ``item`` as
        eagerly, its results bound; whether the loop goes on (what a body ending the loop at a
        test returns after them; True for another)."""
        site = self.site
        values.update(count_at(self.counted, self.items, item))
        out = self.body(item, *[values.get(p, UNBOUND) for p in site.params])
        for name, value in zip(site.returned, out):
            if name in (site.target, site.row) or name in site.scratch:
                continue
            if name in self.constants:
                check_stable(name, value, self.constants[name])
            values[name] = value
        return out[len(site.returned)] if site.stops else True

    def _keep(self, out: tuple[Any, ...], kept: list[tuple[int, str, Any]],
              values: dict[str, Any]) -> None:
        """Bind the compiled body's results ``kept`` (position, name, the constant it must
        stay) in ``values``; a NumPy scalar as the 0-d array the body takes."""
        for k, name, constant in kept:
            value = out[k]
            if constant is not NO_CONSTANT:
                check_stable(name, value, constant)
                continue
            if name in self.carried and type(value) is not float:
                raise Unstable(f"the loop's local {name!r} is not a Python float after an "
                                "iteration")
            values[name] = np.asarray(value) if isinstance(value, np.generic) else value

    def _args(self, values: dict[str, Any], item: int) -> tuple[Any, ...]:
        """The compiled body's arguments for ``item``: the item as a 0-d int64, then the
        locals it takes."""
        return (np.array(item, dtype=np.int64), *[values[p] for p in self.call_params])

    def _views_again(self, values: dict[str, Any]) -> None:
        """Each view of another input, made again from that input's new value."""
        for name, (base, key) in self.views.items():
            values[name] = values[base][key]

    def _item_loop(self, values: dict[str, Any], item: int) -> ItemLoopRun | None:
        """The machine-code loop for the arguments of ``item``, made once per layout of them."""
        layout = layouts_of(values, self.call_params)
        if layout not in self.loops or getattr(self.loops[layout], "stale", False):
            args = self._args(values, item)
            if self.compiled.direct(*args)[2] is None:  # no version for these yet (a carried
                return None  # float's generic one comes at the second item): tried again
            exit = len(self.site.returned) + len(self.bases) if self.site.stops else None
            self.loops[layout] = ItemLoopRun.of(self, args, exit)
        return self.loops[layout]


def layouts_of(values: dict[str, Any], params: list[str]) -> tuple[Any, ...]:
    """What a machine-code loop is made for: the layouts of the body's arguments (the rest, a
    constant of the body, is the same from item to item: ``check_stable``)."""
    return tuple((a.dtype, a.shape, a.strides) if type(a) is np.ndarray else type(a)
                 for a in (values[p] for p in params))


LOOP_TRIES = 3  # items after which the layouts are expected steady


NO_CONSTANT = object()  # no constant
#: a call's ``values`` entry, where every item ran in the machine-code loop: that loop
#: (``SteadyCall``)
MACHINE_CODE = "__stax_machine_code"


def may_underflow(version: Any) -> bool:
    artifact = version.artifact
    return artifact is None or artifact.events is not None or artifact.underflow_unseen


def check_stable(name: str, value: Any, constant: Any) -> None:
    """A Python value the body binds must come out as it went in: it is a constant of the
    compiled program (a counter, a flag set on the data: the loop unrolls, or the call runs
    eagerly)."""
    if type(value) is not type(constant) or value != constant:
        raise Unstable(f"the loop's local {name!r} changes from one iteration to the next")


def _per_value(compiled: Any) -> int:
    """The body's versions other than those per outcome of comparisons of its scalars
    (``if t > t_switch``: two such, whatever the float carried)."""
    return sum(not getattr(v.generic, "predicates", None) for v in compiled.versions())


install_lifter(lift)
