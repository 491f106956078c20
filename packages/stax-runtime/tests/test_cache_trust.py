"""Cache entries and documents are data, never code, and a bad one is a miss (issue 10 items
9, 10 and 14): stored captures and plans that do not parse are traced or planned again; a plan
or capture naming ``os.system`` runs nothing; a warm start says where its plan came from."""

import json
import logging

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen import Executable, KernelArtifact, diskcache
from stax.codegen.diskcache import DiskCache
from stax.ir.interpreter import DisallowedExternError, call_method, resolve_function


def sort_plus_one(a, b):
    return np.sort(b - a) + 1  # np.sort runs as an extern between kernels


def args():
    return np.arange(12, dtype=np.int64), np.full(12, 8, dtype=np.int64)


def stages(cf):
    return cf.versions()[0].stats


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", str(tmp_path))
    diskcache._reported.clear()
    return tmp_path


def entries(cache, kind):
    return DiskCache(cache / kind, suffix=".json", root=cache), sorted(
        (cache / kind).rglob("*.json"))


def forge(store, path, document):
    """Write ``document`` under the key of ``path`` with a valid digest: what a forger (or a bug)
    could do, which the digest alone cannot catch."""
    store.store(path.name.removesuffix(".json"), json.dumps(document).encode())


def test_a_capture_with_a_valid_digest_and_bad_json_is_a_miss(cache, caplog):
    want = sort_plus_one(*args())
    stax.compile(sort_plus_one)(*args())
    store, (path,) = entries(cache, "captures")
    store.store(path.name.removesuffix(".json"), b"{not json")
    with caplog.at_level(logging.WARNING, logger="stax"):
        cf = stax.compile(sort_plus_one)
        np.testing.assert_array_equal(cf(*args()), want)
    assert "capture" in stages(cf) and "the capture does not load" in caplog.text
    again = stax.compile(sort_plus_one)  # traced and stored afresh: a hit again
    np.testing.assert_array_equal(again(*args()), want)
    assert "capture (disk cache)" in stages(again)


def test_a_plan_that_does_not_load_is_made_again(cache, caplog):
    want = sort_plus_one(*args())
    stax.compile(sort_plus_one)(*args())
    store, (path,) = entries(cache, "plans")
    for bad in ({"schema": "nonsense"}, [1, 2, 3]):
        diskcache._reported.clear()
        forge(store, path, bad)
        with caplog.at_level(logging.WARNING, logger="stax"):
            cf = stax.compile(sort_plus_one)
            np.testing.assert_array_equal(cf(*args()), want)
        assert "passes" in stages(cf) and "the plan does not load" in caplog.text
        assert cf.versions()[0].native
        caplog.clear()


def test_a_forged_plan_or_capture_naming_os_system_runs_nothing(cache, tmp_path_factory):
    marker = tmp_path_factory.mktemp("marker") / "pwned"
    want = sort_plus_one(*args())
    stax.compile(sort_plus_one)(*args())
    plans, (plan_path,) = entries(cache, "plans")
    plan = json.loads(plans.load(plan_path.name.removesuffix(".json")))
    (extern,) = plan["externs"]
    extern.update(target="os.system", args=[f"touch {marker}"], kwargs={})
    forge(plans, plan_path, plan)
    cf = stax.compile(sort_plus_one)
    np.testing.assert_array_equal(cf(*args()), want)
    assert not marker.exists() and cf.versions()[0].native  # the plan was made again

    captures, (capture_path,) = entries(cache, "captures")
    text = captures.load(capture_path.name.removesuffix(".json")).decode()
    assert text.count('"numpy.sort"') == 1
    forge(captures, capture_path, json.loads(text.replace('"numpy.sort"', '"os.system"')))
    cf = stax.compile(sort_plus_one)
    np.testing.assert_array_equal(cf(*args()), want)  # the user's own function, run eagerly
    assert not marker.exists()


def test_an_artifact_naming_a_disallowed_extern_is_refused_at_load():
    cf = stax.compile(sort_plus_one)
    cf(*args())
    doc = cf.versions()[0].artifact.to_json()
    for target, method in (("os.system", False), ("numpy.load", False), ("builtins.eval", False),
                           ("tofile", True), ("__class__", True)):
        doc["externs"][0].update(target=target, method=method)
        with pytest.raises(DisallowedExternError, match="not an allowed"):
            Executable(KernelArtifact.from_json(doc))


def test_no_text_of_a_plan_is_executed(tmp_path):
    """The straight-line call is made from integers only: a loop range that is text is refused,
    never pasted into Python source (text that is no size expression is refused as the
    document is read: ``stax.ir.sizes.parse_size`` takes sums and products of integers and
    symbols, nothing else)."""
    cf = stax.compile(lambda x: x + 1)
    cf(np.ones(4))
    doc = cf.versions()[0].artifact.to_json()
    assert Executable(KernelArtifact.from_json(doc)).run_one is not None
    marker = tmp_path / "pwned"
    doc["kernels"][0]["outer_range"] = f"1); __import__('os').system('touch {marker}'); (1"
    with pytest.raises((TypeError, ValueError), match=r"unexpected form|not a size expression"):
        Executable(KernelArtifact.from_json(doc)).run_one(np.ones(4))
    doc["kernels"][0]["outer_range"] = "s0"  # a size expression in a plan without sizes
    with pytest.raises(TypeError, match="unexpected form"):
        Executable(KernelArtifact.from_json(doc)).run_one(np.ones(4))
    assert not marker.exists()


def test_the_allow_list():
    assert resolve_function("numpy.add") is np.add
    assert resolve_function("numpy.add.reduce") == np.add.reduce
    assert resolve_function("numpy.linalg.inv") is np.linalg.inv
    assert resolve_function("numpy.fft.fft") is np.fft.fft
    assert resolve_function("operator.getitem")(np.arange(3), 1) == 1
    assert resolve_function("stax.nn.relu")(np.array([-1.0, 2.0])).tolist() == [0.0, 2.0]
    for target in ("os.system", "subprocess.run", "numpy.load", "numpy.save", "numpy.ctypeslib.as_array",
                   "numpy.lib.stride_tricks.as_strided", "numpy.seterr", "numpy.add.at",
                   "numpy._core.multiarray.zeros", "numpy.testing.assert_equal", "operator.call",
                   "operator.attrgetter", "numpy.ndarray", "numpy", "", "numpy.random.normal"):
        with pytest.raises(DisallowedExternError):
            resolve_function(target)
    assert call_method(np.arange(3.0), "sum", (), {}) == 3.0
    for receiver, name in ((np.arange(3), "tofile"), (np.arange(3), "fill"), ("text", "format"),
                           (np.arange(3), "__reduce__"), (np.random.default_rng(0), "spawn")):
        with pytest.raises(DisallowedExternError):
            call_method(receiver, name, ("x",), {})


def test_a_warm_start_logs_that_the_plan_came_from_the_cache(cache, monkeypatch, caplog):
    stax.compile(sort_plus_one)(*args())
    monkeypatch.setenv("STAX_LOGS", "passes,kernels")
    with caplog.at_level(logging.INFO, logger="stax"):
        stax.compile(sort_plus_one)(*args())
    lines = [r for r in caplog.records if "from the disk cache" in r.getMessage()]
    assert {r.name for r in lines} == {"stax.passes", "stax.kernels"}
    _, (path,) = entries(cache, "plans")
    assert path.name.removesuffix(".json") in lines[0].getMessage()  # the key, to find the entry
