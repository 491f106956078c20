"""Issue 16's training step: a 2-layer MLP (batch 512, 1024 -> 4096 -> 1024, tanh-GELU,
mean-squared loss, float32), forward, loss, the gradients of all four parameters and an SGD
update, per implementation: eager NumPy with a hand-written backward (the reference the others
are checked against), ``jax.jit(jax.value_and_grad)`` with the update inside the jit,
``torch.compile`` of the step (optional) and ``stax.runtime.value_and_grad`` (its program
computes loss and gradients; the update is four NumPy ``-=``). And one transformer block's
training step (batch 8, sequence 512, width 512, 8 heads; layer norms, softmax attention, a
tanh-GELU MLP; float32; the same four parts) in Stax, JAX and torch.compile. ``nox -s bench``
runs each implementation in a process of its own; the summary prints the ratios and each step's
peak memory (the resident high-water mark of a warm step above the resident size before the
first step, so compilers' leftovers and memory pools count: ``conftest.PeakMemory``)."""

from __future__ import annotations

import numpy as np
import peers
import pytest

import stax.runtime as stax

B, D, H, LR = 512, 1024, 4096, 1e-3
CASE = f"train_step_mlp({B}x{D}x{H}x{D})"
C = peers.GELU_C


def _params():
    rng = np.random.default_rng(16)
    f32 = lambda *s, scale=1.0: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    params = [f32(D, H, scale=D ** -0.5), np.zeros(H, np.float32), f32(H, D, scale=H ** -0.5),
              np.zeros(D, np.float32)]
    return params, f32(B, D), f32(B, D)


def loss(w1, b1, w2, b2, x, y):
    h = x @ w1 + b1
    h = 0.5 * h * (1.0 + np.tanh(C * (h + 0.044715 * h * h * h)))
    out = h @ w2 + b2
    return ((out - y) ** 2).mean()


def numpy_step(params, x, y):
    w1, b1, w2, b2 = params
    h0 = x @ w1 + b1
    t = np.tanh(C * (h0 + 0.044715 * h0 * h0 * h0))
    h = 0.5 * h0 * (1.0 + t)
    out = h @ w2 + b2
    d = (2.0 / out.size) * (out - y)
    gw2, gb2, gh = h.T @ d, d.sum(axis=0), d @ w2.T
    dh0 = gh * (0.5 * (1.0 + t) + 0.5 * h0 * (1.0 - t * t) * C * (1.0 + 3 * 0.044715 * h0 * h0))
    grads = (x.T @ dh0, dh0.sum(axis=0), gw2, gb2)
    for p, g in zip(params, grads):
        p -= LR * g
    return ((out - y) ** 2).mean()


def _stax_step():
    value_and_grad = stax.value_and_grad(loss, argnums=(0, 1, 2, 3))

    def step(params, x, y):
        value, grads = value_and_grad(*params, x, y)
        for p, g in zip(params, grads):
            p -= LR * g
        return value
    return step


def _jax_step():
    jax, jnp = peers.jax, peers.jnp

    def jloss(w1, b1, w2, b2, x, y):
        h = x @ w1 + b1
        h = 0.5 * h * (1.0 + jnp.tanh(C * (h + 0.044715 * h * h * h)))
        return ((h @ w2 + b2 - y) ** 2).mean()

    @jax.jit
    def jstep(params, x, y):
        value, grads = jax.value_and_grad(jloss, argnums=(0, 1, 2, 3))(*params, x, y)
        return value, [p - LR * g for p, g in zip(params, grads)]

    def step(state, x, y):
        value, state[:] = jstep(state, x, y)
        return jax.block_until_ready(value)
    return step, lambda params: [jnp.asarray(p) for p in params]


def _torch_step():
    torch = peers.torch
    torch.set_num_threads(2)

    def step_fn(w1, b1, w2, b2, x, y):
        h = x @ w1 + b1
        h = 0.5 * h * (1.0 + torch.tanh(C * (h + 0.044715 * h * h * h)))
        value = ((h @ w2 + b2 - y) ** 2).mean()
        value.backward()
        with torch.no_grad():
            for p in (w1, b1, w2, b2):
                p -= LR * p.grad
                p.grad = None
        return value

    compiled = torch.compile(step_fn)

    def step(state, x, y):
        return compiled(*state, x, y).item()
    return step, lambda params: [torch.tensor(p, requires_grad=True) for p in params]


@pytest.mark.parametrize("impl", ["numpy", "jax", "torch", "stax"])
def test_workload_training_step(benchmark, record, peak_memory, impl):
    params, x, y = _params()
    want_params = [p.copy() for p in params]
    want = numpy_step(want_params, x, y)
    peak_memory.start()
    if impl == "numpy":
        step, state, data = numpy_step, [p.copy() for p in params], (x, y)
    elif impl == "stax":
        step, state, data = _stax_step(), [p.copy() for p in params], (x, y)
    elif impl == "jax":
        if peers.jax is None:
            pytest.skip("jax is not installed")
        step, convert = _jax_step()
        state, data = convert(params), tuple(peers.jnp.asarray(a) for a in (x, y))
    else:
        if peers.torch is None:
            pytest.skip("torch is not installed (torch==2.13.0)")
        step, convert = _torch_step()
        state, data = convert(params), tuple(peers.torch.tensor(a) for a in (x, y))
    try:
        got = float(step(state, *data))
    except Exception as exc:  # torch.compile needs a C++ compiler on the CPU
        pytest.skip(f"{impl} does not run the step here: {type(exc).__name__}: {exc}"[:200])
    np.testing.assert_allclose(got, want, rtol=1e-4)
    for p, w in zip(state, want_params):
        np.testing.assert_allclose(np.asarray(p.detach() if hasattr(p, "detach") else p), w,
                                   rtol=1e-3, atol=1e-6)
    benchmark.group = CASE
    benchmark.pedantic(step, args=(state, *data), rounds=5, warmup_rounds=1)
    record(CASE, impl, benchmark)
    peak_memory.measure(CASE, impl, lambda: step(state, *data))


TB, TS, TW, TH = 8, 512, 512, 8
TRANSFORMER = f"train_step_transformer_block({TB}x{TS}x{TW},{TH} heads)"


def _block(xp):
    """The block's loss in NumPy's or JAX's words (``xp``); torch's is ``_torch_block``."""
    def ln(z, g, b):
        mu = z.mean(-1, keepdims=True)
        var = ((z - mu) ** 2).mean(-1, keepdims=True)
        return (z - mu) / xp.sqrt(var + 1e-5) * g + b

    def block(wq, wk, wv, wo, w1, w2, g1, b1, g2, b2, x):
        hd = TW // TH
        h = ln(x, g1, b1)
        q = (h @ wq).reshape(TB, TS, TH, hd).transpose(0, 2, 1, 3)
        k = (h @ wk).reshape(TB, TS, TH, hd).transpose(0, 2, 1, 3)
        v = (h @ wv).reshape(TB, TS, TH, hd).transpose(0, 2, 1, 3)
        att = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(hd))
        att = xp.exp(att - att.max(-1, keepdims=True))
        att = att / att.sum(-1, keepdims=True)
        x = x + (att @ v).transpose(0, 2, 1, 3).reshape(TB, TS, TW) @ wo
        m = ln(x, g2, b2) @ w1
        m = 0.5 * m * (1.0 + xp.tanh(C * (m + 0.044715 * m * m * m)))
        return ((x + m @ w2) ** 2).mean()
    return block


def _torch_block(torch):
    def ln(z, g, b):
        mu = z.mean(-1, keepdim=True)
        var = ((z - mu) ** 2).mean(-1, keepdim=True)
        return (z - mu) / torch.sqrt(var + 1e-5) * g + b

    def block(wq, wk, wv, wo, w1, w2, g1, b1, g2, b2, x):
        hd = TW // TH
        h = ln(x, g1, b1)
        q = (h @ wq).reshape(TB, TS, TH, hd).permute(0, 2, 1, 3)
        k = (h @ wk).reshape(TB, TS, TH, hd).permute(0, 2, 1, 3)
        v = (h @ wv).reshape(TB, TS, TH, hd).permute(0, 2, 1, 3)
        att = q @ k.transpose(-1, -2) / float(np.float32(np.sqrt(hd)))
        att = torch.exp(att - att.amax(-1, keepdim=True))
        att = att / att.sum(-1, keepdim=True)
        x = x + (att @ v).permute(0, 2, 1, 3).reshape(TB, TS, TW) @ wo
        m = ln(x, g2, b2) @ w1
        m = 0.5 * m * (1.0 + torch.tanh(C * (m + 0.044715 * m * m * m)))
        return ((x + m @ w2) ** 2).mean()
    return block


def _transformer_args():
    rng = np.random.default_rng(17)
    f32 = lambda *s: (rng.standard_normal(s) * 0.05).astype(np.float32)  # noqa: E731
    params = [f32(TW, TW), f32(TW, TW), f32(TW, TW), f32(TW, TW), f32(TW, 4 * TW),
              f32(4 * TW, TW), 1 + f32(TW), f32(TW), 1 + f32(TW), f32(TW)]
    return params, f32(TB, TS, TW) * 20


def _transformer_step(impl):
    """(step(state, x) -> loss, state from the NumPy parameters, x converted) per
    implementation: forward, loss, gradients of the ten parameters, SGD update."""
    params, x = _transformer_args()
    argnums = tuple(range(len(params)))
    if impl == "stax":
        value_and_grad = stax.value_and_grad(_block(np), argnums=argnums)

        def step(state, x):
            value, grads = value_and_grad(*state, x)
            for p, g in zip(state, grads):
                p -= LR * g
            return value
        return step, [p.copy() for p in params], x
    if impl == "jax":
        if peers.jax is None:
            pytest.skip("jax is not installed")
        jax, jnp = peers.jax, peers.jnp

        @jax.jit
        def jstep(state, x):
            value, grads = jax.value_and_grad(_block(jnp), argnums=argnums)(*state, x)
            return value, [p - LR * g for p, g in zip(state, grads)]

        def step(state, x):
            value, state[:] = jstep(state, x)
            return jax.block_until_ready(value)
        return step, [jnp.asarray(p) for p in params], jnp.asarray(x)
    torch = peers.torch
    if torch is None:
        pytest.skip("torch is not installed (torch==2.13.0)")
    torch.set_num_threads(2)
    block = _torch_block(torch)

    def step_fn(*args):
        value = block(*args)
        value.backward()
        with torch.no_grad():
            for p in args[:-1]:
                p -= LR * p.grad
                p.grad = None
        return value

    compiled = torch.compile(step_fn)
    return (lambda state, x: compiled(*state, x).item(),
            [torch.tensor(p, requires_grad=True) for p in params], torch.tensor(x))


@pytest.mark.parametrize("impl", ["jax", "torch", "stax"])
def test_workload_transformer_block_training_step(benchmark, record, peak_memory, impl):
    params, x_np = _transformer_args()
    peak_memory.start()
    step, state, x = _transformer_step(impl)
    try:
        value = float(step(state, x))
    except Exception as exc:  # torch.compile needs a C++ compiler on the CPU
        pytest.skip(f"{impl} does not run the step here: {type(exc).__name__}: {exc}"[:200])
    np.testing.assert_allclose(value, float(_block(np)(*params, x_np)), rtol=1e-4)
    moved = [np.asarray(p.detach() if hasattr(p, "detach") else p) for p in state]
    assert all(np.all(np.isfinite(p)) for p in moved)
    assert any(not np.array_equal(p, q) for p, q in zip(moved, params))  # the update ran
    benchmark.group = TRANSFORMER
    benchmark.pedantic(step, args=(state, x), rounds=3, warmup_rounds=1)
    record(TRANSFORMER, impl, benchmark)
    peak_memory.measure(TRANSFORMER, impl, lambda: step(state, x))
