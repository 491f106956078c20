"""A ``for`` loop's Python int counters (``n += 1``; ``stax.trace.loop_counters.stepped``,
``stax.runtime.stepped_locals``): the loop lifts, its compiled body computing each counter from
its item, and after the loop the counter is the Python int eager Python leaves. Results against
eager NumPy, bit for bit, with the types Python gives."""

from __future__ import annotations

import ast
import logging
import textwrap
import time
import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.ir import LIFTED_LOOP
from stax.trace import loop_counters, loops


@pytest.fixture(autouse=True)
def small_limit(monkeypatch):
    monkeypatch.setattr(loops, "UNROLL_LIMIT", 30)  # lift loops of tests' sizes
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


def welford(X):
    n = 0
    mean = np.zeros(X.shape[1], X.dtype)
    M2 = np.zeros(X.shape[1], X.dtype)
    for row in X:
        n += 1
        delta = row - mean
        mean += delta / n
        M2 += delta * (row - mean)
    return mean, M2 / (n - 1), n


def strided(x):  # a counter as an index, stepped twice an item, in a strided range
    out = np.zeros(3 * x.shape[0] + 5)
    k = 4
    for i in range(2, x.shape[0], 3):
        k += 2
        out[k] = x[i] * k
        k -= 1
    return out, k


def read_before_step(x):
    acc = np.zeros(x.shape[1])
    c = 7
    for i in range(x.shape[0]):
        acc = acc + x[i] * c
        c += 1
    return acc, c


def outer_unrolled(x):  # the inner loop lifted at each outer item, from its count so far
    c = 0
    acc = np.zeros(x.shape[1])
    for _ in range(3):
        for i in range(x.shape[0]):
            c += 1
            acc = acc + x[i] / c
    return acc, c


def enumerated(X):
    n = 0
    s = np.zeros(X.shape[1])
    for i, row in enumerate(X):
        n += 2
        s = s + row * (i + n)
    return s, n


def float32_scaled(x):  # NEP 50: x32 * n stays float32 for a Python int: run by NumPy
    n = 0
    acc = np.zeros(x.shape[1], np.float32)
    for i in range(x.shape[0]):
        n += 1
        acc = acc + x[i] * n
    return acc, n


def per_position(x):
    n = 0
    out = np.zeros(x.shape)
    for pos in np.ndindex(x.shape):
        n -= 3
        out[pos] = x[pos] * n
    return out, n


def shaped_after(x):  # the count sizes an array after the loop
    n = 0
    s = np.zeros(x.shape[1])
    for row in x:
        n += 1
        s = s + row
    return np.zeros(n) + s.sum() / n


_RNG = np.random.default_rng(7)
CASES = [
    (welford, _RNG.random((200, 8))),
    (welford, _RNG.random((120, 5)).astype(np.float32)),
    (strided, _RNG.random(200)),
    (read_before_step, _RNG.random((100, 4))),
    (outer_unrolled, _RNG.random((60, 4))),
    (enumerated, _RNG.random((80, 3))),
    (float32_scaled, _RNG.random((90, 4)).astype(np.float32)),
    (per_position, _RNG.random((12, 9))),
    (shaped_after, _RNG.random((70, 3))),
]


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    else:
        assert type(got) is type(want) and got == want


@pytest.mark.parametrize("fn, x", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_counted_loops_lift_and_keep_eager_results(fn, x):
    compiled = stax.compile(fn)
    for data in (x, x[::-1] * 0.5):  # a second call: the lifted step with new data
        want = fn(data.copy())
        _same(compiled(data.copy()), want)
    version = compiled._versions[-1]
    assert version.native, version.reason
    assert LIFTED_LOOP in str(version.artifact)


def test_the_loop_reports_it_lifted_with_the_counter(caplog, monkeypatch):
    monkeypatch.setenv("STAX_LOGS", "loops")
    with caplog.at_level(logging.INFO, logger="stax"):
        stax.compile(welford, strict_native=True)(_RNG.random((50, 4)))
    lifted = [r.message for r in caplog.records if "lifted into one step" in r.message]
    assert lifted and "body compiled once" in lifted[0], caplog.text
    assert "items run in one machine-code loop" in caplog.text, caplog.text
    assert not any("unrolls" in r.message for r in caplog.records)


def test_a_counter_whose_arithmetic_would_overflow_raises_as_eagerly():
    def uint8_offset(x):
        n = 250
        acc = np.zeros(x.shape[1], np.uint8)
        for i in range(x.shape[0]):
            n += 1
            acc = acc + x[i] + n  # NEP 50: a Python int past uint8's range raises
        return acc

    x = np.ones((40, 3), np.uint8)
    with pytest.raises(OverflowError):
        uint8_offset(x)
    with pytest.raises(OverflowError):
        stax.compile(uint8_offset)(x)


def test_a_conditional_count_is_no_counter():
    def conditional(x):
        n = 0
        s = np.zeros(x.shape[1])
        for i in range(x.shape[0]):
            if i % 3 == 0:
                n += 1
            s = s + x[i] * n
        return s, n

    x = _RNG.random((50, 3))
    _same(stax.compile(conditional)(x), conditional(x))


def _steps(source: str) -> tuple[tuple[str, int], ...]:
    function = ast.parse(textwrap.dedent(source)).body[0]
    loop = next(n for n in ast.walk(function) if isinstance(n, ast.For))
    return loop_counters.stepped(function, loop)


_COUNTERS = [  # (a function's source, the counters of its loop and their steps)
    ("""
        def f(x):
            n = m = k = 0
            for i in range(9):
                n += 1
                m -= 2
                m += 5
                k += 1
                if i:
                    k += 1
            return n
    """, (("m", 3), ("n", 1))),
    ("""
        def f(x):
            n = 0
            for i in range(9):
                n += 1
                n = n * 2
            return n
    """, ()),
    ("""
        def f(x):
            n = 0
            for i in range(9):
                n += 1
            g = lambda: n
            return g
    """, ()),
    ("""
        def f(x):
            n = 0
            for i in range(9):
                n += 1
                for n in range(3):
                    pass
            return n
    """, ()),
    ("""
        def f(x):
            n = 0
            for n in range(9):
                n += 1
            return n
    """, ()),
    ("""
        def f(x):
            n = 0
            for i in range(9):
                n += 1.5
            return locals()
    """, ()),
]


@pytest.mark.parametrize("source, steps", _COUNTERS)
def test_which_locals_are_counters(source, steps):
    assert _steps(source) == steps


def test_a_float_counter_or_a_scalar_argument_start_is_carried_as_before():
    def from_argument(x, start):
        n = start
        s = np.zeros(x.shape[1])
        for i in range(x.shape[0]):
            n += 1
            s = s + x[i] * n
        return s, n

    x = _RNG.random((40, 3))
    compiled = stax.compile(from_argument)
    for start in (0, 5):
        _same(compiled(x, start), from_argument(x, start))


def test_capture_of_a_counted_loop_does_not_grow_with_its_count(monkeypatch):
    monkeypatch.setattr(loops, "UNROLL_LIMIT", 2000)  # the default's order

    def captured(rows):
        x = _RNG.random((rows, 16))
        compiled = stax.compile(welford, strict_native=True)
        clock = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compiled(x)
        return time.perf_counter() - clock

    captured(300)  # warm the process's own first compiles
    short, long = min(captured(400) for _ in range(2)), min(captured(1600) for _ in range(2))
    assert long < 2.2 * short + 0.05, (short, long)


@pytest.fixture
def compiled_bodies(monkeypatch):
    """Keep a lifted body compiled whatever NumPy's time per item (the body's own checks decide)."""
    from stax.runtime.lifted_loops import Runner

    monkeypatch.setattr(Runner, "eager_seconds_per_item", lambda self, arrays: None)


def item_and_counter_f32(x):
    n = 0
    acc = np.zeros(x.shape[1], np.float32)
    for i in range(x.shape[0]):
        n += 1
        acc = acc + x[i] * (i + n)  # NEP 50: float32 times a Python int stays float32
    return acc, n


def item_and_counter_u8(x):
    n = 0
    acc = np.zeros(x.shape[1], np.uint8)
    for i in range(x.shape[0]):
        n += 3
        acc = acc + x[i] + (n + i)  # past 255: NumPy raises OverflowError
    return acc


def stored_into_int8(x):
    out = np.zeros(x.shape[0], np.int8)
    n = 0
    for i in range(x.shape[0]):
        n += 1
        out[i] = n  # 128 is out of bounds for int8: NumPy raises
    return out, n


def item_stored_into_int8(x):
    out = np.zeros(x.shape[0], np.int8)
    for i in range(x.shape[0]):
        out[i] = i + 1
    return out


@pytest.mark.parametrize("fn, x", [
    (item_and_counter_f32, _RNG.random((300, 4)).astype(np.float32)),
    (item_and_counter_u8, np.ones((40, 3), np.uint8)),
    (stored_into_int8, np.zeros(300)),
    (item_stored_into_int8, np.zeros(300)),
    (stored_into_int8, np.zeros(100)),
], ids=["float32", "uint8", "int8-store", "item-int8-store", "int8-in-range"])
def test_a_use_of_two_values_from_the_item_is_judged_with_both(fn, x, compiled_bodies):
    """``x32 * (i + n)`` reads two values computed from the item (the counter is one): judged
    from the first alone, the second looked like a traced int64 and the sum passed as one
    (float64 results; ``out8[i] = n`` wrapped where NumPy raises OverflowError)."""
    try:
        want = fn(x.copy())
    except OverflowError:
        with pytest.raises(OverflowError):
            stax.compile(fn)(x.copy())
        return
    _same(stax.compile(fn)(x.copy()), want)


def test_a_negative_literal_step_and_a_start_from_a_shape_are_counters(caplog, monkeypatch):
    def negative_literal(X):
        n = X.shape[0]
        s = np.zeros(X.shape[1])
        for row in X:
            n -= -1
            s = s + row / n
        return s, n

    monkeypatch.setenv("STAX_LOGS", "loops")
    x = _RNG.random((60, 3))
    with caplog.at_level(logging.INFO, logger="stax"):
        got = stax.compile(negative_literal)(x)
    _same(got, negative_literal(x))
    assert "lifted into one step" in caplog.text and "unrolls" not in caplog.text, caplog.text


def test_a_number_the_body_changes_otherwise_says_so(caplog, monkeypatch):
    def doubled(x):
        n = 1
        s = np.zeros(x.shape[1])
        for i in range(x.shape[0]):
            n *= 2
            s = s + x[i]
        return s, n

    monkeypatch.setenv("STAX_LOGS", "loops")
    x = _RNG.random((40, 3))
    with caplog.at_level(logging.INFO, logger="stax"):
        _same(stax.compile(doubled)(x), doubled(x))
    assert "the body steps 'n', a Python number" in caplog.text, caplog.text


def test_the_sources_own_warnings_are_not_given_again(tmp_path, monkeypatch):
    """Capture parses and compiles the function's source again (the loop rewrite): a warning
    of that source (``x is 1``: a SyntaxWarning) was its import's, not each compile's."""
    module = tmp_path / "warned_source.py"
    module.write_text(textwrap.dedent("""
        import numpy as np

        def warned(x):
            s = x * 0
            for i in range(x.shape[0]):
                s = s + x[i]
            return s if 1 is 1 else x
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import warned_source
    x = _RNG.random((40, 3))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled = stax.compile(warned_source.warned)
        _same(compiled(x), warned_source.warned(x))
    assert not seen, [str(w.message) for w in seen]
    assert LIFTED_LOOP in str(compiled._versions[-1].artifact)  # the source was rewritten


def test_a_counter_whose_type_the_body_asks_is_no_counter():
    """``isinstance(n, int)``: a counter computed from the item is an int64 in the compiled
    body, a Python int eagerly (a review found every item after the first skipped)."""
    def typed(X):
        n = 0
        s = np.zeros(X.shape[1])
        for row in X:
            n += 1
            if isinstance(n, int):
                s = s + row
        return s, n

    x = _RNG.random((40, 3))
    _same(stax.compile(typed)(x), typed(x))
    assert _steps("""
        def f(x):
            n = k = 0
            for i in range(9):
                n += 1
                k += 1
                if hasattr(n + 1, "dtype"):
                    pass
            return n
        """) == (("k", 1),)


def test_a_body_asking_its_items_type_is_not_lifted(caplog, monkeypatch):
    """``isinstance(i, int)`` of a range loop's item: an int64 in a lifted body, a Python int
    eagerly (the review's counter case held for the item itself): such a loop unrolls."""
    def typed_item(x):
        s = np.zeros(x.shape[1])
        for i in range(x.shape[0]):
            if isinstance(i, int):
                s = s + x[i]
        return s

    monkeypatch.setenv("STAX_LOGS", "loops")
    x = _RNG.random((40, 3))
    with caplog.at_level(logging.INFO, logger="stax"):
        _same(stax.compile(typed_item)(x), typed_item(x))
    assert "a type query of the loop's item: isinstance(i, int)" in caplog.text, caplog.text


def _logged(x):
    return np.log(x)


def test_a_compile_keeps_the_warnings_python_already_showed():
    """A warning shown once per line (the default filter) is not shown again after a compile:
    the compile's own filter for the source's SyntaxWarnings (``loop_code.quiet_compile``) went
    through ``catch_warnings``, which empties every module's record of warnings shown (a
    probe)."""
    def doubled(x):
        return x * 2

    compiled = stax.compile(doubled)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")
        for k in range(3):
            with np.errstate(divide="warn"):
                _logged(np.array([0.0]))
            compiled(np.ones(k + 1))  # a new shape: a compile each time
    assert len(seen) == 1, [str(w.message) for w in seen]
