"""An indirect load is its own expression kind, not a ``Load`` with an index that means nothing:
it has no ``index``, ``loads`` lists it (its buffer is read anywhere) and ``affine_loads`` does
not, and its JSON form is the one documents have always had."""

import json
from pathlib import Path

from stax.loop import (
    Affine,
    Binary,
    Const,
    IndirectLoad,
    Load,
    affine_loads,
    load_loopir,
    loads,
    postorder,
)
from stax.loop.expr import expr_from_json, expr_to_json

FIXTURE = (Path(__file__).parents[2] / "stax-codegen" / "tests" / "fixtures"
           / "features.loopir.schema-1.2.json")


def _example() -> tuple[Load, IndirectLoad, Binary]:
    direct = Load("x", Affine.var("x0"), "int64")
    indirect = IndirectLoad("y", "float32", Binary("mul", direct, Const(2, "int64"), "int64"))
    return direct, indirect, Binary("add", indirect, Const(1.0, "float32"), "float32")


def test_an_indirect_load_is_no_load_and_has_no_index():
    _, indirect, _ = _example()
    assert not isinstance(indirect, Load)
    assert not hasattr(indirect, "index")
    assert indirect.children() == (indirect.offset,)


def test_loads_list_it_and_affine_loads_do_not():
    direct, indirect, root = _example()
    assert loads(root) == [direct, indirect]
    assert affine_loads(root) == [direct]


def test_the_json_form_is_unchanged():
    _, _, root = _example()
    doc = expr_to_json(root)
    assert doc[3] == ["indirect_load", "float32", "y", 2]  # [kind, dtype, buffer, offset]
    again = expr_from_json(json.loads(json.dumps(doc)))
    assert expr_to_json(again) == doc
    assert type(again.a) is IndirectLoad and again.a.buffer == "y"


def test_an_old_document_with_indirect_loads_still_loads():
    program = load_loopir(FIXTURE)
    found = [e for b in program.buffers if hasattr(b, "data")
             for e in postorder(b.data.body) if isinstance(e, IndirectLoad)]
    assert found and all(not hasattr(e, "index") and e.offset.dtype == "int64" for e in found)
