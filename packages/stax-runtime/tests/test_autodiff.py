"""Gradients (issue 16): every rule checked against float64 central differences on random inputs
of several shapes and layouts; the API's forms (argnums, has_aux, pytrees, value_and_grad, vjp,
free arrays); the errors (an integer argument, an op without a rule, data-dependent control)."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax
from stax.ir import UnsupportedError
from stax.runtime import nn
from stax.runtime.autodiff import grad, value_and_grad, vjp


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


def central_differences(fn, args, k, eps=1e-6):
    """d fn / d args[k], element by element, in float64."""
    args = [np.array(a, dtype=np.float64, copy=True) for a in args]
    out = np.zeros_like(args[k])
    for idx in np.ndindex(args[k].shape):
        args[k][idx] += eps
        up = fn(*args)
        args[k][idx] -= 2 * eps
        down = fn(*args)
        args[k][idx] += eps
        out[idx] = (up - down) / (2 * eps)
    return out


V = np.random.default_rng(9).standard_normal(5)  # a global array: a constant of the gradient

RULES = {
    "add, broadcast": lambda x, y: (x + y[0]).sum(),
    "sub, mul": lambda x, y: ((x - y) * x).sum(),
    "truediv": lambda x, y: (x / y).sum() + (2.0 / y).sum(),
    "exp, log": lambda x, y: (np.exp(x) * np.log(y)).mean(),
    "sqrt, tanh": lambda x, y: (np.sqrt(y) + np.tanh(x)).sum(),
    "sin, cos": lambda x, y: (np.sin(x) * np.cos(y)).sum(),
    "log1p, expm1, arctan": lambda x, y: (np.log1p(y) * np.expm1(x) + np.arctan(x)).sum(),
    "power": lambda x, y: (y ** 3.5).sum() + (x ** 2).sum() + np.power(y, x).sum(),
    "abs, maximum": lambda x, y: np.abs(x).sum() + np.maximum(x, 0.1).sum(),
    "minimum, clip": lambda x, y: np.minimum(x, y).sum() + np.clip(x, -0.5, 0.5).sum(),
    "where": lambda x, y: np.where(x > 0, x * y, -y).sum(),
    "max, min": lambda x, y: x.max(axis=1).sum() + x.min() + y.max(axis=0).sum(),
    "mean over an axis": lambda x, y: (x.mean(axis=0) ** 2).sum() + y.mean(),
    "var, std": lambda x, y: x.var(axis=1).sum() + x.std() + y.var(ddof=1),
    "transposes, slices": lambda x, y: (x.T[1:4] * y.T[1:4]).sum() + (x[::2, 1:] ** 2).sum(),
    "reshape": lambda x, y: (x.reshape(x.size // 2, 2) ** 2).sum(axis=0).max() + y.ravel()[3],
    "new axes": lambda x, y: (x[:, None, :] * y[None, :, :]).sum(),
    "matmul": lambda x, y: np.tanh(x @ y.T).sum() + (x @ V).sum() + (V @ y.T).sum(),
    "softmax": lambda x, y: (np.exp(x - x.max(1, keepdims=True)) /
                             np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True) * y).sum(),
    "log-sum-exp": lambda x, y: np.log(np.exp(x).sum(axis=1)).sum() + (y * 0.5).sum(),
    "layer norm": lambda x, y: (((x - x.mean(1, keepdims=True)) /
                                 np.sqrt(x.var(1, keepdims=True) + 1e-5)) * y).sum(),
    "concatenate, stack": lambda x, y: (np.concatenate([x, y * 2], axis=1) ** 2).sum() +
    (np.stack([x, y], axis=0) * np.arange(2.0)[:, None, None]).sum(),
    "pad": lambda x, y: (np.pad(x * y, ((1, 2), (0, 1))) ** 2 * np.arange(9.0)[:, None]).sum(),
    "take": lambda x, y: (x[np.array([0, 2, 2, 5])] ** 2).sum() + (y[[1, 1, 3]] * y[[0]]).sum(),
    "cumsum": lambda x, y: (np.cumsum(x, axis=0) ** 2).sum() + (np.cumsum(y, axis=1) * x).sum(),
    "inverse trigonometric": lambda x, y: (np.arcsin(np.tanh(x) * 0.9) + np.arctan2(x, y) +
                                           np.arccos(np.tanh(y) * 0.9) + np.arcsinh(x)).sum() +
    (np.arccosh(y + 1.5) + np.arctanh(np.tanh(x) * 0.5)).sum(),
    "tan, cbrt, exp2": lambda x, y: (np.tan(np.tanh(x)) + np.cbrt(y) * np.exp2(x)).sum(),
    "hypot, logaddexp": lambda x, y: (np.hypot(x, y) + np.logaddexp(x, y) * x +
                                      np.logaddexp2(y, x)).sum(),
    "copysign, fmax, fmin, remainder": lambda x, y: (np.copysign(y, x) * x).sum() +
    np.fmax(x, y).sum() + np.fmin(x, 0.3).sum() + (np.mod(x * 3, y) * y).sum(),
    "prod, cumprod": lambda x, y: x.prod(axis=1).sum() + (np.cumprod(y, axis=0) * x).sum() +
    np.prod(y[:3], axis=(0, 1)),
    "roll, tril, triu": lambda x, y: (np.roll(x, 2, axis=0) * y).sum() + (np.tril(x) ** 2).sum() +
    (np.triu(y, 1) * x).sum(),
    "flip, reversed slices": lambda x, y: (np.flip(x, 0) * y).sum() + (x[::-1, ::2] ** 2).sum(),
    "einsum": lambda x, y: np.einsum("ij,ij->i", x, y).sum() +
    (np.einsum("ij,kj->ik", x, y) ** 2).sum() + np.einsum("ij,j->", x, y[0]),
    "setitem of a local": lambda x, y: _assigned(x, y),
    "take along another axis": lambda x, y: (np.take(x, np.array([4, 0, 4]), axis=1) ** 2).sum()
    + (y[:, np.array([1, 3, 3])] * x[:, :3]).sum() + (x[:, np.array([[0, 1], [2, 2]])] ** 2).sum(),
    "nn.layer_norm": lambda x, y: (nn.layer_norm(x, (5,), y[0], y[1]) * y).sum() +
    (nn.layer_norm(x * y, x.shape) ** 2 * y).sum(),
}


def _assigned(x, y):
    z = x * 1.0
    z[1:3] = y[1:3] * 2.0
    z[4, ::2] = y[0, 0]
    return (z ** 2).sum()


def test_cumprod_and_prod_gradients_at_zeros():
    """No division by the zeros: the product of the other factors, as the differences say."""
    x = np.array([[0.5, 0.0, 2.0, 0.0, 3.0], [1.5, -2.0, 0.0, 0.5, 1.0]])
    fn = lambda x: (np.cumprod(x, axis=1) * np.arange(1.0, 6.0)).sum() + x.prod(axis=1).sum()  # noqa: E731
    gradient, want = grad(fn), central_differences(fn, (x,), 0)
    for _ in range(2):  # the compiling call, then the cached version's
        got = gradient(x)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        assert np.all(np.isfinite(got))


def _inputs(layout, rng):
    x, y = rng.standard_normal((6, 5)), rng.uniform(0.5, 2.0, (6, 5))
    if layout == "transposed":
        x, y = rng.standard_normal((5, 6)).T, rng.uniform(0.5, 2.0, (5, 6)).T
    elif layout == "sliced":
        x, y = rng.standard_normal((12, 5))[::2], rng.uniform(0.5, 2.0, (6, 10))[:, 1::2]
    return x, y


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("name", sorted(RULES))
def test_each_rule_matches_central_differences(name, layout):
    fn = RULES[name]
    x, y = _inputs(layout, np.random.default_rng(len(name)))
    x = np.where(np.abs(x) < 1e-3, 0.2, x)  # no kink of abs/maximum within eps
    gradient = grad(fn, argnums=(0, 1))
    want = central_differences(fn, (x, y), 0), central_differences(fn, (x, y), 1)
    for _ in range(2):  # the compiling call, then the cached version's
        gx, gy = gradient(x, y)
        np.testing.assert_allclose(gx, want[0], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(gy, want[1], rtol=1e-6, atol=1e-7)


def test_float32_gradients_are_float32():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((16, 8)).astype(np.float32), rng.standard_normal(8).astype(
        np.float32)
    fn = lambda x, w: (np.tanh(x * w) ** 2).mean()  # noqa: E731
    gradient = grad(fn, argnums=(0, 1))
    for _ in range(2):  # the compiling call, then the cached version's
        gx, gw = gradient(x, w)
        assert gx.dtype == np.float32 and gw.dtype == np.float32
        np.testing.assert_allclose(gw, central_differences(fn, (x, w), 1), rtol=2e-3, atol=1e-5)


def mlp_loss(params, x, y):
    h = np.tanh(x @ params["w1"] + params["b1"])
    out = h @ params["w2"] + params["b2"]
    return ((out - y) ** 2).mean(), out


def test_pytrees_aux_and_value():
    rng = np.random.default_rng(2)
    params = {"w1": rng.standard_normal((4, 8)) * 0.5, "b1": np.zeros(8),
              "w2": rng.standard_normal((8, 2)) * 0.5, "b2": np.zeros(2)}
    x, y = rng.standard_normal((10, 4)), rng.standard_normal((10, 2))
    (loss, out), grads = value_and_grad(mlp_loss, has_aux=True)(params, x, y)
    want_loss, want_out = mlp_loss(params, x, y)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-13)
    np.testing.assert_allclose(out, want_out, rtol=1e-13)
    assert isinstance(grads, dict) and sorted(grads) == sorted(params)
    for name in params:
        def of(p, name=name):
            return mlp_loss({**params, name: p}, x, y)[0]
        np.testing.assert_allclose(grads[name], central_differences(of, (params[name],), 0),
                                   rtol=1e-6, atol=1e-8)
    g, aux = grad(mlp_loss, has_aux=True)(params, x, y)
    np.testing.assert_array_equal(g["w1"], grads["w1"])
    np.testing.assert_array_equal(aux, out)


def test_vjp_gives_cotangents_of_a_vector_result():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((5, 3)), rng.standard_normal(3)
    fn = lambda x, w: np.sin(x * w).sum(axis=1)  # noqa: E731
    out, pullback = vjp(fn, x, w)
    np.testing.assert_allclose(out, fn(x, w), rtol=1e-14)
    c = rng.standard_normal(5)
    gx, gw = pullback(c)
    np.testing.assert_allclose(gx, central_differences(lambda x, w: fn(x, w) @ c, (x, w), 0),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw, central_differences(lambda x, w: fn(x, w) @ c, (x, w), 1),
                               rtol=1e-6, atol=1e-8)


def test_grad_composes_with_compile_and_caches_by_key():
    fn = lambda x: (x * x).sum()  # noqa: E731
    g = grad(stax.compile(fn))
    x = np.arange(6.0)
    np.testing.assert_array_equal(g(x), 2 * x)
    np.testing.assert_array_equal(g(x + 1), 2 * (x + 1))
    assert g.versions == 1  # one compiled program for the key
    g(np.arange(4.0))
    assert g.versions == 2


def test_errors_name_the_problem():
    x = np.arange(6.0)
    with pytest.raises(TypeError, match="not differentiable: a int64 array"):
        grad(lambda x: (x * 2).sum())(np.arange(6))
    with pytest.raises(UnsupportedError, match=r"derivative rule for the NumPy step numpy\.sort"
                       ) as info:
        grad(lambda x: (np.sort(x) * x).sum())(x)
    assert "test_autodiff.py" in str(info.value)  # the user's line
    with pytest.raises(UnsupportedError, match="control flow reads its data"):
        grad(lambda x: (x * 2).sum() if x.sum() > 0 else x.sum())(x)
    with pytest.raises(UnsupportedError, match="float scalar"):
        grad(lambda x: x * 2)(x)


def test_compile_of_a_gradient_is_the_gradient():
    g = stax.grad(lambda x: np.exp(x).sum())
    assert stax.compile(g) is g
    np.testing.assert_allclose(stax.compile(g)(np.zeros(3)), np.ones(3))


def test_the_cut_keeps_fewer_bytes_and_gives_the_same_gradients(caplog, monkeypatch):
    """The min-cut (``stax.ir.remat``) against its two extremes on a GELU MLP: it keeps the
    products and the value a backward product reads, and recomputes the tanh (priced at
    ``RECOMPUTE_FUNCTION`` of its bytes, less than keeping it) and the arithmetic between them
    inside the backward's kernels; the gradients are those of keeping everything."""
    import logging

    from stax.ir import lower_capture
    from stax.ir.autodiff import differentiate
    from stax.trace import trace

    rng = np.random.default_rng(4)
    w1, w2 = rng.standard_normal((16, 64)) * 0.3, rng.standard_normal((64, 16)) * 0.3
    x, y = rng.standard_normal((32, 16)), rng.standard_normal((32, 16))

    def loss(w1, w2, x, y):
        h = x @ w1
        h = 0.5 * h * (1.0 + np.tanh(0.79788456 * (h + 0.044715 * h * h * h)))
        return ((h @ w2 - y) ** 2).mean()

    opgraph = lower_capture(trace(loss, (w1, w2, x, y)))
    joint = differentiate(opgraph, ["w1", "w2"])
    sizes, text = joint.info["autodiff_bytes"], joint.info["autodiff"]
    kept_part, recomputed_part = text.split("recomputed")
    assert "%matmul " in kept_part and "tanh" in recomputed_part
    # recomputing everything would also recompute the GELU a backward product reads (a pass
    # more): the cut keeps it, so it lies between the two extremes
    assert sizes["recompute_everything"] < sizes["kept"] < sizes["save_everything"]
    monkeypatch.setenv("STAX_LOGS", "autodiff")
    with caplog.at_level(logging.INFO, logger="stax"):
        got = grad(loss, argnums=(0, 1))(w1, w2, x, y)
    assert "kept for the backward" in caplog.text and "keeping every value read" in caplog.text
    import stax.runtime.autodiff as autodiff
    plain = autodiff.differentiate
    monkeypatch.setattr(autodiff, "differentiate", lambda *a, **k: plain(*a, remat=False, **k))
    want = grad(loss, argnums=(0, 1))(w1, w2, x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


def attention_block(wq, wk, wv, wo, g, b, x):
    """A transformer's attention half: layer norm, heads by reshape and transpose, batched
    products, softmax, heads merged back (a copying reshape)."""
    B, S, W = x.shape
    nh, hd = 2, W // 2
    mu = x.mean(-1, keepdims=True)
    h = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b
    q = (h @ wq).reshape(B, S, nh, hd).transpose(0, 2, 1, 3)
    k = (h @ wk).reshape(B, S, nh, hd).transpose(0, 2, 1, 3)
    v = (h @ wv).reshape(B, S, nh, hd).transpose(0, 2, 1, 3)
    att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
    att = np.exp(att - att.max(-1, keepdims=True))
    att = att / att.sum(-1, keepdims=True)
    o = (att @ v).transpose(0, 2, 1, 3).reshape(B, S, W) @ wo
    return ((x + o) ** 2).mean()


def test_attention_gradients_through_heads_and_batched_products():
    rng = np.random.default_rng(6)
    W = 6
    params = [rng.standard_normal((W, W)) * 0.3 for _ in range(4)] + \
        [1 + 0.1 * rng.standard_normal(W), 0.1 * rng.standard_normal(W)]
    x = rng.standard_normal((2, 5, W))
    gradient = grad(attention_block, argnums=tuple(range(6)))
    wants = [central_differences(attention_block, (*params, x), k) for k in range(6)]
    for _ in range(2):  # the compiling call, then the cached version's
        for got, want in zip(gradient(*params, x), wants, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_a_gradient_that_is_zero_everywhere():
    """floor's derivative is 0: the program's kernels are a zero fill and the loss (a kernel
    whose only value nothing reads once held, ``transient.py``, had no argument and crashed)."""
    x = np.random.default_rng(4).uniform(0.1, 0.9, (3, 4))
    for fn in (lambda x: np.floor(x).sum(), lambda x: (np.rint(x * 2) * 3.0).mean()):
        gradient = grad(fn)
        for _ in range(2):  # the compiling call, then the cached version's
            np.testing.assert_array_equal(gradient(x), np.zeros_like(x))


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


SOFTMAXES = {
    "rows": lambda x, w: (_softmax(x, 1) * w).sum(),
    "columns": lambda x, w: (_softmax(x, 0) * w).sum(),
    "unshifted": lambda x, w: (np.exp(x) / np.exp(x).sum(1, keepdims=True) * w).sum(),
    "shift by a column": lambda x, w: (_softmax(x - w[:, :1], 1) * w).sum(),
    "exp used again": lambda x, w: (np.exp(x) / (e := np.exp(x)).sum(1, keepdims=True) * w).sum()
    + (e * w).sum(),
}


@pytest.mark.parametrize("name", SOFTMAXES)
def test_softmax_as_a_whole_matches_central_differences(name):
    """Softmax differentiated as one pattern (``derivatives_composite.py``): ``y * (g -
    sum(g * y))``, and no cotangent for a shift constant along its axis; where its values have
    other uses, op by op."""
    fn = SOFTMAXES[name]
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal((4, 7)), rng.standard_normal((4, 7))
    gradient = grad(fn, argnums=(0, 1))
    for _ in range(2):  # the compiling call, then the cached version's
        got = gradient(x, w)
        for k in range(2):
            np.testing.assert_allclose(got[k], central_differences(fn, (x, w), k),
                                       rtol=1e-6, atol=1e-8)


def test_the_backward_of_softmax_reads_its_probabilities_alone():
    """Attention's backward keeps the probabilities a product reads anyway, not the scores (or
    the exp recomputed from them) nor the mask of each row's maxima."""
    from stax.ir import lower_capture
    from stax.ir.autodiff import differentiate
    from stax.trace import trace

    rng = np.random.default_rng(6)
    W = 6
    params = [rng.standard_normal((W, W)) * 0.3 for _ in range(4)] + \
        [1 + 0.1 * rng.standard_normal(W), 0.1 * rng.standard_normal(W)]
    x = rng.standard_normal((2, 5, W))
    opgraph = lower_capture(trace(attention_block, (*params, x)))
    joint = differentiate(opgraph, ["wq", "wk", "wv", "wo"])
    kept = joint.info["autodiff"].split("recomputed")[0]
    softmax = next(n for n in opgraph.graph.nodes if n.target == "truediv" and
                   getattr(n.args[0], "target", None) == "exp")
    scores = next(n.args[0] for n in opgraph.graph.nodes if n.target == "max")
    assert f"%{softmax.name} " in kept  # the probabilities: the product's backward reads them
    assert f"%{scores.name} " not in kept and "%exp" not in kept and "%max" not in kept
    assert not any(n.target == "eq" for n in joint.graph.nodes)  # no mask of the maxima


SCALE = 2.0
SETTINGS = {"k": 1.0}


def test_values_the_function_reads_besides_its_arguments_are_guarded():
    """A global number, a dictionary entry: read at capture, guarded as ``compile`` guards them,
    so rebinding one compiles a new gradient instead of returning the stale one."""
    global SCALE
    g = grad(lambda x: (x * SCALE).sum() + (x * SETTINGS["k"]).sum())
    x = np.ones(3)
    np.testing.assert_array_equal(g(x), np.full(3, 3.0))
    SCALE, SETTINGS["k"] = 3.0, 5.0
    try:
        np.testing.assert_array_equal(g(x), np.full(3, 8.0))
    finally:
        SCALE, SETTINGS["k"] = 2.0, 1.0
    assert g.versions == 2


def test_floating_point_events_are_decided_as_numpy_errstate_says():
    """``exp`` overflowing in the gradient's program: its values (inf), with NumPy's warning;
    an error under ``np.errstate(over="raise")``; nothing under ``ignore``."""
    g = grad(lambda x: np.exp(x).sum())
    x = np.array([1.0, 1000.0])
    with pytest.warns(RuntimeWarning, match="overflow encountered in the gradient"):
        got = g(x)
    np.testing.assert_array_equal(got, [np.e, np.inf])
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        g(x)
    import warnings
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(g(x), [np.e, np.inf])


def _layer_norm(z, g, b):
    mu = z.mean(-1, keepdims=True)
    var = ((z - mu) ** 2).mean(-1, keepdims=True)
    return (z - mu) / np.sqrt(var + 1e-5) * g + b


@pytest.mark.parametrize("which", ["layer norm", "softmax"])
def test_a_backward_row_pass_is_one_kernel(which, caplog, monkeypatch):
    """Fusion across the boundary: the row statistics, the per-row values computed from them
    (``1 / sqrt(var + eps)``, a keepdims column) and the input's cotangent of a layer norm or a
    softmax are one row kernel, which reads the rows once."""
    import logging

    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((64, 96)), rng.standard_normal((64, 96))
    g, b = 1 + 0.1 * rng.standard_normal(96), 0.1 * rng.standard_normal(96)
    if which == "layer norm":
        def loss(x):
            return (_layer_norm(x, g, b) * w).sum()
    else:
        def loss(x):
            return (_softmax(x, 1) * w).sum()
    monkeypatch.setenv("STAX_LOGS", "kernels")
    with caplog.at_level(logging.INFO, logger="stax"):
        got = grad(loss)(x)
    np.testing.assert_allclose(got, central_differences(loss, (x,), 0), rtol=1e-5, atol=1e-7)
    launches = [line for line in caplog.text.splitlines() if line.startswith("launch")]
    rows = [line for line in launches if "rows nest" in line]
    output = next(line.split()[1].rstrip(":") for line in caplog.text.splitlines()
                  if line.startswith("buffer") and "float64[64, 96]" in line and "(output)" in line)
    assert len(rows) == 1 and output in rows[0].split("computes")[1].split(";")[0]


@pytest.mark.parametrize("layout", ["contiguous", "transposed stack"])
def test_a_matrix_applied_to_a_stack_gets_one_product_as_its_gradient(layout):
    """``h @ w`` with ``h`` of shape (4, 6, 5): ``w``'s cotangent is one product over the 24
    rows (``h`` viewed as (24, 5)), not four products then summed; a stack whose rows do not
    lie at one stride (a transposed one) keeps the summed products. Both as the differences."""
    from stax.ir import lower_capture
    from stax.ir.autodiff import differentiate
    from stax.trace import trace

    rng = np.random.default_rng(10)
    h = rng.standard_normal((4, 6, 5)) if layout == "contiguous" else \
        rng.standard_normal((4, 5, 6)).transpose(0, 2, 1)
    w, t = rng.standard_normal((5, 3)), rng.standard_normal((4, 6, 3))

    def loss(h, w, t):
        return (np.tanh(h @ w) * t).sum()

    got = grad(loss, argnums=(0, 1))(h, w, t)
    for k in range(2):
        np.testing.assert_allclose(got[k], central_differences(loss, (h, w, t), k),
                                   rtol=1e-6, atol=1e-8)
    joint = differentiate(lower_capture(trace(loss, (h, w, t))), ["w"])
    products = [tuple(n.tensor.shape) for n in joint.graph.nodes
                if n.target == "extern" and "matmul" in n.kwargs.get("fn", "")]
    assert ((5, 3) in products) == (layout == "contiguous")
    assert ((4, 5, 3) in products) == (layout != "contiguous")


def test_the_gradient_mode_is_the_keys_rho():
    g = value_and_grad(lambda x, y: (x * y).sum(), argnums=(0, 1))
    g(np.ones(3), np.ones(3))
    (compiled,) = g._compiled.values()
    assert compiled.versions()[0].rho == "value_and_grad(argnums=(0, 1))"
