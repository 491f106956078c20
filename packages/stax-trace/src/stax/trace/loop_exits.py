"""Loops that end at a test with statements after it, or that return from inside.

The lifter takes a loop that ends at a test when every iteration runs the same statements
(``loop_names.BreakForm``: ``S1; if C: S2; break; S2``). Two forms users write all the time are
not that, and unrolled with a gate per iteration (a Jacobi solver on 50x50: 0.85x NumPy, its
key then measured slower and run eagerly):

- ``S1; if C: break; x = xn``: the statements after the test do not run at the last item.
  Where they only rebind names to names (``x = xn``, ``a, b = b, a``), they are moved before
  the test as ``x = __stax_kept__(stop, xn, x)``: the new value where the loop goes on, the old
  where it stops (a Python test decides in Python; a traced one selects, ``kept``). A select
  makes ``x`` another object than ``xn``, which only an update in place could tell apart: the
  names must be updated in place nowhere in the function, nor passed where they could be
  (``never_updated``).
- ``S1; if C: return R; S3``: the loop stops at the test, a flag set to it before the test, and
  the function returns ``R`` after the loop where the flag holds (``R`` read there is what it
  was at the test: nothing runs between). The flag, a traced bool after a lifted loop, is a gate
  the compiled program checks (``stax.runtime.gate_checks``: a lifted loop's results are the
  program's own).

Both rewrite the function's AST before ``loops`` does (``rewrite``), in place; what they make
is plain Python with the same effects in the same order, so a loop the lifter declines runs
as before, unrolled.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from .loop_names import SCOPES, jumps
from .proxy import Proxy

KEPT_HELPER = "__stax_kept__"
#: the flag a loop that returned from inside sets: whether it stopped at its test
STOPPED = "__stax_stopped_{}"
#: methods that update their array in place
_UPDATING = frozenset({"fill", "sort", "resize", "put", "itemset", "setfield", "partition",
                       "byteswap", "setflags", "__setitem__", "__iadd__", "__imul__"})
#: NumPy functions that write into their first argument
_WRITING = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis"})
_MODULES = frozenset({"np", "numpy"})


def kept(stop: Any, new: Any, old: Any) -> Any:
    """``old`` where ``stop`` holds, else ``new``: Python's choice for a Python ``stop``; for a
    traced one, per element of the values (tuples alike) a select of arrays of one shape and
    dtype, or the one value where both are the same; else Python's choice (a gate, which keeps
    the loop from lifting)."""
    if not (isinstance(stop, Proxy) and np.size(stop.value) == 1):
        return old if stop else new
    chosen = _selected(stop, new, old)
    return chosen if chosen is not None else (old if stop else new)


def _selected(stop: Proxy, new: Any, old: Any) -> Any:
    if isinstance(new, tuple) and isinstance(old, tuple) and len(new) == len(old):
        parts = [_selected(stop, n, o) for n, o in zip(new, old)]
        return None if any(p is None for p in parts) else tuple(parts)
    if new is old:
        return new
    if isinstance(new, Proxy) and isinstance(old, Proxy) and \
            isinstance(new.value, np.ndarray) and isinstance(old.value, np.ndarray) and \
            new.value.shape == old.value.shape and new.value.dtype == old.value.dtype:
        return np.where(stop, old, new)
    return None


def rewrite(function: ast.FunctionDef) -> set[str]:
    """Both rewrites on every loop of ``function`` (not the scopes in it), inner loops first;
    the locals they add (the flags)."""
    state: dict[str, Any] = {"count": 0}
    _block_rewrite(function, function, state)
    return {STOPPED.format(k) for k in range(state["count"])}


def _block_rewrite(node: ast.AST, function: ast.FunctionDef, state: dict[str, Any]) -> None:
    for field in ("body", "orelse", "finalbody", "handlers"):
        block = getattr(node, field, None)
        if not isinstance(block, list):
            continue
        for child in block:
            if not isinstance(child, SCOPES):
                _block_rewrite(child, function, state)
        if block and isinstance(block[0], ast.stmt):
            out: list[ast.stmt] = []
            for statement in block:
                made = _loop_rewrite(statement, function, state)
                out.extend(made if made is not None else [statement])
            setattr(node, field, out)


def _loop_rewrite(node: ast.stmt, function: ast.FunctionDef, state: dict[str, Any]
                  ) -> list[ast.stmt] | None:
    if not isinstance(node, (ast.For, ast.While)) or node.orelse:
        return None
    body = node.body
    exits = [k for k, s in enumerate(body) if isinstance(s, ast.If) and not s.orelse and
             len(s.body) == 1 and isinstance(s.body[0], (ast.Break, ast.Return))]
    if len(exits) != 1:
        return None
    k = exits[0]
    before, test, after = body[:k], body[k].test, body[k + 1:]
    leaving = body[k].body[0]
    if any(jumps(s) or _returns(s) for s in (*before, *after)) or _returns(ast.Expr(test)) or \
            any(isinstance(n, ast.NamedExpr) for n in ast.walk(test)):
        return None
    returned = leaving.value if isinstance(leaving, ast.Return) else None
    forever = isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and \
        node.test.value is True
    if isinstance(leaving, ast.Break) and (not after or forever):
        return None  # the lifter's form already, or ``while_loops.rotate_breaks``' own
    if after and not forever and not _rebinds_only(after, function, node):
        return None
    number = state["count"]
    state["count"] += 1
    stop = STOPPED.format(number)
    flag = ast.Assign([ast.Name(stop, ast.Store())], test)
    # (``while True``: rotated, S3 runs before the next iteration's S1, only where it goes on)
    moved = after if forever else [_kept(s, stop) for s in after]
    leave = ast.If(ast.Name(stop, ast.Load()), [ast.Break()], [])
    node.body = [*before, flag, leave, *moved] if forever else [*before, flag, *moved, leave]
    for made in (flag, leave, *([] if forever else moved)):
        ast.copy_location(made, body[k])
        ast.fix_missing_locations(made)
    if isinstance(leaving, ast.Break):
        return [node]
    start = ast.Assign([ast.Name(stop, ast.Store())], ast.Constant(False))
    finish = ast.If(ast.Name(stop, ast.Load()), [ast.Return(returned)], [])
    for made in (start, finish):
        ast.copy_location(made, node)
        ast.fix_missing_locations(made)
    return [start, node, finish]


def _returns(node: ast.AST) -> bool:
    """Whether ``node`` returns from the function (not a nested scope's ``return``)."""
    stack = [node]
    while stack:
        child = stack.pop()
        if isinstance(child, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)):
            return True
        if not isinstance(child, SCOPES):
            stack.extend(ast.iter_child_nodes(child))
    return False


def _names(node: ast.expr) -> list[str] | None:
    """The names of ``x`` or ``(a, b)`` (no starred, no nesting), or None."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Tuple) and node.elts and all(isinstance(e, ast.Name) for e in node.elts):
        return [e.id for e in node.elts]
    return None


def _rebinds_only(after: list[ast.stmt], function: ast.FunctionDef, loop: ast.stmt) -> bool:
    """Whether each statement binds names to names (``x = xn``, ``a, b = b, a``) whose targets
    are bound before the loop (their old values exist to keep), and no name involved is updated
    in place anywhere in the function."""
    involved: set[str] = set()
    for statement in after:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            return False
        targets, values = _names(statement.targets[0]), _names(statement.value)
        if targets is None or values is None or len(targets) != len(values) or \
                (len(targets) > 1) != isinstance(statement.value, ast.Tuple):
            return False
        if not all(_bound_before(name, function, loop) for name in targets):
            return False
        involved |= {*targets, *values}
    return never_updated(function, involved, set(map(id, after)))


def _bound_before(name: str, function: ast.FunctionDef, loop: ast.stmt) -> bool:
    """A parameter, or bound by a statement of the function's own body (not inside a branch or
    loop) before the loop's line."""
    arguments = function.args
    if name in {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}:
        return True
    return any(isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and
               s.end_lineno is not None and s.end_lineno < loop.lineno and
               any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                   for n in ast.walk(s)) for s in function.body)


def never_updated(function: ast.FunctionDef, names: set[str], own: set[int]) -> bool:
    """Whether no array bound to ``names`` can be updated in place or reached by another name:
    each read is an operand (arithmetic, comparisons, subscripts read, attributes other than
    updating methods, arguments of NumPy's functions but the ``out=`` and the first of those
    that write into it), or a returned value; each binding a plain assignment. ``own``: the ids
    of the rebinding statements being rewritten, which may read them."""
    parents = {id(child): node for node in ast.walk(function)
               for child in ast.iter_child_nodes(node)}
    for node in ast.walk(function):
        if not (isinstance(node, ast.Name) and node.id in names):
            continue
        parent = parents.get(id(node))
        if isinstance(node.ctx, ast.Store):
            if isinstance(parent, (ast.AugAssign, ast.AnnAssign)) or \
                    isinstance(parent, (*SCOPES, ast.withitem)):
                return False
            continue
        if isinstance(node.ctx, ast.Del) or not _read_only(node, parent, parents, own):
            return False
    return True


def _read_only(node: ast.Name, parent: Any, parents: dict[int, Any], own: set[int]) -> bool:
    if isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.FormattedValue)):
        return True
    if isinstance(parent, ast.Subscript):
        return parent.value is not node or isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Attribute):
        call = parents.get(id(parent))
        return isinstance(parent.ctx, ast.Load) and not (
            parent.attr in _UPDATING and isinstance(call, ast.Call) and call.func is parent)
    if isinstance(parent, ast.keyword):
        call = parents.get(id(parent))
        return parent.arg != "out" and _numpy_call(call)
    if isinstance(parent, ast.Call):
        return node in parent.args and _numpy_call(parent) and not (
            parent.args and parent.args[0] is node and
            getattr(parent.func, "attr", None) in _WRITING)
    if isinstance(parent, ast.Return):
        return True
    if isinstance(parent, ast.Tuple):
        holder = parents.get(id(parent))
        return isinstance(holder, ast.Return) or (
            isinstance(holder, ast.Assign) and id(holder) in own)
    if isinstance(parent, ast.Assign):
        return id(parent) in own
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return parent.test is node
    return False


def _numpy_call(call: Any) -> bool:
    """A call of a NumPy function by its module's name (``np.where``, ``np.linalg.norm``)."""
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name) and func.id in _MODULES and func is not call.func


def _kept(statement: ast.stmt, stop: str) -> ast.stmt:
    """``x = xn`` as ``x = __stax_kept__(stop, xn, x)``."""
    assert isinstance(statement, ast.Assign)
    target = statement.targets[0]
    old = ast.Name(target.id, ast.Load()) if isinstance(target, ast.Name) else \
        ast.Tuple([ast.Name(e.id, ast.Load()) for e in target.elts], ast.Load())
    call = ast.Call(ast.Name(KEPT_HELPER, ast.Load()),
                    [ast.Name(stop, ast.Load()), statement.value, old], [])
    made = ast.Assign([target], call)
    ast.copy_location(made, statement)
    ast.fix_missing_locations(made)
    return made
