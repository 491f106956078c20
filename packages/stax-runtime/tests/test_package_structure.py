"""The shape issue 11 asks of every package, checked on the installed sources: no import cycle
between modules of a package (imports inside functions, made lazily for printing, excepted), no
private name imported from another module, no module over 600 lines. stax-codegen's own tests
check its imports more strictly (lazy imports too)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGES = ("stax.ir", "stax.trace", "stax.loop", "stax.codegen", "stax.runtime")
MAX_LINES = 600


def sources(package: str) -> dict[str, Path]:
    root = Path(importlib.import_module(package).__file__).parent
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join((package, *parts))
        found[name.removesuffix(".__init__")] = path
    return found


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, list[str]]]:
    """(module, names) per top-level ``from ... import`` of ``name`` that stays in the package."""
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.parse(path.read_text()).body:
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            target = ".".join([*base, node.module] if node.module else base)
        else:
            target = node.module or ""
        names = [a.name for a in node.names]
        if target in modules:
            out.append((target, names))
            out += [(f"{target}.{n}", []) for n in names if f"{target}.{n}" in modules]
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
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


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_between_modules(package):
    modules = sources(package)
    graph = {}
    for name, path in modules.items():
        # a package's __init__ importing its modules is not a cycle with them
        graph[name] = {t for t, _ in imported_modules(name, path, modules)
                       if t != name and not name == package}
    assert cycles(graph) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_private_name_imported_from_another_module(package):
    modules = sources(package)
    every = {n: p for pkg in PACKAGES for n, p in sources(pkg).items()}
    bad = [f"{name}: {target}.{n}" for name, path in modules.items()
           for target, names in imported_modules(name, path, every)
           for n in names if n.startswith("_") and not n.startswith("__")]
    assert bad == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_over_600_lines(package):
    long = {name: n for name, path in sources(package).items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_checks_see_a_cycle_and_a_private_import(tmp_path, monkeypatch):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "__init__.py").write_text("")
    (tmp_path / "p" / "a.py").write_text("from .b import f\n")
    (tmp_path / "p" / "b.py").write_text("from .a import _g\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = sources("p")
    graph = {n: {t for t, _ in imported_modules(n, path, modules)} for n, path in modules.items()}
    assert cycles(graph) == [["p.a", "p.b"]]
    assert ("p.a", ["_g"]) in imported_modules("p.b", modules["p.b"], modules)
