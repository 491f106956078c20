"""Loops that end at a test with statements after it, or that return from inside.

The lifter takes a loop that ends at a test when every iteration runs the same statements
(``loop_names.BreakForm``: ``S1; if C: S2; break; S2``). Two forms users write all the time are
not that, and unrolled with a gate per iteration (a Jacobi solver on 50x50: 0.85x NumPy, its
key then measured slower and run eagerly):

- ``S1; if C: break; x = xn``: the statements after the test do not run at the last item.
  Where they only rebind names to names (``x = xn``, ``a, b = b, a``), they are moved before
  the test as ``x = __stax_kept__(stop, xn, x)``: the new value where the loop goes on, the old
  where it stops (a Python test decides in Python; a traced one selects, ``kept``). A select
  makes ``x`` another object than ``xn``, which identity, a view or an update in place could
  tell apart: the names must hold arrays of their own, bound only to new values and read only
  by value (``plain_values``).
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
import copy
from typing import Any

import numpy as np

from .loop_names import SCOPES, jumps
from .proxy import Proxy

KEPT_HELPER = "__stax_kept__"
#: the flag a loop that returned from inside sets: whether it stopped at its test
STOPPED = "__stax_stopped_{}"
#: the items of a loop rotated with its first item peeled (``_peeled``)
ITEMS = "__stax_items_{}"
_MODULES = frozenset({"np", "numpy"})


def kept(stop: Any, new: Any, old: Any) -> Any:
    """``old`` where ``stop`` holds, else ``new``: Python's choice for a Python ``stop``; for a
    traced 0-d one, per element of the values (tuples alike) a select of arrays of one shape and
    dtype, or the one value where both are the same; else Python's choice (a gate, which keeps
    the loop from lifting)."""
    if not (isinstance(stop, Proxy) and np.ndim(stop.value) == 0):  # (else a gate: (1, 1)
        return old if stop else new  # would broadcast the values it selects between)
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
    """Both rewrites on every loop of ``function`` no other loop holds (not the scopes in it);
    the locals they add (the flags)."""
    state: dict[str, Any] = {"count": 0, "names": set()}
    _block_rewrite(function, function, state)
    return state["names"]


def _block_rewrite(node: ast.AST, function: ast.FunctionDef, state: dict[str, Any]) -> None:
    """Rewrites the loops of ``node`` that no loop holds: a loop inside another runs again
    after it stopped (a review: an inner loop's ``return`` made its lifted step's results
    other objects than at capture, six versions, then eagerly; it compiled once before)."""
    for field in ("body", "orelse", "finalbody", "handlers"):
        block = getattr(node, field, None)
        if not isinstance(block, list):
            continue
        for child in block:
            if not isinstance(child, (*SCOPES, ast.For, ast.While, ast.AsyncFor)):
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
        if isinstance(leaving, ast.Break) and _counted(node) and not any(
                isinstance(n, ast.Name) and n.id == node.target.id  # type: ignore[union-attr]
                for s in after for n in ast.walk(s)):
            return _peeled(node, before, test, after, state)
        return None  # (rotated, ``S3`` would read the next item: ``out[i] = total``)
    number = state["count"]
    state["count"] += 1
    stop = STOPPED.format(number)
    state["names"].add(stop)
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


def _counted(node: ast.stmt) -> bool:
    """``for name in range(...)`` of constants and names (evaluated once either way)."""
    if not (isinstance(node, ast.For) and isinstance(node.target, ast.Name)):
        return False
    call = node.iter
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and \
        call.func.id == "range" and 1 <= len(call.args) <= 3 and not call.keywords and \
        all(isinstance(a, (ast.Constant, ast.Name)) for a in call.args)


def _peeled(node: ast.For, before: list[ast.stmt], test: ast.expr, after: list[ast.stmt],
            state: dict[str, Any]) -> list[ast.stmt]:
    """``for i in range(...): S1; if C: break; S3`` (``S3`` any statements: ``x -= lr * g``)
    rotated so that each iteration ends at its test, the lifter's form: the first item's
    ``S1`` and test peeled, then ``S3; S1; test`` for the other items, and ``S3`` once more
    where no test held (the last item's). The same statements in the same order::

        r = range(...)
        if len(r):
            i = r[0]; S1; stop = C
            if not stop:
                for i in r[1:]:
                    S3; S1; stop = C
                    if stop: break
                if not stop: S3

    A gradient descent ``for it in range(500)`` with ``x -= lr * g`` after its test unrolled
    and ran eagerly (64 data gates); rotated, it lifts as its ``while`` form does (10x NumPy)."""
    number = state["count"]
    state["count"] += 1
    stop, items = STOPPED.format(number), ITEMS.format(number)
    state["names"] |= {stop, items}

    def name(n: str, store: bool = False) -> ast.Name:
        return ast.Name(n, ast.Store() if store else ast.Load())

    def copies(block: list[ast.stmt]) -> list[ast.stmt]:
        return [copy.deepcopy(s) for s in block]

    def tested() -> list[ast.stmt]:
        return [*copies(before), ast.Assign([name(stop, True)], copy.deepcopy(test))]
    target = node.target.id
    inner = ast.For(name(target, True), _after_first(node, items),
                    [*copies(after), *tested(), ast.If(name(stop), [ast.Break()], [])], [])
    last = ast.If(ast.UnaryOp(ast.Not(), name(stop)), copies(after), [])
    # the first item; a number bound before it all where the range has items whatever the
    # call (the lifter lets a loop's target be read after it where an int literal presets it:
    # ``return x, it``; an empty range leaves it unbound, as Python does)
    first = _first_item(node.iter.args)
    preset = [] if first is None else [ast.Assign([name(target, True)], ast.Constant(first))]
    peel = ast.If(ast.Call(name("len"), [name(items)], []), [
        *([] if first is not None else [ast.Assign(
            [name(target, True)], ast.Subscript(name(items), ast.Constant(0), ast.Load()))]),
        *tested(), ast.If(ast.UnaryOp(ast.Not(), name(stop)), [inner, last], [])], [])
    made = [*preset, ast.Assign([name(items, True)], node.iter), peel]
    ast.copy_location(inner, test)  # (after the preset, by line: ``loop_names.int_presets``)
    for statement in made:
        ast.copy_location(statement, node)
        ast.fix_missing_locations(statement)
    for statement in preset:  # (one line, the loop's first)
        statement.end_lineno = statement.lineno
    return made


def _after_first(node: ast.For, items: str) -> ast.expr:
    """The items after the first: ``range(start + step, stop, step)`` of the loop's own bounds
    (the lifter's form: a run-time count, the target read after the loop) where the loop
    rebinds none of their names, else the slice ``items[1:]``."""
    args = node.iter.args
    names = {a.id for a in args if isinstance(a, ast.Name)}
    bound = {n.id for s in node.body for n in ast.walk(s)
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if names & (bound | {node.target.id}):
        return ast.Subscript(ast.Name(items, ast.Load()), ast.Slice(ast.Constant(1)), ast.Load())
    start, stop, step = (ast.Constant(0), args[0], None) if len(args) == 1 else \
        (args[0], args[1], args[2] if len(args) == 3 else None)
    after = ast.BinOp(copy.deepcopy(start), ast.Add(), copy.deepcopy(step) if step is not None
                      else ast.Constant(1))
    bounds = [after, copy.deepcopy(stop), *([copy.deepcopy(step)] if step is not None else [])]
    return ast.Call(ast.Name("range", ast.Load()), bounds, [])


def _first_item(args: list[ast.expr]) -> int | None:
    """The first item of ``range(*args)`` where it has one whatever the call: constant bounds
    (and step) giving a non-empty range; else None."""
    if not all(isinstance(a, ast.Constant) and type(a.value) is int for a in args):
        return None
    items = range(*(a.value for a in args))
    return items[0] if len(items) else None


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
    """Whether each statement binds names to names (``x = xn``, ``a, b = b, a``), the targets
    bound before the loop, and every name involved holds only arrays nothing else can see
    (``plain_values``): a select then stands for the rebinding (it makes another object,
    which no read of these names can tell apart)."""
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
    if any(isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and
           any(isinstance(t, ast.Name) and t.id in involved for t in n.targets)
           for n in ast.walk(function)):
        return False  # a number (``lam = 0.0``) and an array: no select between them (a
        # ``for`` over a range is rotated instead, ``_peeled``)
    return plain_values(function, involved, set(map(id, after)))


def _bound_before(name: str, function: ast.FunctionDef, loop: ast.stmt) -> bool:
    """Bound by an assignment statement of the function's own body (its target itself, not a
    name inside a comprehension or a branch) before the loop's line."""
    return any(isinstance(s, ast.Assign) and s.end_lineno is not None and
               s.end_lineno < loop.lineno and
               any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
               for s in function.body)


#: NumPy functions returning a new array or a number (never an argument or a view of one),
#: with the positional arguments they take before an ``out`` (more: refused)
_VALUE_FUNCTIONS = {
    **dict.fromkeys(("abs", "absolute", "sqrt", "exp", "log", "sin", "cos", "tan", "tanh",
                     "square", "sign", "isnan", "isfinite", "isinf", "negative"), 1),
    **dict.fromkeys(("maximum", "minimum", "dot", "matmul", "vdot", "inner", "outer",
                     "allclose", "isclose", "array_equal", "add", "subtract", "multiply",
                     "divide", "true_divide", "power", "hypot", "fmax", "fmin"), 2),
    **dict.fromkeys(("sum", "max", "min", "amax", "amin", "mean", "prod", "any", "all",
                     "argmax", "argmin", "norm", "where", "count_nonzero", "std", "var",
                     "median", "ptp"), 3),
}
#: NumPy functions making a new array from their arguments' values (bindings of the names)
_FRESH_FUNCTIONS = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like",
                              "empty_like", "full_like", "copy", "array", "arange", "linspace",
                              "eye", "identity", *_VALUE_FUNCTIONS})
#: methods returning a new array or a number, and attributes that are numbers
_VALUE_METHODS = frozenset({"sum", "max", "min", "mean", "std", "var", "prod", "any", "all",
                            "argmax", "argmin", "copy", "item", "tolist", "dot", "cumsum"})
_NUMBER_ATTRIBUTES = frozenset({"shape", "dtype", "size", "ndim", "nbytes", "itemsize"})


def plain_values(function: ast.FunctionDef, names: set[str], own: set[int]) -> bool:
    """Whether the arrays ``names`` hold are their own, seen only by value: each name is bound
    (``own``: the rebinding statements being rewritten aside) only by an assignment of a new
    array (arithmetic, a NumPy function making one: never another name, an argument, a view
    or an element of something), read only as an operand (arithmetic, comparisons other than
    ``is``, a test, an argument of NumPy functions that return new values, methods that do,
    number attributes, an index of something else, a subscript read so), never updated in
    place, and returned with no other of them in the same ``return``. A select that stands
    for ``x = xn`` makes another object than ``xn``, which only identity, a view or an update
    in place could tell apart (a review found each)."""
    parents = {id(child): node for node in ast.walk(function)
               for child in ast.iter_child_nodes(node)}
    if names & {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}:
        return False  # the caller's own array
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None and \
                len({n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} & names) > 1:
            return False
        if not (isinstance(node, ast.Name) and node.id in names):
            continue
        parent = parents.get(id(node))
        if isinstance(node.ctx, ast.Store):
            if not (isinstance(parent, ast.Assign) and parent.targets == [node] and
                    (id(parent) in own or _fresh(parent.value))):
                return False
        elif isinstance(node.ctx, ast.Del) or not _value_use(node, parents, own):
            return False
    return True


def _fresh(value: ast.expr) -> bool:
    """An expression whose value is a new array (or number) no name holds yet."""
    if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant)):
        return True
    if not isinstance(value, ast.Call) or any(k.arg == "out" for k in value.keywords):
        return False
    name = _numpy_function(value)
    if name is not None:
        return name in _FRESH_FUNCTIONS and len(value.args) <= max(
            _VALUE_FUNCTIONS.get(name, 3), 3)
    func = value.func
    return isinstance(func, ast.Attribute) and func.attr in _VALUE_METHODS


def _value_use(node: ast.expr, parents: dict[int, Any], own: set[int]) -> bool:
    """Whether ``node`` (a name, or a subscript of one) is read by value where it is."""
    parent = parents.get(id(node))
    if isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.FormattedValue)):
        return True
    if isinstance(parent, ast.Compare):
        return not any(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops)
    if isinstance(parent, (ast.If, ast.While, ast.Assert, ast.IfExp)):
        return parent.test is node
    if isinstance(parent, ast.Subscript):
        if parent.value is not node:
            return True  # an index of another array: read
        return isinstance(parent.ctx, ast.Load) and _value_use(parent, parents, own)
    if isinstance(parent, ast.Attribute):
        call = parents.get(id(parent))
        if parent.attr in _NUMBER_ATTRIBUTES:
            return True
        return isinstance(call, ast.Call) and call.func is parent and \
            parent.attr in _VALUE_METHODS and not call.keywords
    if isinstance(parent, ast.keyword):
        call = parents.get(id(parent))
        return parent.arg != "out" and isinstance(call, ast.Call) and \
            _numpy_function(call) in _VALUE_FUNCTIONS
    if isinstance(parent, ast.Call):
        name = _numpy_function(parent)
        return node in parent.args and name in _VALUE_FUNCTIONS and \
            len(parent.args) <= _VALUE_FUNCTIONS[name] and \
            not any(k.arg == "out" for k in parent.keywords)
    if isinstance(parent, ast.Return):
        return True
    if isinstance(parent, ast.Tuple):
        holder = parents.get(id(parent))
        return isinstance(holder, ast.Return) or (
            isinstance(holder, ast.Assign) and id(holder) in own)
    if isinstance(parent, ast.Assign):
        return id(parent) in own
    return False


def _numpy_function(call: ast.Call) -> str | None:
    """``where`` of ``np.where(...)`` (``norm`` of ``np.linalg.norm``): a NumPy function called
    by its module's name; None otherwise."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    root = func.value
    while isinstance(root, ast.Attribute):
        root = root.value
    return func.attr if isinstance(root, ast.Name) and root.id in _MODULES else None


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
