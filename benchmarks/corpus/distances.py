"""Distance and similarity matrices: broadcasting, the Gram-matrix identity, row loops,
great-circle distances, integer Manhattan distances, cosine similarity."""

from __future__ import annotations

import numpy as np

from . import Program


def pairwise_broadcast(X, Y):
    """Euclidean distances by a 3-D broadcast difference."""
    return np.sqrt(((X[:, None, :] - Y[None, :, :]) ** 2).sum(axis=-1))


def pairwise_gram(X, Y):
    """Euclidean distances from squared norms and one matrix product (float32)."""
    sq = (X ** 2).sum(axis=1)[:, None] + (Y ** 2).sum(axis=1)[None, :] - 2 * X @ Y.T
    return np.sqrt(np.maximum(sq, 0))


def pairwise_rows_loop(X):
    """Distances of every point to all points, one row per Python iteration."""
    n = X.shape[0]
    D = np.empty((n, n))
    for i in range(n):
        D[i] = np.sqrt(((X - X[i]) ** 2).sum(axis=1))
    return D


def haversine(lat, lon, lat0, lon0):
    """Great-circle distances in km from one point, inputs in degrees."""
    lat, lon = np.radians(lat), np.radians(lon)
    lat0, lon0 = np.radians(lat0), np.radians(lon0)
    a = np.sin((lat - lat0) / 2) ** 2 + np.cos(lat) * np.cos(lat0) * np.sin((lon - lon0) / 2) ** 2
    return 2 * 6371.0 * np.arcsin(np.sqrt(a))


def manhattan_int(a, b):
    """City-block distances between int32 points."""
    return np.abs(a[:, None, :] - b[None, :, :]).sum(axis=-1)


def cosine_similarity(X):
    """Row-normalized Gram matrix."""
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    return Xn @ Xn.T


def nearest_neighbour(X, Y):
    """For each point of X, the index of and distance to its nearest point of Y."""
    d = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(axis=-1)
    idx = d.argmin(axis=1)
    return idx, np.sqrt(d[np.arange(X.shape[0]), idx])


# -- JAX ports ------------------------------------------------------------------------------------

def _jnp():
    import jax.numpy as jnp
    return jnp


def pairwise_broadcast_jax(X, Y):
    jnp = _jnp()
    return jnp.sqrt(((X[:, None, :] - Y[None, :, :]) ** 2).sum(axis=-1))


def pairwise_gram_jax(X, Y):
    jnp = _jnp()
    sq = (X ** 2).sum(axis=1)[:, None] + (Y ** 2).sum(axis=1)[None, :] - 2 * X @ Y.T
    return jnp.sqrt(jnp.maximum(sq, 0))


def pairwise_rows_loop_jax(X):
    jnp = _jnp()
    n = X.shape[0]
    D = jnp.empty((n, n))
    for i in range(n):
        D = D.at[i].set(jnp.sqrt(((X - X[i]) ** 2).sum(axis=1)))
    return D


def haversine_jax(lat, lon, lat0, lon0):
    jnp = _jnp()
    lat, lon = jnp.radians(lat), jnp.radians(lon)
    lat0, lon0 = jnp.radians(lat0), jnp.radians(lon0)
    a = jnp.sin((lat - lat0) / 2) ** 2 + jnp.cos(lat) * jnp.cos(lat0) * jnp.sin((lon - lon0) / 2) ** 2
    return 2 * 6371.0 * jnp.arcsin(jnp.sqrt(a))


def manhattan_int_jax(a, b):
    jnp = _jnp()
    return jnp.abs(a[:, None, :] - b[None, :, :]).sum(axis=-1)


def cosine_similarity_jax(X):
    jnp = _jnp()
    Xn = X / jnp.linalg.norm(X, axis=1, keepdims=True)
    return Xn @ Xn.T


def nearest_neighbour_jax(X, Y):
    jnp = _jnp()
    d = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(axis=-1)
    idx = d.argmin(axis=1)
    return idx, jnp.sqrt(d[jnp.arange(X.shape[0]), idx])


def pair_energy_triangle(pos, L):
    """A periodic pair energy over the triangle of pairs (``range(i + 1, n)``), the minimum
    image taken in place on a per-pair local."""
    E = 0.0
    n = len(pos)
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            d -= L * np.round(d / L)
            E += d @ d
    return E


def symmetric_distances(X):
    """A symmetric distance matrix filled pair by pair, both halves from one distance."""
    n = X.shape[0]
    D = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            d = np.sqrt(((X[i] - X[j]) ** 2).sum())
            D[i, j] = d
            D[j, i] = d
    return D


def lower_distances(X):
    """The lower triangle of a distance matrix, each row against the rows before it."""
    n = X.shape[0]
    D = np.zeros((n, n))
    for i in range(n):
        for j in range(i):
            D[i, j] = np.sqrt(((X[i] - X[j]) ** 2).sum())
    return D


PROGRAMS = [
    Program("pair_energy_triangle", "distances", pair_energy_triangle,
            lambda r: (r.random((150, 3)) * 5, 4.0), rtol=1e-12),
    Program("lower_distances", "distances", lower_distances,
            lambda r: (r.standard_normal((130, 3)),), rtol=1e-12),
    Program("symmetric_distances", "distances", symmetric_distances,
            lambda r: (r.standard_normal((120, 3)),), rtol=1e-12),
    Program("pairwise_broadcast", "distances", pairwise_broadcast,
            lambda r: (r.standard_normal((200, 3)), r.standard_normal((150, 3))), rtol=1e-12,
            jax_port=pairwise_broadcast_jax),
    Program("pairwise_gram", "distances", pairwise_gram,
            lambda r: (r.standard_normal((300, 16)).astype(np.float32),
                       r.standard_normal((200, 16)).astype(np.float32)), rtol=1e-4, atol=1e-3,
            jax_port=pairwise_gram_jax),
    Program("pairwise_rows_loop", "distances", pairwise_rows_loop,
            lambda r: (r.standard_normal((24, 8)),), rtol=1e-12, jax_port=pairwise_rows_loop_jax),
    Program("haversine", "distances", haversine,
            lambda r: (r.uniform(-90, 90, 50000), r.uniform(-180, 180, 50000), 48.85, 2.35),
            rtol=1e-12, jax_port=haversine_jax),
    Program("haversine_f32", "distances", haversine,
            lambda r: (r.uniform(-90, 90, 200000).astype(np.float32),
                       r.uniform(-180, 180, 200000).astype(np.float32),
                       np.float32(48.85), np.float32(2.35)), rtol=2e-4, atol=5e-2,
            jax_port=haversine_jax),
    Program("manhattan_int", "distances", manhattan_int,
            lambda r: (r.integers(-50, 50, (150, 4)).astype(np.int32),
                       r.integers(-50, 50, (120, 4)).astype(np.int32)), jax_port=manhattan_int_jax),
    Program("cosine_similarity", "distances", cosine_similarity,
            lambda r: (r.standard_normal((200, 32)),), rtol=1e-10, atol=1e-12,
            jax_port=cosine_similarity_jax),
    Program("nearest_neighbour", "distances", nearest_neighbour,
            lambda r: (r.standard_normal((300, 3)), r.standard_normal((200, 3))), rtol=1e-12,
            jax_port=nearest_neighbour_jax),
]
