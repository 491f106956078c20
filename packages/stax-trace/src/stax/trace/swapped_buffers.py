"""Double buffers a loop swaps (``b[1:-1] = f(a); a, b = b, a``): which of its names may hold
arrays no other name, container or object of the function sees (``LoopSite.own_buffers``).

A lifted step leaves each array holding the final value of the name it had before the loop,
where eagerly the arrays trade places with the names (which one ends as ``a`` depends on the
count's parity). Only the arrays' identities tell the two apart, so the lift takes the swap
only where nothing but these names can reach the arrays: judged on the function's source (a
capture's look at its frames would miss containers, attributes, closures, other frames). Each
load of such a name anywhere in the function must read the array without keeping it: the base of
a subscript or an attribute, an operand of arithmetic or a comparison, a value returned, an
argument of a NumPy function that makes a new array, ``len``, or the swap itself; a name loaded
anywhere else (``keep = a``, ``[a, b]``, ``f(a)``, ``lambda x=a: x``, ``G["a"] = a``) is no own
buffer. The lift checks the rest on the values (not an argument, no live view).
"""

from __future__ import annotations

import ast

from .loop_body import NEW_ARRAYS

#: NumPy functions reading their arguments and returning another object, by name, with the
#: most positional arguments before an ``out`` one: those making a new array
#: (``loop_body.NEW_ARRAYS``), and reductions, predicates and products
_READING = {
    **NEW_ARRAYS,
    **dict.fromkeys(("isnan", "isfinite", "zeros_like", "ones_like", "empty_like", "copy", "sum",
                     "mean", "max", "min", "amax", "amin", "any", "all"), 1),
    **dict.fromkeys(("dot", "vdot", "inner", "allclose", "array_equal", "isclose"), 2)}


def own_buffers(function: ast.FunctionDef, loop: ast.For, names: set[str]) -> frozenset[str]:
    """Those of ``names`` (the loop's locals it updates in place or binds anew) that every
    load in ``function`` reads without keeping (see the module's docstring), and that the loop
    binds only by a swap among them or by an augmented assignment."""
    parents = {id(child): node for node in ast.walk(function)
               for child in ast.iter_child_nodes(node)}
    swaps = {id(n) for n in ast.walk(loop) if _swap(n, names)}
    kept: set[str] = set()
    for node in ast.walk(function):
        if not isinstance(node, ast.Name) or node.id not in names:
            continue
        parent = parents.get(id(node))
        if not isinstance(node.ctx, ast.Load):
            statement = _statement(parents, node)
            if _within(parents, node, loop):
                if id(statement) not in swaps and not isinstance(statement, ast.AugAssign):
                    kept.add(node.id)  # bound in the loop otherwise: another array
            elif not _fresh_binding(statement, node):
                kept.add(node.id)  # ``a = keep``, ``keep = a = ...``, ``a, b = pair``...
            continue
        if _nested(parents, node, function) or not _reads(node, parent, parents, swaps):
            kept.add(node.id)  # (a nested function's ``return a`` may keep it)
    return frozenset(names - kept)


def _swap(node: ast.AST, names: set[str]) -> bool:
    """``a, b = b, a`` (or a rotation ``a, b, c = b, c, a``) of ``names`` alone."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and
            isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple)):
        return False
    left, right = node.targets[0].elts, node.value.elts
    return len(left) == len(right) and all(
        isinstance(e, ast.Name) and e.id in names for e in (*left, *right)) and \
        sorted(e.id for e in left) == sorted(e.id for e in right)


#: methods of an array that return another object (never the array itself)
_OTHER_RESULTS = frozenset({
    "sum", "mean", "max", "min", "std", "var", "prod", "any", "all", "argmax", "argmin",
    "copy", "tolist", "item", "dot", "cumsum", "round", "clip"})
#: a fresh array: what a swapped name may be bound to outside the loop
_MAKERS = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                     "full_like", "array", "copy", "arange", "linspace"})


def _fresh_binding(statement: ast.AST | None, node: ast.Name) -> bool:
    """Whether ``statement`` binds ``node`` alone to a new array (``a = u.copy()``,
    ``np.zeros(...)``, arithmetic), nothing else bound to it by the same statement."""
    if not (isinstance(statement, ast.Assign) and statement.targets == [node]):
        return False
    value = statement.value
    if isinstance(value, (ast.BinOp, ast.UnaryOp)):
        return True
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    func = value.func
    if func.attr == "copy" and not value.args and not value.keywords:
        return True  # ``u.copy()``
    return isinstance(func.value, ast.Name) and func.value.id in ("np", "numpy") and \
        func.attr in _MAKERS and not any(k.arg in ("out", "like") for k in value.keywords)


def _reads(node: ast.Name, parent: ast.AST | None, parents: dict[int, ast.AST],
           swaps: set[int]) -> bool:
    if isinstance(parent, ast.Subscript) and parent.value is node:
        # (a view kept before the loop is a live view the lift refuses; one kept after it
        # views the name's final array, as eagerly)
        return True
    if isinstance(parent, ast.Attribute) and parent.value is node:
        call = parents.get(id(parent))
        if isinstance(call, ast.Call) and call.func is parent:  # a method: one that makes
            return parent.attr in _OTHER_RESULTS and \
                not any(k.arg == "out" for k in call.keywords)  # another object
        return True  # ``a.shape``, ``a.T`` (a view: as a subscript's)
    if isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Return)):
        return True
    if isinstance(parent, ast.Tuple):
        holder = parents.get(id(parent))
        return isinstance(holder, ast.Return) or (isinstance(holder, ast.Assign) and
                                                   id(holder) in swaps)
    if isinstance(parent, ast.Call) and node in parent.args:
        return _reading_call(parent)
    return False


def _reading_call(call: ast.Call) -> bool:
    """``len(a)``, or a NumPy function of ``_READING`` given no ``out`` (by keyword, or by
    position: no more positional arguments than its inputs)."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "len"
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
        func.value.id in ("np", "numpy") and func.attr in _READING and \
        len(call.args) <= _READING[func.attr] and \
        not any(k.arg == "out" or k.arg is None for k in call.keywords)


def _statement(parents: dict[int, ast.AST], node: ast.AST) -> ast.AST | None:
    while node is not None and not isinstance(node, ast.stmt):
        node = parents.get(id(node))
    return node


def _within(parents: dict[int, ast.AST], node: ast.AST, loop: ast.AST) -> bool:
    while node is not None:
        if node is loop:
            return True
        node = parents.get(id(node))
    return False


def _nested(parents: dict[int, ast.AST], node: ast.AST, function: ast.AST) -> bool:
    """Whether ``node`` is inside a function or lambda nested in ``function``."""
    node = parents.get(id(node))
    while node is not None and node is not function:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return True
        node = parents.get(id(node))
    return False
