"""Complex signal code: a complex64 FIR filter, a DFT written by hand (as a matrix product and
one coefficient at a time), phasor sums, spectra in decibels, quadrature demodulation, square
roots on the branch cut (inputs with -0.0), a Julia set's escape counts."""

from __future__ import annotations

import numpy as np

from . import Program


def fir_complex(x, h):
    """A complex64 FIR filter as a sum of shifted slices, one per tap ('valid' output)."""
    n, k = x.shape[0], h.shape[0]
    y = np.zeros(n - k + 1, dtype=np.complex64)
    for j in range(k):
        y += h[j] * x[k - 1 - j:n - j]
    return y


def dft_by_hand(x):
    """The DFT as a matrix product with the twiddle matrix built from an outer index product."""
    N = x.shape[0]
    n = np.arange(N)
    k = n.reshape((N, 1))
    M = np.exp(-2j * np.pi * k * n / N)
    return M @ x


def phasor_sum(amp, freq, phase, t):
    """A sum of rotating phasors; magnitude and phase of the total."""
    s = (amp[:, None] * np.exp(1j * (2 * np.pi * freq[:, None] * t + phase[:, None]))).sum(axis=0)
    return np.abs(s), np.angle(s)


def spectrum_db(z):
    """Power of a complex64 spectrum in decibels, float32."""
    return 20 * np.log10(np.abs(z) + np.float32(1e-12))


def fm_demodulate(x, f, fs):
    """Mix a real signal down to baseband and take the phase step between samples."""
    t = np.arange(x.shape[0]) / fs
    iq = x * np.exp(-2j * np.pi * f * t)
    return np.angle(iq[1:] * np.conj(iq[:-1]))


def sqrt_branch(z):
    """Square roots across the negative real axis, where the sign of a zero imaginary part decides
    the branch (inputs with -0.0 and NaN parts), times the conjugate."""
    return np.sqrt(z) * np.conj(z)


def complex_poly_roots_residual(roots, z):
    """The monic polynomial with the given complex roots evaluated at points, by a product loop."""
    p = np.ones_like(z)
    for r in roots:
        p = p * (z - r)
    return np.abs(p)


# -- JAX ports ------------------------------------------------------------------------------------

def dft_loop(x):
    """The DFT one coefficient at a time: twiddles from the loop's index, a complex array
    filled at it."""
    N = x.shape[0]
    n = np.arange(N)
    X = np.zeros(N, dtype=np.complex128)
    for k in range(N):
        X[k] = np.sum(x * np.exp(-2j * np.pi * k * n / N))
    return X


def julia_grid(c, width, height, steps):
    """Escape counts of a Julia set on a complex64 grid, its constant a complex argument."""
    x = np.linspace(-1.5, 1.5, width, dtype=np.float32)
    y = np.linspace(-1.0, 1.0, height, dtype=np.float32)
    z = (x[None, :] + 1j * y[:, None]).astype(np.complex64)
    counts = np.zeros(z.shape, dtype=np.int32)
    for _ in range(steps):
        inside = np.abs(z) <= 2.0
        z = np.where(inside, z * z + c, z)
        counts += inside
    return counts


def _jnp():
    import jax.numpy as jnp
    return jnp


def fir_complex_jax(x, h):
    jnp = _jnp()
    n, k = x.shape[0], h.shape[0]
    y = jnp.zeros(n - k + 1, dtype=jnp.complex64)
    for j in range(k):
        y += h[j] * x[k - 1 - j:n - j]
    return y


def dft_by_hand_jax(x):
    jnp = _jnp()
    N = x.shape[0]
    n = jnp.arange(N)
    k = n.reshape((N, 1))
    M = jnp.exp(-2j * jnp.pi * k * n / N)
    return M @ x


def phasor_sum_jax(amp, freq, phase, t):
    jnp = _jnp()
    s = (amp[:, None] * jnp.exp(1j * (2 * jnp.pi * freq[:, None] * t + phase[:, None]))).sum(axis=0)
    return jnp.abs(s), jnp.angle(s)


def spectrum_db_jax(z):
    jnp = _jnp()
    return 20 * jnp.log10(jnp.abs(z) + jnp.float32(1e-12))


def fm_demodulate_jax(x, f, fs):
    jnp = _jnp()
    t = jnp.arange(x.shape[0]) / fs
    iq = x * jnp.exp(-2j * jnp.pi * f * t)
    return jnp.angle(iq[1:] * jnp.conj(iq[:-1]))


def sqrt_branch_jax(z):
    jnp = _jnp()
    return jnp.sqrt(z) * jnp.conj(z)


def complex_poly_roots_residual_jax(roots, z):
    jnp = _jnp()
    p = jnp.ones_like(z)
    for r in roots:
        p = p * (z - r)
    return jnp.abs(p)


def _c64(r, n):
    return (r.standard_normal(n) + 1j * r.standard_normal(n)).astype(np.complex64)


def _branch_inputs(r):
    re = r.uniform(-4, 4, 20000)
    im = r.standard_normal(20000) * 0.1
    im[::4] = 0.0
    im[1::4] = -0.0
    re[2::16] = np.nan
    z = np.empty(20000, dtype=np.complex128)
    z.real, z.imag = re, im
    return (z,)



def goertzel(x, k):
    """Goertzel's single-bin DFT: a recurrence over the samples started from Python floats."""
    n = x.shape[0]
    w = 2 * np.pi * k / n
    coeff = 2 * np.cos(w)
    s1 = 0.0
    s2 = 0.0
    for v in x:
        s0 = v + coeff * s1 - s2
        s2 = s1
        s1 = s0
    return s1 * s1 + s2 * s2 - coeff * s1 * s2, s1 - np.exp(-1j * w) * s2


PROGRAMS = [
    Program("fir_complex", "complex", fir_complex, lambda r: (_c64(r, 20000), _c64(r, 16) / 4),
            rtol=1e-5, atol=1e-5, jax_port=fir_complex_jax),
    Program("dft_by_hand", "complex", dft_by_hand,
            lambda r: (r.standard_normal(256) + 1j * r.standard_normal(256),), rtol=1e-9, atol=1e-9,
            jax_port=dft_by_hand_jax),
    Program("phasor_sum", "complex", phasor_sum,
            lambda r: (r.uniform(0.5, 1, 24), r.uniform(1, 20, 24), r.uniform(0, 6.3, 24),
                       np.linspace(0, 1, 2000)), rtol=1e-9, atol=1e-9, jax_port=phasor_sum_jax),
    Program("spectrum_db", "complex", spectrum_db, lambda r: (_c64(r, 50000),), rtol=1e-5,
            atol=1e-5, jax_port=spectrum_db_jax),
    Program("fm_demodulate", "complex", fm_demodulate,
            lambda r: (np.cos(2 * np.pi * 0.1 * np.arange(20000) + 0.3 * r.standard_normal(20000)),
                       0.1, 1.0), rtol=1e-9, atol=1e-9, jax_port=fm_demodulate_jax),
    Program("sqrt_branch", "complex", sqrt_branch, _branch_inputs, rtol=1e-14, atol=1e-300,
            jax_port=sqrt_branch_jax),
    Program("dft_loop", "complex", dft_loop, lambda r: (r.standard_normal(200),), rtol=1e-10,
            atol=1e-10),
    Program("julia_grid", "complex", julia_grid, lambda r: (complex(-0.4, 0.6), 120, 80, 40),
            rtol=0.0),
    Program("complex_poly_residual", "complex", complex_poly_roots_residual,
            lambda r: (r.standard_normal(8) + 1j * r.standard_normal(8),
                       r.standard_normal(20000) + 1j * r.standard_normal(20000)), rtol=1e-12,
            jax_port=complex_poly_roots_residual_jax),
    Program("goertzel", "complex", goertzel, lambda r: (r.standard_normal(2000), 37),
            rtol=1e-12, atol=1e-12),
]
