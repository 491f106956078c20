"""What a loop's body does, read from its AST (``loops``): which locals it binds before it reads
them, and whether it has Python effects a lifted step would repeat or drop.

A lifted loop runs every item from the locals before the loop (``loop_state``); a local the
body binds but that is unbound before the loop is then given a placeholder, which is right only
when no item reads it before binding it (``bound_before_read``). Such a local that nothing
after the loop reads either (``used_outside``: ``blk = x[i * bs:(i + 1) * bs]``) is the body's
scratch: a lifted step neither takes nor returns it. A body that prints, appends to
a list or writes a file has effects on every item that a compiled body would not have, and that
the capture's trial runs would repeat (``effects``): such a loop unrolls, each iteration run once
by the capture.
"""

from __future__ import annotations

import ast
from typing import Any

from .loop_names import int_presets

#: calls with a Python effect: the builtins, and methods that update their object in place
_EFFECT_FUNCTIONS = frozenset({"print", "input", "open", "setattr", "delattr", "exec", "next"})
#: names that read a function's locals without naming them (called or not: ``L = locals``)
_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec", "dir"})
#: attributes that reach a frame's locals (``sys._getframe().f_locals``, ``inspect.stack()``)
_FRAMES = frozenset({"f_locals", "_getframe", "currentframe", "stack", "tb_frame", "f_back",
                     "getframeinfo", "getouterframes", "trace"})
_EFFECT_METHODS = frozenset({
    "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "add",
    "discard", "setdefault", "write", "writelines", "flush", "put", "put_nowait", "send",
    "sort", "reverse", "__setitem__", "__delitem__"})


def bound_before_read(body: list[ast.stmt], names: list[str]) -> frozenset[str]:
    """Those of ``names`` that the body binds, by a plain assignment among its top-level
    statements, before any statement reads them or binds them on one path only (inside an
    ``if``, a ``try``, a ``with``...); names the body never reads count too."""
    found = set()
    for name in names:
        for statement in body:
            loads, stores = _mentions(statement, name)
            if (loads or stores) and _inner_loop_binding(statement, name, bound_before_read):
                continue  # an inner loop's own local (each of its items binds it first)
            if loads:
                break
            if stores:
                if isinstance(statement, (ast.Assign, ast.AnnAssign)):
                    found.add(name)
                break
        else:
            found.add(name)
    return frozenset(found)


def _inner_loop_binding(statement: ast.stmt, name: str, rule: Any) -> bool:
    """Whether ``statement`` is a ``for`` loop whose every item binds ``name`` (as its target, or
    by ``rule``: ``bound_before_read``, ``rebound_before_update``) before its body reads or
    updates it, and whose ``iter`` does not mention it: its reads there are of its items' own
    values. The loop
    may run no item, so the statements after it decide as if it were not there (``d = pos[i] -
    pos[j]; d -= L * np.round(d / L)`` in an inner ``for j`` loop: a local of each pair)."""
    if not isinstance(statement, ast.For) or statement.orelse or \
            any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(statement.iter)):
        return False
    if isinstance(statement.target, ast.Name) and statement.target.id == name:
        return True  # its target (``for j in range(i + 1, n)``): each item binds it first
    return not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(statement.target)) \
        and name in rule(statement.body, [name])


def rebound_before_update(body: list[ast.stmt], names: list[str]) -> frozenset[str]:
    """Those of ``names`` the body binds anew, by a plain top-level assignment, before any
    statement could update their object in place: the statements before it do not mention the
    name, and the assignment reads it only as an operand of arithmetic, a comparison or a
    subscript (``v = v * 0.95 + I[t]``; not ``v = f(v)``, which might update it). Its updates
    after (``v[s] = 0.0``) are then of the array this item made."""
    found = set()
    for name in names:
        inner = False  # mentioned so far only by inner loops binding it anew themselves
        for statement in body:
            loads, stores = _mentions(statement, name)
            if not (loads or stores):
                continue
            if _inner_loop_binding(statement, name, rebound_before_update):
                inner = True
                continue
            if isinstance(statement, ast.Assign) and \
                    any(isinstance(t, ast.Name) and t.id == name for t in statement.targets) and \
                    all(isinstance(t, ast.Name) for t in statement.targets) and \
                    _operand_only(statement.value, name):
                found.add(name)
            break
        else:
            if inner:
                found.add(name)
    return frozenset(found)


#: NumPy functions that read their arguments and return a new array (no view), with the most
#: positional arguments before an ``out`` one (``np.add(u, 1, u)`` writes into ``u``)
NEW_ARRAYS = {
    **dict.fromkeys(("abs", "absolute", "sqrt", "exp", "exp2", "expm1", "log", "log1p", "log2",
                     "log10", "sin", "cos", "tan", "sinh", "cosh", "tanh", "arctan", "cbrt",
                     "square", "sign", "negative", "floor", "ceil", "rint"), 1),
    **dict.fromkeys(("arctan2", "hypot", "power", "add", "subtract", "multiply", "divide",
                     "true_divide", "maximum", "minimum", "fmax", "fmin", "round"), 2),
    **dict.fromkeys(("roll", "where", "clip", "cumsum"), 3)}  # (``np.diff(u, 0)`` is ``u``)


def _operand_only(expr: ast.expr, name: str) -> bool:
    """Whether ``expr`` reads ``name`` only as an operand of arithmetic, a comparison, the value
    of a subscript or the object of ``.copy()`` (nothing it is passed to could update it; a
    copy is a new array: ``u = u.copy(); u[1:-1] += ...``, a heat step)."""
    allowed: set[int] = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "copy" and not node.args and \
                all(k.arg == "order" for k in node.keywords):
            allowed.add(id(node.func.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy") \
                and len(node.args) <= NEW_ARRAYS.get(node.func.attr, -1) and \
                not any(k.arg == "out" for k in node.keywords) and \
                (node.func.attr != "where" or len(node.args) == 3):  # (one: a tuple of indices)
            allowed.update(id(a) for a in node.args)  # (``np.roll(u, 1)``: read, not written)
        elif isinstance(node, ast.BinOp):
            allowed.update((id(node.left), id(node.right)))
        elif isinstance(node, ast.UnaryOp):
            allowed.add(id(node.operand))
        elif isinstance(node, ast.Compare):
            allowed.update(id(n) for n in (node.left, *node.comparators))
        elif isinstance(node, ast.Subscript):
            allowed.add(id(node.value))
    return all(id(node) in allowed for node in ast.walk(expr)
               if isinstance(node, ast.Name) and node.id == name)


def name_uses(function: ast.FunctionDef) -> list[tuple[int, str]] | None:
    """Every read or deletion of a name in ``function`` (the node's id, the name), taken before
    any loop of it is rewritten; None when the function reads its locals by other means
    (``locals()``, ``vars()``, ``eval``, ``exec``, a frame's ``f_locals``), so that any local
    may be read. (A function it calls could read them through its caller's frame too: not
    seen.)"""
    uses = []
    for node in ast.walk(function):
        if (isinstance(node, ast.Name) and node.id in _INTROSPECTION) or \
                (isinstance(node, ast.Attribute) and node.attr in _FRAMES):
            return None
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            uses.append((id(node), node.id))
    return uses


def unread_after(uses: list[tuple[int, str]] | None, loop: ast.For, names: set[str]
                 ) -> frozenset[str]:
    """Those of ``names`` that nothing outside ``loop`` reads (``uses``, ``name_uses``:
    anywhere else, before the loop too, which an enclosing loop runs after it)."""
    if uses is None:
        return frozenset()
    inside = {id(node) for node in ast.walk(loop)}
    return frozenset(names - {name for at, name in uses if at not in inside})


def _mentions(statement: ast.stmt, name: str) -> tuple[bool, bool]:
    loads = stores = False
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and node.id == name:
            if isinstance(node.ctx, ast.Load):
                loads = True
            else:
                stores = True
    return loads, stores


def outside_effects(function: ast.FunctionDef) -> str | None:
    """The first call in ``function`` with an effect its caller could see, or None: a method
    call on a container the function made itself (``out = []; out.append(v)``: bound to a
    fresh ``[]``, ``{}``, ``set()``... and nothing else) is no such effect."""
    bound: dict[str, list[ast.expr | None]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr,
                               ast.Global, ast.Nonlocal)):
            for name in ast.walk(node.target if hasattr(node, "target") else node):
                if isinstance(name, ast.Name):
                    bound.setdefault(name.id, []).append(None)
            for name in getattr(node, "names", ()):
                bound.setdefault(name, []).append(None)
    arguments = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    fresh = {name for name, values in bound.items() if name not in arguments and
             all(_fresh_container(v) for v in values)}
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _EFFECT_METHODS and \
                isinstance(func.value, ast.Name) and func.value.id in fresh:
            continue
        if (isinstance(func, ast.Name) and func.id in _EFFECT_FUNCTIONS) or \
                (isinstance(func, ast.Attribute) and func.attr in _EFFECT_METHODS):
            return ast.unparse(func)
    return None


def _fresh_container(value: ast.expr | None) -> bool:
    if isinstance(value, (ast.List, ast.Dict, ast.Set)):
        return not any(isinstance(n, ast.Starred) for n in ast.walk(value))
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
        value.func.id in ("list", "dict", "set") and not value.args and not value.keywords


def effects(body: list[ast.stmt], item: str | None = None) -> str | None:
    """The first call in the body with a Python effect (``print(...)``, ``log.append(...)``),
    as source text, or a type query of the loop's ``item`` (``TYPE_QUERY``), or None."""
    for statement in body:
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if (isinstance(func, ast.Name) and func.id in _EFFECT_FUNCTIONS) or \
                    (isinstance(func, ast.Attribute) and func.attr in _EFFECT_METHODS):
                return ast.unparse(func)
    queried = next((c for c in _type_queries(body) if item in _names(c.args)), None)
    return None if queried is None else f"{TYPE_QUERY}: {ast.unparse(queried)}"


#: calls that answer from a value's type: the item of a lifted loop (and a counter computed
#: from it) is an int64 in the compiled body (``isinstance(i, int)`` False), a Python int
#: eagerly
TYPE_QUERIES = frozenset({"isinstance", "issubclass", "type", "hasattr", "getattr", "vars",
                          "dir", "id"})
#: ``effects``' answer for a body asking the type of its item (the lift is refused)
TYPE_QUERY = "a type query of the loop's item"


def _type_queries(body: list[ast.stmt]) -> list[ast.Call]:
    return [c for statement in body for c in ast.walk(statement) if isinstance(c, ast.Call)
            and isinstance(c.func, ast.Name) and c.func.id in TYPE_QUERIES]


def _names(nodes: list[ast.expr]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def type_queried(body: list[ast.stmt]) -> set[str]:
    """The names an argument of a type query in ``body`` mentions (``isinstance(n, int)``)."""
    return {name for call in _type_queries(body) for name in _names(call.args)}


#: functions and methods that write into an array they are given
_IN_PLACE_CALLS = frozenset({"copyto", "place", "putmask", "put", "fill", "sort", "partition",
                             "itemset", "resize", "setflags", "at", "fill_diagonal",
                             "put_along_axis"})


def while_effects(test: ast.expr, body: list[ast.stmt]) -> str | None:
    """``effects`` of a ``while`` loop, or the first call in its test that writes into an
    array (``out=``, ``np.copyto``, ``x.sort()``), as source text, or None: a lifted step runs
    the test apart from the iterations it traces, and such a loop is captured as written."""
    found = effects([ast.Expr(test), *body])
    if found is not None:
        return found
    for node in ast.walk(test):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else \
            func.id if isinstance(func, ast.Name) else None
        if any(k.arg == "out" for k in node.keywords) or name in _IN_PLACE_CALLS:
            return ast.unparse(node)
    return None


def target_returned(node: ast.For, uses: list[tuple[int, str]] | None, results: Any,
                    bindings: list[tuple[int | None, str]], function: ast.FunctionDef
                    ) -> set[int] | None:
    """Where code outside the loop reads the names its target binds: nowhere (empty), only
    as elements of returned results, for a plain name over ``range(...)`` (the result
    names' ids: a lifted step gives the last item it ran, converted to a Python int), or
    elsewhere (None)."""
    targets = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    if uses is None:
        return None
    inside = {id(n) for n in ast.walk(node)}
    reads = {at for at, name in uses if name in targets and at not in inside}
    if not reads:
        return set()
    ranged = isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Call) and \
        isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range"
    # read where only this loop binds it (no binding after it: the value read is the last
    # item), or also an int literal before it (``it = 0``, defining it where the loop runs
    # no item: a lifted loop runs one at least, and the count is in the key)
    own = {id(n) for n in ast.walk(node.target)}
    presets = int_presets(function, node)
    alone = not any(name in targets and at not in own and at not in presets
                    for at, name in bindings)
    return reads if ranged and alone and reads <= results.keys() else None

