"""The issue-5 workloads written for each peer: eager NumPy (the reference), numexpr, Numba
(explicit parallel loops), JAX jit on the CPU and, optionally, torch.compile.

A peer that is not installed is skipped, never faked. Every peer gets the same inputs as Stax and
its result is checked against eager NumPy before it is timed. Numba runs without fastmath (NumPy's
NaN/Inf semantics are the contract for Stax too); the tiny cases use Numba's serial loops, which are
faster there than ``prange``.
"""

from __future__ import annotations

import os

import numpy as np

try:
    import numexpr
except ImportError:  # optional peer
    numexpr = None

try:
    import numba
except ImportError:  # optional peer
    numba = None

try:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
except ImportError:  # optional peer
    jax = None

try:
    import torch
except ImportError:  # optional peer: needs torch==2.13.0
    torch = None

GELU_C = 0.7978845608028654


# -- eager NumPy: also the programs Stax compiles ---------------------------------------------

def example_1_1(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def layer_norm(x, w, b):
    mean = x.mean(-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(-1, keepdims=True)
    return centered / np.sqrt(var + np.float32(1e-5)) * w + b


def gelu(x):
    return 0.5 * x * (1 + np.tanh(GELU_C * (x + 0.044715 * x * x * x)))


def gelu_pow(x):
    """GELU as often written, with ``x ** 3`` (issue 14: within 5% of the ``x * x * x`` form)."""
    return 0.5 * x * (1 + np.tanh(GELU_C * (x + 0.044715 * x ** 3)))


def chain20(x):
    for i in range(10):
        x = x * 1.0001 + 0.5 * i
    return x


def plus_one(x):
    return x + 1


def mlp(x, w1, w2):
    return np.maximum(x @ w1, 0) @ w2


# -- numexpr: element-wise expressions only ----------------------------------------------------

NUMEXPR = {
    "gelu": "0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))",
    "plus_one": "x + 1",
    "chain20": "((((((((((x * 1.0001 + 0.0) * 1.0001 + 0.5) * 1.0001 + 1.0) * 1.0001 + 1.5) * 1.0001"
               " + 2.0) * 1.0001 + 2.5) * 1.0001 + 3.0) * 1.0001 + 3.5) * 1.0001 + 4.0) * 1.0001 + 4.5)",
}


def numexpr_program(name):
    if numexpr is None or name not in NUMEXPR:
        return None
    expr = NUMEXPR[name]
    return lambda x: numexpr.evaluate(expr, local_dict={"x": x})


# -- Numba ---------------------------------------------------------------------------------------

def _numba_programs():
    njit, prange = numba.njit, numba.prange

    @njit(parallel=True)
    def nb_example_1_1(x, w):
        n, m = x.shape
        out = np.empty(n, np.float32)
        for i in prange(n):
            acc = np.float32(0)
            for j in range(m):
                v = max(x[i, j] + w[i, j], np.float32(0))
                acc += v * np.float32(2)
            out[i] = acc
        return out

    @njit(parallel=True)
    def nb_softmax(x):
        n, m = x.shape
        out = np.empty_like(x)
        for i in prange(n):
            top = x[i, 0]
            for j in range(m):
                top = max(top, x[i, j])
            total = np.float32(0)
            for j in range(m):
                e = np.exp(x[i, j] - top)
                out[i, j] = e
                total += e
            for j in range(m):
                out[i, j] /= total
        return out

    @njit(parallel=True)
    def nb_layer_norm(x, w, b):
        n, m = x.shape
        out = np.empty_like(x)
        for i in prange(n):
            total = np.float32(0)
            for j in range(m):
                total += x[i, j]
            mean = total / np.float32(m)
            sq = np.float32(0)
            for j in range(m):
                c = x[i, j] - mean
                sq += c * c
            inv = np.float32(1) / np.sqrt(sq / np.float32(m) + np.float32(1e-5))
            for j in range(m):
                out[i, j] = (x[i, j] - mean) * inv * w[j] + b[j]
        return out

    @njit(parallel=True)
    def nb_gelu(x):
        out = np.empty_like(x)
        for i in prange(x.size):
            v = x[i]
            inner = np.float32(GELU_C) * (v + np.float32(0.044715) * v * v * v)
            out[i] = np.float32(0.5) * v * (np.float32(1) + np.tanh(inner))
        return out

    @njit
    def nb_chain20(x):
        out = np.empty_like(x)
        for i in range(x.size):
            v = x[i]
            for k in range(10):
                v = v * np.float32(1.0001) + np.float32(0.5 * k)
            out[i] = v
        return out

    @njit
    def nb_plus_one(x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = x[i] + np.float32(1)
        return out

    @njit(parallel=True)
    def nb_triad(a, b, c, s):
        for i in prange(a.size):
            a[i] = b[i] + s * c[i]

    return {"example_1_1": nb_example_1_1, "softmax": nb_softmax, "layer_norm": nb_layer_norm,
            "gelu": nb_gelu, "chain20": nb_chain20, "plus_one": nb_plus_one, "triad": nb_triad}


_NUMBA = None


def numba_program(name):
    global _NUMBA
    if numba is None:
        return None
    if _NUMBA is None:
        _NUMBA = _numba_programs()
    return _NUMBA.get(name)


# -- JAX -----------------------------------------------------------------------------------------

def _jax_programs():
    def j_softmax(x):
        e = jnp.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def j_layer_norm(x, w, b):
        mean = x.mean(-1, keepdims=True)
        centered = x - mean
        var = (centered * centered).mean(-1, keepdims=True)
        return centered / jnp.sqrt(var + 1e-5) * w + b

    def j_chain20(x):
        for i in range(10):
            x = x * 1.0001 + 0.5 * i
        return x

    return {
        "example_1_1": lambda x, w: (jnp.maximum(x + w, 0) * 2).sum(-1),
        "softmax": j_softmax,
        "layer_norm": j_layer_norm,
        "gelu": lambda x: 0.5 * x * (1 + jnp.tanh(GELU_C * (x + 0.044715 * x * x * x))),
        "chain20": j_chain20,
        "plus_one": lambda x: x + 1,
        "mlp": lambda x, w1, w2: jnp.maximum(x @ w1, 0) @ w2,
    }


def jax_program(name):
    """A callable taking NumPy arrays: the arrays are put on the device once, outside the timing,
    and every call waits for its result (JAX dispatches asynchronously)."""
    if jax is None or name not in _jax_programs():
        return None
    jitted = jax.jit(_jax_programs()[name])

    def prepare(*args):
        device_args = [jax.device_put(a) for a in args]
        return lambda: jitted(*device_args).block_until_ready()
    return prepare


# -- torch.compile (optional: only where torch==2.13.0 is installed) ------------------------------

def torch_program(name):
    if torch is None or name not in ("example_1_1", "softmax", "gelu", "chain20", "plus_one"):
        return None
    programs = {
        "example_1_1": lambda x, w: (torch.clamp_min(x + w, 0) * 2).sum(-1),
        "softmax": lambda x: torch.softmax(x, -1),
        "gelu": lambda x: 0.5 * x * (1 + torch.tanh(GELU_C * (x + 0.044715 * x * x * x))),
        "chain20": chain20,
        "plus_one": lambda x: x + 1,
    }
    compiled = torch.compile(programs[name])

    def prepare(*args):
        tensors = [torch.from_numpy(a) for a in args]
        return lambda: compiled(*tensors)
    return prepare
