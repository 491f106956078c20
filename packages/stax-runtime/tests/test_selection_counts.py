"""The length of a masked selection as a value the program computes (issue 14, item 2:
``len(x[m])`` with no data-dependent shape and no gate; ``stax.trace.selection_counts``)."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.trace.tracer import trace

RNG = np.random.default_rng(43)


def floats(n, dtype=np.float64):
    x = RNG.standard_normal(n).astype(dtype)
    x[::13] = -0.0
    return x


def same(got, want):
    assert type(got) is type(want), (got, want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    if np.asarray(want).dtype.kind == "f" and not np.isnan(want):
        # a whole-array sum adds in another order than NumPy's pairwise one (masked_reductions)
        rtol = 1e-5 if np.asarray(want).dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol)
    else:
        np.testing.assert_array_equal(got, want)


def mean_by_len(x):
    t = x[x > 0]
    return t.sum() / len(t)


def mean_by_size(x):
    t = x[x > 0.5]
    return (t * 2).sum() / (t * 2).size


def mean_by_shape(x):
    t = np.abs(x[x < 0])
    return t.max() * t.shape[0]


def sample_variance(x):
    t = x[x > -0.5]
    m = t.sum() / t.size
    return ((t - m) ** 2).sum() / (len(t) - 1)


def positions_counted(x):
    i = np.flatnonzero(x > 0.25)
    return x[i].sum() / len(i)


def nonzero_counted(x):
    return x[x > 0].sum() + 3 * np.nonzero(x > 0)[0].shape[0]


def matrix_selection(x):
    m = x.reshape(20, -1)
    t = m[m > 0]
    return t.sum() / len(t)


def integer_fraction(k):
    t = k[k % 3 == 0]
    return t.sum() / len(t)


def int32_offset(k):
    t = k[k > 0]
    return (t + len(t)).sum()


CASES = [
    (mean_by_len, lambda: floats(1000)),
    (mean_by_len, lambda: floats(999, np.float32)),
    (mean_by_size, lambda: floats(1000)),
    (mean_by_shape, lambda: floats(1000, np.float32)),
    (sample_variance, lambda: floats(1000)),
    (positions_counted, lambda: floats(1000)),
    (nonzero_counted, lambda: floats(1000)),
    (matrix_selection, lambda: floats(1000)),
    (integer_fraction, lambda: RNG.integers(0, 1000, 1000)),
    (int32_offset, lambda: RNG.integers(-9, 9, 1000).astype(np.int32)),
]


@pytest.mark.parametrize("fn, make", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in
                                                 enumerate(CASES)])
def test_a_length_used_as_an_operand_is_computed_with_no_gate(fn, make):
    x = make()
    assert trace(fn, (x,)).gates == []
    f = stax.compile(fn, strict_native=True)
    for _ in range(6):  # new data, new counts: one version
        x = make()
        same(f(x), fn(x))
    info = f.cache_info()
    assert info.versions == 1 and info.misses == 1, info


def test_a_comparison_of_a_length_gates_its_outcome_not_the_count():
    def guarded(x):
        t = x[x > 0.5]
        if len(t) == 0:
            return np.float64(0.0)
        return t.sum() / len(t)

    x = floats(500)
    gates = trace(guarded, (x,)).gates
    assert [g.kind for g in gates] == ["bool"]
    f = stax.compile(guarded, strict_native=True)
    for _ in range(5):
        x = floats(500)
        same(f(x), guarded(x))
    assert f.cache_info().versions == 1
    empty = -np.abs(floats(500))
    same(f(empty), guarded(empty))  # the other outcome: its own version
    same(f(x), guarded(x))
    assert f.cache_info().versions == 2


@pytest.mark.parametrize("fn", [
    lambda x: x[x > 0].sum() / float(len(x[x > 0])),
    lambda x: np.zeros(len(x[x > 0])) + 1.0,
    lambda x: sum(1.0 for _ in range(len(x[x > 0]))) + x[x > 0].sum(),
    lambda x: x[x > 0].sum() / (len(x[x > 0]) // 2),
], ids=["float", "shape", "range", "floor_quotient"])
def test_a_length_python_decides_from_keeps_its_count_gate(fn):
    x = floats(200)
    assert "shape" in [g.kind for g in trace(fn, (x,)).gates]
    f = stax.compile(fn)
    for y in (x, np.abs(x), x + 0.5, x - 0.25):
        got, want = f(y), fn(y)
        if isinstance(want, np.ndarray):
            np.testing.assert_array_equal(got, want)
        else:
            same(got, want)


def test_a_length_past_an_integer_dtype_raises_numpys_overflow_error():
    def offset(k):
        t = k[k > 0]
        return (t + len(t)).sum()

    f = stax.compile(offset)
    small = np.zeros(300, np.int8)
    small[:5] = 3
    same(f(small), offset(small))
    big = np.ones(300, np.int8)  # 300 selected: past int8, NumPy raises
    with pytest.raises(OverflowError):
        offset(big)
    with pytest.raises(OverflowError):
        f(big)


def test_an_empty_selection_divides_as_numpy_does():
    f = stax.compile(mean_by_len)
    x = floats(300)
    same(f(x), mean_by_len(x))
    empty = -np.abs(x) - 1.0
    with warnings.catch_warnings(record=True) as eager:
        warnings.simplefilter("always")
        want = mean_by_len(empty)
    with warnings.catch_warnings(record=True) as compiled:
        warnings.simplefilter("always")
        got = f(empty)
    same(got, want)
    assert [str(w.message) for w in compiled] == [str(w.message) for w in eager]


def test_a_returned_length_is_the_programs_count_as_a_python_int():
    def total_and_count(x):
        t = x[x > 0]
        return t.sum(), len(t), t.size - 1

    x = floats(400)
    assert trace(total_and_count, (x,)).gates == []
    f = stax.compile(total_and_count, strict_native=True)
    for _ in range(4):
        x = floats(400)
        got, want = f(x), total_and_count(x)
        assert [type(g) for g in got] == [type(w) for w in want]
        same(got[0], want[0])
        assert got[1:] == want[1:]
    assert f.cache_info().versions == 1


def _warned(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [str(w.message) for w in caught]


@pytest.mark.parametrize("fn, x", [
    (lambda x: x[x < 5].sum() - len(x[x < 5]), np.array([0, 0, 9], np.uint8)),
    (lambda x: len(x[x > 0]) + x.sum(), np.array([2**62, 2**62 - 1, 0], np.int64)),
    (lambda x: len(x[x > 0]) * x[0], np.full(10, 100, np.int8)),
    (lambda x: x.shape[0] * x[0], np.full(10, 100, np.int8)),
    (lambda m: len(m) - m.sum(), np.array([True, False, False])),
], ids=["uint_sub", "int64_add", "int8_mul", "size_int8_mul", "size_minus_sum"])
def test_a_length_meets_a_numpy_integer_scalar_in_numpys_scalar_math(fn, x):
    """A probe's finds: a size or count beside a traced NumPy integer scalar read the scalar
    in Python (``isinstance`` of a traced scalar answers as its value: a gate, a Python int
    result) or recorded the array operator, which wraps where NumPy's scalar math warns
    "overflow encountered in scalar subtract"."""
    want, eager = _warned(fn, x)
    got, compiled = _warned(stax.compile(fn), x)
    same(got, want)
    assert compiled[-len(eager):] == eager if eager else not compiled


def test_a_length_compared_with_a_scalar_argument_compiles():
    def guard(x, k):
        t = x[x > 0]
        if len(t) > k:
            return t.sum()
        return x.sum()

    f = stax.compile(guard, strict_native=True)
    for k in (2, 3, 2.5, 7):
        x = floats(8)
        same(f(x, k), guard(x, k))


@pytest.mark.parametrize("fn", [
    lambda x: x[x > 0.5].sum() / len(x[x > 0.5]) if len(x[x > 0.5]) else np.float64(0.0),
    lambda x: np.float64(0.0) if not x[x > 0.5].size else x[x > 0.5].max(),
    lambda x: x.sum() if len(x[x > 0]) == len(x[x < 0]) else x.max(),
], ids=["truth", "not_size", "two_lengths"])
def test_truth_and_comparisons_of_lengths_gate_their_outcome(fn):
    x = floats(300)
    assert [g.kind for g in trace(fn, (x,)).gates] == ["bool"]
    f = stax.compile(fn, strict_native=True)
    for _ in range(4):
        x = floats(300)
        same(f(x), fn(x))
    assert f.cache_info().versions == 1


@pytest.mark.parametrize("dynamic", [None, True])
def test_a_length_with_a_shapes_size_follows_both(dynamic):
    """``x.size - len(t)``: the count is the program's, the size a size (``size_args`` on the
    node that adds them), so a size-generic version follows the lengths too."""
    def unselected_fraction(x):
        t = x[x > 0.5]
        # (``(x.size - len(t)) / x.size`` divides in Python: a float, read)
        return x.sum() / (x.size - len(t)), t.sum() * (len(t) - x.shape[0])

    x = floats(300)
    assert trace(unselected_fraction, (x,)).gates == []
    f = stax.compile(unselected_fraction, dynamic=dynamic, strict_native=True)
    for n in (300, 300, 301, 500, 77, 300):
        x = floats(n)
        got, want = f(x), unselected_fraction(x)
        for g, w in zip(got, want):
            same(g, w)
    assert f.cache_info().versions <= 2


def test_a_length_in_a_lifted_loops_body():
    """The loop's first iteration is recorded, then erased when the loop lifts
    (``loop_state.forget``): its lengths' masks leave ``SizeReads.counts`` with it, and the
    lifted body counts its own."""
    def running(x, y):
        acc = np.zeros_like(y)
        for _ in range(300):
            t = x[x > acc[0] * 0.001]
            acc = acc + y * (t.sum() / len(t))
        return acc

    f = stax.compile(running)
    for _ in range(3):
        x, y = RNG.random(50), RNG.random(4)
        np.testing.assert_allclose(f(x, y), running(x, y), rtol=1e-12)
    assert f.cache_info().versions == 1


# -- a review's finds ---------------------------------------------------------------------------

def test_a_gather_whose_index_arrays_broadcast_is_not_a_masks_count():
    """``a[np.flatnonzero(m), np.arange(5)]`` has as many elements as its index arrays
    broadcast to (5), not ``m.sum()`` (1): a tuple index counts only where every array in it is
    positions of the one mask."""
    def broadcast(a, m):
        y = a[np.flatnonzero(m), np.arange(5)]
        return y.sum() / len(y)

    a = np.arange(50.0).reshape(10, 5)
    m = np.zeros(10, bool)
    m[3] = True
    f = stax.compile(broadcast)
    same(f(a, m), broadcast(a, m))
    m[3], m[7] = False, True
    same(f(a, m), broadcast(a, m))


def test_a_product_of_lengths_is_read_not_computed_in_int64():
    """``t.sum() / (n * n * n)``: a size-generic version runs at sizes past the traced ones,
    where the product may pass int64 (Python's int does not): such a polynomial is read."""
    def cubed(x):
        t = x[x > 0.5]
        n = len(t)
        return t.sum() / (n * n * n)

    x = floats(200)
    assert "shape" in [g.kind for g in trace(cubed, (x,)).gates]
    f = stax.compile(cubed, dynamic=True)
    for n in (200, 300, 3_000_000):
        x = RNG.random(n)
        same(f(x), cubed(x))


def test_a_length_kept_past_a_loop_stops_the_lift():
    """``n = len(t)`` in a loop's body, read after it: a lifted step does not carry ``n`` out,
    which stayed the first item's length (50 where NumPy's last was 47): the loop is not lifted
    (``lift_plan``), and a stale length read after a lift refuses the capture."""
    def kept(x, y):
        acc = np.zeros_like(y)
        for _ in range(300):
            t = x[x > acc[0] * 0.001]
            acc = acc + y * (t.sum() / len(t))
            n = len(t)
        return n * 1.0

    f = stax.compile(kept)
    for _ in range(2):
        x, y = RNG.random(50), RNG.random(4)
        assert f(x, y) == kept(x, y)


def test_numpy_scalar_math_with_a_shapes_size_stays_size_generic():
    """``k[0] + k.shape[0]`` is NumPy's scalar math (``stax.scalar.add``, overflow reported),
    which has a size rule: one generic version for every length."""
    def offset(k):
        return k[0] + k.shape[0], k.sum() - k.size

    f = stax.compile(offset, dynamic=True, strict_native=True)
    for n in (50, 60, 100, 7):
        k = (np.arange(n) % 7 + 1).astype(np.int32)
        assert f(k) == offset(k)
    assert f.cache_info().versions == 1


def test_a_selection_read_only_for_its_length_leaves_the_graph():
    """After its length is the mask's count, ``x[x > 0]`` has no user: erased, so its
    data-dependent shape no longer keeps a size-generic version from being made."""
    def unselected(x):
        t = x[x > 0]
        return x.sum() / (x.size - len(t))

    x = -np.ones(10)
    x[5:] = 1.0
    assert all(n.target != "operator.getitem" for n in trace(unselected, (x,)).graph.nodes)
    f = stax.compile(unselected, dynamic=True, strict_native=True)
    for n in (10, 12, 40):
        x = -np.ones(n)
        x[:3] = 1.0
        same(f(x), unselected(x))
    assert f.cache_info().versions == 1


@pytest.mark.parametrize("fn", [
    lambda x, y: x[y.shape[0] % x.shape[0]] + x[x.shape[0] // y.shape[0]],
    lambda x, y: x[len(x[x > 2.5]) % x.shape[0]],
    lambda x, y: x[x.size // max(len(x[x > 2.5]), 1)],
], ids=["sizes", "length_mod_size", "size_floordiv_length"])
def test_a_size_divided_by_a_size_is_read(fn):
    """A probe's find (also before lengths were followed): ``//`` and ``%`` by another size
    combined the two expressions outside any compile (``RuntimeError: a symbolic size was
    used outside a compile``): they are read, as every other operation with a result that is
    not a size."""
    x, y = np.arange(8.0), np.arange(11.0)
    got, want = stax.compile(fn)(x, y), fn(x, y)
    same(got, want)
