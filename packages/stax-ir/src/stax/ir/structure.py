"""The shape every Stax package keeps (issue 11), read from its installed sources: which of its
modules import which, the cycles among them, private names imported across modules, and modules
over a length. Each package's tests check themselves with these (a package's tests run with only
its own dependencies installed, and every package depends on this one).

    graph = import_graph("stax.codegen", lazy=True)
    assert import_cycles(graph) == []
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

#: the longest module a package keeps, in lines
MAX_LINES = 600


def module_sources(package: str, root: Path | None = None) -> dict[str, Path]:
    """Every module of ``package`` (an importable name, or a name given to the sources under
    ``root``) and its file; a subpackage is named by its ``__init__.py``."""
    if root is None:
        root = Path(importlib.import_module(package).__file__).parent
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join((package, *parts)).removesuffix(".__init__")] = path
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path], *, lazy: bool = False
               ) -> list[tuple[str, list[str]]]:
    """``(module, imported names)`` for each import of module ``name`` (at ``path``) of one of
    ``modules``: at module level, or anywhere with ``lazy`` (an import inside a function closes a
    cycle as well). ``from . import x`` of a submodule ``x`` imports ``x``, not the package."""
    tree = ast.parse(path.read_text())
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: list[tuple[str, list[str]]] = []
    for node in (ast.walk(tree) if lazy else tree.body):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name in modules]
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = ".".join([*here[:len(here) - node.level + 1], node.module or ""]).strip(".")
        else:
            base = node.module or ""
        names = [a.name for a in node.names]
        submodules = [f"{base}.{n}" for n in names if f"{base}.{n}" in modules]
        if base in modules and len(submodules) < len(names):
            out.append((base, names))
        out += [(m, []) for m in submodules]
    return out


def import_graph(package: str, *, lazy: bool = False, root: Path | None = None,
                 from_init: bool = True) -> dict[str, set[str]]:
    """Each module of ``package`` and the package's modules it imports (see ``imports_of``).
    Without ``from_init`` the package's own ``__init__`` has no edges: its importing every
    module is then not a cycle with a module importing a name from it."""
    modules = module_sources(package, root)
    graph = {}
    for name, path in modules.items():
        if name == package and not from_init:
            graph[name] = set()
            continue
        graph[name] = {m for m, _ in imports_of(name, path, modules, lazy=lazy) if m != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def private_imports(package: str, among: tuple[str, ...] = ()) -> list[str]:
    """``module: source.name`` for each underscore name a module of ``package`` imports from
    another module of it or of the packages ``among``."""
    modules = module_sources(package)
    every = dict(modules)
    for other in among:
        every.update(module_sources(other))
    return [f"{name}: {target}.{n}" for name, path in modules.items()
            for target, names in imports_of(name, path, every)
            for n in names if n.startswith("_") and not n.startswith("__")]


def long_modules(package: str, limit: int = MAX_LINES) -> dict[str, int]:
    """The modules of ``package`` over ``limit`` lines, with their lengths."""
    return {name: n for name, path in module_sources(package).items()
            if (n := len(path.read_text().splitlines())) > limit}
