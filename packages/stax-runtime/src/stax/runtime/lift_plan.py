"""What a lifted loop's step takes and returns (``lifted_loops.lift``), or why the loop unrolls:
from the locals after the loop's traced first item, its traced inputs, the Python values that
are constants of the compiled body, the arrays it returns, and the locals that are views of
another input."""

from __future__ import annotations

import dis
import inspect
import types
from typing import Any

import numpy as np

from stax.trace import Proxy
from stax.trace.loop_body import TYPE_QUERY
from stax.trace.loops import ITEM_ARGUMENT, UNBOUND, LoopSite
from stax.trace.reach import code_names
from stax.trace.selection_counts import count_symbols
from stax.trace.traced_scalars import TracedScalar
from stax.trace.traced_sizes import TracedSize, read_number

#: Python values a body may hold as constants of its compiled program
_CONSTANTS = (bool, int, float, complex, str, type(None), np.generic)


def plan_step(tracer: Any, site: LoopSite, state: dict[str, Any],
              counted: frozenset[str] | dict[str, Any] = frozenset()
              ) -> tuple[list[str], dict[str, Any], list[str], dict[str, Any]] | str:
    """(traced inputs, constants, results, views) of the lifted step, or why the loop unrolls.
    ``views``: a local the body updates in place that is a view of another input (``u =
    U[1:-1, 1:-1]; u += ...``), by name: (the other's name, the key); such a loop runs in NumPy,
    on a copy of the other and the same view of it. ``counted``: counters the body computes
    from its item (``stepped_locals``), neither inputs nor constants."""
    if site.target is None and site.array is None and site.kind == "for":
        return "its target is not a plain name"
    if site.effect is not None and site.effect.startswith(TYPE_QUERY):
        return f"{site.effect} (an int64 in a compiled body, a Python int eagerly)"
    if site.effect is not None:  # compiled, it would not happen; tried, it would happen twice
        return f"its body calls {site.effect}, an effect each iteration has once"
    if site.array is not None and site.array in site.rebound:
        return f"the body binds {site.array!r}, whose rows it iterates over, anew"
    if site.target_rebound:
        return f"the body binds the loop's variable {site.target or site.row!r} too"
    for name in (*site.params, *site.assigned):
        value = state.get(name)
        if isinstance(value, TracedSize) and count_symbols(value.expression):
            # the lifted step would not carry it out: after the loop it was the first item's
            return f"the local {name!r} holds the length of a selection the body made"
    inputs, constants = [], {}
    for name in site.params:
        value = state.get(name, UNBOUND)
        if name in counted:
            continue
        if name in (site.target, site.row):
            constants[name] = 0  # bound to the item (its row) before the body reads it
        elif name in site.scratch:
            continue  # bound before read, read nowhere else: neither taken nor returned
        elif isinstance(value, Proxy) and value.tracer is tracer:
            inputs.append(name)
        elif carried_float(site, name, value):
            inputs.append(name)  # a Python float the loop carries (``t += dt``): an input and
            # a result of the step, which a generic version of the body takes at run time
        elif carried_scalar(site, name, value):
            inputs.append(name)  # a NumPy scalar the loop rebinds (``t += dt``, ``dt`` an
            # ``np.float32`` argument): an input and a result, a 0-d buffer in the body
        elif isinstance(value, TracedScalar) and value.expression is not None and \
                name not in site.assigned and name not in site.mutated:
            inputs.append(name)  # a scalar argument the body reads (or a number computed from
            # them): an input, so that a generic version takes its value at run time
        elif isinstance(value, _CONSTANTS):
            # bound by the body too (an inner loop's target): it must come out of each
            # iteration as it went in (``_Runner`` checks), a constant of the compiled body
            # (a size or scalar argument: its value, which the version is then exact in)
            constants[name] = read_number(value)
        elif value is UNBOUND:
            return f"the local {name!r} has no value after the first iteration"
        elif isinstance(value, types.FunctionType):
            plain = plain_function(value, tracer)
            if isinstance(plain, str):
                return f"the local {name!r} holds a function that {plain}"
            constants[name] = plain  # ``def f(s): ...`` called by an RK4 step
        else:
            return f"the local {name!r} holds a {type(value).__name__}, not a traced array"
    views: dict[str, Any] = {}
    for name in site.mutated:
        if name == site.row or name in counted:  # the item's row, a view of the array, made
            continue  # at each item; a counter, computed from the item
        value = state[name]
        if (isinstance(value, Proxy) and isinstance(value.value, np.generic)) or \
                carried_float(site, name, value) or carried_scalar(site, name, value):
            continue  # ``total += x[i]`` on a scalar binds a new one, as ``total = total + ...``
        if name in site.scratch:  # ``lap = np.zeros_like(u); lap[1:-1] = ...``
            if name in site.fresh:  # bound anew before each update (``u_next =
                continue  # np.empty_like(u)``), whatever it is after (``u = u_next``): a bare
                # name bound there (``lap = u``) is an input, read-only in the body: refused
            if isinstance(value, Proxy) and isinstance(value.value, np.ndarray) and \
                    value.view_of is None and tracer.shared(value) is None and \
                    not any(state.get(other) is value for other in site.params if other != name):
                continue  # a new array each item, updated within it
            return f"the body updates {name!r} in place, bound to an array it did not make"
        if name in site.fresh:
            continue  # ``v = v * 0.95 + I[t]; v[s] = 0.0``: the item's own array is updated
        if name in site.rebound and not _own_buffer(tracer, site, state, name):
            return f"the body both updates {name!r} in place and binds it anew"
        if isinstance(read_value(value), (int, float, complex)):
            return (f"the body steps {name!r}, a Python number (a counter the item gives is "
                    f"an int stepped by int literals in the body's own block)")
        if not isinstance(value, Proxy) or not isinstance(value.value, np.ndarray):
            return f"the body updates {name!r} in place, which is not a traced array"
        base = _viewed_input(tracer, site, state, inputs, value)
        if base is not None:
            views[name] = (base, value.view_of[1])
        elif value.view_of is not None or tracer.shared(value) is not None:
            return f"the body updates {name!r} in place, and another value sees that array"
        for other in inputs:  # (an input that is a number, a carried float: no memory)
            if other != name and other != views.get(name, (None,))[0] and \
                    isinstance(state[other], Proxy) and (state[other] is value or
                                                          np.may_share_memory(
                        np.asarray(state[other].value), value.value)):
                return f"{name!r}, updated in place, shares memory with {other!r}"
    outputs = [n for n in inputs if n in site.assigned or n in site.mutated]
    if not outputs:
        return "the body binds and updates no traced array"
    return inputs, constants, outputs, views


def _own_buffer(tracer: Any, site: LoopSite, state: dict[str, Any], name: str) -> bool:
    """Whether ``name``, updated in place and bound anew by the body (``a, b = b, a`` after
    ``b[1:-1] = f(a)``: buffers swapped), and every other array the body updates or swaps,
    is an array of the function's own that only these names reach: nothing else in the source
    keeps them (``LoopSite.own_buffers``), and no argument, live view or second name of the
    loop's is one. The step then leaves each array holding the final value of the name it had
    before the loop, which only the arrays' identities tell from eager's."""
    arrays = [n for n in site.rebound if isinstance(state.get(n), Proxy) and
              isinstance(state[n].value, np.ndarray)]  # (what the swapped names held)
    for other in dict.fromkeys([name, *site.mutated, *arrays]):
        value = state.get(other)
        if other not in site.own_buffers or not (
                isinstance(value, Proxy) and isinstance(value.value, np.ndarray) and
                value.view_of is None and id(value) not in tracer.arguments and
                tracer.shared(value) is None) or \
                sum(state.get(n) is value for n in site.params) > 1:
            return False
    return True


def scalar_inputs(state: dict[str, Any], inputs: list[str]) -> dict[str, type]:
    """The step's inputs that are scalar arguments (or numbers computed from them), with the
    Python or NumPy type the body takes each as: a generic version passes a 0-d array, which the
    runner converts back (``Runner._values``)."""
    return {n: type(read_value(state[n])) for n in inputs
            if (isinstance(state[n], TracedScalar) and not isinstance(state[n].value, np.generic))
            or type(state[n]) is float}


def carried_scalar(site: LoopSite, name: str, value: Any) -> bool:
    """Whether ``name`` is a NumPy scalar computed from scalar arguments alone (a followed
    number, or one Python computed from keyed values: an ``np.int16`` or ``np.float16`` step)
    that the body binds anew: carried as a 0-d buffer, as a traced NumPy scalar is."""
    return not isinstance(value, Proxy) and isinstance(read_value(value), np.generic) and \
        (name in site.assigned or name in site.mutated)


def carried_float(site: LoopSite, name: str, value: Any) -> bool:
    """Whether ``name`` is a float the loop carries: one the source allows
    (``loop_counters.carried_floats``) holding a Python float (or a scalar argument's)."""
    return name in site.floats and type(read_value(value)) is float


def uncarried_group(site: LoopSite, state: dict[str, Any]) -> str | None:
    """Why the loop cannot lift where a returned element of arithmetic on its floats
    (``return out, s + i``: ``LoopSite.float_groups``) reads a name that is not a Python float
    it carries (an ``np.float32``: lifted, the element would be a float64), else None."""
    for group in site.float_groups:
        others = sorted(n for n in group if not carried_float(site, n, state.get(n)))
        if others:
            return f"a returned expression of its floats reads {others[0]!r}, not a Python " \
                "float the loop carries"
    return None


def read_value(value: Any) -> Any:
    """A followed scalar's value (not read: no key entry), else ``value``."""
    return value.value if isinstance(value, TracedScalar) else value


def _viewed_input(tracer: Any, site: LoopSite, state: dict[str, Any], inputs: list[str],
                  value: Proxy) -> str | None:
    """The input ``value`` is a view of (by a key of constants), when nothing else views that
    input and the body neither binds nor updates it by its own name."""
    if value.view_of is None:
        return None
    base, key = value.view_of
    if base.view_of is not None or any(isinstance(k, Proxy) for k in
                                       (key if isinstance(key, tuple) else (key,))):
        return None
    name = next((n for n in inputs if state[n] is base), None)
    if name is None or name in site.mutated or name in site.assigned or \
            tracer.shared(base, (value.value,)) is not None:
        return None
    return name


#: what a local function's closure may hold besides numbers and such functions: nothing that
#: could hold an array (a ``functools.partial``, a list) — it would be frozen into the body
_PLAIN_CELLS = (*_CONSTANTS, types.ModuleType, type, types.BuiltinFunctionType, np.ufunc)


def plain_function(fn: types.FunctionType, tracer: Any, depth: int = 0) -> Any:
    """``fn`` (a local function the body calls: ``def f(s): return sigma * s``) as a constant of
    the compiled body, or what keeps it from being one. Its closure may hold numbers (a scalar
    argument's value, which the version is then exact in: the clone's cell holds the number, not
    the outer capture's traced scalar) and such functions; no traced array, and no array or
    other object among the globals its code names (those would be frozen into the body)."""
    if depth > 8:
        return "nests functions too deeply"
    code = fn.__code__
    if _writes_cells(code):
        return "assigns a variable of the function around it (nonlocal)"
    if any(not isinstance(d, _PLAIN_CELLS) for d in (*(fn.__defaults__ or ()),
                                                     *(fn.__kwdefaults__ or {}).values())):
        return "has a default value that is not a number"
    for name in code_names(code):
        value = fn.__globals__.get(name, None)
        if isinstance(value, (np.ndarray, Proxy)):
            return f"reads the global array {name!r}"
    cells = []
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:
            return f"reads {name!r}, which has no value yet"
        if isinstance(value, TracedScalar):
            value = read_number(value)
        elif isinstance(value, types.FunctionType):
            value = plain_function(value, tracer, depth + 1)
            if isinstance(value, str):
                return value
        elif not isinstance(value, _PLAIN_CELLS) or isinstance(value, Proxy):
            return f"reads {name!r}, a {type(value).__name__} from the function around it"
        cells.append(types.CellType(value))
    clone = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, tuple(cells))
    clone.__kwdefaults__ = fn.__kwdefaults__
    return clone


def _writes_cells(code: types.CodeType) -> bool:
    """Whether ``code`` (or code nested in it) stores into a closure cell it reads from the
    function around it (``nonlocal count; count += 1``): a clone's cells would keep those."""
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("STORE_DEREF", "DELETE_DEREF") and \
                instruction.argval in code.co_freevars:
            return True
    return any(_writes_cells(c) for c in code.co_consts if isinstance(c, types.CodeType))


def taking_bases(body: Any, params: list[str], returned: tuple[str, ...],
                  views: dict[str, Any], scratch: frozenset[str]) -> Any:
    """``body`` as a function of the item and the parameters that are neither views of another
    input nor scratch: it makes each such view from its base (so an update through it is an
    update of the base, as in the loop) and returns the bases after the body's results; a
    scratch local (bound before read, read nowhere after the loop) goes in unbound and does
    not come out (so a block the body slices out is never copied into a result)."""
    call_params = [p for p in params if p not in views and p not in scratch]
    bases = list(dict.fromkeys(base for base, _ in views.values()))

    def taking_bases(item: Any, *args: Any) -> tuple[Any, ...]:
        values = dict(zip(call_params, args))
        values.update(dict.fromkeys(scratch, UNBOUND))
        values.update({name: values[base][key] for name, (base, key) in views.items()})
        out = body(item, *[values[p] for p in params])
        # returned, such a view would be a NumPy step: the runner makes it from its base
        mapped = [None if name in views or name in scratch else v
                  for name, v in zip(returned, out)]
        return (*mapped, *[values[b] for b in bases], *out[len(returned):])  # then goes on?

    taking_bases.__name__ = taking_bases.__qualname__ = getattr(body, "__name__", "body")
    taking_bases.__signature__ = named_parameters(call_params)  # type: ignore[attr-defined]
    return taking_bases


def named_parameters(params: list[str]) -> inspect.Signature:
    """The signature ``(item, *params)`` of a wrapped body: capture names its placeholders from
    it, and takes the item and carried NumPy scalars by name as the scalars they stand for
    (``loop_index_argument``; as ``*args`` they were 0-d arrays: ``x_f32 * i`` promoted)."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Signature([inspect.Parameter(n, kind) for n in (ITEM_ARGUMENT, *params)])
