"""The device follows the data on a real GPU: torch CUDA tensors and CuPy arrays through
``stax.compile`` (Triton kernels, NumPy steps through CuPy, data gates read back from the device,
fallbacks through CuPy), checked against NumPy on the host, results of the inputs' kind on their
device. Skipped without a CUDA GPU, or under ``TRITON_INTERPRET=1`` (test_cuda_dispatch.py runs
the same path in the interpreter): run with ``TRITON_INTERPRET=0``."""

import logging
import os
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import stax.runtime as stax  # noqa: E402
from stax.runtime import UnsupportedError  # noqa: E402

pytestmark = pytest.mark.skipif(
    triton.knobs.runtime.interpret or not torch.cuda.is_available(),
    reason="needs a CUDA GPU and TRITON_INTERPRET=0")

KINDS = ["torch", "cupy"]
RNG = np.random.default_rng(0)
X = RNG.standard_normal((64, 130))
W = RNG.standard_normal(130)


def to_device(kind, a):
    if kind == "torch":
        return torch.as_tensor(np.array(a), device="cuda")
    cupy = pytest.importorskip("cupy")
    return cupy.asarray(np.array(a))


def to_host(kind, r):
    """The values of a device result, checking its kind and device."""
    if isinstance(r, (tuple, list)):
        return type(r)(to_host(kind, v) for v in r)
    if kind == "torch":
        assert isinstance(r, torch.Tensor) and r.device.type == "cuda", type(r)
        return r.cpu().numpy()
    import cupy

    assert isinstance(r, cupy.ndarray) and r.device.id == 0, type(r)
    return cupy.asnumpy(r)


def example_1_1(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def close(got, want, rtol=1e-12):
    assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12)


PROGRAMS = {
    "elementwise": (lambda x, w: x * w + 1, (X, W), 0),
    "float32": (lambda x, w: np.abs(x) * w - 1, (X.astype(np.float32), W.astype(np.float32)), 0),
    "example_1_1": (example_1_1, (X, W), 1e-12),
    "softmax": (softmax, (X,), 1e-13),
    "reductions": (lambda x: (x.max(0), x.argmin(-1), x.mean(0)), (X,), 1e-12),
    "sort (NumPy step)": (lambda x: np.sort(x, -1) * 2, (X,), 0),
    "matmul (NumPy step)": (lambda x, m: np.tanh(x @ m), (X, RNG.standard_normal((130, 7))), 1e-12),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_match_numpy_on_the_device(kind, name):
    fn, arrays, rtol = PROGRAMS[name]
    want = fn(*arrays)
    cf = stax.compile(fn)
    for _ in range(2):  # a miss, then a hit
        got = to_host(kind, cf(*[to_device(kind, a) for a in arrays]))
        for g, w in zip(*((got, want) if isinstance(want, tuple) else ((got,), (want,)))):
            close(g, w, rtol) if rtol else np.testing.assert_array_equal(g, w)
    version = cf.versions()[0]
    assert version.native and version.artifact.target["device"] == "cuda"
    assert version.sigma[0][0][1] == f"{kind}:cuda:0"
    assert cf.cache_info().compiles == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_data_gate_is_read_back_from_the_device(kind):
    def gated(x):
        if float(x.sum()) > 0:
            return x * 2
        return x - 1

    cf = stax.compile(gated)
    pos, neg = to_device(kind, np.abs(X)), to_device(kind, -np.abs(X))
    np.testing.assert_array_equal(to_host(kind, cf(pos)), np.abs(X) * 2)
    np.testing.assert_array_equal(to_host(kind, cf(neg)), -np.abs(X) - 1)
    np.testing.assert_array_equal(to_host(kind, cf(pos)), np.abs(X) * 2)
    assert cf.cache_info().versions == 2 and all(v.native for v in cf.versions())


@pytest.mark.parametrize("kind", KINDS)
def test_fallback_runs_through_cupy(kind, monkeypatch, caplog):
    def broken(capture, examples, device="cpu", **options):
        raise UnsupportedError("no kernels today")

    monkeypatch.setitem(stax.BACKENDS, "broken", broken)

    def add_into(x, y):
        x += y
        return x, np.cumsum(x, 0)

    x, y = to_device(kind, X), to_device(kind, X * 3)
    cf = stax.compile(add_into, backend="broken")
    with caplog.at_level(logging.WARNING, logger="stax"):
        out, total = cf(x, y)
        assert len(caplog.records) == 1 and "through CuPy" in caplog.records[0].getMessage()
        np.testing.assert_array_equal(to_host(kind, x), X + X * 3)
        close(to_host(kind, total), np.cumsum(X + X * 3, 0))
        out, total = cf(x, y)  # eager through CuPy
    assert out is x
    np.testing.assert_array_equal(to_host(kind, x), X + X * 3 + X * 3)
    close(to_host(kind, total), np.cumsum(X + X * 3 + X * 3, 0))
    assert cf.cache_info().fallbacks == 2


@pytest.mark.parametrize("kind", KINDS)
def test_in_place_update_and_layouts(kind):
    def add_into(x, y):
        x += y
        return x

    x, y = to_device(kind, X), to_device(kind, W)
    cf = stax.compile(add_into)
    assert cf(x, y) is x and cf(x, y) is x
    np.testing.assert_array_equal(to_host(kind, x), X + W + W)
    base = to_device(kind, RNG.standard_normal((130, 64)))
    got = stax.compile(lambda a, b: a * 2 + b)(base.T, to_device(kind, W))
    np.testing.assert_array_equal(to_host(kind, got), to_host(kind, base).T * 2 + W)


def test_cupy_negative_strides_run_eagerly_with_a_reason(caplog):
    cupy = pytest.importorskip("cupy")
    x = cupy.asarray(X)[::-1]
    cf = stax.compile(lambda a: np.exp(a) + 1)
    with caplog.at_level(logging.WARNING, logger="stax"):
        got = cf(x)
    assert any("negative strides" in r.getMessage() for r in caplog.records)
    close(to_host("cupy", got), np.exp(X[::-1]) + 1)


def test_mixed_kinds_and_numpy_with_device_cuda_are_errors():
    cupy = pytest.importorskip("cupy")
    cf = stax.compile(lambda a, b: a + b)
    with pytest.raises(stax.StaxError, match="one device and one kind"):
        cf(to_device("torch", X), cupy.asarray(X))
    with pytest.raises(stax.StaxError, match=r"cupy\.asarray"):
        stax.compile(lambda a: a + 1, device="cuda")(X)


def test_kernels_run_on_the_current_torch_stream():
    cf = stax.compile(softmax)
    x = to_device("torch", X)
    cf(x)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        y = x * 1  # queued on the side stream: the kernels must read it after this
        got = cf(y)
    stream.synchronize()
    close(got.cpu().numpy(), softmax(X), 1e-13)


@pytest.mark.parametrize("kind", KINDS)
def test_hit_overhead(kind, capsys):
    """Reported, not asserted: the host time of a cache hit on a small case."""
    x, w = to_device(kind, X[:64, :128]), to_device(kind, W[:128])
    cf = stax.compile(example_1_1)
    cf(x, w)
    sync = torch.cuda.synchronize
    sync()
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        cf(x, w)
    host = (time.perf_counter() - start) / n
    sync()
    report = os.environ.get("STAX_GPU_REPORT")
    line = f"{kind}: example_1_1 (64,128) hit, host time per call {host * 1e6:.1f} us\n"
    if report:
        with open(report, "a") as f:
            f.write(line)
    with capsys.disabled():
        print("\n" + line, end="")
