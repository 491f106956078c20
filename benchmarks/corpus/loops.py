"""Python loops over indices: ``for i in range(n)``, nested loops, ``np.ndindex``,
``enumerate`` over an array, iteration over an array's elements, running accumulators."""

from __future__ import annotations

import numpy as np

from . import Program


def weighted_distances(A, B, W):
    """The issue's loop: weighted column distances, one element per iteration of a double loop."""
    m, n = A.shape[1], B.shape[1]
    D = np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            D[i, j] = np.sqrt((((A[:, i] - B[:, j]) / W[:, i]) ** 2).sum())
    return D


def running_mean(x):
    """An element-by-element accumulator written as in C."""
    out = np.empty_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i]
        out[i] = acc / (i + 1)
    return out


def ndindex_scale(x):
    """Each element scaled by the sum of its indices, visited with ``np.ndindex``."""
    out = np.zeros(x.shape)
    for pos in np.ndindex(x.shape):
        out[pos] = x[pos] * (pos[0] + pos[1])
    return out


def enumerate_scores(db, q):
    """Cosine scores of every row of a database against a query, row by row with enumerate."""
    scores = np.zeros(db.shape[0])
    for idx, row in enumerate(db):
        scores[idx] = np.dot(row, q) / (np.linalg.norm(row) * np.linalg.norm(q))
    return scores


def running_max(x):
    """A running maximum of int32 data with the built-in ``max``."""
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = max(out[i - 1], x[i])
    return out


def horner(coeffs, x):
    """Polynomial evaluation iterating over the coefficient array's elements."""
    y = np.zeros_like(x)
    for c in coeffs:
        y = y * x + c
    return y


def matrix_power(A, k):
    """A matrix power by repeated products."""
    result = np.eye(A.shape[0])
    for _ in range(k):
        result = result @ A
    return result


def cumulative_rows(M):
    """Row i of the result: the sum of rows up to i, built in a loop over rows (float32)."""
    out = np.zeros_like(M)
    out[0] = M[0]
    for i in range(1, M.shape[0]):
        out[i] = out[i - 1] + M[i]
    return out


# -- JAX ports ------------------------------------------------------------------------------------

def welford_rows(X):
    """Streaming column mean and sample variance over an array's rows (Welford's update), with
    a Python int counter the update divides by."""
    n = 0
    mean = np.zeros(X.shape[1])
    M2 = np.zeros(X.shape[1])
    for row in X:
        n += 1
        delta = row - mean
        mean += delta / n
        M2 += delta * (row - mean)
    return mean, M2 / (n - 1)


def _jnp():
    import jax.numpy as jnp
    return jnp


def weighted_distances_jax(A, B, W):
    jnp = _jnp()
    m, n = A.shape[1], B.shape[1]
    D = jnp.zeros((m, n))
    for i in range(m):
        for j in range(n):
            D = D.at[i, j].set(jnp.sqrt((((A[:, i] - B[:, j]) / W[:, i]) ** 2).sum()))
    return D


def running_mean_jax(x):
    jnp = _jnp()
    out = jnp.empty_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i]
        out = out.at[i].set(acc / (i + 1))
    return out


def block_stats(x, nblocks):
    """Mean and standard deviation of each block of a signal, block by block."""
    bs = x.shape[0] // nblocks
    out = np.zeros((nblocks, 2))
    for i in range(nblocks):
        blk = x[i * bs:(i + 1) * bs]
        out[i, 0] = blk.mean()
        out[i, 1] = blk.std()
    return out


def moving_window_mean(x, w):
    """A moving average written as one window slice per output element."""
    n = x.shape[0] - w + 1
    y = np.empty(n)
    for i in range(n):
        y[i] = x[i:i + w].mean()
    return y


def trailing_mean(x, w):
    """A trailing average, the window's start clamped at the array's: ``max(0, i - w + 1)``."""
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = x[max(0, i - w + 1):i + 1].mean()
    return y


def trailing_sum_from_zero(x):
    """Sums of the last five values, written without a clamp: empty windows at the start."""
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = x[i - 4:i + 1].sum()
    return y


def block_minmax_scale(x, bs):
    """Each block rescaled to [0, 1] and written into the result's same block."""
    out = np.empty_like(x)
    for i in range(x.shape[0] // bs):
        blk = x[i * bs:(i + 1) * bs]
        out[i * bs:(i + 1) * bs] = (blk - blk.min()) / (blk.max() - blk.min() + 1e-12)
    return out


def horner_jax(coeffs, x):
    jnp = _jnp()
    y = jnp.zeros_like(x)
    for c in coeffs:
        y = y * x + c
    return y


def matrix_power_jax(A, k):
    jnp = _jnp()
    result = jnp.eye(A.shape[0])
    for _ in range(k):
        result = result @ A
    return result


def cumulative_rows_jax(M):
    jnp = _jnp()
    out = jnp.zeros_like(M).at[0].set(M[0])
    for i in range(1, M.shape[0]):
        out = out.at[i].set(out[i - 1] + M[i])
    return out


PROGRAMS = [
    Program("weighted_distances", "loops", weighted_distances,
            lambda r: (r.standard_normal((64, 6)), r.standard_normal((64, 6)),
                       r.uniform(0.5, 2.0, (64, 6))),
            jax_port=weighted_distances_jax),
    Program("running_mean", "loops", running_mean, lambda r: (r.standard_normal(32),),
            jax_port=running_mean_jax),
    Program("ndindex_scale", "loops", ndindex_scale, lambda r: (r.standard_normal((8, 8)),)),
    Program("enumerate_scores", "loops", enumerate_scores,
            lambda r: (r.standard_normal((40, 128)), r.standard_normal(128))),
    Program("running_max", "loops", running_max,
            lambda r: (r.integers(-1000, 1000, 48).astype(np.int32),)),
    Program("horner", "loops", horner, lambda r: (r.standard_normal(12), r.uniform(-1, 1, 20000)),
            jax_port=horner_jax),
    Program("matrix_power", "loops", matrix_power, lambda r: (r.standard_normal((64, 64)) / 8, 8),
            rtol=1e-9, atol=1e-12, jax_port=matrix_power_jax),
    Program("cumulative_rows", "loops", cumulative_rows,
            lambda r: (r.standard_normal((24, 200)).astype(np.float32),),
            rtol=1e-6, atol=1e-6, jax_port=cumulative_rows_jax),
    # long loops (issue 13 item 2): lifted at capture, the body compiled once
    Program("weighted_distances_70", "loops", weighted_distances,
            lambda r: (r.standard_normal((8, 70)), r.standard_normal((8, 70)),
                       r.uniform(0.5, 2.0, (8, 70)))),
    Program("running_mean_long", "loops", running_mean, lambda r: (r.standard_normal(3000),)),
    # loops slicing at their index: unrolled and rerolled when short, lifted when long
    Program("block_stats", "loops", block_stats, lambda r: (r.standard_normal(20000), 40),
            rtol=1e-11, atol=1e-13),
    Program("block_stats_long", "loops", block_stats, lambda r: (r.standard_normal(200000), 400),
            rtol=1e-11, atol=1e-13),
    Program("moving_window_mean", "loops", moving_window_mean,
            lambda r: (r.standard_normal(5000), 16), rtol=1e-12, atol=1e-14),
    Program("block_minmax_scale", "loops", block_minmax_scale,
            lambda r: (r.standard_normal(100000), 250), rtol=1e-12, atol=1e-14),
    Program("trailing_mean", "loops", trailing_mean, lambda r: (r.standard_normal(5000), 12),
            rtol=1e-12, atol=1e-14),
    Program("trailing_sum_from_zero", "loops", trailing_sum_from_zero,
            lambda r: (r.standard_normal(5000),), rtol=1e-12, atol=1e-14),
    # a counter the body divides by (``n += 1``): computed from the item, the loop lifted
    Program("welford_rows", "loops", welford_rows, lambda r: (r.standard_normal((1000, 32)),)),
]
