"""ODE right-hand sides on tiny arrays, and short fixed-step integrations of them. A right-hand
side costs NumPy a few microseconds: these measure the per-call cost of a compiled function."""

from __future__ import annotations

import numpy as np

from . import Program


def lorenz_rhs(state, sigma, rho, beta):
    """The Lorenz system, an array built from traced scalars."""
    x, y, z = state
    return np.array([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])


def lotka_volterra_rhs(u, p):
    """Predator-prey derivatives written into an ``np.empty`` buffer element by element."""
    a, b, c, d = p
    du = np.empty(2)
    du[0] = a * u[0] - b * u[0] * u[1]
    du[1] = -c * u[1] + d * u[0] * u[1]
    return du


def robertson_rhs(y, k):
    """The stiff Robertson chemical kinetics right-hand side."""
    r1 = k[0] * y[0]
    r2 = k[1] * y[1] * y[1]
    r3 = k[2] * y[1] * y[2]
    return np.array([-r1 + r3, r1 - r2 - r3, r2])


def _pendulum(y, g_over_l):
    return np.array([y[1], -g_over_l * np.sin(y[0])])


def rk4_pendulum(y0, g_over_l, dt, steps):
    """Classical RK4 steps of a pendulum through a helper function."""
    y = y0.copy()
    for _ in range(steps):
        k1 = _pendulum(y, g_over_l)
        k2 = _pendulum(y + dt / 2 * k1, g_over_l)
        k3 = _pendulum(y + dt / 2 * k2, g_over_l)
        k4 = _pendulum(y + dt * k3, g_over_l)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def euler_sir(y0, beta, gamma, dt, steps):
    """Forward Euler for the SIR epidemic model, the trajectory stored row by row."""
    traj = np.zeros((steps + 1, 3))
    traj[0] = y0
    for k in range(steps):
        s, i, r = traj[k]
        n = s + i + r
        traj[k + 1] = traj[k] + dt * np.array([-beta * s * i / n, beta * s * i / n - gamma * i,
                                               gamma * i])
    return traj


def forced_relaxation(x, dt, steps):
    """Forward Euler of dx/dt = cos(t) - x with the time a Python float the loop advances."""
    t = 0.0
    for _ in range(steps):
        x = x + dt * (np.cos(t) - x)
        t += dt
    return x, t


def sir_scalars(s, i, r, beta, gamma, dt, steps):
    """An SIR model whose state is three Python floats, the trajectory written row by row."""
    out = np.zeros((steps, 3))
    for k in range(steps):
        infections = beta * s * i * dt
        recoveries = gamma * i * dt
        s, i, r = s - infections, i + infections - recoveries, r + recoveries
        out[k] = s, i, r
    return out


def nbody_accelerations(pos, mass, eps):
    """Softened gravitational accelerations of a few bodies, pairwise by broadcasting."""
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d ** 2).sum(axis=-1) + eps ** 2
    inv_r3 = r2 ** -1.5
    np.fill_diagonal(inv_r3, 0.0)
    return (d * (inv_r3 * mass[None, :])[:, :, None]).sum(axis=1)


def spring_chain_rhs(x, v, k, m):
    """A chain of masses and springs with fixed ends, float32."""
    f = np.zeros_like(x)
    f[1:] -= k * (x[1:] - x[:-1])
    f[:-1] += k * (x[1:] - x[:-1])
    f[0] -= k * x[0]
    f[-1] -= k * x[-1]
    return v, f / m


# -- JAX ports ------------------------------------------------------------------------------------

def _jnp():
    import jax.numpy as jnp
    return jnp


def lorenz_rhs_jax(state, sigma, rho, beta):
    jnp = _jnp()
    x, y, z = state
    return jnp.array([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])


def lotka_volterra_rhs_jax(u, p):
    jnp = _jnp()
    a, b, c, d = p
    du = jnp.empty(2)
    du = du.at[0].set(a * u[0] - b * u[0] * u[1])
    return du.at[1].set(-c * u[1] + d * u[0] * u[1])


def robertson_rhs_jax(y, k):
    jnp = _jnp()
    r1 = k[0] * y[0]
    r2 = k[1] * y[1] * y[1]
    r3 = k[2] * y[1] * y[2]
    return jnp.array([-r1 + r3, r1 - r2 - r3, r2])


def _pendulum_jax(y, g_over_l):
    jnp = _jnp()
    return jnp.array([y[1], -g_over_l * jnp.sin(y[0])])


def rk4_pendulum_jax(y0, g_over_l, dt, steps):
    y = y0
    for _ in range(steps):
        k1 = _pendulum_jax(y, g_over_l)
        k2 = _pendulum_jax(y + dt / 2 * k1, g_over_l)
        k3 = _pendulum_jax(y + dt / 2 * k2, g_over_l)
        k4 = _pendulum_jax(y + dt * k3, g_over_l)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def euler_sir_jax(y0, beta, gamma, dt, steps):
    jnp = _jnp()
    traj = jnp.zeros((steps + 1, 3)).at[0].set(y0)
    for k in range(steps):
        s, i, r = traj[k]
        n = s + i + r
        traj = traj.at[k + 1].set(traj[k] + dt * jnp.array([-beta * s * i / n,
                                                            beta * s * i / n - gamma * i, gamma * i]))
    return traj


def nbody_accelerations_jax(pos, mass, eps):
    jnp = _jnp()
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d ** 2).sum(axis=-1) + eps ** 2
    inv_r3 = r2 ** -1.5
    inv_r3 = jnp.fill_diagonal(inv_r3, 0.0, inplace=False)
    return (d * (inv_r3 * mass[None, :])[:, :, None]).sum(axis=1)


def spring_chain_rhs_jax(x, v, k, m):
    jnp = _jnp()
    f = jnp.zeros_like(x)
    f = f.at[1:].add(-k * (x[1:] - x[:-1]))
    f = f.at[:-1].add(k * (x[1:] - x[:-1]))
    f = f.at[0].add(-k * x[0])
    f = f.at[-1].add(-k * x[-1])
    return v, f / m


PROGRAMS = [
    Program("lorenz_rhs", "odes", lorenz_rhs, lambda r: (r.standard_normal(3), 10.0, 28.0, 8 / 3),
            jax_port=lorenz_rhs_jax),
    Program("lotka_volterra_rhs", "odes", lotka_volterra_rhs,
            lambda r: (r.uniform(0.5, 2, 2), np.array([1.1, 0.4, 0.4, 0.1])),
            jax_port=lotka_volterra_rhs_jax),
    Program("robertson_rhs", "odes", robertson_rhs,
            lambda r: (np.array([1.0, 2e-5, 0.01]) * r.uniform(0.9, 1.1, 3), np.array([0.04, 3e7, 1e4])),
            jax_port=robertson_rhs_jax),
    Program("rk4_pendulum", "odes", rk4_pendulum, lambda r: (r.uniform(-1, 1, 2), 9.81, 0.01, 10),
            jax_port=rk4_pendulum_jax),
    Program("euler_sir", "odes", euler_sir, lambda r: (np.array([990.0, 10.0, 0.0]), 0.3, 0.1, 0.5, 20),
            jax_port=euler_sir_jax),
    Program("nbody_accelerations", "odes", nbody_accelerations,
            lambda r: (r.standard_normal((8, 3)), r.uniform(0.5, 2, 8), 0.01), rtol=1e-12,
            jax_port=nbody_accelerations_jax),
    Program("spring_chain_rhs", "odes", spring_chain_rhs,
            lambda r: (r.standard_normal(16).astype(np.float32) * 0.1,
                       r.standard_normal(16).astype(np.float32), np.float32(4.0), np.float32(0.5)),
            rtol=1e-6, atol=1e-6, jax_port=spring_chain_rhs_jax),
    Program("rk4_pendulum_long", "odes", rk4_pendulum,
            lambda r: (r.uniform(-1, 1, 2), 9.81, 0.01, 500), rtol=1e-10, atol=1e-12),
    Program("euler_sir_long", "odes", euler_sir,
            lambda r: (np.array([990.0, 10.0, 0.0]), 0.3, 0.1, 0.5, 400)),
    Program("forced_relaxation", "odes", forced_relaxation,
            lambda r: (r.standard_normal(1000), 0.01, 2000), rtol=1e-12, atol=1e-14),
    Program("sir_scalars", "odes", sir_scalars, lambda r: (0.99, 0.01, 0.0, 0.3, 0.1, 0.1, 400)),
]
