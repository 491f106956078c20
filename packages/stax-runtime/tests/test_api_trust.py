"""Issue 10, item 14: the API's smaller promises — custom backends, dump names, pickling, logs."""

import collections.abc
import logging
import multiprocessing
import pickle

import numpy as np
import pytest

import stax.runtime as stax
from stax.ir import run_graph

X = np.arange(6.0)


def test_a_backend_with_the_plain_spec_signature_works():
    seen = []

    def plain(capture, example_inputs):  # spec §1.2: backend(graph, example_inputs, **options)
        seen.append(len(example_inputs))
        names = [n for n in capture.inputs if n is not None]
        return lambda *arrays: list(run_graph(capture.graph, dict(zip(names, arrays))))

    stax.register_backend("test-plain", plain)
    f = stax.compile(lambda x: x * 2 + 1, backend="test-plain", strict_native=True)
    np.testing.assert_array_equal(f(X), X * 2 + 1)
    assert seen == [1] and f.cache_info().fallbacks == 0


def test_functions_of_one_name_dump_to_different_files(monkeypatch, tmp_path):
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))

    def make(k):
        def f(x):
            return x * k
        return f

    a, b = stax.compile(make(2.0)), stax.compile(make(3.0))
    a(X)
    b(X)
    a(X + 1)  # a's own name again
    names = sorted(p.name for p in tmp_path.glob("*.capture.json"))
    assert names == ["f-2.v0.capture.json", "f.v0.capture.json"]


@stax.compile
def doubled(x):
    return x * 2


def triple(x):
    return x * 3


tripled = stax.compile(triple)


def test_compiled_functions_pickle_by_reference():
    assert pickle.loads(pickle.dumps(doubled)) is doubled
    again = pickle.loads(pickle.dumps(tripled))
    np.testing.assert_array_equal(again(X), X * 3)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        results = pool.map_async(doubled, [X, X + 1]).get(timeout=120)
    np.testing.assert_array_equal(results[1], (X + 1) * 2)


def test_unknown_log_categories_are_named(monkeypatch, caplog):
    monkeypatch.setenv("STAX_LOGS", "recompile,kernels")
    f = stax.compile(lambda x: x - 1)
    with caplog.at_level(logging.WARNING, logger="stax"):
        f(X)
    assert any("unknown category 'recompile'" in r.getMessage() and "recompiles" in r.getMessage()
               for r in caplog.records)


class _Holder:
    pass


def test_a_subclass_array_reached_through_an_attribute_keeps_its_class():
    """A probe's finding: ``o.w * 2`` with ``o.w`` a masked array (or ``o.w * o.w`` with a
    matrix) is computed by NumPy at capture, not from a traced array; the version returned it as
    a plain array (mask lost, matrix product as an ndarray). Such results run eagerly now."""
    double = stax.compile(lambda o: o.w * 2)
    square = stax.compile(lambda o: o.w * o.w)
    o = _Holder()
    o.w = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(square(o), o.w * o.w)
    o.w = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    got = square(o)
    assert type(got) is np.matrix and got.tolist() == (o.w * o.w).tolist()
    o.w = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    got = double(o)
    assert type(got) is np.ma.MaskedArray and got.mask.tolist() == [False, True, False]


def _scaled_or_shifted(x, flag):
    return x * 2 if flag else x - 1


def test_a_call_with_fewer_array_leaves_than_a_gated_version_is_explained_and_runs():
    """A probe's finding: a version gated on an array argument (``if flag``), then a call
    passing ``[]`` there: ``explain`` and the version-limit warning replayed the gate on the
    call's leaves and raised IndexError; eager returns ``x - 1``."""
    x = np.arange(3.0)
    compiled = stax.compile(_scaled_or_shifted)
    compiled(x, np.array(True))
    assert compiled.explain(x, [])[0].failures
    for flag in [True, False, np.True_, np.False_, 1, 0, np.array(True), np.array(False)]:
        compiled(x, flag)
    np.testing.assert_array_equal(compiled(x, []), x - 1)


SCALE = 2.0


def _scaled_by_eval(x):
    return x * eval("SCALE")


def _scaled_by_import(x):
    import importlib
    return x * importlib.import_module(__name__).SCALE


@pytest.mark.parametrize("fn", [_scaled_by_eval, _scaled_by_import])
def test_names_looked_up_at_run_time_are_refused(fn):
    """A probe's finding: a global read through ``eval``/``exec`` or a module reached by
    ``importlib.import_module`` is no name of the code, so no free-value guard followed it:
    rebinding it left the version's old value. Such functions run eagerly, saying why."""
    global SCALE
    compiled = stax.compile(fn)
    x = np.arange(4.0)
    try:
        np.testing.assert_array_equal(compiled(x), x * 2.0)
        SCALE = 3.0
        np.testing.assert_array_equal(compiled(x), x * 3.0)
    finally:
        SCALE = 2.0
    assert compiled.cache_info().fallbacks >= 1


def _checksummed(x):
    import hashlib
    import weakref
    memoryview(x)
    weakref.ref(x)
    return x * (hashlib.md5(x).digest()[0] >= 0)


def test_code_needing_numpy_s_own_array_object_runs_eagerly():
    """A probe's finding: ``memoryview(x)``, ``hashlib.md5(x)``, ``weakref.ref(x)`` of an array
    argument raised TypeError at every call (the traced stand-in has no buffer, no weak
    references), where eager NumPy returns."""
    compiled = stax.compile(_checksummed)
    x = np.array([1.5, -2.0, 3.25])
    for _ in range(2):
        np.testing.assert_array_equal(compiled(x), _checksummed(x))


def _fill_from(x, g):
    g.random(out=x)
    return x.sum()


def test_a_draw_into_an_argument_runs_eagerly():
    """A probe's finding: ``g.random(out=x)`` raised ValueError at every call (capture handed
    the generator a read-only stand-in) and left the generator behind eager's."""
    compiled = stax.compile(_fill_from)
    mine, theirs = np.zeros(3), np.zeros(3)
    g_mine, g_theirs = np.random.default_rng(0), np.random.default_rng(0)
    for _ in range(2):
        assert compiled(mine, g_mine) == _fill_from(theirs, g_theirs)
        np.testing.assert_array_equal(mine, theirs)
    assert g_mine.bit_generator.state == g_theirs.bit_generator.state


def _fill_positional(x, g):
    g.standard_normal(x.shape, np.float64, x)
    return x.sum()


def test_a_draw_into_an_argument_by_position_runs_eagerly():
    compiled = stax.compile(_fill_positional)
    mine, theirs = np.zeros(3), np.zeros(3)
    g_mine, g_theirs = np.random.default_rng(0), np.random.default_rng(0)
    assert compiled(mine, g_mine) == _fill_positional(theirs, g_theirs)
    np.testing.assert_array_equal(mine, theirs)


def _if_hashable(x):
    if isinstance(x, collections.abc.Hashable):  # an array is not; a NumPy scalar is
        return x + 1.0
    return x * 2.0


def _if_sum_hashable(x):
    return x * 2.0 if isinstance(x.sum(), collections.abc.Hashable) else x + 1.0


def _array_as_key(x):
    try:
        hash(x)
    except TypeError:  # an array is no dict key
        return x * 3.0
    return x


def test_hashable_answers_as_for_numpys_objects():
    """A probe's finding: ``isinstance(x, Hashable)`` was True for a traced array (the
    stand-in's class defined ``__hash__``): the other branch, compiled into every call."""
    x = np.arange(4.0)
    for fn in (_if_hashable, _if_sum_hashable, _array_as_key):
        compiled = stax.compile(fn)
        for _ in range(2):
            np.testing.assert_array_equal(compiled(x), fn(x))
