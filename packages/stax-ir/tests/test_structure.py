"""The source checks every package's tests run on themselves (``stax.ir.structure``), on small
packages made for the purpose, and on stax-ir."""

from stax.ir.structure import (
    import_cycles,
    import_graph,
    imports_of,
    long_modules,
    module_sources,
    private_imports,
)


def write(root, files):
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)


def test_a_cycle_and_a_private_import_are_seen(tmp_path, monkeypatch):
    write(tmp_path / "p", {"__init__.py": "", "a.py": "from .b import f\n",
                           "b.py": "from .a import _g\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles(import_graph("p")) == [["p.a", "p.b"]]
    modules = module_sources("p")
    assert ("p.a", ["_g"]) in imports_of("p.b", modules["p.b"], modules)
    assert private_imports("p") == ["p.b: p.a._g"]


def test_a_lazy_import_closes_a_cycle_only_when_asked(tmp_path):
    write(tmp_path / "q", {"__init__.py": "", "a.py": "from .b import f\n",
                           "b.py": "def f():\n    from . import a\n    return a\n",
                           "c.py": "from . import a\n"})
    assert import_cycles(import_graph("q", root=tmp_path / "q", lazy=True)) == [["q.a", "q.b"]]
    assert import_cycles(import_graph("q", root=tmp_path / "q")) == []


def test_a_package_init_importing_its_modules_is_a_cycle_only_with_its_edges(tmp_path):
    write(tmp_path / "r", {"__init__.py": "from .a import f\n", "a.py": "from r import g\n"})
    root = tmp_path / "r"
    assert import_cycles(import_graph("r", root=root)) == [["r", "r.a"]]
    assert import_cycles(import_graph("r", root=root, from_init=False)) == []


def test_stax_ir_keeps_its_shape():
    graph = import_graph("stax.ir", from_init=False)
    assert "stax.ir.passes.dce" in graph
    assert import_cycles(graph) == []
    assert private_imports("stax.ir") == []
    assert long_modules("stax.ir") == {}
