"""Events of operations whose operands are both constants inside the kernel: a padding's zeros,
a concatenated or masked constant, times a constant infinity. LLVM folds such an operation
(0 * inf) at compile time, so the CPU never raises the flag at run time; NumPy warns (found by the
stress suite: ``np.pad(...) * float(x.max())`` with an infinite maximum). And comparisons LLVM
answers without computing the operation: ``sqrt(x) != 0`` is ``x != 0``, ``x / 0.0 == 0`` is
false (found by the stress suite: ``np.abs(np.sqrt(x)).all()``)."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax

MASK = np.arange(20).reshape(4, 5) % 3 == 0
IX = np.arange(20).reshape(4, 5)

CASES = {
    "pad times inf": (lambda x: np.pad(x, 1) * np.inf, ()),
    "pad times a scalar argument": (lambda x, s: np.pad(x, 1) * s, (np.inf,)),
    "concatenated zeros times inf": (lambda x: np.concatenate([x, np.zeros_like(x)]) * np.inf, ()),
    "masked zero times inf": (lambda x: np.where(x > 5, x, 0.0) * np.inf, ()),
    "tril times inf": (lambda x: np.tril(x) * np.inf, ()),
    "pad divided by zero": (lambda x: np.pad(x, 1) / 0.0, ()),
    "bool padding divided by itself": (lambda x: np.divide(np.pad(x > 0, 1), np.pad(x > 0, 1)), ()),
    "integer padding divided by itself": (lambda x: np.pad(x.astype(np.int32), 1) / 0, ()),
    "sqrt all": (lambda x: np.sqrt(x - 2).all(), ()),
    "abs sqrt any": (lambda x: np.abs(np.sqrt(x - 2)).any(), ()),
    "sqrt not zero": (lambda x: np.sqrt(x - 2) != 0, ()),
    "divided by zero equals zero": (lambda x: (x / 0.0) == 0, ()),
    "overflowing product compared with inf": (lambda x: (x * 1e308 * 10) > np.inf, ()),
    "negated quotient compared": (lambda x: -(x / 0.0) < 1, ()),
    # a bool array cast to a number: LLVM rewrites uitofp(m) * c as select(m, c, 0 * c) and folds
    # it (found by the stress suite: ``l1[1] * float(v1.max())``, a bool array and an inf maximum)
    "bool times inf": (lambda x, m: m * np.inf, (MASK,)),
    "bool times a scalar argument": (lambda x, m, s: m * s, (MASK, np.inf)),
    "bool times a reduction": (lambda x, m: m * float(np.abs(x * np.inf).max()), (MASK,)),
    "bool as an integer times inf": (lambda x, m: m.astype(np.int64) * np.inf, (MASK,)),
    "bool as float32 times inf": (lambda x, m: m.astype(np.float32) * np.float32(np.inf), (MASK,)),
    "bool times huge times ten": (lambda x, m: (m * 1e308) * 10.0, (MASK,)),
    "inf minus bool times inf": (lambda x, m: np.inf - m * np.inf, (MASK,)),
    "bool divided by zero": (lambda x, m: m / 0.0, (MASK,)),
    # integers LLVM proves constant from the data (x - x is 0): the float operation on them
    # folds (found by the stress suite: ``x -= x; np.true_divide(x, x)`` on int64); the module
    # is then compiled from the precise kernels (``jit.folded_non_finite``)
    "integer difference with itself divided": (lambda x, i: (i - i) / (i - i), (IX,)),
    "integer xor over integer times zero": (lambda x, i: (i ^ i) / (i * 0), (IX,)),
    "known bits times inf": (lambda x, i: ((i & 1) & 2) * np.inf, (IX,)),
    # ... beside a NaN the kernel only selects (np.arctan2's special cases): the folded NaN is
    # the same constant (found by the stress suite: ``l[0] -= l[0]; v = np.abs(l[0]); v / v``)
    "zero difference divided beside arctan2": (
        lambda x, i: (np.arctan2(x, x), (i - i) / (i - i)), (IX,)),
    "huge plus a zero difference overflows": (lambda x, i: (i - i + 1e308) * 10.0, (IX,)),
    "pad minus inf plus inf": (lambda x: (np.pad(x, 1, constant_values=np.inf) - np.inf), ()),
    # a NaN constant absorbs the operation it meets: LLVM answers x * NaN without x, and the
    # computation of x (and its event) goes (found by the stress suite: ``v0 = x * s`` with s
    # -inf from a tolist(), then ``v0 * float(v0.max())`` with a NaN maximum); such modules are
    # compiled from the precise kernels (``jit.nan_operands``)
    "zero times -inf times nan": (lambda x: ((x - 1) * -np.inf) * np.nan, ()),
    "nan plus a quotient by zero": (lambda x: np.nan + (x - 1) / 0.0, ()),
    "a quotient by zero compared with nan": (lambda x: x / 0.0 < np.nan, ()),
}


def messages(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, sorted({str(w.message) for w in caught})


@pytest.mark.parametrize("name", sorted(CASES))
def test_events_of_folded_constants_are_reported(name):
    fn, extra = CASES[name]
    x = np.ones((4, 5))
    compiled = stax.compile(fn)
    want, want_messages = messages(fn, x, *extra)
    assert want_messages, "the case must warn eagerly"
    for _ in range(2):  # the compiling call, then the kernel's own
        got, got_messages = messages(compiled, x, *extra)
        np.testing.assert_array_equal(got, want)
        assert got_messages == want_messages


@pytest.mark.parametrize("name", sorted(CASES))
def test_raise_mode_raises_for_folded_constants(name):
    fn, extra = CASES[name]
    x = np.ones((4, 5))
    compiled = stax.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(x, *extra)  # compiled under the default state
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        compiled(x, *extra)


def test_only_infinities_and_nans_the_optimizer_made_count():
    from stax.codegen.cpu.jit import folded_non_finite

    before = "%a = fdiv double 0x7ff0000000000000, %x"
    assert folded_non_finite(before, "%b = fdiv <4 x double> splat (double 0x7FF0000000000000), %y") == []
    assert folded_non_finite(before, "store <4 x double> splat (double 0x7FF8000000000000)") == \
        ["0x7FF8000000000000"]
    assert folded_non_finite("", "store double 1.000000e+308") == []
    # a NaN the source only selects does not hide the same NaN folded into a store
    selects = '%s = select i1 %c, double 0x7FF8000000000000, double %v'
    assert folded_non_finite(selects, selects) == []
    assert folded_non_finite(selects, selects + "\nstore double 0x7FF8000000000000, double* %p") == \
        ["0x7FF8000000000000"]


def test_nan_constants_computed_with_count():
    from stax.codegen.cpu.jit import nan_operands

    assert nan_operands('  %".9" = fmul double %".8", 0x7ff8000000000000') == ["0x7FF8000000000000"]
    assert nan_operands('  %".9" = fcmp olt double %".8", 0xFFF8000000000001') == ["0xFFF8000000000001"]
    assert nan_operands('  %".9" = select i1 %".8", double 0x7ff8000000000000, double %".7"') == []
    assert nan_operands('  %".9" = fmul double %".8", 0x7ff0000000000000') == []  # an infinity


def test_a_folded_module_from_the_disk_cache_still_warns(tmp_path, monkeypatch):
    """The precise module is cached under the fast module's key: a warm start loads it."""
    monkeypatch.setenv("STAX_CACHE_DIR", str(tmp_path))

    def fn(i):
        return (i - i) / (i - i)

    for _ in range(2):  # cold, then from the cache
        got, got_messages = messages(stax.compile(fn), IX)
        assert got_messages == ["invalid value encountered in divide"]
        assert np.isnan(got).all()
