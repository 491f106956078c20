"""Counters of ``while`` loops: ``it = 0; while err > tol and it < maxit: ...; it += 1``.

A Python int the loop counts with changes at every iteration, so the lifted step could not
hold it as a constant, and the loop unrolled with a gate per iteration. Where a local is
provably such a counter (``counters``, from the function's source), the lifted step carries it
as a traced int64 scalar (``traced_counters``), and the function returns it converted to a
Python int (``result_conversions.convert_results``). A counter, by the source:

- is bound outside the loop only by ``c = <int literal>`` (or ``e, c = np.inf, 0``, or stepped
  by an int literal outside every loop: a rotated ``while True``'s first ``S1``), and inside
  the loop only by ``c += <int literal>`` or ``c -= <int literal>`` (its value is always a
  Python int, eagerly);
- is read inside the loop (test and body) only as an operand of a comparison (``c < maxit``),
  where an int64 means what the Python int means (no arithmetic with arrays, whose dtype a
  NumPy integer would change), and after the loop only as an element of the returned results,
  or in a comparison that is a branch's test (``if it == maxit: raise ...``, a gate the
  compiled program checks), or not at all; no nested function names it.

A test ``A and c < maxit`` (or ``c < maxit and A``) would read ``A`` as a gate in Python; it is
rewritten to ``all_of(lambda: A, lambda: c < maxit)``: Python's ``and`` for Python values
(short-circuit included), the traced conjunction where an operand is traced (every operand but
one is then a comparison of counters and loop-invariant names, safe to evaluate).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from .loop_body import type_queried
from .proxy import Proxy

HELPER = "__stax_all_of__"
ANY_HELPER = "__stax_any_of__"
#: calls that read a frame's locals (or code naming them): a carried float read so is unseen
_FRAME_READS = frozenset({"locals", "vars", "eval", "exec", "dir", "_getframe", "currentframe"})
#: what a counter comparison may hold besides names (no call, no subscript: nothing that raises)
_PURE = (ast.Compare, ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Load, ast.operator,
         ast.unaryop, ast.cmpop, ast.Attribute)


def counters(function: ast.FunctionDef, loop: ast.While, results: Mapping[int, Any]
             ) -> frozenset[str]:
    """The counters of ``loop`` (the module docstring's rules); ``results``: the ids of the
    Name nodes that are elements of the function's returned results."""
    parents = {id(child): node for node in ast.walk(function)
               for child in ast.iter_child_nodes(node)}
    inside = {id(n) for n in ast.walk(loop)}
    candidates = {n.target.id for n in ast.walk(loop) if isinstance(n, ast.AugAssign) and
                  isinstance(n.target, ast.Name) and _int_step(n)}
    arguments = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    found = set()
    for name in candidates - arguments - _shared_names(function):
        uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name]
        if all(_counter_use(n, parents[id(n)], id(n) in inside, results) or
               _step_before(n, parents, inside) or _tested_after(n, parents, inside) or
               _tuple_preset(n, parents, inside) for n in uses):
            found.add(name)
    return frozenset(found)


def _step_before(name: ast.Name, parents: Mapping[int, ast.AST], inside: set[int]) -> bool:
    """``c += <int literal>`` outside every loop (the first iteration's ``S1`` of a rotated
    ``while True``, ``while_loops.rotate_breaks``): the count entering the loop is still a
    Python int the source fixes."""
    parent = parents[id(name)]
    if id(name) in inside or not (isinstance(name.ctx, ast.Store) and
                                  isinstance(parent, ast.AugAssign) and _int_step(parent)):
        return False
    node: ast.AST | None = parent
    while node is not None:
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            return False
        node = parents.get(id(node))
    return True


def _tuple_preset(name: ast.Name, parents: Mapping[int, ast.AST], inside: set[int]) -> bool:
    """``err, it = np.inf, 0`` outside the loop: the counter's element an int literal."""
    pack = parents.get(id(name))
    assign = parents.get(id(pack))
    if id(name) in inside or not isinstance(name.ctx, ast.Store) or \
            not isinstance(pack, ast.Tuple) or not isinstance(assign, ast.Assign) or \
            assign.targets != [pack] or not isinstance(assign.value, ast.Tuple) or \
            len(assign.value.elts) != len(pack.elts):
        return False
    value = assign.value.elts[pack.elts.index(name)]
    return isinstance(value, ast.Constant) and type(value.value) is int


def _tested_after(name: ast.Name, parents: Mapping[int, ast.AST], inside: set[int]) -> bool:
    """A read after the loop in a comparison that is a branch's test (``if it == maxit:``,
    ``if not it < maxit and strict: raise ...``): a branch on the lifted step's count, which
    the compiled program checks (``stax.runtime.gate_checks``); the comparison's value goes
    nowhere else, where a NumPy bool would differ from Python's."""
    compare = parents.get(id(name))
    if id(name) in inside or not isinstance(name.ctx, ast.Load) or \
            not isinstance(compare, ast.Compare) or \
            any(isinstance(op, (ast.Is, ast.IsNot)) for op in compare.ops):
        return False
    node: ast.AST = compare
    parent = parents.get(id(node))
    while isinstance(parent, ast.BoolOp) or (isinstance(parent, ast.UnaryOp) and
                                             isinstance(parent.op, ast.Not)):
        node, parent = parent, parents.get(id(parent))
    return isinstance(parent, (ast.If, ast.IfExp, ast.While, ast.Assert)) and parent.test is node


def _shared_names(function: ast.FunctionDef) -> set[str]:
    """Names a nested function, lambda or class names, or a ``global``/``nonlocal`` declares:
    another scope may read or bind them. A nested function's own parameters and locals are its
    own (``def rhs(t, y)`` beside a loop's ``t``: a probe's RK4 unrolled for it)."""
    nested: set[str] = set()
    for scope in ast.walk(function):
        if scope is function or not isinstance(
                scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        names = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)}
        nested |= names - _own_names(scope) if not isinstance(scope, ast.ClassDef) else names
    return nested | {name for n in ast.walk(function) if isinstance(n, (ast.Global, ast.Nonlocal))
                     for name in n.names}


def _own_names(scope: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """A nested function's parameters and the names it binds, where no scope inside it declares
    them ``nonlocal`` or ``global`` (then another scope's; conservatively, any inside it)."""
    arguments = scope.args
    params = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                              *((arguments.vararg,) if arguments.vararg else ()),
                              *((arguments.kwarg,) if arguments.kwarg else ()))}
    body = scope.body if isinstance(scope.body, list) else [scope.body]
    stored = {n.id for part in body for n in ast.walk(part)
              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    declared = {name for part in body for n in ast.walk(part)
                if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
    return (params | stored) - declared


def _int_step(node: ast.AugAssign) -> bool:
    """``c += <int literal>`` or ``c -= <int literal>`` (``-1`` too: a negation of one)."""
    return isinstance(node.op, (ast.Add, ast.Sub)) and _int_literal(node.value) is not None


def _int_literal(node: ast.expr) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _int_literal(node.operand)
        return None if value is None else -value if isinstance(node.op, ast.USub) else value
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _counter_use(name: ast.Name, parent: ast.AST, in_loop: bool, results: Mapping[int, Any]
                 ) -> bool:
    if isinstance(name.ctx, ast.Store):
        if in_loop:
            return isinstance(parent, ast.AugAssign) and _int_step(parent)
        return isinstance(parent, ast.Assign) and len(parent.targets) == 1 and \
            isinstance(parent.value, ast.Constant) and type(parent.value.value) is int
    if isinstance(name.ctx, ast.Load):  # (``it is 0``: an identity, which an int64 changes)
        return isinstance(parent, ast.Compare) and not any(
            isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops) if in_loop \
            else id(name) in results
    return False


def counted_test(test: ast.expr, names: frozenset[str], goes_on: str = "") -> ast.expr | None:
    """``test`` as ``all_of(lambda: ..., ...)`` where it is an ``and`` of counter comparisons
    and at most one other operand that reads no counter; a rotated ``while True`` loop's
    ``goes_on(A or c >= maxit)`` (``goes_on``: that helper's name) as ``goes_on(any_of(...))``
    alike; None where it needs no rewrite or cannot have one."""
    if not names:
        return None
    if goes_on and isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and \
            test.func.id == goes_on and len(test.args) == 1 and not test.keywords:
        stop = _joined(test.args[0], names, ast.Or, ANY_HELPER)
        return None if stop is None else ast.copy_location(
            ast.Call(ast.Name(goes_on, ast.Load()), [stop], []), test)
    return _joined(test, names, ast.And, HELPER)


def _joined(test: ast.expr, names: frozenset[str], op: type, helper: str) -> ast.expr | None:
    """``helper(lambda: ..., ...)`` for a ``BoolOp`` of ``op`` whose operands are counter
    comparisons but for one that reads no counter, else None."""
    if not isinstance(test, ast.BoolOp) or not isinstance(test.op, op):
        return None
    others = [v for v in test.values if not _counter_comparison(v, names)]
    if len(others) > 1 or any(n.id in names for v in others for n in ast.walk(v)
                              if isinstance(n, ast.Name)):
        return None
    lambdas = [ast.Lambda(ast.arguments([], [], None, [], [], None, []), v) for v in test.values]
    return ast.copy_location(ast.Call(ast.Name(helper, ast.Load()), lambdas, []), test)


def _counter_comparison(node: ast.expr, names: frozenset[str]) -> bool:
    return isinstance(node, ast.Compare) and all(isinstance(n, _PURE) for n in ast.walk(node)) \
        and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def all_of(*parts: Any) -> Any:
    """``p1() and p2() and ...`` as Python evaluates it, but where a value is one traced
    scalar the rest are evaluated too and the traced ones combined (``np.logical_and``)."""
    return _combined(parts, stops_at=False, combine=np.logical_and)


def any_of(*parts: Any) -> Any:
    """``p1() or p2() or ...`` alike (``np.logical_or``): a rotated loop's ``if err < tol or
    it >= maxit: break``."""
    return _combined(parts, stops_at=True, combine=np.logical_or)


def _combined(parts: Any, stops_at: bool, combine: Any) -> Any:
    """Each part's value in turn, Python's short circuit at the first Python value whose truth
    is ``stops_at``; the traced 0-d ones held and combined where no Python value stopped it
    (else the last value, as Python's ``and``/``or`` give it)."""
    held: list[Any] = []
    value: Any = not stops_at
    for part in parts:
        value = part()
        if isinstance(value, Proxy) and np.size(value.value) == 1:
            held.append(value)
        elif bool(value) is stops_at:
            return value
    return functools.reduce(combine, held) if held else value


def traced_counters(tracer: Any, state: dict[str, Any], names: frozenset[str]
                    ) -> dict[str, Any]:
    """Each counter in ``state`` that holds a Python int made a traced int64 scalar (a
    constant of the capture), in place; the Python values it replaced, to put back."""
    replaced = {}
    for name in names:
        value = state.get(name)
        if type(value) is int and -2 ** 62 < value < 2 ** 62:
            made = np.full((), value, np.int64)
            array = tracer.created_array("numpy.full", ((), value), {"dtype": "int64"}, made,
                                         None)
            replaced[name], state[name] = value, array[()]
    return replaced


def carried_floats(function: ast.FunctionDef, loop: ast.For, results: Mapping[int, Any],
                   nested: bool, arithmetic: Mapping[int, tuple[ast.expr, list[ast.Name]]]
                   = MappingProxyType({})) -> frozenset[str]:
    """Locals a ``for`` loop may carry as Python floats (``t += dt``, an SIR model's ``S, I, R
    = ...``): bound in the loop by plain assignments, not arguments of the loop's target, no
    global, nonlocal or nested scope naming them, and read outside the loop only before it, as
    an element of the returned results, or in a returned element that is arithmetic of such
    floats and numbers only (``arithmetic``: ``result_conversions.arithmetic_results``; ``return
    out, s + i + r``); none for a loop inside another loop (``nested``: it
    runs again, reading what it carried out) or a function reading its frame (``locals()``).
    Whether each is a Python float is the lifter's to check (``lift_plan``); after the loop one
    is a traced 0-d float64, which only a returned result may be (converted to a float: a
    strong float64 would promote float32 arrays where the weak float does not)."""
    if nested or _reads_frame(function):
        # ``locals()["t"]``, ``eval("t")``: reads the source cannot see; a loop in a loop runs
        # again after itself, reading what it carried out as a traced (strong) float64
        return frozenset()
    inside = {id(n) for n in ast.walk(loop)}
    target = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    augmented = {id(n.target) for n in ast.walk(function) if isinstance(n, ast.AugAssign)}
    stored = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and
              isinstance(n.ctx, ast.Store) and not _in_target(n, loop)} - target
    candidates = stored - _shared_names(function)
    # an arithmetic element's names bound again after the loop (``s = np.float32(1)``) may hold
    # what a traced float64 is not: such an element takes none of its names
    after = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and
             isinstance(n.ctx, ast.Store) and id(n) not in inside and n.lineno > loop.lineno}
    arithmetic = {at: (e, names) for at, (e, names) in arithmetic.items()
                  if not any(n.id in after for n in names)}
    while True:
        # the reads allowed after the loop: results, and arithmetic of candidates only
        allowed = set(results) | {id(n) for _, names in arithmetic.values()
                                  if all(n.id in candidates for n in names) for n in names}
        found = set()
        for name in candidates:
            outside = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name
                       and id(n) not in inside and (isinstance(n.ctx, ast.Load) or
                                                    id(n) in augmented)]
            if all(id(n) in allowed or n.lineno < loop.lineno for n in outside):
                found.add(name)
        if found == candidates:
            return frozenset(found)
        candidates = found  # an expression reading a name refused refuses its others


def stepped(function: ast.FunctionDef, loop: ast.For) -> tuple[tuple[str, int], ...]:
    """A ``for`` loop's counters (``n += 1`` in a Welford update, ``count += 1``), each with what
    one iteration adds: locals the loop binds only by ``c += <int literal>`` (or ``-=``)
    statements of its body's own block (each runs once per iteration: the loop has no
    ``break`` or ``continue`` of its own, or it is not rewritten), not the loop's target, and
    no nested scope, ``global``/``nonlocal`` or frame read naming them. Each holds, at an
    item, its value before the loop plus the steps of the items before: a lifted step computes
    it from the item (``stax.runtime.stepped_locals``) and the value after the loop is known
    where the item count is; whether it holds a Python int is the lifter's to check."""
    if _reads_frame(function):
        return ()
    steps: dict[str, int] = {}
    own: set[int] = set()
    for statement in loop.body:
        if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name) \
                and _int_step(statement):
            sign = 1 if isinstance(statement.op, ast.Add) else -1
            name = statement.target.id
            steps[name] = steps.get(name, 0) + sign * _int_literal(statement.value)  # type: ignore
            own.add(id(statement.target))
    others = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and
              not isinstance(n.ctx, ast.Load) and id(n) not in own}
    others |= _shared_names(function) | type_queried([loop])
    return tuple(sorted((name, step) for name, step in steps.items() if name not in others))


def _reads_frame(function: ast.FunctionDef) -> bool:
    """Whether ``function`` calls something that reads a frame's locals (``locals()``,
    ``eval("t")``): reads of a local the source cannot see."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute)) and
               getattr(n.func, "id", getattr(n.func, "attr", None)) in _FRAME_READS
               for n in ast.walk(function))


def _in_target(name: ast.Name, loop: ast.For) -> bool:
    return any(n is name for n in ast.walk(loop.target))
