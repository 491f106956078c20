"""Masked corrections and selections: ``d[d > h] -= L``, ``x[m] = f(x[m])``, NaN repair,
``np.where`` (three arguments and one), ``np.clip`` with array bounds, ``np.round`` with decimals."""

from __future__ import annotations

import numpy as np

from . import Program


def minimum_image(x, L):
    """Periodic-box displacements folded into [-L/2, L/2] with masked in-place updates."""
    d = x[:, None] - x[None, :]
    h = L / 2
    d[d > h] -= L
    d[d < -h] += L
    return d


def tiled_wrap(x, k, L):
    """The issue's idiom: ``np.tile``, a masked read-modify-write and a masked fill."""
    d = np.tile(x, (k, 1)) - np.arange(k).reshape(-1, 1)
    h = L / 2
    d[d > h] = d[d > h] - L
    d[d == 0] = -1
    return d


def clamp_outliers(x):
    """Values beyond three standard deviations pulled back to the boundary, keeping their sign."""
    x = x.copy()
    mu, sd = x.mean(), x.std()
    m = np.abs(x - mu) > 3 * sd
    x[m] = mu + np.sign(x[m] - mu) * 3 * sd
    return x


def nan_to_zero_colsum(x):
    """NaN entries zeroed before a column sum (inputs with NaN)."""
    x = x.copy()
    x[np.isnan(x)] = 0.0
    return x.sum(axis=0)


def piecewise_where(x, a):
    """A piecewise function by nested ``np.where`` (inputs with NaN and -0.0)."""
    return np.where(x < 0, a * x, np.where(x < 1, x ** 2, np.sqrt(np.abs(x))))


def clip_round(x, lo, hi):
    """Clipped to per-element bounds and rounded to cents."""
    return np.round(np.clip(x, lo, hi), 2)


def relu_int(a):
    """Negative int32 entries zeroed by a mask, then scaled."""
    a = a.copy()
    a[a < 0] = 0
    return a * 2


def threshold_indices(x, t):
    """``np.where`` with one argument: the indices above a threshold, consumed by a reduction."""
    idx = np.where(x > t)[0]
    return idx.sum(), x[idx].mean()


def selected_moments(x, t):
    """Mean and sample variance of the values above a threshold, by their count (``len``), and
    the count: the selection's length is a value the program computes (no gate on it)."""
    s = x[x > t]
    n = len(s)
    mean = s.sum() / n
    return mean, ((s - mean) ** 2).sum() / (n - 1), n


def sqrt_negative_fix(x):
    """``x[m] = f(x[m])``: square roots of the negative entries' magnitudes, negated (float32)."""
    y = x.copy()
    m = y < 0
    y[m] = -np.sqrt(-y[m])
    y[~m] = np.sqrt(y[~m])
    return y


# -- JAX ports ------------------------------------------------------------------------------------

def _jnp():
    import jax.numpy as jnp
    return jnp


def minimum_image_jax(x, L):
    jnp = _jnp()
    d = x[:, None] - x[None, :]
    h = L / 2
    d = jnp.where(d > h, d - L, d)
    return jnp.where(d < -h, d + L, d)


def tiled_wrap_jax(x, k, L):
    jnp = _jnp()
    d = jnp.tile(x, (k, 1)) - jnp.arange(k).reshape(-1, 1)
    h = L / 2
    d = jnp.where(d > h, d - L, d)
    return jnp.where(d == 0, -1, d)


def clamp_outliers_jax(x):
    jnp = _jnp()
    mu, sd = x.mean(), x.std()
    m = jnp.abs(x - mu) > 3 * sd
    return jnp.where(m, mu + jnp.sign(x - mu) * 3 * sd, x)


def nan_to_zero_colsum_jax(x):
    jnp = _jnp()
    return jnp.where(jnp.isnan(x), 0.0, x).sum(axis=0)


def piecewise_where_jax(x, a):
    jnp = _jnp()
    return jnp.where(x < 0, a * x, jnp.where(x < 1, x ** 2, jnp.sqrt(jnp.abs(x))))


def clip_round_jax(x, lo, hi):
    jnp = _jnp()
    return jnp.round(jnp.clip(x, lo, hi), 2)


def relu_int_jax(a):
    jnp = _jnp()
    return jnp.where(a < 0, 0, a) * 2


def sqrt_negative_fix_jax(x):
    jnp = _jnp()
    return jnp.where(x < 0, -jnp.sqrt(-x), jnp.sqrt(x))


def _with_specials(a):
    a = a.copy()
    a[::97] = np.nan
    a[5::89] = -0.0
    return a


def window_level_u8(img, lo, hi):
    """An image's window/level on uint8 pixels with Python int bounds: below ``lo`` black,
    above ``hi`` white, stretched in between (integer arithmetic, as image code writes it)."""
    stretched = (img.astype(np.int32) - lo) * 255 // (hi - lo)
    return np.where(img < lo, 0, np.where(img > hi, 255, stretched)).astype(np.uint8)



def putmask_pattern(x, pattern):
    """Negative values squared with ``np.putmask``, NaNs filled with a repeating pattern
    (``values`` shorter than the array: repeated over its elements), then ``np.place``."""
    y = x.copy()
    np.putmask(y, y < 0, y ** 2)
    np.putmask(y, np.isnan(y), pattern)
    np.place(y, y > 3, [3.0, 2.5])
    return y


PROGRAMS = [
    Program("window_level_u8", "masks", window_level_u8,
            lambda r: (r.integers(0, 256, (256, 256)).astype(np.uint8), 40, 200)),
    Program("minimum_image", "masks", minimum_image, lambda r: (r.uniform(0, 10, 300), 10.0),
            jax_port=minimum_image_jax),
    Program("tiled_wrap", "masks", tiled_wrap,
            lambda r: (r.integers(0, 10, 400).astype(np.float64), 32, 10.0),
            jax_port=tiled_wrap_jax),
    Program("clamp_outliers", "masks", clamp_outliers, lambda r: (r.standard_t(3, 50000),),
            rtol=1e-12, atol=1e-12, jax_port=clamp_outliers_jax),
    Program("nan_to_zero_colsum", "masks", nan_to_zero_colsum,
            lambda r: (_with_specials(r.standard_normal((300, 200))),), rtol=1e-12, atol=1e-12,
            jax_port=nan_to_zero_colsum_jax),
    Program("piecewise_where", "masks", piecewise_where,
            lambda r: (_with_specials(r.uniform(-2, 3, 50000)), 0.1), jax_port=piecewise_where_jax),
    Program("clip_round", "masks", clip_round,
            lambda r: (r.uniform(-5, 5, 40000), r.uniform(-3, 0, 40000), r.uniform(0, 3, 40000)),
            jax_port=clip_round_jax),
    Program("relu_int", "masks", relu_int,
            lambda r: (r.integers(-100, 100, 50000).astype(np.int32),), jax_port=relu_int_jax),
    Program("threshold_indices", "masks", threshold_indices,
            lambda r: (r.standard_normal(50000), 1.5), rtol=1e-12, atol=1e-12),
    Program("selected_moments", "masks", selected_moments,
            lambda r: (r.standard_normal(100000), 0.5), rtol=1e-12, atol=1e-12),
    Program("sqrt_negative_fix", "masks", sqrt_negative_fix,
            lambda r: (r.standard_normal(50000).astype(np.float32),), rtol=1e-6,
            jax_port=sqrt_negative_fix_jax),
    Program("putmask_pattern", "masks", putmask_pattern,
            lambda r: (np.where(r.random(100000) < 0.05, np.nan, r.standard_normal(100000) * 2),
                       np.array([9.0, 8.0, 7.0])), rtol=0.0),
]
