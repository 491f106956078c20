"""The shape issue 11 asks of every package, checked on the installed sources: no import cycle
between modules of a package (imports inside functions, made lazily for printing, excepted), no
private name imported from another module, no module over 600 lines. stax-codegen's own tests
check its imports more strictly (lazy imports too); stax-ir's test the checks themselves
(``stax.ir.structure``)."""

from __future__ import annotations

import pytest

from stax.ir.structure import import_cycles, import_graph, long_modules, private_imports

PACKAGES = ("stax.ir", "stax.trace", "stax.loop", "stax.codegen", "stax.runtime")


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_between_modules(package):
    # a package's __init__ importing its modules is not a cycle with them
    graph = import_graph(package, from_init=False)
    assert len(graph) > 3
    assert import_cycles(graph) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_private_name_imported_from_another_module(package):
    assert private_imports(package, among=PACKAGES) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_over_600_lines(package):
    assert long_modules(package, 600) == {}
