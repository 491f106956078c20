"""Everyday array code that fits no other kind: interpolation, binning with ``np.searchsorted``,
trapezoid integration with ``np.diff``, moving averages by cumulative sums, rounding prices (with
-0.0), NaN-aware standardization, a stable softmax, a float32 z-score."""

from __future__ import annotations

import numpy as np

from . import Program


def interp_resample(xq, xp, fp):
    """Piecewise-linear resampling onto new points."""
    return np.interp(xq, xp, fp)


def searchsorted_bins(x, edges):
    """Bin counts by searching sorted edges, then ``np.bincount``."""
    idx = np.searchsorted(edges, x, side="right")
    return np.bincount(idx, minlength=edges.shape[0] + 1)


def trapezoid(x, y):
    """The trapezoid rule on an uneven grid written with ``np.diff``."""
    return np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2)


def moving_average_cumsum(x, w):
    """A trailing moving average from a cumulative sum with a leading zero."""
    c = np.cumsum(np.insert(x, 0, 0.0))
    return (c[w:] - c[:-w]) / w


def price_with_tax(prices, rate):
    """Prices with tax rounded to cents (inputs with -0.0)."""
    return np.round(prices * (1 + rate), 2)


def nan_standardize(x):
    """Column standardization ignoring NaN (inputs with NaN)."""
    return (x - np.nanmean(x, axis=0)) / np.nanstd(x, axis=0)


def softmax_rows(logits):
    """A numerically stable row softmax."""
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def zscore_f32(x):
    """A float32 z-score with ``np.float32`` constants."""
    return (x - x.mean()) / (x.std() + np.float32(1e-6))


def center_points(P):
    """A point cloud (N, 3) centred and scaled into the unit ball."""
    Q = P - P.mean(axis=0)
    return Q / np.sqrt((Q * Q).sum(axis=1)).max()


def embedding_scores(E, q, bias):
    """Scores of (N, 32) float32 embeddings against a query, with a per-feature bias."""
    return ((E + bias) * q).sum(axis=1) / np.linalg.norm(E, axis=1)


# -- JAX ports ------------------------------------------------------------------------------------

def leaky_clip(x, slope):
    """A leaky ReLU from one-sided clips (``np.clip(x, 0.0, None)``: NumPy's ``maximum``)."""
    return np.clip(x, 0.0, None) + slope * x.clip(max=0.0)


def _jnp():
    import jax.numpy as jnp
    return jnp


def interp_resample_jax(xq, xp, fp):
    return _jnp().interp(xq, xp, fp)


def searchsorted_bins_jax(x, edges):
    jnp = _jnp()
    idx = jnp.searchsorted(edges, x, side="right")
    return jnp.bincount(idx, minlength=edges.shape[0] + 1, length=edges.shape[0] + 1)


def trapezoid_jax(x, y):
    jnp = _jnp()
    return jnp.sum(jnp.diff(x) * (y[1:] + y[:-1]) / 2)


def moving_average_cumsum_jax(x, w):
    jnp = _jnp()
    c = jnp.cumsum(jnp.insert(x, 0, 0.0))
    return (c[w:] - c[:-w]) / w


def price_with_tax_jax(prices, rate):
    return _jnp().round(prices * (1 + rate), 2)


def nan_standardize_jax(x):
    jnp = _jnp()
    return (x - jnp.nanmean(x, axis=0)) / jnp.nanstd(x, axis=0)


def softmax_rows_jax(logits):
    jnp = _jnp()
    e = jnp.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def zscore_f32_jax(x):
    jnp = _jnp()
    return (x - x.mean()) / (x.std() + jnp.float32(1e-6))


def _prices(r):
    p = np.round(r.uniform(-50, 200, 40000), 3)
    p[::50] = -0.0
    p[1::50] = 0.0
    return p, 0.0825


def center_points_jax(P):
    jnp = _jnp()
    Q = P - P.mean(axis=0)
    return Q / jnp.sqrt((Q * Q).sum(axis=1)).max()


def embedding_scores_jax(E, q, bias):
    jnp = _jnp()
    return ((E + bias) * q).sum(axis=1) / jnp.linalg.norm(E, axis=1)


def _with_nans(r):
    x = r.standard_normal((2000, 16)) * 3 + 1
    x[r.random(x.shape) < 0.05] = np.nan
    return (x,)


PROGRAMS = [
    Program("interp_resample", "misc", interp_resample,
            lambda r: (r.uniform(-0.5, 10.5, 20000), np.sort(r.uniform(0, 10, 500)),
                       r.standard_normal(500)), rtol=1e-12, atol=1e-12, jax_port=interp_resample_jax),
    Program("searchsorted_bins", "misc", searchsorted_bins,
            lambda r: (r.standard_normal(30000), np.linspace(-3, 3, 25)),
            jax_port=searchsorted_bins_jax),
    Program("trapezoid", "misc", trapezoid,
            lambda r: (np.sort(r.uniform(0, 10, 30000)), r.standard_normal(30000)), rtol=1e-10,
            atol=1e-10, jax_port=trapezoid_jax),
    Program("moving_average_cumsum", "misc", moving_average_cumsum,
            lambda r: (r.standard_normal(30000), 16), rtol=1e-9, atol=1e-9,
            jax_port=moving_average_cumsum_jax),
    Program("price_with_tax", "misc", price_with_tax, _prices, jax_port=price_with_tax_jax),
    Program("nan_standardize", "misc", nan_standardize, _with_nans, rtol=1e-10, atol=1e-10,
            jax_port=nan_standardize_jax),
    Program("softmax_rows", "misc", softmax_rows, lambda r: (r.standard_normal((256, 100)) * 4,),
            rtol=1e-12, atol=1e-15, jax_port=softmax_rows_jax),
    Program("center_points", "misc", center_points,
            lambda r: (r.standard_normal((20000, 3)) * [1.0, 2.0, 0.5] + 3,), rtol=1e-12,
            atol=1e-14, jax_port=center_points_jax),
    Program("embedding_scores", "misc", embedding_scores,
            lambda r: (r.standard_normal((4000, 32)).astype(np.float32),
                       r.standard_normal(32).astype(np.float32),
                       r.standard_normal(32).astype(np.float32) * 0.1), rtol=1e-4, atol=1e-5,
            jax_port=embedding_scores_jax),
    Program("leaky_clip", "misc", leaky_clip,
            lambda r: (r.standard_normal(200_000).astype(np.float32), np.float32(0.01))),
    Program("zscore_f32", "misc", zscore_f32,
            lambda r: (r.standard_normal(100000).astype(np.float32) * 5 + 2,), rtol=1e-4, atol=1e-4,
            jax_port=zscore_f32_jax),
]
