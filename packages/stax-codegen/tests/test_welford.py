"""var/std of a long array in one pass over memory (spec §6.5): per-row moments in one row
kernel, merged with Welford's (Chan's) combination about the rounded global mean, each row's
deviations' sum carrying its rounded mean's error. As accurate as NumPy's two passes, on data
whose naive sum(x^2) - n mean^2 would cancel away, with NaN/Inf propagating as in NumPy."""

import numpy as np
import pytest


def offset_data(shape, dtype, offset=1000.0, scale=3.0):
    rng = np.random.default_rng(5)
    return (rng.standard_normal(shape) * scale + offset).astype(dtype)


@pytest.mark.parametrize("shape", [(1 << 16,), (1 << 20,), (256, 1024), (64, 32, 48),
                                   (70000,)])
@pytest.mark.parametrize("op, ddof", [("var", 0), ("std", 1)])
@pytest.mark.parametrize("dtype, offset, scale", [
    (np.float32, 1000.0, 3.0), (np.float32, 3e5, 1.0),
    (np.float64, 1000.0, 3.0), (np.float64, 3e5, 1.0), (np.float64, 1e12, 1.0)])
def test_long_reductions_match_numpy(build, run, shape, dtype, op, ddof, offset, scale):
    """Also where the mean is large against the spread: each row's rounded mean is off by
    a part of an ulp of the mean, which Chan's textbook merge turned into an error of 1e-3 of
    the variance (float32 ``3e5 + randn(70000)``; NumPy's 2.4e-8)."""
    x = offset_data(shape, dtype, offset, scale)
    b = build(x=x)
    out = b(op, b.inputs["x"], axis=tuple(range(len(shape))), ddof=ddof, keepdims=False,
            dtype=None)
    (got,), artifact = run(b, out)
    exact = getattr(np, op)(x.astype(np.longdouble), ddof=ddof)
    numpy_error = abs(getattr(np, op)(x, ddof=ddof) - exact) / exact
    error = abs(np.longdouble(got) - exact) / exact
    assert error <= max(4 * numpy_error, 8 * np.finfo(dtype).eps)
    readers = [k for k in artifact.kernels if "x" in k.args]
    assert len(readers) == 1  # the array is read by one kernel: one pass over memory


def test_specials_propagate(build, run):
    for special in (np.nan, np.inf):
        x = offset_data((1 << 17,), np.float64)
        x[12345] = special
        b = build(x=x)
        out = b("var", b.inputs["x"], axis=(0,), ddof=0, keepdims=True, dtype=None)
        (got,), _ = run(b, out)
        with np.errstate(invalid="ignore"):
            want = np.var(x, keepdims=True)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        assert got.shape == want.shape


@pytest.mark.parametrize("shape", [(1 << 17,), (512, 256)])
@pytest.mark.parametrize("special", [[1e308, 1e308], [np.inf], [np.nan], [np.inf, -np.inf]])
def test_an_overflowing_or_special_mean_gives_numpys_value(build, run, shape, special):
    """A mean that overflows makes NumPy's deviations infinite (inf); an infinite element makes
    them NaN: the merge's terms (an infinite spread times a zero deviation sum) made NaN where
    NumPy gives inf."""
    x = offset_data(shape, np.float64, 0.0, 1.0).ravel()
    x[np.linspace(0, x.size - 1, len(special)).astype(int)] = special
    x = x.reshape(shape)
    b = build(x=x)
    out = b("var", b.inputs["x"], axis=tuple(range(len(shape))), ddof=0, keepdims=False,
            dtype=None)
    with np.errstate(all="ignore"):
        (got,), _ = run(b, out)
        want = x.var()
    np.testing.assert_array_equal(got, want)
