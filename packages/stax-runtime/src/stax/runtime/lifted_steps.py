"""A lifted loop's step as one capture node (``stax.functional.lifted_loop``), and the locals
after it (``record_step``); the log line of a loop that unrolls instead (``unrolls``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stax.ir import LIFTED_LOOP, Opcode, register_lifted_loop
from stax.trace.loops import UNBOUND, LoopSite
from stax.trace.proxy import Proxy

from . import config, logs

if TYPE_CHECKING:
    from stax.trace.traced_scalars import TracedScalar

    from .lifted_loops import Runner


def record_step(tracer: Any, runner: Runner, state: dict[str, Any], results: tuple[Any, ...],
                stop: TracedScalar | None = None, begin: Any = None) -> dict[str, Any]:
    """The step recorded as one capture node (the loop's stop its last input, where it is
    traced), and the locals after it (the loop's target and row aside: the caller binds them)."""
    site, inputs, constants, outputs = runner.site, runner.inputs, runner.constants, runner.outputs
    key = register_lifted_loop(runner)
    recorded = tracer.record(Opcode.CALL_FUNCTION, LIFTED_LOOP,
                             (*(state[n] for n in inputs), *(() if begin is None else (begin,)),
                              *(() if stop is None else (stop,))),
                             {"loop": key}, lambda *arrays, loop: results)
    if site.item_returned:
        runner.recorded_item = recorded[-1]
    after = dict(state)
    for name in site.assigned:
        if name in constants and name not in (site.target, site.row):
            after[name] = constants[name]  # the same after every iteration (Runner checks)
    for name in site.scratch:  # nothing after the loop reads it: left as it was
        after[name] = UNBOUND
    # the results that stand for themselves first, then the names of the same objects
    for name, value, same in sorted(zip(outputs, recorded, runner.identities),
                                    key=lambda r: isinstance(r[2], int)):
        # updated in place (x[k] = v, x += v): the same object, which every other name of it
        # sees (an argument: written back; a view: its base too). Not a name each item binds
        # anew before updating it (``u = u * 1.0; u[1:-1] += ...``, ``LoopSite.fresh``): the
        # object before the loop is never updated (it was written back into an argument)
        if name in site.mutated and not isinstance(same, int) and name not in runner.carried \
                and name not in site.fresh and isinstance(state[name], Proxy):
            state[name]._update_in_place("a lifted loop", lambda value=value: value)
            after[name] = state[name]
        elif same is not None:  # one object by two names (``a = b = c``, ``v = u``)
            after[name] = after[outputs[same]] if isinstance(same, int) else state[same]
        else:
            after[name] = value
        if name in runner.carried:  # a traced 0-d float64 that only a returned result reads
            tracer.__dict__.setdefault("carried_floats", set()).add(id(after[name]))
    return after


def unrolls(site: LoopSite, why: str) -> None:
    logs.emit("loops", config.current().logs, f"loop at {site.source} unrolls: {why}")
    return None
