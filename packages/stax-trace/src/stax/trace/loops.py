"""Python ``for`` loops as functions of their state, so capture need not unroll them (issue 13).

Capture runs the user's function on proxies, so a Python loop records its body once per
iteration: the graph grows with the trip count, and so do capture and compile time. Here the
function's source is rewritten (once per function, and only when compiling the source unchanged
gives the function's own bytecode) so that each ``for`` loop's body is a function of the loop's
item and of the function's local variables the body touches; the whole loop is a function too
(``__stax_whole_N``), and a loop over an array's rows gets a body taking the row's index::

    for i in range(n):              __stax_state = __stax_pack__(locals(), ("i", "x", "y"))
        y = f(x, i)          ->     __stax_out = __stax_loop__(__stax_sites__[0], range(n),
                                        __stax_body_0, __stax_whole_0, __stax_state, None)
                                    if __stax_out[0] is not __stax_unbound__: i = __stax_out[0]

``__stax_loop__`` (``run_loop``) decides how capture takes the loop. Outside capture the whole
loop runs. Unrolled, it calls the body for each item, which records exactly what the original
loop recorded (same operations, same order, same Python semantics): cheap loops, whose
iterations the loop layer rerolls into kernels. For a ``range`` loop or a loop over a traced
array's rows whose unrolled recording would be large, it asks the *lifter* (installed by
``stax.runtime``: ``install_lifter``) to record the remaining iterations as one operation; the
lifter declines (the loop unrolls) whenever it cannot keep eager semantics.

A loop is rewritten only when its body is plain statements: no ``return``, ``yield``, ``await``,
``break``/``continue`` of its own, ``global``/``nonlocal``, ``del`` or import of a name, nested
function, lambda or class, ``for ... else``, ``match``, name-mangled identifiers or calls of
``locals``/``vars``/``exec``/``eval``/``super``; and only in functions (not generators or
coroutines) whose source ``inspect`` finds. Everything else is captured as before.
"""

from __future__ import annotations

import ast
import contextvars
import copy
import inspect
import textwrap
import threading
import types
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import (
    loop_ast,
    loop_body,
    loop_code,
    loop_counters,
    loop_exits,
    loop_state,
    result_conversions,
    while_loops,
)
from .creation import active_tracer
from .loop_names import (
    SCOPES,
    BreakForm,
    break_form,
    loop_names,
    name_bindings,
    row_item,
    rows_of,
)
from .loop_names import binds_target as target_bound
from .loop_ranges import TracedRange, header, range_call
from .loop_site import LoopSite
from .loop_state import UNBOUND
from .ndindex_loops import (
    INDEX_TUPLE,
    NdIndex,
    ndindex_call,
    over_flat,
    plain_index_target,
    shaped_iter,
    unravel,
)
from .swapped_buffers import own_buffers

#: names the rewritten code reads from its closure
ITEM_ARGUMENT = "__stax_item"  # the body function's parameter for the item (its placeholder)
_HELPERS = ("__stax_loop__", "__stax_pack__", "__stax_unbound__", "__stax_sites__",
            while_loops.HELPER, while_loops.GOES_ON_HELPER, result_conversions.HELPER,
            loop_counters.HELPER, loop_counters.ANY_HELPER, loop_exits.KEPT_HELPER)
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR

#: function -> (its code: replaced, it is new; (rewritten code, sites) or None); weak
_cache: weakref.WeakKeyDictionary[types.FunctionType, Any] = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


def rewritten(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """``fn`` with its loops rewritten (same globals, cells, defaults), or None (none, no source)."""
    method_self, fn = (fn.__self__, fn.__func__) if isinstance(fn, types.MethodType) else (None, fn)
    code = getattr(fn, "__code__", None)
    if not isinstance(fn, types.FunctionType) or code is None:
        return None
    entry = _entry(fn, code)
    if entry is None:
        return None
    new_code, sites, _ = entry
    helpers = {"__stax_loop__": run_loop, "__stax_pack__": _pack, "__stax_unbound__": UNBOUND,
               "__stax_sites__": sites, while_loops.HELPER: while_loops.run_while,
               while_loops.GOES_ON_HELPER: while_loops.goes_on, result_conversions.HELPER:
               result_conversions.converted, loop_counters.HELPER: loop_counters.all_of,
               loop_counters.ANY_HELPER: loop_counters.any_of,
               loop_exits.KEPT_HELPER: loop_exits.kept}
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[name] if name in cells else types.CellType(helpers[name])
                    for name in new_code.co_freevars)
    clone = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__qualname__ = fn.__qualname__
    return clone if method_self is None else types.MethodType(clone, method_self)


def recapturable(fn: Callable[..., Any], arguments: Any = ()) -> bool:
    """Whether ``fn`` has loops ``lifting_every_loop`` would take otherwise, no call with a
    Python effect anywhere (``print``, ``list.append``...) and no random generator among its
    ``arguments``: a second capture of it, with its loops lifted, repeats nothing the caller
    could see."""
    if any(isinstance(a, np.random.Generator) for a in arguments):
        return False
    fn = getattr(fn, "__func__", fn)
    if not isinstance(fn, types.FunctionType):
        return False
    entry = _entry(fn, fn.__code__)  # the rewrite's analysis, once per function and code
    return bool(entry) and bool(entry[1]) and entry[2] is None


def _entry(fn: types.FunctionType, code: types.CodeType) -> Any:
    """``_rewrite(fn, code)``, made once per function and code."""
    with _cache_lock:
        held = _cache.get(fn)
    if held is None or held[0] is not code:
        held = (code, _rewrite(fn, code))
        with _cache_lock:
            _cache[fn] = held
    return held[1]


#: set while a capture runs with every loop offered for lifting (``lifting_every_loop``)
_lift_every_loop: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "stax_lift_every_loop", default=False)


@contextmanager
def lifting_every_loop() -> Iterator[None]:
    """Captures in this block offer every loop the lifter may take, whatever its size: for a
    function whose unrolled loops made a program of too many steps (a loop of a few hundred
    operations whose iterations do not reroll: a NumPy step, a recurrence of reductions)."""
    token = _lift_every_loop.set(True)
    try:
        yield
    finally:
        _lift_every_loop.reset(token)


def lifting() -> bool:
    """Whether captures now lift every loop (``lifting_every_loop``)."""
    return _lift_every_loop.get()


#: set while a capture lifts every loop whose count is a run-time int argument
_lift_counted = contextvars.ContextVar("stax_lift_counted", default=False)


@contextmanager
def lifting_counted_loops() -> Iterator[None]:
    """Captures in this block lift every loop over ``range(n)`` of an int argument ``n`` that
    the lifter takes, however few its items: for a function called with a count that changes
    (each count unrolled was a version, ~60 ms each, and eager past the version limit)."""
    token = _lift_counted.set(True)
    try:
        yield
    finally:
        _lift_counted.reset(token)


def _rewrite(fn: types.FunctionType, code: types.CodeType) -> Any:
    if code.co_flags & _GENERATOR_FLAGS or fn.__name__ == "<lambda>":
        return None
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        with loop_code.quiet_compile():
            tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or \
            tree.body[0].name != code.co_name or loop_code.mangled(tree):
        return None
    function = tree.body[0]
    function.decorator_list = []
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    # the source on disk must be what runs (a file edited since import is not): compiled as it
    # is, it gives the function's own bytecode
    unchanged = loop_code.compiled_function(copy.deepcopy(function), code, ())
    if unchanged is None or not loop_code.same_code(unchanged, code):
        return None
    effect = loop_body.effects(function.body)  # anywhere in the function (``recapturable``)
    flags = loop_exits.rewrite(function)  # a ``return`` inside, ``x = xn`` after a ``break``
    while_loops.rotate_breaks(function)  # ``while True`` with a break midway: a ``while`` test
    lifter = _Rewriter(code, function)
    lifter.local_names |= flags
    function.body = lifter.block(function.body)
    if lifter.converted:  # a loop's last item, returned (``_target_returned``)
        result_conversions.convert_results(function, lifter.converted)
    # and the numbers it converts only to return them (``return float(loss)``)
    conversions = result_conversions.rewrite_returns(function)
    if not lifter.sites and not conversions:
        return None
    new_code = loop_code.compiled_function(function, code, _HELPERS)
    if new_code is None or not set(new_code.co_freevars) <= {*_HELPERS, *code.co_freevars}:
        return None
    return loop_code.named_bodies(new_code, code), tuple(lifter.sites), effect


class _Rewriter:
    """Rewrites the ``for`` statements of one function body, innermost first."""

    def __init__(self, code: types.CodeType, function: ast.FunctionDef) -> None:
        self.code, self.function = code, function
        self.uses = loop_body.name_uses(function)  # before any loop of it is rewritten
        self.results = result_conversions.result_names(function)
        self.arithmetic = result_conversions.arithmetic_results(function)  # ``s + i + r``
        self.converted: dict[int, Any] = {}  # result names to convert, how (``convert_results``)
        self.bindings = name_bindings(function)  # (node id or None, name)
        self.local_names = set(code.co_varnames)
        self.cell_names = set(code.co_cellvars)
        self.sites: list[LoopSite] = []
        self.loops_around = 0  # the loops the statement being rewritten is inside

    def block(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for statement in statements:
            out.extend(self.statement(statement))
        return out

    def statement(self, node: ast.stmt) -> list[ast.stmt]:
        if isinstance(node, SCOPES):
            return [node]
        if isinstance(node, ast.For) and plain_index_target(node):
            self.local_names.add(INDEX_TUPLE)
        names = None
        if isinstance(node, ast.For) or (isinstance(node, ast.While) and not any(
                isinstance(n, ast.NamedExpr) for n in ast.walk(node.test))):  # (the test is a
            form = break_form(node)  # function of its own: a name it binds would stay in it)
            returned = loop_body.target_returned(node, self.uses, self.results, self.bindings,
                                                 self.function) \
                if isinstance(node, ast.For) else set()
            if form is not None and returned is None:
                form = None  # its value after a break is the data's, which Python would read
            names = loop_names(form.analysed(node) if form else node, self.local_names,
                               self.cell_names)
        if names is not None:  # before inner loops' rewrite: the user's own statements
            # a name the body updates in place may be scratch too (``lap = np.zeros_like(u);
            # lap[1:-1] = ...``): the lifter takes it only where the first item bound a new
            # array to it (``stax.runtime.lifted_loops``), not a view of another value
            rebinds = isinstance(node, ast.For) and target_bound(node)
            unread = loop_body.unread_after(self.uses, node, set(names[1]))
            floats = loop_counters.carried_floats(self.function, node, self.results,
                                                  self.loops_around > 0, self.arithmetic) \
                if isinstance(node, ast.For) else frozenset()
            counted = loop_counters.counters(self.function, node, self.results) \
                if isinstance(node, ast.While) else frozenset()
            steps = loop_counters.stepped(self.function, node) \
                if isinstance(node, ast.For) and form is None else ()
            test = loop_counters.counted_test(getattr(node, "test", None), counted,  # (a for
                                              while_loops.GOES_ON_HELPER)  # loop: none)
        looping = isinstance(node, (ast.For, ast.While))
        written = node.body if looping else None  # its statements before inner loops' rewrite
        self.loops_around += looping
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, field, self.block(block))
        self.loops_around -= looping
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                handler.body = self.block(handler.body)
        if names is None:
            return [node]
        form = break_form(node)  # again: the statements of inner loops are rewritten now
        if isinstance(node, ast.While):
            if test is None and isinstance(node.test, ast.BoolOp):
                counted = frozenset()  # (an ``and`` it cannot rewrite would gate on them)
            self.converted.update((at, "int") for at, n in self.results.items() if n.id in counted)
            return self.lift_while(node, form, *names, unread, counted, test)
        if form is not None and returned:
            self.converted.update(dict.fromkeys(returned, "int"))
        self.converted.update((at, "carried") for at, n in self.results.items() if n.id in floats)
        groups = [(at, names) for at, (_, names) in self.arithmetic.items()
                  if names and all(n.id in floats for n in names)]
        self.converted.update((at, ("carried_arithmetic", names)) for at, names in groups)
        return self.lift(node, form, *names, rebinds, unread, bool(form and returned), floats,
                         steps, written,
                         tuple(frozenset(n.id for n in names) for _, names in groups))

    def lift(self, node: ast.For, form: BreakForm | None, params: list[str],
             assigned: list[str], mutated: list[str], rebound: list[str], binds_target: bool,
             unread: frozenset[str], item_returned: bool = False,
             floats: frozenset[str] = frozenset(), steps: tuple[tuple[str, int], ...] = (),
             written: list[ast.stmt] | None = None,
             float_groups: tuple[frozenset[str], ...] = ()) -> list[ast.stmt]:
        number = len(self.sites)
        rows = rows_of(node, self.local_names, assigned)
        if rows is not None and rows[0] not in params:
            params = sorted([*params, rows[0]])
        if rows is not None and rows[2] in mutated and rows[0] not in mutated:
            # ``for row in P: row /= row.sum()`` updates P through each row: P is carried, and
            # the row, an array, stays the object the augmented assignment binds again
            mutated = sorted([*mutated, rows[0]])
            binds_target = binds_target and target_bound(node, augmented=False)
        target = node.target.id if isinstance(node.target, ast.Name) and rows is None else \
            rows[1] if rows is not None else None
        statements = form.analysed(node).body if form else node.body
        written = statements if form or written is None else written  # the user's: an inner
        bound_first = loop_body.bound_before_read(written, params)  # loop there is a ``for``
        scratch = (unread & bound_first) - {target, *(rows or ())}
        self.sites.append(LoopSite(f"{self.code.co_filename}:{node.lineno}", tuple(params),
                                   tuple(assigned), tuple(mutated), tuple(rebound), target,
                                   binds_target, *(rows[0], rows[2]) if rows else (None, None),
                                   bound_first, loop_body.effects(statements, target), scratch,
                                   loop_body.rebound_before_update(written, mutated),
                                   stops=form is not None, item_returned=item_returned,
                                   floats=floats, float_groups=float_groups,
                                   target_unread=target in unread,
                                   steps=steps, own_buffers=own_buffers(
                                       self.function, node, {*mutated, *rebound})))
        body_name, item = f"__stax_body_{number}", ITEM_ARGUMENT
        returned = [*assigned, *(m for m in mutated if m not in assigned)]
        body = loop_ast.function(body_name, [item, *params], [
            *loop_ast.unbind(params), ast.Assign([node.target], ast.Name(item, ast.Load())),
            *_iteration(node, form), _returns(returned, form)])
        # the whole loop as one function too: what runs outside capture, and a lifted loop's
        # step when NumPy runs its body faster than a compiled call per item would
        whole = loop_ast.function(f"__stax_whole_{number}", ["__stax_items", *params], [
            *loop_ast.unbind(params), ast.For(copy.deepcopy(node.target),
                                              ast.Name("__stax_items", ast.Load()),
                                              copy.deepcopy(node.body), [], None),
            loop_ast.return_values(returned)])
        # over an array's rows: the same body taking the row's index as its item (lifted)
        indexed = None if rows is None else loop_ast.function(
            f"__stax_rows_{number}", [item, *params], [
                *loop_ast.unbind(params),
                ast.Assign([copy.deepcopy(node.target)], row_item(rows, item)),
                *copy.deepcopy(_iteration(node, form)), _returns(returned, form)])
        run = loop_ast.call("__stax_loop__", loop_ast.site(number),
                            header(shaped_iter(node.iter)), ast.Name(body_name, ast.Load()),
                            ast.Name(whole.name, ast.Load()), ast.Name("__stax_state", ast.Load()),
                            ast.Name(indexed.name, ast.Load()) if indexed else ast.Constant(None))
        return loop_ast.placed([body, whole, *([indexed] if indexed else []),
                                *loop_ast.run_and_rebind(params, run, assigned)], node)

    def lift_while(self, node: ast.While, form: BreakForm | None, params: list[str],
                   assigned: list[str], mutated: list[str], rebound: list[str],
                   unread: frozenset[str], counters: frozenset[str] = frozenset(),
                   counted_test: ast.expr | None = None) -> list[ast.stmt]:
        """``while test: body`` as three functions of the locals they touch, run by
        ``while_loops.run_while``: the body (taking an unused item, as a ``for`` body does),
        the test, and the whole loop as written."""
        number = len(self.sites)
        tested = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
        # the test reads its names before each iteration: none is bound before it is read
        statements = form.analysed(node).body if form else node.body
        bound_first = loop_body.bound_before_read(statements, params) - tested
        self.sites.append(LoopSite(
            f"{self.code.co_filename}:{node.lineno}", tuple(params), tuple(assigned),
            tuple(mutated), tuple(rebound), None, bound_first=bound_first,
            effect=loop_body.while_effects(node.test, statements),
            scratch=unread & bound_first,
            fresh=loop_body.rebound_before_update(statements, mutated), kind="while",
            stops=form is not None, counters=counters))
        returned = [*assigned, *(m for m in mutated if m not in assigned)]
        body = loop_ast.function(f"__stax_body_{number}", [ITEM_ARGUMENT, *params], [
            *loop_ast.unbind(params), *_iteration(node, form), _returns(returned, form)])
        test = loop_ast.function(f"__stax_test_{number}", params, [
            *loop_ast.unbind(params), ast.Return(counted_test or copy.deepcopy(node.test))])
        whole = loop_ast.function(f"__stax_whole_{number}", ["__stax_items", *params], [
            *loop_ast.unbind(params), ast.parse(f"{RAN} = 0").body[0],  # (and the iterations
            # it ran, last)
            ast.While(copy.deepcopy(node.test), [ast.parse(f"{RAN} += 1").body[0],
                                                 *copy.deepcopy(node.body)], []),
            loop_ast.return_values([*returned, RAN])])
        run = loop_ast.call(while_loops.HELPER, loop_ast.site(number),
                            ast.Name(test.name, ast.Load()), ast.Name(body.name, ast.Load()),
                            ast.Name(whole.name, ast.Load()), ast.Name("__stax_state", ast.Load()))
        return loop_ast.placed([body, test, whole,
                                *loop_ast.run_and_rebind(params, run, assigned)], node)


#: the local a body ending the loop at a test (``BreakForm``) binds to whether the loop goes on
GOES_ON = "__stax_goes_on"
RAN = "__stax_ran"  # the iterations a while loop's whole function ran, its last result


def _returns(names: list[str], form: BreakForm | None) -> ast.Try:
    """The body's results: ``names``, and whether the loop goes on for a ``BreakForm``."""
    return loop_ast.return_values(names, GOES_ON if form is not None else False)


def _iteration(node: ast.For | ast.While, form: BreakForm | None) -> list[ast.stmt]:
    """The statements of one iteration: the body, or for a ``BreakForm`` ``S1; goes_on = not
    C; S3`` (``while_loops.goes_on``: a traced ``C`` stays traced)."""
    if form is None:
        return node.body
    test = ast.Assign([ast.Name(GOES_ON, ast.Store())],
                      loop_ast.call(while_loops.GOES_ON_HELPER, copy.deepcopy(form.stop)))
    ast.copy_location(test, form.stop)
    return [*form.before, test, *form.after]


def _pack(scope: dict[str, Any], names: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(scope.get(name, UNBOUND) for name in names)


# -- running a rewritten loop ----------------------------------------------------------------------

#: installed by ``stax.runtime``: ``lift(tracer, site, body, whole, items, state) -> state | None``
_lifter: Callable[..., dict[str, Any] | None] | None = None
#: a loop whose unrolled recording would pass this many operations is offered to the lifter
#: (unrolled, a recurrence of that size compiles for seconds: euler steps, 3.5 ms an operation)
UNROLL_LIMIT = 1_000
#: the same for a loop whose item reads or writes an array at a position from the data: no
#: rerolling or fusion joins such items, each is kernels of its own, and a program of more
#: than 256 kernels is refused (a histogram loop of 150 items: 451 kernels, refused after
#: seconds of compiling; lifted, 0.2 s; 70 items stay unrolled, 210 kernels)
DATA_INDEXED_LIMIT = 512


#: the items past which a loop that computes Python floats and stores them as constants lifts
#: (``FirstIteration.stores_float_state``): unrolled, each item is a kernel of its own, and
#: past ``stax.codegen``'s kernel budget of 64 the program is refused
FLOAT_STATE_LIMIT = 48


def install_lifter(lift: Callable[..., dict[str, Any] | None] | None) -> None:
    global _lifter
    _lifter = lift


def run_loop(site: LoopSite, items: Any, body: Callable[..., tuple[Any, ...]],
             whole: Callable[..., tuple[Any, ...]], values: tuple[Any, ...],
             rows: Callable[..., tuple[Any, ...]] | None = None) -> tuple[Any, ...]:
    """The rewritten loop: the final values of ``site.assigned``. ``body`` runs one item,
    ``whole`` the loop (both return the final values of ``site.returned``); ``rows``, for a
    loop over an array's rows, runs the item of one index."""
    tracer = active_tracer()
    if tracer is None:  # not capturing: the loop as written
        return whole(items, *values)[:len(site.assigned)]
    if not isinstance(items, NdIndex):
        return _run_loop(tracer, site, items, body, whole, values, rows)
    # over the flat index, each item's tuple unravelled from it; the target holds the flat
    # position in the body's results (a tuple of traced numbers is no array result), and the
    # last item's tuple after the loop, as Python leaves it
    shape = items.shape
    target = site.returned.index(site.target) if site.target in site.returned else None
    body, whole, items = over_flat(shape, body, whole, target)
    out = _run_loop(tracer, site, items, body, whole, values, rows)
    if target is None or not items or site.target not in site.assigned:
        return out
    last = site.assigned.index(site.target)
    return (*out[:last], unravel(items[-1], shape), *out[last + 1:])


def _run_loop(tracer: Any, site: LoopSite, items: Any, body: Callable[..., tuple[Any, ...]],
              whole: Callable[..., tuple[Any, ...]], values: tuple[Any, ...],
              rows: Callable[..., tuple[Any, ...]] | None) -> tuple[Any, ...]:
    state = dict(zip(site.params, values))
    # a range of a traced count: not read yet
    traced, items = (items, items.items) if isinstance(items, TracedRange) else (None, items)
    later = None  # (the first iteration and its views, where it found the loop too small)
    if rows is not None and _lifter is not None and _traced_rows(state.get(site.array)):
        # iterating a traced array walks its first axis: x[0], x[1], ... (Proxy.__iter__), a
        # read of its length, which a size-generic version must not take as any length
        body, items = rows, range(len(state[site.array]))
    if _lifter is not None and type(items) is range and len(items) > 2:
        # the first iteration unrolled: what one iteration records says whether to lift the rest
        first = loop_state.FirstIteration(tracer, state)
        before = dict(state)
        goes_on = loop_state.step(site, body, items[0], state)
        rest = items[1:]
        views = loop_state.bound_views(tuple(n for n in site.assigned if n not in site.scratch),
                                       first.state, state, items[0])
        # a traced count stays a run-time input of the step (no last item to bind: no view,
        # unread); a start or stop computed from a lifted body's item (``range(i + 1, n)``,
        # ``range(i)``) must: lifted whole, or read (its first item, traced here, is this
        # capture's). ``fixed``: the items are this capture's wherever the loop lifts
        free = traced is not None and not views and not site.stops and site.target_unread
        fixed = traced is None or (traced.start is None and traced.end is None)
        begin, stop = (traced.start, traced.end if traced.end is not None else traced.stop) \
            if free else (None, None)  # type: ignore[union-attr]
        fewest = _fewest_lifted(first, tracer, len(rest), state, while_loops.traced(goes_on) or
                                _lift_every_loop.get() or (traced is not None and _lift_counted.get())
                                or not fixed)
        if views is not None and fewest is not None and (free or fixed):
            # every item from the locals before the loop (the traced first iteration then
            # dropped), else the rest from after the first (where it went on: a gate);
            # unrolled, a test that ends the loop would be a gate at every item
            nested = first.lifted_inside(tracer)  # (its body must compile: ``lift``)
            lifted = first.lift_all(tracer, site, state, UNBOUND, lambda start: _lifter(
                tracer, site, body, whole, items, start, stop=stop, begin=begin, nested=nested))
            if lifted is None and fixed:
                goes_on = bool(goes_on)  # a gate where traced
                if goes_on:
                    lifted = _lifter(tracer, site, body, whole, rest, state, stop=stop,
                                     nested=nested)
                while lifted is None and goes_on and len(rest) > 2 and \
                        loop_state.turned_traced(site, before, state):
                    # a Python number the iteration made traced (``s1 = v + c * s1``, a float
                    # 0.0 before) passes it on to another at the next (``s2 = s1``): one more
                    # iteration recorded, the rest lifted from its locals
                    before = dict(state)
                    goes_on = bool(loop_state.step(site, body, rest[0], state))
                    rest = rest[1:]
                    if goes_on:
                        lifted = _lifter(tracer, site, body, whole, rest, state, stop=stop,
                                         nested=nested)
            if lifted is not None:
                if traced is not None and fixed:  # a run-time count: as many items as lift
                    traced.settle(fewest if stop is not None else None)  # it so
                return _lifted_values(site, lifted, views, items[-1])
        elif views is not None and fewest is None and traced is None:
            later = first, views  # too small to lift from its first item: may grow
        items = rest if goes_on else ()
    if traced is not None:
        traced.read()  # the loop unrolls: its count is part of the key
    for k, item in enumerate(items):
        mark = len(tracer.graph.nodes)
        if not loop_state.step(site, body, item, state):
            break
        if later is not None and len(items) - k > 3 and loop_state.recorded_since(
                tracer, mark, UNROLL_LIMIT) * (len(items) - k - 1) > UNROLL_LIMIT:
            # the first item's rule at a later item, whose work grew (``for j in range(i)``:
            # the first item runs none): the rest lifted from here, once
            lifted = _lifter(tracer, site, body, whole, items[k + 1:], state,  # type: ignore
                             nested=later[0].lifted_inside(tracer))
            if lifted is not None:
                return _lifted_values(site, lifted, later[1], items[-1])
            later = None
    return tuple(state.get(name, UNBOUND) for name in site.assigned)


def _lifted_values(site: LoopSite, lifted: dict[str, Any], views: dict[str, Any], last: Any
                   ) -> tuple[Any, ...]:
    """The loop's final values from its lifted step's: a local bound to a row of an array
    (``bound_views``) the row of the last item, a view again."""
    for name, base in views.items():
        lifted[name] = base[last]
    return tuple(lifted.get(name, UNBOUND) for name in site.assigned)


def _fewest_lifted(first: Any, tracer: Any, rest: int, after: dict[str, Any], forced: bool
                   ) -> int | None:
    """The fewest items with which the loop lifts as it does with ``rest`` after its first
    (where its count is a run-time input, the version applies from there on), or None: it does
    not lift. One iteration recorded ``per`` operations and left the locals ``after``."""
    if forced:
        return 3
    per = first.recorded(tracer, UNROLL_LIMIT)
    if per * rest > UNROLL_LIMIT:
        return max(3, UNROLL_LIMIT // per + 2)
    if rest > FLOAT_STATE_LIMIT and first.stores_float_state(tracer, after):
        return FLOAT_STATE_LIMIT + 2
    if per * rest > DATA_INDEXED_LIMIT and first.indexes_by_data(tracer, ITEM_ARGUMENT):
        return max(3, DATA_INDEXED_LIMIT // per + 2)
    return None


run_loop.ndindex = ndindex_call  # type: ignore[attr-defined]  # ``shaped_iter``'s calls
run_loop.range = range_call  # type: ignore[attr-defined]


def _traced_rows(value: Any) -> bool:
    from .proxy import Proxy  # the proxy module imports the tracer, which imports this one
    return isinstance(value, Proxy) and isinstance(value.value, np.ndarray) and value.value.ndim > 0
