"""Ordinary programs that build their result in a local array compile natively (issue 13):
`out = np.zeros(...)` filled by rows, columns and elements, `np.empty`, from-imports, arrays of
traced scalars (`np.array([...])`), element reads `x[i]`, and functions of scalars alone."""

import numpy as np
import pytest
from numpy import zeros

import stax.runtime as stax


def columns(x):
    out = np.zeros((x.shape[0], 3), dtype=x.dtype)
    out[:, 0] = x
    out[:, 1] = x * 2
    out[:, 2] = 1.0
    return out


def elements(x):
    out = np.empty(len(x))
    for i in range(len(x)):
        out[i] = x[i] * 2.0 + 1
    return out


def rows_from_import(m):
    out = zeros(m.shape)
    for i in range(m.shape[0]):
        out[i] = m[i] * i - m[i].sum()
    return out


def rhs(y, a, b, c):
    return np.array([a * (y[1] - y[0]), y[0] * (b - y[2]) - y[1], y[0] * y[1] - c * y[2]])


def rotation(t):
    return np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])


def grid(n, a):
    out = np.zeros((n, n))
    for i in range(n):
        out[i, :] = np.arange(n) * a + i
    return out


def mixed_constants(x):
    return np.array([[1.0, 2.0], [x[0], 0]]) + np.array([x[1], 2, True])[:2]


RNG = np.random.default_rng(5)
V = RNG.standard_normal(7)
V[2], V[4] = np.nan, -0.0
M = RNG.standard_normal((4, 6)).astype(np.float32)

CASES = [
    (columns, (V,)), (columns, (V.astype(np.float32)[::2],)), (elements, (V,)),
    (rows_from_import, (M,)), (rows_from_import, (M.T,)), (rhs, (V[:3], 10.0, 28.0, 8 / 3)),
    (rotation, (0.3,)), (rotation, (np.float32(0.3),)), (grid, (5, 0.5)), (grid, (3, 2)),
    (mixed_constants, (V,)),
]


@pytest.mark.parametrize("fn, args", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_compiles_natively_with_numpys_result(fn, args):
    f = stax.compile(fn, strict_native=True)
    with np.errstate(all="ignore"):
        want = fn(*args)
        for _ in range(3):  # compile, then the cache (and the key entry for scalar arguments)
            got = f(*args)
            assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    assert f.cache_info().versions == 1


def test_a_local_array_is_filled_in_one_kernel():
    f = stax.compile(columns, strict_native=True)
    f(V)
    assert [s for s in f.versions()[0].artifact.steps] == ["kernel_0"]


def test_a_literal_array_meets_a_traced_call():
    """``rng.choice(np.array([-1, 1]), ...)``: the literal is remade in the program, not refused
    as an array from outside the function (it fell back to eager NumPy)."""
    def first_passage(rng, n_walkers, n_steps, barrier):
        steps = rng.choice(np.array([-1, 1]), size=(n_walkers, n_steps))
        hit = np.abs(np.cumsum(steps, axis=1)) >= barrier
        first = np.where(hit.any(axis=1), hit.argmax(axis=1), n_steps)
        return first, np.convolve(first, np.array([0.25, 0.5, 0.25]))

    f = stax.compile(first_passage, strict_native=True)
    for seed in range(3):
        mine = f(np.random.default_rng(seed), 20, 50, 4)
        eager = first_passage(np.random.default_rng(seed), 20, 50, 4)
        for a, b in zip(mine, eager):
            np.testing.assert_array_equal(a, b)
    assert f.versions()[0].native


@pytest.mark.parametrize("fn", [
    lambda x: np.array(2.0) * x,
    lambda x: np.array(2.0, np.float32) + x,
    lambda x: np.array(3) * x,
    lambda x: np.array(True) & (x > 0),
    lambda x: np.array(x.sum()),
    lambda x: np.asarray(x.sum(), dtype=np.float32),
    lambda x: np.array(x.sum(), dtype=np.int64),
    lambda x: np.asarray(x[0]) + x,
    lambda x: np.array(x.max()) * 2,
])
def test_zero_dimensional_arrays_of_numbers_and_of_traced_scalars_compile(fn):
    """``np.array(2.0)`` (a literal of one number) is a constant of the program, and
    ``np.asarray(x.sum())`` NumPy's 0-d array of a traced scalar: both were refused ("an array
    that is not an argument", "conversion of a traced array")."""
    x = np.array([0.5, 2.0, -3.25])
    f = stax.compile(fn, strict_native=True)
    f(x)
    got, want = f(x), fn(x)
    assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


def test_an_array_built_in_python_from_the_data_is_named_so():
    """A probe's peak list (``idx.append(i)`` under a test of the data, then ``np.array(idx)``)
    was refused as "an array that does not depend on its array arguments"."""
    def repeated(x):
        n = int(x.sum() > 0)
        return np.array([n] * 100)

    with pytest.raises(stax.UnsupportedError, match="built in Python from numbers it read"):
        stax.compile(repeated, strict_native=True)(np.ones(3))


def test_a_literal_changed_after_a_traced_call_read_it_runs_eagerly():
    """The program makes a literal again as it was made: one changed in place after a traced
    call read it (``c += 1``, a counter) would be stale there, so the call runs eagerly."""
    def counter(x):
        c = np.array(2.0)
        y = x * c
        c += 1
        return y, x * c

    _runs_eagerly_as_numpy(counter)
    x = np.array([1.0, 2.0])
    with pytest.raises(ValueError):  # NumPy's own: a 0-d array of a scalar is a copy
        f = stax.compile(lambda x: np.asarray(x.sum(), copy=False))
        f(x)
        f(x)


LITERAL_VIEWS = [
    lambda x: x[:, None] - np.array([-1.0, 0.0, 1.0])[None, :],
    lambda x: x * np.array([1.0, 2.0, 4.0, 8.0])[::-1],
    lambda x: x @ np.array([[1.0, 2.0, 3.0, 4.0]]).reshape(4, 1),
    lambda x: x.reshape(2, 2) + np.array([[1, 2], [3, 4]]).T,
]


@pytest.mark.parametrize("fn", LITERAL_VIEWS, ids=["newaxis", "reversed", "reshape", "T"])
def test_views_of_a_literal_array_are_constants_too(fn):
    """A probe's finding: ``pts = np.array([...]); x[:, None] - pts[None, :]`` ran eagerly at
    every call ("an array that is not an argument ... pass it as an argument"): the view is
    an array NumPy made, not the literal capture remembers. A view of an unchanged literal is
    made again from its values."""
    f = stax.compile(fn, strict_native=True)
    x = np.array([0.5, -1.0, 2.0, 3.0])
    for _ in range(2):
        got, want = f(x), fn(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_a_literal_changed_after_its_view_was_read_runs_eagerly():
    def changed(x):
        c = np.array([1.0, 2.0])
        y = x * c[::-1]
        c[0] = 5.0
        return y, x * c[::-1]

    _runs_eagerly_as_numpy(changed)


def _runs_eagerly_as_numpy(fn):
    """``fn`` of a 2-element vector, returning two arrays: NumPy's both, from an eager version."""
    x = np.array([1.0, 2.0])
    f = stax.compile(fn)
    for _ in range(2):
        got, want = f(x), fn(x)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    assert not f.versions()[0].native


def windowed(x, beta):
    return x * np.hanning(len(x)) + np.hamming(x.shape[0]) * np.blackman(len(x)) - \
        np.bartlett(len(x)) * np.kaiser(len(x), beta)


def test_window_functions_of_a_length_are_arrays_the_function_makes():
    """``np.hanning(len(x))``: NumPy's window functions make their array in NumPy's own Python
    code; capture refused it as an array from outside the function ("pass it as an argument"),
    so every windowed FFT ran eagerly. They are creation functions now."""
    f = stax.compile(windowed, strict_native=True)
    rng = np.random.default_rng(8)
    for n in (64, 64, 33):
        x = rng.standard_normal(n)
        np.testing.assert_array_equal(f(x, 8.6), windowed(x, 8.6))
    assert f.versions()[-1].native


def _fir(x, h):
    out = np.zeros(len(x) - len(h) + 1, dtype=np.result_type(x, h))
    for k in range(len(h)):
        out += h[k] * x[k:k + len(out)]
    return out, np.common_type(x, h)(1) * x[:2], np.promote_types(x.dtype, h.dtype)


@pytest.mark.parametrize("x_dtype, h_dtype", [(np.float32, np.float32), (np.float32, np.float64),
                                              (np.int16, np.float32)])
def test_a_buffer_of_the_operands_result_type_is_native(x_dtype, h_dtype):
    """A probe's FIR filter: ``np.result_type(x, h)`` (and ``np.common_type``,
    ``np.promote_types``) answer from the operands' dtypes alone (NEP 50), which the key holds:
    a constant of the capture, where it was refused ("returned a Float64DType, not an array")
    and the function ran eagerly."""
    f = stax.compile(_fir, strict_native=True)
    x = (np.arange(50) % 7).astype(x_dtype)
    h = np.array([0.25, 0.5, 0.25]).astype(h_dtype)
    for _ in range(3):
        got, want = f(x, h), _fir(x, h)
        for g, w in zip(got[:2], want[:2]):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
        assert got[2] == want[2]
