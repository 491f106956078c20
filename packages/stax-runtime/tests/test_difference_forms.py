"""np.diff, np.outer and ufunc.outer (a Python number an array of its own, as there), np.tile, np.repeat, np.clip with array bounds and concatenations with
constant operands compile natively (issue 13: they ran as NumPy steps), with NumPy's bits on
special values and layouts."""

import numpy as np
import pytest

import stax.runtime as stax

RNG = np.random.default_rng(11)


def special(shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        flat = x.reshape(-1)
        flat[:5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    return x


def layouts(x):
    return {"c": x, "f": np.asfortranarray(x), "t": x.T, "sliced": x[::2, ::-1]}


FUNCTIONS = {
    "diff": lambda x: np.diff(x),
    "diff axis 0": lambda x: np.diff(x, axis=0) * 2,
    "diff n=2": lambda x: np.diff(x, n=2, axis=1),
    "outer": lambda x: np.outer(x[0], x[:, 1]),
    "outer of rows": lambda x: np.outer(x[1], x[2]) - 1,
    "ufunc outer": lambda x: np.subtract.outer(x[0], x[:, 1]) ** 2,
    "ufunc outer of a matrix": lambda x: np.maximum.outer(x, x[0]),
    "ufunc outer comparison": lambda x: np.greater.outer(x[1], x[2]),
    "ufunc outer of a float": lambda x: np.multiply.outer(x[0], 2.0),
    "ufunc outer of an int": lambda x: np.add.outer(3, x),
    "clip array bounds": lambda x: np.clip(x, x[0], x[1]),
    "clip array low": lambda x: np.clip(x, x[:, :1], 1),
    "concatenate list": lambda x: np.concatenate([x[0], [1.0, 2.5]]) * 2,
    "concatenate scalar": lambda x: np.concatenate(([0], x[0], [7])),
    "concatenate rows": lambda x: np.concatenate([x, [[1.0] * x.shape[1]]], axis=0),
    "tile": lambda x: np.tile(x, 2) + 1,
    "tile 2-D": lambda x: np.tile(x, (3, 2)) * 2,
    "tile rows": lambda x: np.tile(x[0], 3),
    "tile new axes": lambda x: np.tile(x[0], (4, 1)) - x[1],
    "tile new and old axes": lambda x: np.tile(x, (2, 1, 3)),
    "tile new axes only": lambda x: np.tile(x, (3, 1, 1)),
    "repeat": lambda x: np.repeat(x, 2, axis=0) - x[0, 0],
    "repeat axis 1": lambda x: np.repeat(x, 3, axis=-1),
    "repeat 1-D": lambda x: np.repeat(x[:, 1], 4),
    "count_nonzero axis": lambda x: np.count_nonzero(x, axis=0),
    "count_nonzero all": lambda x: np.count_nonzero(x > 0, axis=(0, 1), keepdims=True),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
@pytest.mark.parametrize("layout", ["c", "f", "t", "sliced"])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_native_with_numpys_bits(name, layout, dtype):
    fn = FUNCTIONS[name]
    x = layouts(special((6, 5), dtype))[layout]
    f = stax.compile(fn, strict_native=True)
    with np.errstate(all="ignore"):
        want = fn(x)
        calls = [f(x) for _ in range(2)]  # the compiling call, then the cached version's
    for got in calls:
        assert got.dtype == want.dtype and got.shape == want.shape
        if want.dtype.kind == "f":
            nan = np.isnan(want)
            np.testing.assert_array_equal(np.isnan(got), nan)
            np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))
        np.testing.assert_array_equal(got, want)
    assert not any(b.role == "extern" for b in f.versions()[0].artifact.buffers)


SPECIALS = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 0.5])
#: every (x, lo, hi) triple of special values, as columns
TRIPLES = np.array(np.meshgrid(SPECIALS, SPECIALS, SPECIALS, indexing="ij")).reshape(3, -1)


def clip_bounds(kind, x, lo, hi):
    """The bounds of one clip call: arrays (as laid out as x, broadcast rows or columns), NumPy
    0-d arrays and scalars, Python floats, or one of each."""
    dtype = x.dtype.type
    if kind == "arrays":
        return lo, hi
    if kind == "lo array, hi scalar":
        return lo, float(hi.flat[0])
    if kind == "rows":
        return lo[:1], hi[:1]
    if kind == "columns":
        return lo[:, :1], hi[:, :1]
    if kind == "0-d":
        return np.array(lo.flat[0], dtype), np.array(hi.flat[0], dtype)
    return dtype(lo.flat[0]), float(hi.flat[0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", ["c", "t", "sliced"])
@pytest.mark.parametrize("kind", ["arrays", "lo array, hi scalar", "rows", "columns", "0-d",
                                  "scalars"])
def test_float_clip_keeps_numpys_signed_zeros_and_nans(dtype, layout, kind):
    """NumPy's clip loop for array bounds compares and selects (the bound wins a tie of zeros:
    clip(-0.0, [0.0], 1) is 0.0); for scalar bounds it is maximum then minimum (-0.0 stays).
    Every triple of zeros of both signs, infinities, NaN and ordinary values, native."""
    x, lo, hi = (layouts(v.reshape(16, 32).astype(dtype))[layout] for v in TRIPLES)
    lo, hi = clip_bounds(kind, x, lo, hi)
    f = stax.compile(lambda x, lo, hi: np.clip(x, lo, hi), strict_native=True)
    with np.errstate(all="ignore"):
        want = np.clip(x, lo, hi)
        calls = [f(x, lo, hi) for _ in range(2)]  # the compiling call, then the cached one's
    for got in calls:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.signbit(got[~np.isnan(want)]),
                                      np.signbit(want[~np.isnan(want)]))
        np.testing.assert_array_equal(got, want)


def test_bool_diff_and_clip_without_a_bound_keep_numpys_own_call():
    f = stax.compile(lambda m: np.diff(m), strict_native=False)
    m = np.array([True, False, False, True])
    np.testing.assert_array_equal(f(m), np.diff(m))
    g = stax.compile(lambda x: np.clip(x, None, x[0]))
    x = special((4, 3), np.float64)
    np.testing.assert_array_equal(g(x), np.clip(x, None, x[0]))


def test_lists_of_traced_elements_are_stacked_natively():
    """``np.concatenate(([q[-1]], q))``: a list of elements the function read is their stack (it
    was a NumPy step), in the elements' dtype; mixed dtypes keep NumPy's promotion."""
    def upwind(q0, cfl, steps):
        q = q0.copy()
        for _ in range(steps):
            q = q - cfl * np.diff(np.concatenate(([q[-1]], q)))
        return q

    def ends(x):
        return np.concatenate(((x[0], x[-1]), x, [x[1]]))

    def mixed(x, y):
        return np.concatenate(([x[0]], y))

    q = np.random.default_rng(0).standard_normal(100)
    f = stax.compile(upwind, strict_native=True)
    np.testing.assert_array_equal(f(q, 0.4, 5), upwind(q, 0.4, 5))
    assert all(s.startswith("kernel") for s in f.versions()[0].artifact.steps)
    g = stax.compile(ends, strict_native=True)
    for dtype in (np.float32, np.int16):
        x = q.astype(dtype)
        got, want = g(x), ends(x)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    h = stax.compile(mixed, strict_native=True)
    for a, b in ((q.astype(np.float32), q), (q.astype(np.int8), q.astype(np.float32))):
        got, want = h(a, b), mixed(a, b)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


def test_meshgrid_is_broadcast_reads_copied():
    def radius(x, y):
        X, Y = np.meshgrid(x, y)
        return np.sqrt(X ** 2 + Y ** 2)

    def grid3(x, y, z):
        A, B, C = np.meshgrid(x, y, z, indexing="ij")
        return A * B - C, B

    def grids(x, y):
        return np.meshgrid(x, y)

    x, y = np.linspace(-1, 1, 7), np.arange(5.0)[::-1]
    z = np.arange(3, dtype=np.float32)
    for fn, args in ((radius, (x, y)), (grid3, (x, y, z)), (grids, (x[::2], y))):
        compiled = stax.compile(fn, strict_native=True)
        got, want = compiled(*args), fn(*args)
        assert type(got) is type(want)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
            assert g.dtype == w.dtype and g.strides == w.strides
        assert all(s.startswith("kernel") for s in compiled.versions()[0].artifact.steps)
    sparse = stax.compile(lambda a, b: np.meshgrid(a, b, sparse=True))
    for g, w in zip(sparse(x, y), np.meshgrid(x, y, sparse=True)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("bounds", ["arrays", "scalars"])
def test_float16_clip_is_numpys_own_call(bounds):
    """NumPy's half loop keeps x on a tie of zeros (its float32 and float64 loops take the
    bound): float16 clip stays NumPy's call, with its bits."""
    x = np.array([-0.0, 0.0, np.nan, 2.0], np.float16)
    lo, hi = (np.array([0.0, -0.0, 0.0, 0.0], np.float16), np.ones(4, np.float16)) \
        if bounds == "arrays" else (np.float16(-0.0), np.float16(1.0))
    f = stax.compile(lambda x, lo, hi: np.clip(x, lo, hi))
    got, want = f(x, lo, hi), np.clip(x, lo, hi)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint8, np.int64])
def test_clip_with_a_none_bound_is_numpys_maximum_or_minimum(dtype):
    """``np.clip(x, lo, None)`` is NumPy's ``maximum(x, lo)`` (``_methods._clip``; x first: on a
    tie of zeros NumPy keeps the second operand), ``np.clip(x, None, hi)`` its ``minimum``,
    both ``None`` its ``positive``; an integer array's Python int bound past its range is
    dropped first. It was a NumPy step (a probe: a generic version measured slower, eager)."""
    functions = [lambda x: np.clip(x, 0.0, None), lambda x: np.clip(x, None, -0.0),
                 lambda x: np.clip(x, None, None), lambda x: np.clip(x, -1, None),
                 lambda x: x.clip(0.5), lambda x: x.clip(max=0.5),
                 lambda x: np.clip(x, -300, None), lambda x: np.clip(x, None, 300)]
    x = np.array([-0.0, 0.0, np.nan, 1.0, -1.0, 2.5, -7, 100] * 3)
    x = x.astype(dtype) if np.dtype(dtype).kind == "f" else np.nan_to_num(x).astype(dtype)
    for fn in functions:
        want = fn(x)
        compiled = stax.compile(fn, strict_native=True)
        got = compiled(x)
        assert not compiled.versions()[0].artifact.externs  # no NumPy step
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_ufunc_outer_of_an_int_beyond_int64_is_numpys_object_array():
    """NumPy's outer takes ``2**70`` as an object array: its call (which Stax does not compile),
    never a float64 result (a review's find)."""
    def fn(x):
        return np.add.outer(x, 2 ** 70)

    x = np.arange(3.0)
    with pytest.raises(stax.UnsupportedError, match="object"):
        stax.compile(fn, strict_native=True)(x)
    got = stax.compile(fn)(x)
    assert got.dtype == fn(x).dtype == object and (got == fn(x)).all()
