"""Iterations until the data says stop: ``while`` loops on a tolerance or a mask, and loops
that ``break`` at a test. Their trip count is the data's, so each call may run another number
of iterations (``stax.trace.while_loops``, ``stax.runtime.lifted_while``)."""

from __future__ import annotations

import numpy as np

from . import Program


def collatz_steps(n):
    n = n.copy()
    steps = np.zeros_like(n)
    active = n > 1
    while active.any():
        even = (n % 2) == 0
        n = np.where(active, np.where(even, n // 2, 3 * n + 1), n)
        steps += active
        active = n > 1
    return steps


def newton_sqrt_tol(a, tol):
    x = np.maximum(a, 1.0)
    err = np.inf
    while err > tol:
        xn = 0.5 * (x + a / x)
        err = np.max(np.abs(xn - x) / xn)
        x = xn
    return x


def bisection_roots(a, tol):
    """Cube roots by bisection, every element at once."""
    lo = np.minimum(a, 0.0) - 1.0
    hi = np.maximum(a, 0.0) + 1.0
    while (hi - lo).max() > tol:
        mid = 0.5 * (lo + hi)
        below = mid * mid * mid < a
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def bisection_break(a, tol):
    lo = np.zeros_like(a)
    hi = np.maximum(a, 1.0)
    while True:
        mid = 0.5 * (lo + hi)
        f = mid * mid - a
        lo = np.where(f < 0, mid, lo)
        hi = np.where(f >= 0, mid, hi)
        if (hi - lo).max() <= tol:
            break
    return 0.5 * (lo + hi)


def fixed_point_cos(x, tol):
    for _ in range(1000):
        x = np.cos(x)
        if np.abs(x - np.cos(x)).max() < tol:
            break
    return x


def jacobi_tolerance(A, b, tol):
    D = np.diag(A)
    R = A - np.diagflat(D)
    x = np.zeros_like(b)
    err = np.inf
    while err > tol:
        x_new = (b - R @ x) / D
        err = np.max(np.abs(x_new - x))
        x = x_new
    return x


def halve_until_small(x):
    y = x.copy()
    while (y > 1).any():
        y[y > 1] /= 2
    return y


def kmeans_1d(x, centers, tol):
    """Lloyd's iterations on a line until the centers stop moving."""
    shift = np.inf
    while shift > tol:
        labels = np.abs(x[:, None] - centers[None, :]).argmin(axis=1)
        sums = np.bincount(labels, weights=x, minlength=centers.shape[0])
        counts = np.bincount(labels, minlength=centers.shape[0])
        new = np.where(counts > 0, sums / np.maximum(counts, 1), centers)
        shift = np.abs(new - centers).max()
        centers = new
    return centers


def _dominant(r):
    n = 60
    A = r.standard_normal((n, n)) / n
    return A + np.diag(r.uniform(2.0, 3.0, n)), r.standard_normal(n)


def _spd(r):
    n = 40
    M = r.standard_normal((n, n)) / n
    return M @ M.T + np.diag(np.linspace(1.0, 3.0, n))


def relax_until_unchanged(x):
    """An integer fixed point (every element reaches 7), stopped where a step changes nothing
    (``np.array_equal``)."""
    for _ in range(200):
        nxt = (x + 7) // 2
        if np.array_equal(nxt, x):
            break
        x = nxt
    return x


def jacobi_return(A, b, tol, maxit=500):
    """A solver returning from inside its loop, with the iteration count."""
    D = np.diag(A)
    R = A - np.diagflat(D)
    x = np.zeros_like(b)
    for it in range(maxit):
        x_new = (b - R @ x) / D
        if np.max(np.abs(x_new - x)) < tol:
            return x_new, it
        x = x_new
    return x, maxit


def gauss_seidel_checked(A, b, tol, maxit=200):
    """Gauss-Seidel sweeps (a lower solve per sweep) until the residual is small, then a
    check of the count: a counter compared after its loop."""
    L = np.tril(A)
    U = A - L
    x = np.zeros_like(b)
    res, it = np.inf, 0
    while res > tol and it < maxit:
        x = np.linalg.solve(L, b - U @ x)
        res = np.abs(A @ x - b).max()
        it += 1
    if it == maxit:
        return x * np.nan, it
    return x, it


def power_iteration_break(A, tol):
    """The dominant eigenvalue, the loop's target read after it (its count)."""
    v = np.ones(A.shape[0]) / np.sqrt(A.shape[0])
    lam = 0.0
    k = 0
    for k in range(1000):  # noqa: B007 (read after the loop)
        w = A @ v
        lam_new = np.linalg.norm(w)
        v_new = w / lam_new
        if np.abs(lam_new - lam) < tol * lam_new:
            break
        v = v_new
        lam = lam_new
    return lam_new, k


PROGRAMS = [
    Program("relax_until_unchanged", "iterations", relax_until_unchanged,
            lambda r: (r.integers(-10**6, 10**6, 4000),)),
    Program("collatz_steps", "iterations", collatz_steps, lambda r: (r.integers(1, 1000, 2000),)),
    Program("newton_sqrt_tol", "iterations", newton_sqrt_tol,
            lambda r: (r.uniform(0.0, 100.0, 5000), 1e-12)),
    Program("bisection_roots", "iterations", bisection_roots,
            lambda r: (r.uniform(-50.0, 50.0, 4000), 1e-10)),
    Program("bisection_break", "iterations", bisection_break,
            lambda r: (r.uniform(0.0, 100.0, 4000), 1e-9)),
    Program("fixed_point_cos", "iterations", fixed_point_cos,
            lambda r: (r.uniform(-1.0, 1.0, 2000), 1e-12), rtol=1e-14, atol=1e-15),
    Program("jacobi_tolerance", "iterations", jacobi_tolerance,
            lambda r: (*_dominant(r), 1e-10), rtol=1e-9, atol=1e-12),
    Program("halve_until_small", "iterations", halve_until_small,
            lambda r: (r.uniform(0.0, 1000.0, 3000),)),
    Program("jacobi_return", "iterations", jacobi_return,
            lambda r: (*_dominant(r), 1e-10), rtol=1e-9, atol=1e-12),
    Program("gauss_seidel_checked", "iterations", gauss_seidel_checked,
            lambda r: (*_dominant(r), 1e-10), rtol=1e-9, atol=1e-12),
    Program("power_iteration_break", "iterations", power_iteration_break,
            lambda r: (_spd(r), 1e-10), rtol=1e-8, atol=1e-12),
    Program("kmeans_1d", "iterations", kmeans_1d,
            lambda r: (np.concatenate([r.normal(m, 0.5, 400) for m in (-4.0, 0.0, 5.0)]),
                       np.array([-1.0, 0.5, 1.0]), 1e-9), rtol=1e-12, atol=1e-12),
]
