"""Functions whose inputs are all Python scalars: grids, series and fractals generated from
bounds, sizes and parameters."""

from __future__ import annotations

import numpy as np

from . import Program


def mandelbrot(xmin, xmax, ymin, ymax, width, height, maxiter):
    """The escape-time Mandelbrot set on a complex grid, masked updates of the points still inside."""
    x = np.linspace(xmin, xmax, width)
    y = np.linspace(ymin, ymax, height)
    c = x + y[:, None] * 1j
    output = np.zeros(c.shape, dtype=np.int64)
    z = np.zeros(c.shape, np.complex128)
    for it in range(maxiter):
        notdone = np.less(z.real * z.real + z.imag * z.imag, 4.0)
        output[notdone] = it
        z[notdone] = z[notdone] ** 2 + c[notdone]
    return output


def mandelbrot_real(xmin, xmax, ymin, ymax, width, height, maxiter):
    """The same set with real and imaginary parts as two float arrays, ``np.where`` to freeze."""
    cr = np.linspace(xmin, xmax, width)[None, :] * np.ones((height, 1))
    ci = np.linspace(ymin, ymax, height)[:, None] * np.ones((1, width))
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    count = np.zeros(cr.shape, dtype=np.int32)
    for _ in range(maxiter):
        inside = zr * zr + zi * zi <= 4.0
        zr, zi = (np.where(inside, zr * zr - zi * zi + cr, zr),
                  np.where(inside, 2 * zr * zi + ci, zi))
        count += inside
    return count


def gaussian_on_grid(mu, sigma, n):
    """A normal density sampled on a fixed interval."""
    x = np.linspace(-5, 5, n)
    return np.exp(-(x - mu) ** 2 / (2 * sigma ** 2)) / (sigma * np.sqrt(2 * np.pi))


def standing_wave(nx, ny, kx, ky):
    """A 2-D mode shape on a meshgrid."""
    X, Y = np.meshgrid(np.linspace(0, 1, nx), np.linspace(0, 1, ny))
    return np.sin(kx * np.pi * X) * np.cos(ky * np.pi * Y)


def logistic_map(r, x0, n):
    """An orbit of the logistic map, element by element."""
    x = np.empty(n)
    x[0] = x0
    for i in range(1, n):
        x[i] = r * x[i - 1] * (1 - x[i - 1])
    return x


def basel_partial_sum(n):
    """A partial sum of 1/k^2 over an integer range."""
    k = np.arange(1, n + 1)
    return (1.0 / k ** 2).sum()


def chebyshev_nodes(a, b, n):
    """Chebyshev points of the first kind mapped to [a, b], float32."""
    k = np.arange(n, dtype=np.float32)
    t = np.cos((2 * k + 1) * np.float32(np.pi) / (2 * n))
    return (a + b) / 2 + (b - a) / 2 * t


# -- JAX ports ------------------------------------------------------------------------------------

def _jnp():
    import jax.numpy as jnp
    return jnp


def p_norm_distances(X, y, p):
    """Minkowski distances of the rows of X to y, a parameter exponent (``np.abs(d) ** p``)."""
    return (np.abs(X - y) ** p).sum(axis=1) ** (1.0 / p)


def gaussian_kernel_matrix(x, sigma):
    """An RBF kernel matrix with a width parameter squared in Python (``sigma ** 2``)."""
    d = x[:, None] - x[None, :]
    return np.exp(-d ** 2 / (2 * sigma ** 2))


def mandelbrot_real_jax(xmin, xmax, ymin, ymax, width, height, maxiter):
    jnp = _jnp()
    cr = jnp.linspace(xmin, xmax, width)[None, :] * jnp.ones((height, 1))
    ci = jnp.linspace(ymin, ymax, height)[:, None] * jnp.ones((1, width))
    zr = jnp.zeros_like(cr)
    zi = jnp.zeros_like(ci)
    count = jnp.zeros(cr.shape, dtype=jnp.int32)
    for _ in range(maxiter):
        inside = zr * zr + zi * zi <= 4.0
        zr, zi = (jnp.where(inside, zr * zr - zi * zi + cr, zr),
                  jnp.where(inside, 2 * zr * zi + ci, zi))
        count += inside
    return count


def gaussian_on_grid_jax(mu, sigma, n):
    jnp = _jnp()
    x = jnp.linspace(-5, 5, n)
    return jnp.exp(-(x - mu) ** 2 / (2 * sigma ** 2)) / (sigma * jnp.sqrt(2 * jnp.pi))


def standing_wave_jax(nx, ny, kx, ky):
    jnp = _jnp()
    X, Y = jnp.meshgrid(jnp.linspace(0, 1, nx), jnp.linspace(0, 1, ny))
    return jnp.sin(kx * jnp.pi * X) * jnp.cos(ky * jnp.pi * Y)


def basel_partial_sum_jax(n):
    jnp = _jnp()
    k = jnp.arange(1, n + 1)
    return (1.0 / k ** 2).sum()


PROGRAMS = [
    Program("mandelbrot", "scalars", mandelbrot, lambda r: (-2.0, 0.5, -1.25, 1.25, 80, 60, 20)),
    Program("mandelbrot_real", "scalars", mandelbrot_real,
            lambda r: (-2.0, 0.5, -1.25, 1.25, 120, 90, 12), jax_port=mandelbrot_real_jax),
    Program("gaussian_on_grid", "scalars", gaussian_on_grid, lambda r: (0.3, 1.2, 20000),
            rtol=1e-13, jax_port=gaussian_on_grid_jax),
    Program("standing_wave", "scalars", standing_wave, lambda r: (160, 120, 3.0, 2.0),
            rtol=1e-12, atol=1e-15, jax_port=standing_wave_jax),
    Program("logistic_map", "scalars", logistic_map, lambda r: (3.7, 0.2, 64)),
    Program("basel_partial_sum", "scalars", basel_partial_sum, lambda r: (100000,),
            jax_port=basel_partial_sum_jax),
    Program("p_norm_distances", "scalars", p_norm_distances,
            lambda r: (r.normal(size=(400, 16)), r.normal(size=16), 1.5), rtol=1e-13),
    Program("gaussian_kernel_matrix", "scalars", gaussian_kernel_matrix,
            lambda r: (r.normal(size=300), 0.7), rtol=1e-13, atol=1e-300),
    Program("chebyshev_nodes", "scalars", chebyshev_nodes, lambda r: (-1.0, 3.0, 5000), rtol=1e-6,
            atol=1e-6),
]
