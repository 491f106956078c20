"""Lifted ``while`` loops: a loop whose test reads the data runs as one step of the compiled
program, however many iterations a call takes (``stax.trace.while_loops``).

The body and the loop's next test are compiled together, once (``_body_then_test``: the body's
results and then the test on the locals as the body left them, a 0-d bool); the step
(``WhileRunner``) tests the locals before the loop in NumPy, then runs iterations until the
test is false: through the dispatcher for the first ones, then in one machine-code loop
(``stax.codegen.cpu.item_loop`` with an ``exit`` result: the loop returns after the iteration
whose test is false), in chunks, so that a loop that never ends can still be interrupted
(Ctrl-C) between them. An iteration the compiled body declines (a floating-point event NumPy
reports, an index out of bounds) runs in NumPy by the body's own code, and the loop goes on.
Where NumPy runs the whole loop faster than the compiled body (measured at capture), the step
runs the loop as written. Everything else is as for a lifted ``for`` loop
(``lifted_loops``): the same plan of inputs and results, the same checks at run time.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import numpy as np

from stax.codegen import ExternResultMismatch, errstate
from stax.codegen.cpu.fpevents import UNDERFLOW
from stax.trace import Proxy
from stax.trace.isolation import not_watching
from stax.trace.loop_index import loop_index_argument
from stax.trace.loops import UNBOUND, LoopSite
from stax.trace.source import traced_value
from stax.trace.traced_scalars import TracedScalar
from stax.trace.while_loops import goes_on_after, install_while_lifter

from . import config, logs
from .api import CompiledFunction
from .item_loop_runs import FIRST_CHUNK, LAST_CHUNK, ItemLoopRun
from .item_uses import ITEM, check_counter_uses, check_item_uses
from .lift_plan import named_parameters, plan_step, scalar_inputs
from .lifted_first_runs import first_run
from .lifted_loops import (
    LOOP_TRIES,
    MACHINE_CODE,
    NO_CONSTANT,
    Runner,
    layouts_of,
    may_underflow,
)
from .lifted_steps import record_step, unrolls

#: the step's input saying whether the loop goes on after an iteration traced as written, and
#: the call's count of iterations (its ``values``)
GOING, ITERATIONS = "__stax_going", "__stax_iterations"


def lift_while(tracer: Any, site: LoopSite, test: Any, body: Any, whole: Any,
               state: dict[str, Any], going: Any = None, elsewhere: Any = ()
               ) -> dict[str, Any] | None:
    """The locals after running the loop from ``state`` as one recorded step, or None (the
    reason logged under ``STAX_LOGS=loops``) when the loop is captured as written. ``going``:
    after an iteration traced as written, whether the loop goes on (its ``break`` test and
    its test, traced): an input of the step, which runs no iteration where it is false.
    ``elsewhere``: the traced values the function's other locals hold (``_private``)."""
    plan = plan_step(tracer, site, state)
    if isinstance(plan, str):
        return unrolls(site, plan)
    inputs, constants, outputs, views = plan
    if going is not None:
        inputs, state = [*inputs, GOING], {**state, GOING: going}
    if views:
        return unrolls(site, f"the body updates {', '.join(views)}, a view of another local, "
                              "in place")
    compiled = CompiledFunction(_body_then_test(body, test, site), strict_native=True)
    compiled.capture_check = functools.partial(_checked, counters=site.counters)
    compiled.donates_arguments = True  # it returns what it updates: no copy back per iteration
    compiled.declines_to_caller = True  # a call it declines: that iteration runs in NumPy
    start = [state[n].value for n in inputs]
    runner = WhileRunner(compiled, whole, site, range(1), inputs, constants, outputs, False,
                          scalars={n for n, v in zip(inputs, start) if isinstance(v, np.generic) and
                              not isinstance(state[n], TracedScalar)},
                          views={})
    runner.body, runner.test = body, test
    runner.numbers = scalar_inputs(state, inputs)
    runner.private = {n for n in outputs if _private(tracer, state, n, elsewhere)}
    with traced_value():  # NumPy's reports here are the recorded step's (not a constant's)
        first = first_run(runner, start)
    runner.capturing = False
    if isinstance(first, str):
        return unrolls(site, first)
    results, how = first
    after = record_step(tracer, runner, state, results)
    logs.emit("loops", config.current().logs,
              f"while loop at {site.source}: lifted into one step ({how}; {len(runner.items)} "
              f"iterations at capture; inputs {', '.join(inputs)}; results {', '.join(outputs)})")
    return after


def _private(tracer: Any, state: dict[str, Any], name: str, elsewhere: Any = ()) -> bool:
    """Whether the value of ``name`` before the loop is seen by nothing but that local: no
    argument, no view of another array or viewed by one, bound to no other local of the loop
    or of the function (``elsewhere``)."""
    value = state[name]
    return isinstance(value, Proxy) and isinstance(value.value, np.ndarray) and \
        id(value) not in tracer.arguments and value.view_of is None and \
        tracer.shared(value) is None and \
        not any(other is value for key, other in state.items() if key != name) and \
        not any(other is value for other in elsewhere)


def _body_then_test(body: Any, test: Any, site: LoopSite) -> Any:
    """One iteration as one compiled function: of an item (unused) and the locals the body
    takes, the body's results (None for scratch) and then the loop's test on the locals after
    it."""
    params, returned, scratch = site.params, site.returned, site.scratch
    call_params = [p for p in params if p not in scratch]

    def body_then_test(item: Any, *args: Any) -> tuple[Any, ...]:
        values = dict(zip(call_params, args))
        values.update(dict.fromkeys(scratch, UNBOUND))
        out = body(item, *[values[p] for p in params])
        values.update(zip(returned, out))
        goes = out[len(returned)] if site.stops else True  # ``break`` at a test
        going = goes_on_after(goes, test, [values[p] for p in params])
        return (*[None if name in scratch else v for name, v in zip(returned, out)], going)

    body_then_test.__name__ = body_then_test.__qualname__ = getattr(body, "__name__", "body")
    body_then_test.__signature__ = named_parameters(call_params)  # type: ignore[attr-defined]
    return body_then_test


def _checked(capture: Any, counters: frozenset[str]) -> None:
    check_item_uses(capture, items=range(1))
    check_counter_uses(capture, counters)


class WhileRunner(Runner):
    """The lifted ``while`` step: ``Runner``'s copies, checks and results, with iterations that
    run while the test holds. ``items`` is the count of iterations the last run took (the
    capture's timing divides by it)."""

    test: Any = None  # the loop's test as written (``__stax_test_N``)
    going_input = GOING
    #: results whose value before the loop nothing but its own local sees (``lift_while``)
    private: frozenset[str] | set[str] = frozenset()

    def _settle(self, values: dict[str, Any], given: dict[str, Any]) -> None:
        """A call that ran no iteration leaves each local the object it was before the loop,
        where capture (which ran some) had new ones: a local that nothing else sees gets a
        copy, which no one can tell from it; another stays that object, and the call runs
        eagerly (the identity check that follows)."""
        if values.get(ITERATIONS, 1):
            return
        for name in self.private:
            if any(values.get(name) is v for v in given.values()):
                values[name] = np.array(values[name], copy=True, order="K")

    def _kept_results(self) -> list[tuple[int, str, Any]]:
        """Every local the body returns (a ``while`` body has no item; views are refused)."""
        return [(k, name, self.constants.get(name, NO_CONSTANT))
                for k, name in enumerate(self.site.returned) if name not in self.site.scratch]

    def _tested(self, values: dict[str, Any]) -> bool:
        return bool(self.test(*[values.get(p, UNBOUND) for p in self.site.params]))

    def _iteration_eagerly(self, values: dict[str, Any]) -> bool:
        """One iteration the compiled body declined, run by the body's own code (NumPy's
        warnings and errors as eagerly), then the test: whether the loop goes on."""
        site = self.site
        for name in self.scalars:
            if isinstance(values.get(name), np.ndarray):
                values[name] = values[name][()]
        self._counters_as(values, int)  # Python ints, as the code was written for
        goes = self._body_eagerly(values, None)
        going = bool(goes_on_after(goes, self.test, [values.get(p, UNBOUND)
                                                     for p in site.params]))
        self._counters_as(values, np.int64)
        for name in self.scalars:
            if isinstance(values.get(name), np.generic):
                values[name] = np.asarray(values[name])
        return going

    def _counters_as(self, values: dict[str, Any], kind: type) -> None:
        """The loop's counters (``stax.trace.loop_counters``: int64 in the compiled step) as
        ``kind``: Python ints where NumPy runs the code as written (``it <= np.float16(lim)``
        compares otherwise), int64 scalars again for the step."""
        for name in self.site.counters:
            if isinstance(values.get(name), (int, np.integer, np.ndarray)):
                values[name] = kind(values[name])

    def _run_compiled(self, values: dict[str, Any], items: range = range(0)) -> None:
        site, compiled = self.site, self.compiled  # its items: as many as the test lets run
        kept = self._kept
        flag = len(site.returned)  # the test's place among the compiled step's results
        going = bool(values.pop(GOING)) if GOING in values else self._tested(values)
        count, chunk, tries = 0, FIRST_CHUNK, LOOP_TRIES
        looped = self.loops.get(layouts_of(values, self.call_params))
        direct: dict[Any, Any] = {}
        clock, underflowed, stopped = None, False, False
        while going and looped is not None:  # the common call: machine code, nothing else
            ran = looped.run(values, self._args(values, 0), range(chunk), 0)
            if ran is None:  # the arguments changed layout
                looped = None
                break
            count, underflowed = count + ran[0], underflowed or ran[1]
            going = not ran[2]  # (a false test ended the loop)
            if going and ran[0] < chunk:
                stopped = True  # an iteration stopped it (an event, a check): the
                break  # dispatcher's, below
            chunk = min(chunk * 4, LAST_CHUNK)
        if not going:  # (no context to enter for iterations through the dispatcher)
            if looped is not None and count:
                values[MACHINE_CODE] = looped  # every iteration in machine code
            return self._ran(values, count, underflowed)
        with loop_index_argument(ITEM, *self.scalars), np.errstate(under="ignore"), \
                not_watching():
            while going:
                if looped is not None and not stopped:
                    ran = looped.run(values, self._args(values, 0), range(chunk), 0)
                    if ran is None:  # the arguments changed layout
                        looped = None
                    else:
                        count += ran[0]
                        underflowed = underflowed or ran[1]
                        if ran[2]:  # a false test ended the loop
                            break
                        if ran[0] == chunk:
                            chunk = min(chunk * 4, LAST_CHUNK)
                            continue
                        # an iteration stopped it (an event, a check): the dispatcher's
                args = self._args(values, 0)
                layout = tuple((a.dtype, a.shape, a.strides) for a in args if type(a) is np.ndarray)
                run = direct.get(layout)
                try:
                    out = run(*args) if run is not None else None
                    if out is None:
                        out = compiled(*args)
                except ExternResultMismatch:  # a check failed, an event: nothing written yet
                    going, stopped = self._iteration_eagerly(values), False
                    count += 1
                    continue
                if layout not in direct:
                    run, _, version = compiled.direct(*args)
                    direct[layout] = run
                    self.may_underflow |= version is None or may_underflow(version)
                underflowed = underflowed or self.may_underflow
                self._keep(out, kept, values)
                going, stopped = bool(out[flag]), False
                count += 1
                if clock is None:  # the first iteration compiles: timed from the second
                    clock = time.perf_counter()
                if looped is None and tries and going:
                    tries -= 1
                    building = time.perf_counter()
                    looped = self._while_loop(values)
                    clock += time.perf_counter() - building  # not the iterations' time
        if count > 1 and clock is not None and self.seconds_per_item == float("inf"):
            self.seconds_per_item = (time.perf_counter() - clock) / (count - 1)
        self._ran(values, count, underflowed)

    def _ran(self, values: dict[str, Any], count: int, underflowed: bool,
             items: range = range(0)) -> None:
        if underflowed:  # the call declines where NumPy's error state heeds underflow
            errstate.report(UNDERFLOW)
        self.items = range(count)
        self.count = values[ITERATIONS] = count  # the call's own (``_settle``; threads)

    def _run_eagerly(self, values: dict[str, Any], items: range) -> tuple[Any, ...]:
        if GOING in values and not bool(values.pop(GOING)):
            values[ITERATIONS] = 0  # the iteration before the step ended the loop
            return ()
        values.pop(GOING, None)
        self._counters_as(values, int)
        out = super()._run_eagerly(values, items)
        self._counters_as(values, np.int64)
        values[ITERATIONS] = out[-1]  # the whole loop's count (``_settle``: none ran)
        return out

    def _while_loop(self, values: dict[str, Any]) -> ItemLoopRun | None:
        """The machine-code loop for the current layouts, made once per layout."""
        layout = layouts_of(values, self.call_params)
        if layout not in self.loops or getattr(self.loops[layout], "stale", False):
            self.loops[layout] = ItemLoopRun.of(self, self._args(values, 0),
                                              exit=len(self.site.returned))
        return self.loops[layout]


install_while_lifter(lift_while)
