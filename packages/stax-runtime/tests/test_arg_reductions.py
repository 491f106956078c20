"""argmax and argmin in one pass and a block (``cpu/arg_blocks.py``: each block's extreme, the
first block holding the best kept, then the first index in it): NumPy's index for every dtype,
axis and layout, with NaNs (the first NaN wins), ties (the first of equal values, across blocks
too), signed zeros and infinities; a max beside an argmax of the same values is the argmax's
pass one."""

import numpy as np
import pytest

import stax.runtime as stax

DTYPES = [np.float64, np.float32, np.int64, np.int32, np.uint8, np.int8, np.bool_]


def values(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.3
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -3), min(info.max, 3), shape, endpoint=True).astype(dtype)
    x = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, 2.0, np.inf, -np.inf]), shape)
    x = x + rng.random(shape).round(1) * (rng.random(shape) < 0.5)
    x[rng.random(shape) < 0.02] = np.nan
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_first_index_of_the_extreme(dtype, kind):
    rng = np.random.default_rng(7)
    whole = stax.compile(lambda x: getattr(x, kind)(), strict_native=True)
    rows = stax.compile(lambda x: getattr(np, kind)(x, axis=1), strict_native=True)
    cols = stax.compile(lambda x: getattr(np, kind)(x, axis=0), strict_native=True)
    fused = stax.compile(lambda x: getattr(np, kind)(x[:, ::2] * 1, axis=-1), strict_native=True)
    for shape in ((1, 1), (3, 5), (40, 70), (129, 33)):
        for _ in range(4):
            x = values(rng, shape, dtype)
            for layout in (x, x.T, x[::-1]):
                assert whole(layout) == getattr(layout, kind)()
                for f, axis in ((rows, 1), (cols, 0)):
                    np.testing.assert_array_equal(f(layout), getattr(np, kind)(layout, axis=axis))
            np.testing.assert_array_equal(fused(x), getattr(np, kind)(x[:, ::2] * 1, axis=-1))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nans_zeros_and_ties(dtype):
    argmax = stax.compile(lambda x: x.argmax(), strict_native=True)
    argmin = stax.compile(lambda x: x.argmin(), strict_native=True)
    for data in ([0.0, -0.0, 0.0], [-0.0, 0.0], [1.0, np.nan, 2.0, np.nan], [np.nan] * 3,
                 [-np.inf] * 4, [np.inf, np.inf], [3.0, 3.0, 1.0], [1.0] * 1000 + [np.nan],
                 [np.nan] + [1.0] * 999):
        x = np.array(data, dtype)
        assert argmax(x) == x.argmax() and argmin(x) == x.argmin(), data


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("shape", [(100_000,), (300, 400), (2, 50_000)])
def test_long_reductions_split_over_rows(dtype, shape):
    """A long arg reduction runs as rows (chunks) in parallel, then the row of the first
    extreme: ties across rows, NaNs in a later row than a tie, zeros of both signs."""
    rng = np.random.default_rng(11)
    argmax = stax.compile(lambda x: x.argmax(), strict_native=True)
    argmin = stax.compile(lambda x: np.argmin(x, keepdims=True), strict_native=True)
    size = int(np.prod(shape))
    for case in range(6):
        x = values(rng, size, dtype)
        if dtype != np.bool_:
            top = np.array(9 if np.dtype(dtype).kind in "iu" else 9.5).astype(dtype)
            x[rng.integers(0, size, 3)] = top  # a tie, likely across rows
            x[rng.integers(0, size, 2)] = x.min()
        if case % 2 and np.dtype(dtype).kind == "f":
            x[rng.integers(size // 2, size)] = np.nan
        if case == 4 and np.dtype(dtype).kind == "f":
            x[:] = 0.0
            x[rng.integers(0, size, 50)] = -0.0
        x = x.reshape(shape)
        assert argmax(x) == x.argmax()
        np.testing.assert_array_equal(argmin(x), np.argmin(x, keepdims=True))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16, np.uint32, np.bool_])
def test_blocks_keep_the_first_of_equal_extremes(dtype):
    """Runs of several blocks (512 float32 on 256-bit vectors, 1024 on 512-bit ones): the
    extreme in block 0 and again in a later block, in the last partial block only, a NaN in a
    block after the extreme, both zeros as the extreme; reductions along rows longer than a
    block and over a strided 2-D view (an outer reduced loop around the blocked one)."""
    rng = np.random.default_rng(5)
    whole = stax.compile(lambda x: x.argmax(), strict_native=True)
    least = stax.compile(lambda x: x.argmin(), strict_native=True)
    rows = stax.compile(lambda x: np.argmax(x, axis=1), strict_native=True)
    view = stax.compile(lambda x: np.argmin(x[:, 1::2]), strict_native=True)
    floating = np.dtype(dtype).kind == "f"
    for n in (511, 512, 513, 1025, 3000, 7000):
        for case in range(5):
            x = values(rng, n, dtype)
            if dtype != np.bool_:
                top, bottom = (x.max(), x.min()) if not floating else (np.nanmax(x), np.nanmin(x))
                at = sorted(rng.integers(0, n, 2))
                x[at] = top if case != 1 else bottom
                if case == 2:  # (values lie in [-3, 3]: past them, not past the type's range)
                    x[-1] = np.inf if floating else 9
                    x[-3] = -np.inf if floating else 0 if np.dtype(dtype).kind == "u" else -9
            if floating:
                x[np.isnan(x)] = 0.5
                if case == 3:
                    x[rng.integers(n // 2, n)] = np.nan
                if case == 4:
                    x[:] = -1.0
                    x[rng.integers(0, n, 4)] = 0.0
                    x[rng.integers(0, n, 4)] = -0.0
            assert whole(x) == x.argmax() and least(x) == x.argmin(), (n, case)
            grid = np.resize(x, (3, n))
            np.testing.assert_array_equal(rows(grid), np.argmax(grid, axis=1))
            assert view(grid) == np.argmin(grid[:, 1::2])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, np.bool_])
def test_a_max_beside_an_argmax_of_the_same_values(dtype):
    """``x.max()`` with ``x.argmax()`` (and min with argmin) in one function: the extreme comes
    from the arg reduction's pass one; NaN where one is, as NumPy's max."""
    rng = np.random.default_rng(9)
    both = stax.compile(lambda x: (x.max(axis=-1), x.argmax(axis=-1), np.min(x * 2),
                                   np.argmin(x * 2)), strict_native=True)
    for shape in ((7,), (4, 1500), (100_000,)):
        for case in range(3):
            x = values(rng, shape, dtype)
            if case == 1 and np.dtype(dtype).kind == "f":
                x.flat[rng.integers(0, x.size)] = np.nan
            got, want = both(x), (x.max(axis=-1), x.argmax(axis=-1), np.min(x * 2),
                                  np.argmin(x * 2))
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
