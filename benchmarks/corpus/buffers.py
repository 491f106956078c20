"""Results built in a local array: ``out = np.zeros(...)`` (or ``np.empty``, ``np.ones``, a
from-import) filled by rows, columns, blocks, elements and fancy indices."""

from __future__ import annotations

import numpy as np
from numpy import empty, zeros

from . import Program


def affine_rows(x, w, b):
    """Each row of the result from one row of x, one Python iteration per row."""
    n, m = x.shape
    out = np.zeros((n, m))
    for i in range(n):
        out[i, :] = x[i] * w + b
    return out


def feature_columns(x):
    """A design matrix assembled column by column (``from numpy import zeros``)."""
    out = zeros((x.shape[0], 4))
    out[:, 0] = 1.0
    out[:, 1] = x
    out[:, 2] = x ** 2
    out[:, 3] = np.sin(x)
    return out


def coordinate_cube(x, y):
    """A float32 (h, w, 3) image of coordinates: broadcast column and row assignments."""
    out = np.empty((x.shape[0], y.shape[0], 3), dtype=np.float32)
    out[:, :, 0] = x.reshape(-1, 1)
    out[:, :, 1] = y
    out[:, :, 2] = x.reshape(-1, 1) * y
    return out


def vandermonde(x, degree):
    """Columns of increasing powers, each from the previous one."""
    V = np.empty((x.shape[0], degree + 1))
    V[:, 0] = 1.0
    for k in range(1, degree + 1):
        V[:, k] = V[:, k - 1] * x
    return V


def one_hot(labels, k):
    """Integer labels to a float32 one-hot matrix by fancy assignment."""
    n = labels.shape[0]
    out = np.zeros((n, k), dtype=np.float32)
    out[np.arange(n), labels] = 1.0
    return out


def block_diagonal(blocks):
    """Square blocks placed on the diagonal of a zero matrix."""
    k, n, _ = blocks.shape
    out = np.zeros((k * n, k * n))
    for i in range(k):
        out[i * n:(i + 1) * n, i * n:(i + 1) * n] = blocks[i]
    return out


def histogram_counts(x, lo, hi, nbins):
    """Bin indices computed by hand, counted with ``np.add.at`` into an int64 buffer."""
    counts = np.zeros(nbins, dtype=np.int64)
    idx = ((x - lo) / (hi - lo) * nbins).astype(np.int64)
    idx = np.clip(idx, 0, nbins - 1)
    np.add.at(counts, idx, 1)
    return counts


def lagged_matrix(x, lags):
    """Time-delay embedding: column j holds the series shifted by j (``empty`` from-import)."""
    n = x.shape[0] - lags + 1
    out = empty((n, lags), dtype=x.dtype)
    for j in range(lags):
        out[:, j] = x[j:j + n]
    return out


# -- JAX ports ------------------------------------------------------------------------------------

def _jnp():
    import jax.numpy as jnp
    return jnp


def affine_rows_jax(x, w, b):
    jnp = _jnp()
    n, m = x.shape
    out = jnp.zeros((n, m))
    for i in range(n):
        out = out.at[i, :].set(x[i] * w + b)
    return out


def feature_columns_jax(x):
    jnp = _jnp()
    out = jnp.zeros((x.shape[0], 4))
    out = out.at[:, 0].set(1.0).at[:, 1].set(x).at[:, 2].set(x ** 2).at[:, 3].set(jnp.sin(x))
    return out


def coordinate_cube_jax(x, y):
    jnp = _jnp()
    out = jnp.empty((x.shape[0], y.shape[0], 3), dtype=jnp.float32)
    out = out.at[:, :, 0].set(x.reshape(-1, 1))
    out = out.at[:, :, 1].set(y)
    return out.at[:, :, 2].set(x.reshape(-1, 1) * y)


def vandermonde_jax(x, degree):
    jnp = _jnp()
    V = jnp.empty((x.shape[0], degree + 1)).at[:, 0].set(1.0)
    for k in range(1, degree + 1):
        V = V.at[:, k].set(V[:, k - 1] * x)
    return V


def one_hot_jax(labels, k):
    jnp = _jnp()
    n = labels.shape[0]
    return jnp.zeros((n, k), dtype=jnp.float32).at[jnp.arange(n), labels].set(1.0)


def histogram_counts_jax(x, lo, hi, nbins):
    jnp = _jnp()
    idx = jnp.clip(((x - lo) / (hi - lo) * nbins).astype(jnp.int64), 0, nbins - 1)
    return jnp.zeros(nbins, dtype=jnp.int64).at[idx].add(1)



def hilbert_trace(n_i, n_j):
    """A Hilbert-like matrix from ``np.add.outer`` of index vectors, and its trace."""
    H = 1.0 / np.add.outer(n_i, n_j)
    return H, np.trace(H)


PROGRAMS = [
    Program("affine_rows", "buffers", affine_rows,
            lambda r: (r.standard_normal((24, 256)), r.standard_normal(256), r.standard_normal(256)),
            jax_port=affine_rows_jax),
    Program("feature_columns", "buffers", feature_columns, lambda r: (r.uniform(-3, 3, 20000),),
            jax_port=feature_columns_jax),
    Program("coordinate_cube", "buffers", coordinate_cube,
            lambda r: (r.standard_normal(120).astype(np.float32),
                       r.standard_normal(160).astype(np.float32)),
            rtol=1e-6, jax_port=coordinate_cube_jax),
    Program("vandermonde", "buffers", vandermonde, lambda r: (r.uniform(-1, 1, 5000), 8),
            jax_port=vandermonde_jax),
    Program("one_hot", "buffers", one_hot, lambda r: (r.integers(0, 10, 20000), 10),
            jax_port=one_hot_jax),
    Program("block_diagonal", "buffers", block_diagonal, lambda r: (r.standard_normal((6, 40, 40)),)),
    Program("histogram_counts", "buffers", histogram_counts,
            lambda r: (r.standard_normal(20000), -3.0, 3.0, 32), jax_port=histogram_counts_jax),
    Program("lagged_matrix", "buffers", lagged_matrix,
            lambda r: (r.standard_normal(8000).astype(np.float32), 12)),
    Program("hilbert_trace", "buffers", hilbert_trace,
            lambda r: (np.arange(1, 401, dtype=np.float64), np.arange(0, 300, dtype=np.float64))),
]
