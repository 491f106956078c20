"""Numbers converted only to be returned (``return float(loss)``, ``int(x.argmax())``,
``x.item()``): no data gate, one version whatever the values, the conversion made on every
call by the result's tree (``stax.trace.result_conversions``) and by the machine-code entry
(``stax.codegen.cpu.entry_results``) — what eager Python returns and raises."""

import json
import sys

import numpy as np
import pytest

import stax.runtime as stax
from stax.ir import TreeDef, load_capture
from stax.ir.pytree import tree_flatten, tree_leaves, tree_unflatten
from stax.trace import trace


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


def _agree(fn, make, seeds=range(5), rtol=1e-12):
    """Compiled and eager results equal, with the same Python types and structure, over several
    inputs; the compiled function returned."""
    compiled = stax.compile(fn)
    for seed in seeds:
        args = make(seed)
        got, want = compiled(*args), fn(*args)
        assert tree_flatten(got)[1] == tree_flatten(want)[1]
        for g, w in zip(tree_leaves(got), tree_leaves(want)):
            assert type(g) is type(w), (g, w)
            np.testing.assert_allclose(g, w, rtol=rtol)
    return compiled


def _random(n, seed, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


def loss(y, p):
    return float(np.mean((y - p) ** 2))


def test_a_returned_float_is_no_gate_and_one_version():
    compiled = _agree(loss, lambda s: (_random(1000, s), _random(1000, s + 10)))
    assert len(compiled.versions()) == 1
    assert not trace(loss, (_random(10, 0), _random(10, 1))).gates
    entry = compiled.versions()[0].entry
    assert entry is not None and not isinstance(entry, str)
    hits = entry.hits
    y, p = _random(1000, 7), _random(1000, 8)
    assert compiled(y, p) == pytest.approx(loss(y, p), rel=1e-12)
    assert entry.hits == hits + 1  # converted by the machine-code entry


def test_int_bool_and_item_among_arrays():
    def stats(x):
        return x * 2, int(x.argmax()), bool(x.max() > 1.0), x.min().item(), len(x)

    compiled = _agree(stats, lambda s: (_random(100, s),))
    assert len(compiled.versions()) == 1
    got = compiled(_random(100, 3))
    assert [type(v) for v in got] == [np.ndarray, int, bool, float, int]


def test_integer_and_float32_items():
    def f(x, y):
        return x.sum().item(), y.max().item(), int(y.argmin()), float(y.sum())

    _agree(f, lambda s: (np.arange(s, s + 10, dtype=np.int32), _random(30, s, np.float32)),
           rtol=1e-5)


def test_nested_and_dict_results():
    def f(x):
        return {"mean": x.mean().item(), "parts": (float(x[0]), [int(x.argmax())])}

    compiled = _agree(f, lambda s: (_random(50, s),))
    got = compiled(_random(50, 4))
    assert type(got["parts"][0]) is float and type(got["parts"][1][0]) is int


def test_int_of_nan_raises_as_eager_and_releases_the_results():
    def f(x):
        return x + 1, int(x.sum())

    compiled = stax.compile(f)
    x = np.arange(5.0)
    compiled(x)
    compiled(x)
    bad = x.copy()
    bad[1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        f(bad)
    refs = sys.getrefcount(bad)
    for _ in range(5):
        with pytest.raises(ValueError, match="NaN"):
            compiled(bad)
    assert sys.getrefcount(bad) == refs
    assert compiled(x)[1] == 10
    with pytest.raises(OverflowError):
        compiled(np.array([np.inf, 1.0, 2.0, 3.0, 4.0]))


def test_only_conversions_that_are_the_result_are_kept_traced():
    def plus(x):
        return float(x.sum()) + 1.0  # Python adds to the number: a gate, as before

    capture = trace(plus, (_random(10, 0),))
    assert [g.kind for g in capture.gates] == ["float"]

    def branch(x):
        k = int(x.argmax())
        if k > 5:
            return x * 2, k
        return x * 3, k

    compiled = _agree(branch, lambda s: (_random(10, s),), seeds=range(8))
    assert len(compiled.versions()) >= 2  # each branch its version


def test_a_shadowed_conversion_name_is_the_users():
    def f(x, float=lambda v: v * 10):
        return float(x.sum())

    _agree(f, lambda s: (_random(10, s),))


def test_calls_of_the_function_inside_capture_get_numbers():
    inner = stax.compile(lambda x: x)

    @stax.compile
    def total(x):
        return float(x.sum())

    def outer(x):
        return total(x) * 2 + inner(x)

    _agree(outer, lambda s: (_random(10, s),))

    def rec(x, n):
        if n == 0:
            return float(x.sum())
        return rec(x * 2, n - 1) + 1

    _agree(rec, lambda s: (_random(10, s), 2))


def test_the_capture_document_says_which_results_python_converts():
    capture = trace(loss, (_random(10, 0), _random(10, 1)))
    assert capture.output_tree == TreeDef("python", (TreeDef("leaf"),), ("float",))
    doc = capture.to_json()
    assert doc["schema"] == "stax.capture/1.3"
    again = load_capture(json.loads(json.dumps(doc)))
    assert again.output_tree == capture.output_tree
    assert tree_unflatten(again.output_tree, [np.float64(2.5)]) == 2.5


def test_a_tree_of_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="result tree"):
        TreeDef.from_json({"kind": "python", "children": ["*"], "keys": ["str"]})
    with pytest.raises(ValueError, match="result tree"):
        TreeDef.from_json({"kind": "set", "children": ["*"]})


def test_every_layers_document_declares_the_conversions(tmp_path, monkeypatch):
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    compiled = stax.compile(loss)
    y, p = _random(20, 0), _random(20, 1)
    compiled(y, p)
    schemas = {path.name.split(".")[-2]: json.loads(path.read_text())["schema"]
               for path in tmp_path.glob("loss.v0.*.json")}
    assert schemas == {"capture": "stax.capture/1.3", "opgraph": "stax.opgraph/1.2",
                       "loopir": "stax.loopir/1.9", "kernels": "stax.kernels/1.13"}
    for path in tmp_path.glob("loss.v0.*.json"):
        tree = json.loads(path.read_text())["output_tree"]
        assert tree == {"kind": "python", "children": ["*"], "keys": ["float"]}


def test_a_name_bound_to_a_conversion_and_only_returned_stays_traced():
    def metrics(y, p):
        loss = float(np.mean((y - p) ** 2))
        hits = int(np.count_nonzero((p > 0.5) == (y > 0.5)))
        return {"loss": loss, "hits": hits}, loss

    compiled = _agree(metrics, lambda s: (_random(200, s), _random(200, s + 3)))
    assert len(compiled.versions()) == 1
    assert not trace(metrics, (_random(20, 0), _random(20, 1))).gates


def test_a_name_read_otherwise_keeps_its_gate():
    def printed(x):
        total = float(x.sum())
        scaled = x / total  # read by the program: Python's number, a gate
        return scaled, total

    def rebound(x):
        total = float(x.sum())
        total = float(x.max())
        return total

    def branched(x):
        total = float(x.sum())
        if x[0] > 0:
            return total
        return -1.0

    assert [g.kind for g in trace(printed, (_random(20, 0),)).gates] == ["float"]
    assert [g.kind for g in trace(rebound, (_random(20, 0),)).gates] == ["float", "float"]
    _agree(printed, lambda s: (_random(20, s),))
    _agree(rebound, lambda s: (_random(20, s),))
    _agree(branched, lambda s: (_random(20, s),), seeds=range(6))


def test_lists_and_dicts_of_results_keep_the_machine_code_entry():
    def parts(x):
        return {"mean": float(x.mean()), "scaled": [x * 2, (x.max(), int(x.argmin()))],
                7: x - 1}

    compiled = _agree(parts, lambda s: (_random(64, s),))
    entry = compiled.versions()[0].entry
    assert entry is not None and not isinstance(entry, str)
    x = _random(64, 9)
    refs, hits = sys.getrefcount(x), entry.hits
    for _ in range(50):
        got = compiled(x)
    assert entry.hits == hits + 50 and sys.getrefcount(x) == refs
    assert list(got) == ["mean", "scaled", 7] and type(got["scaled"]) is list
    np.testing.assert_array_equal(got[7], x - 1)


def test_conversions_a_handler_or_the_frame_may_see_are_not_rewritten():
    def caught(x):
        try:
            return int(x.sum())
        except ValueError:  # int(nan): eager's -1
            return -1

    def updated(x):
        acc = np.zeros(())
        acc[...] = x.sum()
        v = float(acc)
        acc += 1  # after the conversion: v keeps the value it had
        return v, acc

    def frame(x):
        v = float(x.sum())
        return v, locals()["v"] * 2

    clean, bad = np.arange(4.0), np.array([1.0, np.nan])
    f = stax.compile(caught)
    for x in (clean, clean, bad, bad, clean):
        assert f(x) == caught(x)
    for fn in (updated, frame):
        _agree(fn, lambda s: (_random(8, s),))


def test_a_returned_scalar_type_is_the_type():
    """``return x + 1, x.dtype.type``: NumPy's type object (it came back as the dtype)."""
    f = stax.compile(lambda x: (x + 1, x.dtype.type, x.dtype))
    for dtype in (np.float64, np.float32, np.int16):
        x = np.ones(3, dtype)
        got = f(x)
        assert got[1] is dtype and got[2] == np.dtype(dtype) and isinstance(got[2], np.dtype)
