"""Stencils, most stepped in time: slice arithmetic, in-place updates through views of local
arrays, buffer swaps, ``np.roll`` neighbourhoods, an integer cellular automaton."""

from __future__ import annotations

import numpy as np

from . import Program


def heat_1d(u0, alpha, steps):
    """Explicit heat equation, the interior updated in place each step."""
    u = u0.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def heat_2d_views(U0, dt, steps):
    """Five-point heat steps through a view of the interior: ``u += ...`` on ``U[1:-1, 1:-1]``."""
    U = U0.copy()
    u = U[1:-1, 1:-1]
    for _ in range(steps):
        u += dt * (U[2:, 1:-1] + U[:-2, 1:-1] + U[1:-1, 2:] + U[1:-1, :-2] - 4 * u)
    return U


def jacobi_2d(grid, iterations):
    """Jacobi relaxation with two buffers swapped every iteration (float32)."""
    old = grid.copy()
    new = grid.copy()
    for _ in range(iterations):
        new[1:-1, 1:-1] = 0.25 * (old[2:, 1:-1] + old[:-2, 1:-1] + old[1:-1, 2:] + old[1:-1, :-2])
        old, new = new, old
    return old


def wave_1d(u0, c, steps):
    """Leapfrog wave equation with three time levels."""
    prev = u0.copy()
    cur = u0.copy()
    nxt = np.zeros_like(u0)
    for _ in range(steps):
        nxt[1:-1] = 2 * cur[1:-1] - prev[1:-1] + c * c * (cur[2:] - 2 * cur[1:-1] + cur[:-2])
        prev, cur, nxt = cur, nxt, prev
    return cur


def game_of_life(board, steps):
    """Conway's game on a torus, int8 cells, neighbours counted with ``np.roll``."""
    for _ in range(steps):
        n = sum(np.roll(np.roll(board, i, 0), j, 1)
                for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
        board = ((n == 3) | ((board == 1) & (n == 2))).astype(np.int8)
    return board


def moving_average_5(x):
    """A centred five-point average by shifted slices (float32)."""
    return (x[:-4] + x[1:-3] + x[2:-2] + x[3:-1] + x[4:]) / 5


def laplacian_periodic(f, h):
    """The periodic 2-D Laplacian by ``np.roll`` along both axes."""
    return (np.roll(f, 1, 0) + np.roll(f, -1, 0) + np.roll(f, 1, 1) + np.roll(f, -1, 1) - 4 * f) / h ** 2


def advection_upwind(q0, cfl, steps):
    """First-order upwind advection with a periodic boundary, ``np.diff`` of a padded copy."""
    q = q0.copy()
    for _ in range(steps):
        q = q - cfl * np.diff(np.concatenate(([q[-1]], q)))
    return q


# -- JAX ports ------------------------------------------------------------------------------------

def _jnp():
    import jax.numpy as jnp
    return jnp


def heat_1d_jax(u0, alpha, steps):
    u = u0
    for _ in range(steps):
        u = u.at[1:-1].set(u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2]))
    return u


def heat_2d_views_jax(U0, dt, steps):
    U = U0
    for _ in range(steps):
        u = U[1:-1, 1:-1]
        U = U.at[1:-1, 1:-1].add(dt * (U[2:, 1:-1] + U[:-2, 1:-1] + U[1:-1, 2:] + U[1:-1, :-2] - 4 * u))
    return U


def jacobi_2d_jax(grid, iterations):
    old = new = grid
    for _ in range(iterations):
        new = new.at[1:-1, 1:-1].set(
            0.25 * (old[2:, 1:-1] + old[:-2, 1:-1] + old[1:-1, 2:] + old[1:-1, :-2]))
        old, new = new, old
    return old


def wave_1d_jax(u0, c, steps):
    jnp = _jnp()
    prev, cur, nxt = u0, u0, jnp.zeros_like(u0)
    for _ in range(steps):
        nxt = nxt.at[1:-1].set(2 * cur[1:-1] - prev[1:-1] + c * c * (cur[2:] - 2 * cur[1:-1] + cur[:-2]))
        prev, cur, nxt = cur, nxt, prev
    return cur


def game_of_life_jax(board, steps):
    jnp = _jnp()
    for _ in range(steps):
        n = sum(jnp.roll(jnp.roll(board, i, 0), j, 1)
                for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
        board = ((n == 3) | ((board == 1) & (n == 2))).astype(jnp.int8)
    return board


def moving_average_5_jax(x):
    return (x[:-4] + x[1:-3] + x[2:-2] + x[3:-1] + x[4:]) / 5


def laplacian_periodic_jax(f, h):
    jnp = _jnp()
    return (jnp.roll(f, 1, 0) + jnp.roll(f, -1, 0) + jnp.roll(f, 1, 1) + jnp.roll(f, -1, 1) - 4 * f) / h ** 2


def advection_upwind_jax(q0, cfl, steps):
    jnp = _jnp()
    q = q0
    for _ in range(steps):
        q = q - cfl * jnp.diff(jnp.concatenate((q[-1:], q)))
    return q


def jacobi_double_buffer(u, steps):
    """A 1-D Jacobi smoother writing into a second buffer, then swapping the two."""
    a = u.copy()
    b = u.copy()
    for _ in range(steps):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a



def heat_neumann_view(u0, r, steps):
    """1-D heat with zero-flux ends; the interior a view bound once before the loop, the ends
    written into the array it views."""
    u = u0.copy()
    inner = u[1:-1]
    for _ in range(steps):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        inner += r * lap
        u[0] = u[1]
        u[-1] = u[-2]
    return u


def rule30(cells, steps):
    """Elementary cellular automaton rule 30 on uint8 cells, its history row by row (a row
    view alive while the next row is written)."""
    hist = np.zeros((steps + 1, cells.shape[0]), dtype=np.uint8)
    hist[0] = cells
    for t in range(steps):
        row = hist[t]
        hist[t + 1] = np.roll(row, 1) ^ (row | np.roll(row, -1))
    return hist


PROGRAMS = [
    Program("jacobi_double_buffer", "stencils", jacobi_double_buffer,
            lambda r: (r.standard_normal(64), 1200), rtol=1e-12, atol=1e-14),
    Program("heat_1d", "stencils", heat_1d, lambda r: (r.standard_normal(2000), 0.25, 40),
            rtol=1e-12, atol=1e-14, jax_port=heat_1d_jax),
    Program("heat_2d_views", "stencils", heat_2d_views,
            lambda r: (r.standard_normal((64, 64)), 0.1, 16), rtol=1e-12, atol=1e-14,
            jax_port=heat_2d_views_jax),
    Program("jacobi_2d", "stencils", jacobi_2d,
            lambda r: (r.standard_normal((96, 96)).astype(np.float32), 20), rtol=1e-5, atol=1e-6,
            jax_port=jacobi_2d_jax),
    Program("wave_1d", "stencils", wave_1d,
            lambda r: (np.exp(-np.linspace(-4, 4, 1500) ** 2), 0.5, 30), rtol=1e-12, atol=1e-14,
            jax_port=wave_1d_jax),
    Program("game_of_life", "stencils", game_of_life,
            lambda r: ((r.random((64, 64)) < 0.3).astype(np.int8), 8), jax_port=game_of_life_jax),
    Program("moving_average_5", "stencils", moving_average_5,
            lambda r: (r.standard_normal(200000).astype(np.float32),), rtol=1e-6, atol=1e-7,
            jax_port=moving_average_5_jax),
    Program("laplacian_periodic", "stencils", laplacian_periodic,
            lambda r: (r.standard_normal((256, 256)), 0.01), rtol=1e-12, atol=1e-9,
            jax_port=laplacian_periodic_jax),
    Program("advection_upwind", "stencils", advection_upwind,
            lambda r: (np.sin(np.linspace(0, 2 * np.pi, 4000, endpoint=False)) + r.random(4000) * 0.1,
                       0.4, 25), rtol=1e-12, atol=1e-14, jax_port=advection_upwind_jax),
    Program("heat_1d_long", "stencils", heat_1d, lambda r: (r.standard_normal(1000), 0.25, 500),
            rtol=1e-12, atol=1e-14),
    Program("heat_2d_views_long", "stencils", heat_2d_views,
            lambda r: (r.standard_normal((100, 100)), 0.1, 200), rtol=1e-12, atol=1e-14),
    Program("heat_neumann_view", "stencils", heat_neumann_view,
            lambda r: (r.standard_normal(2000), 0.2, 200), rtol=1e-12, atol=1e-14),
    Program("rule30", "stencils", rule30,
            lambda r: ((r.random(256) < 0.5).astype(np.uint8), 120)),
]
