"""NumPy's scalar integer overflow (issue 10; found by the stress suite): a Python operator (``+``,
``-``, ``*``, ``//``, unary ``-``, ``abs()``) on NumPy integer scalars runs NumPy's scalar math,
which reports overflow under ``np.errstate`` ("overflow encountered in scalar add": a warning,
``FloatingPointError`` under "raise", nothing under "ignore"); NumPy's ufunc loops (``np.add``,
array arithmetic, 0-d arrays) do not. Compiled calls give eager's result (value and NumPy scalar
type), warnings (text, count, the user's line), and exceptions under every state, the compiling
call included; the ufunc forms stay native and silent."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stax.runtime as stax

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
STATES = {
    "default": dict(divide="warn", over="warn", under="ignore", invalid="warn"),  # NumPy's
    "over warn": dict(all="ignore", over="warn"),
    "raise": dict(all="warn", under="ignore", over="raise"),
    "ignore": dict(all="warn", under="ignore", over="ignore"),
}


def observe(fn, *args):
    """(result, (exception type, text) or None, warnings as (category, text, file, line)), every
    warning counted (an 'always' filter)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            result, error = fn(*args), None
        except (FloatingPointError, OverflowError) as exc:
            result, error = None, (type(exc).__name__, str(exc))
    return result, error, [(w.category.__name__, str(w.message), w.filename, w.lineno)
                           for w in seen]


def assert_like_eager(compiled, fn, *args):
    want, got = observe(fn, *args), observe(compiled, *args)
    assert got[1:] == want[1:], f"(error, warnings): compiled {got[1:]}, eager {want[1:]}"
    assert type(got[0]) is type(want[0]), f"compiled {got[0]!r}, eager {want[0]!r}"
    assert np.array_equal(got[0], want[0]) and np.shape(got[0]) == np.shape(want[0]) and \
        np.result_type(got[0]) == np.result_type(want[0]), f"compiled {got[0]!r}, eager {want[0]!r}"
    return want


def boundary(op, dtype):
    """(the Python int operand, operand values at the overflow boundary, just inside it)."""
    info, signed = np.iinfo(dtype), np.dtype(dtype).kind == "i"
    return {
        "add": (1, info.max, info.max - 1),
        "sub": (1, info.min, info.min + 1),
        "rsub": (0, info.min, info.min + 1) if signed else (0, 1, 0),  # 0 - s
        "mul": (2, info.max // 2 + 1, info.max // 2),
        "floordiv": (-1, info.min, info.min + 1) if signed else (0, 1, 0),  # by 0: divide event
        "neg": (None, info.min, info.min + 1) if signed else (None, 1, 0),
        "abs": (None, info.min, info.min + 1) if signed else (None, info.max, 0),
    }[op]


def program(op, form, k):
    """``x[0] op ...``: the scalar is a NumPy scalar of x's dtype (an element), its operand the
    Python int ``k`` on either side, or the NumPy scalar ``x[1]``."""
    if op == "neg":
        return lambda x: -x[0]
    if op == "abs":
        return lambda x: abs(x[0])
    if op == "rsub":
        return (lambda x: k - x[0]) if form == "int" else (lambda x: x[1] - x[0])
    if form == "int":
        return {"add": lambda x: x[0] + k, "sub": lambda x: x[0] - k, "mul": lambda x: x[0] * k,
                "floordiv": lambda x: x[0] // k}[op]
    if form == "int left":
        return {"add": lambda x: k + x[0], "mul": lambda x: k * x[0]}[op]
    return {"add": lambda x: x[0] + x[1], "sub": lambda x: x[0] - x[1], "mul": lambda x: x[0] * x[1],
            "floordiv": lambda x: x[0] // x[1]}[op]


FORMS = [(op, form) for op in ("add", "sub", "rsub", "mul") for form in ("int", "scalar")] + \
    [("add", "int left"), ("mul", "int left"), ("neg", "scalar"), ("abs", "scalar")]
#: ``//`` reports ``MIN // -1`` and division by zero as integer division does (the kernels' own
#: events, the call then runs eagerly): these held before scalar overflow was handled
DIVISION_FORMS = [("floordiv", "int"), ("floordiv", "scalar")]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("op,form", FORMS, ids=[f"{op}-{form}" for op, form in FORMS])
def test_operator_on_scalars_at_the_boundary_as_eager(op, form, dtype):
    check_at_the_boundary(op, form, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("op,form", DIVISION_FORMS, ids=[f"{op}-{form}" for op, form in DIVISION_FORMS])
def test_floor_division_of_scalars_at_the_boundary_as_eager(op, form, dtype):
    check_at_the_boundary(op, form, dtype)


def check_at_the_boundary(op, form, dtype):
    k, over, inside = boundary(op, dtype)
    fn = program(op, form, k)
    compiled = stax.compile(fn)
    other = 0 if k is None else k
    at_boundary = np.array([over, other], dtype)
    within = np.array([inside, 1 if op == "floordiv" and k == 0 else other], dtype)  # not // 0
    want = assert_like_eager(compiled, fn, at_boundary)  # the compiling call
    assert want[2] or (op == "abs" and dtype in DTYPES[4:]), "the case must warn eagerly"
    for state in STATES.values():
        with np.errstate(**state):
            for x in (at_boundary, within, at_boundary):
                assert_like_eager(compiled, fn, x)
    if op == "floordiv" and form == "int" and k == 0:
        return  # an unsigned // 0: every call divides by zero
    before = compiled.cache_info().fallbacks
    assert not assert_like_eager(compiled, fn, within)[2]
    assert compiled.cache_info().fallbacks == before, "a call without overflow stays compiled"


def test_raise_names_the_operation():
    compiled = stax.compile(lambda x: x.max() * 2)
    x = np.array([2**62, 1], np.int64)
    with np.errstate(over="ignore"):
        compiled(x)  # compiled (capture itself runs NumPy, which would raise)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError,
                                                  match="overflow encountered in scalar multiply"):
        compiled(x)


def test_stress_program():
    """The stress suite's failing program: ``v6 + 1`` of an int64 scalar (a chain of np.abs)."""
    def prog(x, y1):
        v0 = np.add(x, y1)
        v1 = v0.max(axis=None)
        v6 = np.abs(np.abs(v1))
        v7 = v6 + 1 if v0.sum() > 0 else v6 - 1
        return v7

    rng = np.random.default_rng(7)
    x = rng.integers(-2**62, 2**62, (200, 96), dtype=np.int64)
    x[3, 5] = 2**63 - 1
    compiled = stax.compile(prog)
    for y1 in (np.array(0), np.array(-1), np.array(0)):
        for state in STATES.values():
            with np.errstate(**state):
                assert_like_eager(compiled, prog, x, y1)


def test_in_place_and_unused_operations():
    """``s += 1`` on a NumPy scalar rebinds it (scalar math); an unused ``s + 1`` warns too."""
    def in_place(x):
        s = x.max()
        s += 1
        return s

    def unused(x):
        _ = x.max() + 1
        return x.min()

    x = np.array([2**31 - 1, 0], np.int32)
    for fn in (in_place, unused):
        compiled = stax.compile(fn)
        for state in STATES.values():
            with np.errstate(**state):
                assert_like_eager(compiled, fn, x)



def sum_in_place(a):
    s = 0
    for v in a:
        s += v
    return s


def product_in_place(a):
    s = 1
    for v in a:
        s *= v
    return s


@pytest.mark.parametrize("fn", [sum_in_place, product_in_place])
def test_lifted_loop_updating_a_scalar_in_place(fn):
    """A lifted loop carrying a NumPy integer scalar updated by ``s += v``, its body run by
    NumPy (a tiny body): every item's scalar math reports as eager's (585 warnings, the raise),
    in the compiling call and the cached version's (it ran the carried scalar as a 0-d array,
    whose in-place add wraps silently)."""
    compiled = stax.compile(fn)
    for a in (np.full(1500, 100, np.uint8), np.full(1500, 3, np.int16), np.ones(40, np.int8)):
        for state in STATES.values():
            with np.errstate(**state):
                assert_like_eager(compiled, fn, a)
    assert compiled.versions()[0].native, "the loop lifts (not an eager fallback)"

# mixed scalar types: NumPy computes in one operand's type (checked), or defers to its ufunc loop
# (``np.uint8(1) + np.int8(1)``, ``np.True_ + s``: not checked); the compiled call does as NumPy
MIXED = [np.bool_, np.int8, np.uint8, np.int16, np.int64, np.uint64]


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_mixed_scalar_types_as_eager(op):
    fn = {"add": lambda x, y: x[0] + y[0], "sub": lambda x, y: x[0] - y[0],
          "mul": lambda x, y: x[0] * y[0]}[op]
    for a in MIXED:
        for b in MIXED:
            if a is np.bool_ and b is np.bool_:
                continue  # bool arithmetic: no integer scalar
            compiled = stax.compile(lambda x, y: fn(x, y))
            values = [np.array([v], t) for t in (a, b)
                      for v in ((True,) if t is np.bool_ else
                                (np.iinfo(t).max, np.iinfo(t).min, 1))]
            for x in (v for v in values if v.dtype == a):
                for y in (v for v in values if v.dtype == b):
                    assert_like_eager(compiled, fn, x, y)


def test_ufunc_forms_and_arrays_stay_native_and_silent():
    """``np.add(s, 1)``, ``np.abs(s)``, 0-d arrays and arrays: NumPy's loops, which do not check
    integer overflow: no NumPy step, no warning, no eager run."""
    s = np.array([2**63 - 1, -2**63], np.int64)
    zero_d = np.array(-2**63, np.int64)
    cases = [
        (lambda x: np.add(x.max(), 1), s), (lambda x: np.abs(x.min()), s),
        (lambda x: np.negative(x.min()), s), (lambda x: np.multiply(x.max(), 2), s),
        (lambda x: x + 1, zero_d), (lambda x: abs(x), zero_d), (lambda x: -x, zero_d),
        (lambda x: x * 2, s), (lambda x: x.max() + 1.0, s),  # float math: no integer overflow
        (lambda x: x.max() ** 2, s), (lambda x: x.min() % -1, s),  # NumPy checks neither
    ]
    for fn, x in cases:
        compiled = stax.compile(fn)
        assert_like_eager(compiled, fn, x)
        before = compiled.cache_info().fallbacks
        with np.errstate(over="raise"):
            assert not assert_like_eager(compiled, fn, x)[2]
        assert compiled.cache_info().fallbacks == before
        assert not compiled.versions()[0].artifact.externs, "computed in the kernels"


def test_scalar_operations_are_native_with_an_overflow_check():
    """The wrapping op and a test of the exact result's range (``decline_if``): a call where one
    overflows runs eagerly (every state above), others run the kernels alone."""
    compiled = stax.compile(lambda x: (x.max() + 1) * 2)
    compiled(np.arange(4, dtype=np.int16))
    artifact = compiled.versions()[0].artifact
    assert not artifact.externs and all(s.startswith("kernel") for s in artifact.steps)
    assert any("overflows" in why for why in artifact.checks.values())
    for _ in range(2):  # another shape: a compiling call, then the cached version's
        assert compiled(np.arange(9, dtype=np.int16)) == np.int16(18)
    assert compiled._fallbacks == 0


def test_from_the_disk_cache(tmp_path, monkeypatch):
    """A warm start (capture and plan from the cache) warns as eager."""
    monkeypatch.setenv("STAX_CACHE_DIR", str(tmp_path))

    def fn(x):
        return x.max() + 1

    x = np.array([127, 0], np.int8)
    for _ in range(2):  # cold, then from the cache
        compiled = stax.compile(fn)
        want = assert_like_eager(compiled, fn, x)
        assert [w[1] for w in want[2]] == ["overflow encountered in scalar add"]


def _scalar_on_the_left(x):
    return np.int32(2 ** 31 - 1) + x.max()


def test_a_numpy_scalar_on_the_left_of_a_traced_scalar_is_scalar_math():
    """``np.int32(k) + x.max()``: the NumPy scalar's operator defers through ``np.add`` to the
    traced value; eagerly it is NumPy's scalar math, which reports the overflow ("in scalar
    add"), or raises under ``errstate(over='raise')``; compiled it was the silent array loop (a
    probe's find)."""
    import warnings
    x = np.array([1, 2, 3], np.int32)
    compiled = stax.compile(_scalar_on_the_left)
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = compiled(x)
        assert got == _scalar_on_the_left(x) and type(got) is np.int32
        assert [str(w.message) for w in caught] == ["overflow encountered in scalar add"]
        with np.errstate(over="raise"), pytest.raises(FloatingPointError):
            compiled(x)
