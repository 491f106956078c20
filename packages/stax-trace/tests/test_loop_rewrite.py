"""The loop rewrite (stax.trace.loops): a rewritten function computes what the original does,
outside capture and unrolled under it; loops it cannot keep exact are left alone."""

import numpy as np
import pytest

from stax.trace import loops, trace

SCALE = 3.0


def temporaries(x, n):
    y = x.copy()
    for i in range(n):
        t = y * 0.5  # first bound in the body
        y = t + i
    return y, t, i


def unbound_after_empty_loop(n):
    for i in range(n):
        last = i
    try:
        return last
    except UnboundLocalError:
        return "unbound"


def nested(a):
    out = np.zeros((3, 4))
    for i in range(3):
        for j in range(4):
            out[i][j] = a[i] * j + SCALE
    return out


def with_break(n):
    total = 0
    for i in range(n):
        if i == 3:
            break
        total += i
    return total


def closure_reader():
    factor = 2.0

    def inner(x):
        acc = x
        for _ in range(4):
            acc = acc * factor
        return acc
    return inner


def enumerate_rows(m):
    out = []
    for k, row in enumerate(m):
        out.append(row.sum() * k)
    return out


def test_rewritten_functions_compute_what_the_originals_do():
    x = np.arange(4.0)
    for fn, args in [(temporaries, (x, 5)), (unbound_after_empty_loop, (0,)),
                     (unbound_after_empty_loop, (3,)), (nested, (np.arange(3.0),)),
                     (enumerate_rows, (np.arange(6.0).reshape(2, 3),))]:
        clone = loops.rewritten(fn)
        assert clone is not None, fn.__name__
        got, want = clone(*args), fn(*args)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g, w)


def test_free_variables_stay_the_functions_cells():
    inner = closure_reader()
    clone = loops.rewritten(inner)
    assert clone is not None
    assert clone(np.ones(2)).tolist() == inner(np.ones(2)).tolist() == [16.0, 16.0]


def test_loops_that_leave_early_are_not_rewritten():
    assert loops.rewritten(with_break) is None  # its only loop breaks: nothing to rewrite
    assert with_break(10) == 3


def test_an_error_in_the_body_names_the_users_line():
    def broken(x):
        for _ in range(2):
            x = x + undefined_name  # noqa: F821
        return x

    clone = loops.rewritten(broken)
    with pytest.raises(NameError) as info:
        clone(1.0)
    line = broken.__code__.co_firstlineno + 2
    assert info.traceback[-1].lineno + 1 == line  # pytest's lineno is 0-based
    assert info.traceback[-1].path.name == "test_loop_rewrite.py"


def test_unrolled_capture_records_the_same_graph_as_before():
    x = np.arange(4.0)

    def stepping(x):
        for _ in range(3):
            x = np.sin(x) + 1.0
        return x

    program = trace(stepping, (x,))
    targets = [n.target for n in program.graph.nodes if n.op.value == "call_function"]
    assert targets == ["numpy.sin", "operator.add"] * 3


def test_sites_name_what_the_body_touches():
    loops.rewritten(nested)
    entry = loops._entry(nested, nested.__code__)
    sites = {s.source.rsplit(":", 1)[1]: s for s in entry[1]}
    inner, outer = sites[str(nested.__code__.co_firstlineno + 3)], \
        sites[str(nested.__code__.co_firstlineno + 2)]
    assert inner.params == ("a", "i", "j", "out") and inner.assigned == ("j",)
    assert inner.mutated == ("out",) and inner.target == "j"
    assert outer.assigned == ("i", "j") and outer.mutated == ("out",)


COUNTER = 0


def bumps_a_global(n):
    global COUNTER
    for _ in range(n):
        COUNTER += 1
    return COUNTER


def with_comprehension(x):
    out = []
    for i in range(3):
        out.append(sum([x * k for k in range(i)]))
    return out


def test_global_and_nonlocal_names_keep_their_scope():
    assert loops.rewritten(bumps_a_global) is None

    def outer():
        total = 0

        def add(n):
            nonlocal total
            for _ in range(n):
                total += 1
            return total
        return add

    assert loops.rewritten(outer()) is None
    clone = loops.rewritten(with_comprehension)
    assert clone is not None and clone(2.0) == with_comprehension(2.0)


def test_a_source_file_edited_since_import_is_not_rewritten(tmp_path, monkeypatch):
    import importlib
    import linecache
    source = "def f(x):\n    for i in range(3):\n        x = x * 2.0\n    return x\n"
    (tmp_path / "edited_module.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_module")
    assert loops.rewritten(module.f) is not None
    loops._cache.pop(module.f)
    (tmp_path / "edited_module.py").write_text(source.replace("2.0", "3.0"))
    linecache.checkcache()
    assert loops.rewritten(module.f) is None  # the running code is not what the file says
    assert module.f(1.0) == 8.0
