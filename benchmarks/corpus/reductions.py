"""Programs built around reductions, of the shapes issue 14 measured slower than NumPy: a branch on
a reduction (a data gate), a reduction bounding a normalization, an argument updated in place
then reduced, a mask selection consumed by a reduction, column statistics, small matrix-vector
steps around element-wise work, float32 trigonometry. The in-place programs are idempotent, so
timing them on the same arguments call after call measures the same work."""

from __future__ import annotations

import numpy as np

from . import Program


def branch_on_mean(x):
    """A branch on the sign of the mean (float32)."""
    if x.mean() > 0:
        return np.sqrt(np.abs(x)) * 2
    return x * x


def normalize_by_max(x):
    """Row differences scaled by their largest magnitude, at least 1."""
    y = np.abs(x[1:] - x[:-1])
    return y / (max(1.0, y.max()) + 1e-9)


def clip_inplace_sum(x):
    """An argument clipped in place, one element reset, then summed (float32)."""
    np.clip(x, -2.0, 2.0, out=x)
    x[0] = 0.0
    return x.sum()


def relu_inplace_mean(x):
    """Negative entries of an argument zeroed in place, then the mean (float32)."""
    x[x < 0] = 0
    return x.mean()


def normalize_inplace(x):
    """A vector scaled to unit length in place (float32): ``x /= np.linalg.norm(x)``."""
    x /= np.linalg.norm(x)
    return x


def center_columns_inplace(X):
    """Column means subtracted from a matrix in place (float64)."""
    X -= X.mean(axis=0)
    return X


def positive_mean(x):
    """The mean of the positive entries, by a mask selection (float32)."""
    return x[x > 0].mean()


def count_and_sum_above(x, t):
    """How many entries exceed a threshold, and their sum."""
    m = x > t
    return np.count_nonzero(m), x[m].sum()


def column_standardize(X):
    """Features standardized by their column mean and standard deviation (float32)."""
    return (X - X.mean(axis=0)) / X.std(axis=0)


def logistic_step(X, y, w):
    """One gradient step of logistic regression (float32)."""
    p = 1 / (1 + np.exp(-(X @ w)))
    return w - 0.1 * (X.T @ (p - y)) / len(y)


def residual_norm(A, x, b):
    """The norm of a linear system's residual."""
    r = A @ x - b
    return np.sqrt(r @ r)


# -- JAX ports ------------------------------------------------------------------------------------

def _jnp():
    import jax.numpy as jnp
    return jnp


def positive_mean_jax(x):
    jnp = _jnp()
    m = x > 0
    return jnp.where(m, x, 0).sum() / m.sum()


def column_standardize_jax(X):
    return (X - X.mean(axis=0)) / X.std(axis=0)


def logistic_step_jax(X, y, w):
    jnp = _jnp()
    p = 1 / (1 + jnp.exp(-(X @ w)))
    return w - 0.1 * (X.T @ (p - y)) / len(y)


def residual_norm_jax(A, x, b):
    jnp = _jnp()
    r = A @ x - b
    return jnp.sqrt(r @ r)


def _f32(r, *shape, scale=1.0, shift=0.0):
    return (r.standard_normal(shape) * scale + shift).astype(np.float32)


PROGRAMS = [
    Program("branch_on_mean", "reductions", branch_on_mean,
            lambda r: (_f32(r, 200000, shift=0.1),), rtol=1e-6, atol=1e-6),
    Program("normalize_by_max", "reductions", normalize_by_max,
            lambda r: (r.standard_normal((500, 600)),), rtol=1e-12),
    Program("clip_inplace_sum", "reductions", clip_inplace_sum,
            lambda r: (_f32(r, 200000, scale=2.0),), rtol=1e-4, atol=1e-2),
    Program("relu_inplace_mean", "reductions", relu_inplace_mean,
            lambda r: (_f32(r, 200000),), rtol=1e-4, atol=1e-6),
    Program("normalize_inplace", "reductions", normalize_inplace,
            lambda r: (_f32(r, 200000),), rtol=1e-5, atol=1e-7),
    Program("center_columns_inplace", "reductions", center_columns_inplace,
            lambda r: (r.standard_normal((500, 400)),), rtol=1e-12, atol=1e-12),
    Program("positive_mean", "reductions", positive_mean, lambda r: (_f32(r, 200000),),
            rtol=1e-4, atol=1e-6, jax_port=positive_mean_jax),
    Program("count_and_sum_above", "reductions", count_and_sum_above,
            lambda r: (r.standard_normal(100000), 0.5), rtol=1e-10, atol=1e-10),
    Program("column_standardize", "reductions", column_standardize,
            lambda r: (_f32(r, 1024, 256, scale=3.0, shift=1.0),), rtol=1e-5, atol=1e-5,
            jax_port=column_standardize_jax),
    Program("logistic_step", "reductions", logistic_step,
            lambda r: (_f32(r, 2000, 64), (r.random(2000) > 0.5).astype(np.float32),
                       _f32(r, 64, scale=0.1)), rtol=1e-4, atol=1e-5, jax_port=logistic_step_jax),
    Program("residual_norm", "reductions", residual_norm,
            lambda r: (r.standard_normal((500, 200)), r.standard_normal(200),
                       r.standard_normal(500)), rtol=1e-10, jax_port=residual_norm_jax),
]
