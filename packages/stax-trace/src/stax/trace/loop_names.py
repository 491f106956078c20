"""Which locals a loop touches, read from its AST (``loops``): the names its body (and a
``while`` loop's test) reads, binds, updates in place and binds anew, and whether it can be
rewritten at all; a loop over an array's rows; what its target binds; a body that ends the
loop at a test (``break_form``)."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass

from stax.ir.interpreter import ARRAY_METHODS

#: calls that read or bind a function's locals without naming them: such a loop is not rewritten
REFUSED_CALLS = frozenset({"locals", "vars", "exec", "eval", "super", "globals", "dir"})
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def loop_names(node: ast.For | ast.While, local_names: set[str], cell_names: set[str]
               ) -> tuple[list[str], list[str], list[str], list[str]] | None:
    """(parameters, assigned, mutated, rebound) of a loop that can be rewritten, or None (a
    ``while`` loop's test counts as its body: it reads its names every iteration)."""
    if node.orelse or getattr(node, "type_comment", None):
        return None
    used: set[str] = set()
    assigned: set[str] = set()
    mutated: set[str] = set()
    rebound: set[str] = set()
    augmented_targets: set[int] = set()  # ids of the Name nodes that ``x op= v`` binds
    scoped: set[int] = set()  # ids of the Name nodes a comprehension binds in its own scope
    for child in _walk_body(node):
        if child is None:
            return None
        if isinstance(child, ast.comprehension):
            scoped.update(id(n) for n in ast.walk(child.target) if isinstance(n, ast.Name))
        if isinstance(child, ast.Name) and id(child) in scoped:
            used.add(child.id)
        elif isinstance(child, ast.Name):
            used.add(child.id)
            if isinstance(child.ctx, (ast.Store, ast.Del)):
                assigned.add(child.id)
                if id(child) not in augmented_targets:
                    rebound.add(child.id)
        elif isinstance(child, (ast.Subscript, ast.Attribute)) and \
                isinstance(child.ctx, (ast.Store, ast.Del)):
            base = base_name(child)
            if base is not None:
                mutated.add(base)
        elif isinstance(child, ast.AugAssign) and isinstance(child.target, ast.Name):
            mutated.add(child.target.id)  # an array's += updates the object
            augmented_targets.add(id(child.target))
        elif isinstance(child, ast.Call):
            if isinstance(child.func, ast.Name) and child.func.id in REFUSED_CALLS:
                return None
            if isinstance(child.func, ast.Attribute) and isinstance(child.func.value, ast.Name) \
                    and child.func.attr not in ARRAY_METHODS:
                mutated.add(child.func.value.id)  # x.fill(0), x.sort(): may update x
            for keyword in child.keywords:
                if keyword.arg == "out":  # out=y or out=(y,): y; out=y[i]: y, not i
                    outs = keyword.value.elts if isinstance(keyword.value, ast.Tuple) else \
                        [keyword.value]
                    mutated.update(b for b in map(base_name, outs) if b is not None)
    if assigned & cell_names:  # an inner function reads it through its cell
        return None
    if assigned - local_names:  # a global or nonlocal name: the body function would shadow it
        return None
    params = sorted(used & local_names - cell_names)
    return params, *(sorted(names & set(params)) for names in (assigned, mutated, rebound))


def _walk_body(node: ast.For | ast.While) -> Iterator[ast.AST | None]:
    """The loop's target (a ``while`` loop's test) and body, depth first; None where the loop
    cannot be rewritten."""
    head = node.target if isinstance(node, ast.For) else node.test
    stack: list[tuple[ast.AST, int]] = [(head, 0), *((s, 0) for s in node.body)]
    while stack:
        child, depth = stack.pop()  # depth: loops nested inside this one (break belongs there)
        if isinstance(child, (*SCOPES, ast.Return, ast.Yield, ast.YieldFrom, ast.Await,
                              ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom,
                              ast.Match)):
            yield None
            return
        if isinstance(child, (ast.Break, ast.Continue)) and depth == 0:
            yield None
            return
        if isinstance(child, ast.Delete) and any(isinstance(t, ast.Name) for t in child.targets):
            yield None
            return
        if isinstance(child, (ast.For, ast.While, ast.AsyncFor)) and child.orelse:
            yield None
            return
        yield child
        inner = depth + isinstance(child, (ast.For, ast.While, ast.AsyncFor))
        stack.extend((c, inner) for c in ast.iter_child_nodes(child))


def rows_of(node: ast.For, local_names: set[str], assigned: list[str]
             ) -> tuple[str, str | None, str] | None:
    """``for row in x`` or ``for i, row in enumerate(x)`` with ``x`` a local the body does not
    bind: (x, the index's name or None, the row's name)."""
    it, target = node.iter, node.target
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" \
            and len(it.args) == 1 and not it.keywords and isinstance(target, ast.Tuple) and \
            len(target.elts) == 2 and all(isinstance(e, ast.Name) for e in target.elts):
        source, index, row = it.args[0], target.elts[0].id, target.elts[1].id
        if index == row:
            return None
    elif isinstance(target, ast.Name):
        source, index, row = it, None, target.id
    else:
        return None
    if not isinstance(source, ast.Name) or source.id not in local_names or \
            source.id in assigned or source.id in (index, row):
        return None
    return source.id, index, row


def row_item(rows: tuple[str, str | None, str], item: str) -> ast.expr:
    """``(item, x[item])`` or ``x[item]``: what iterating the rows binds at index ``item``."""
    row = ast.Subscript(ast.Name(rows[0], ast.Load()), ast.Name(item, ast.Load()), ast.Load())
    return ast.Tuple([ast.Name(item, ast.Load()), row], ast.Load()) if rows[1] else row


def binds_target(node: ast.For, augmented: bool = True) -> bool:
    """Whether the body binds a name of the loop's target (its value after the loop is then the
    body's, not the last item); without ``augmented``, an augmented assignment (``row /= s``,
    which keeps an array row the same object) does not count."""
    targets = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    skipped = set() if augmented else {id(n.target) for statement in node.body
                                       for n in ast.walk(statement) if isinstance(n, ast.AugAssign)}
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)) and
               n.id in targets and id(n) not in skipped
               for statement in node.body for n in ast.walk(statement))


def base_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


@dataclass(frozen=True)
class BreakForm:
    """A loop body ``S1; if C: S2; break; S3`` whose ``S2`` and ``S3`` are the same statements
    (or both none): each iteration runs ``S1``, tests ``C`` and runs ``S3``, and the loop ends
    after an iteration where ``C`` held."""

    before: list[ast.stmt]  # S1
    stop: ast.expr  # C
    after: list[ast.stmt]  # S3

    def analysed(self, node: ast.For | ast.While) -> ast.For | ast.While:
        """``node`` with the body the names are read from: ``S1; C; S3``, no ``break``."""
        clone = copy.copy(node)
        clone.body = [*self.before, ast.Expr(self.stop), *self.after]
        return clone


def break_form(node: ast.For | ast.While) -> BreakForm | None:
    """The loop's body as a ``BreakForm``, or None (no ``break`` of its own, or another
    form: a ``continue``, two breaks, statements that run only on one side of the test)."""
    body = node.body
    found = [k for k, s in enumerate(body) if isinstance(s, ast.If) and s.body and
             isinstance(s.body[-1], ast.Break) and not s.orelse]
    if len(found) != 1:
        return None
    k = found[0]
    both, after = body[k].body[:-1], body[k + 1:]
    if [ast.dump(s) for s in both] != [ast.dump(s) for s in after]:
        return None
    if any(jumps(s) for s in (*body[:k], *after)) or jumps(ast.Expr(body[k].test)):
        return None
    return BreakForm(body[:k], body[k].test, after)


def jumps(statement: ast.AST) -> bool:
    """Whether ``statement`` breaks or continues the loop it is in: not a loop's inside it, but
    one in the ``else:`` of a loop inside it, which is the outer loop's."""
    stack = [statement]
    while stack:
        child = stack.pop()
        if isinstance(child, (ast.Break, ast.Continue)):
            return True
        if isinstance(child, (ast.For, ast.While, ast.AsyncFor)):
            stack.extend(child.orelse)
        elif not isinstance(child, SCOPES):
            stack.extend(ast.iter_child_nodes(child))
    return False


def name_bindings(function: ast.FunctionDef) -> list[tuple[int | None, str]]:
    """Every binding of a name in ``function`` (nested scopes' too: a conservative list): the
    Name node's id for an assignment, deletion or loop target, None for a parameter, an
    import, an ``except ... as``, a ``match`` capture or a ``global``/``nonlocal``."""
    found: list[tuple[int | None, str]] = []
    for n in ast.walk(function):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            found.append((id(n), n.id))
        elif isinstance(n, ast.arg):
            found.append((None, n.arg))
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            found.extend((None, (a.asname or a.name).split(".")[0]) for a in n.names)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            found.extend((None, name) for name in n.names)
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
            found.append((None, n.name))
    return found


def int_presets(function: ast.FunctionDef, loop: ast.stmt) -> set[int]:
    """The Name nodes of ``name = <int literal>`` statements of ``function`` before ``loop`` (by
    line), outside every loop and nested scope: a loop's target defined in case the loop runs
    no item (``it = 0``)."""
    found: set[int] = set()
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (*SCOPES, ast.For, ast.While, ast.AsyncFor)):
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and \
                isinstance(node.value, ast.Constant) and type(node.value.value) is int and \
                node.end_lineno is not None and node.end_lineno < loop.lineno:
            found.add(id(node.targets[0]))
        stack.extend(ast.iter_child_nodes(node))
    return found
