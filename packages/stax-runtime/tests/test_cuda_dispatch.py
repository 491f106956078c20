"""The device follows the data (issue 12 item 1), end to end without a GPU: functions compiled with
``device="cuda"`` and called with torch CPU tensors run through the CUDA target under
``TRITON_INTERPRET=1`` (set by conftest.py before Triton is imported): Triton kernels in the
interpreter, NumPy steps, data gates, fallbacks (NumPy standing in for CuPy), checked against
NumPy; results come back as torch tensors; the device is part of the key; the CPU path never
imports torch, CuPy or Triton."""

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import stax.runtime as stax  # noqa: E402
from stax.runtime import UnsupportedError, devices  # noqa: E402

pytestmark = pytest.mark.skipif(not triton.knobs.runtime.interpret,
                                reason="Triton was imported before TRITON_INTERPRET=1 was set")


def cuda(fn, **kw):
    return stax.compile(fn, device="cuda", **kw)


def tensors(*arrays):
    return [torch.from_numpy(np.array(a)) for a in arrays]


def host(result):
    """A result's values, checking it came back as torch (tuples element by element)."""
    if isinstance(result, (tuple, list)):
        return type(result)(host(r) for r in result)
    assert isinstance(result, torch.Tensor), type(result)
    return result.numpy()


def check(fn, *arrays, exact=True, **kw):
    """fn compiled for CUDA on tensors == fn on NumPy arrays: values, dtype, shape."""
    want = fn(*[np.array(a) for a in arrays])
    cf = cuda(fn, **kw)
    for _ in range(2):  # the compiling call, then the cached version's
        got = host(cf(*tensors(*arrays)))
        for g, w in zip(*((got, want) if isinstance(want, tuple) else ((got,), (want,)))):
            w = np.asarray(w)
            assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
            if exact:
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    return cf


RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 10))
W = RNG.standard_normal(10)


def example_1_1(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_elementwise_float32_int_and_bool_results():
    cf = check(lambda x, y: (x * y + 1, x > y, np.abs(x) - y), X.astype(np.float32),
               W.astype(np.float32))
    assert cf.versions()[0].native and cf.versions()[0].artifact.target["device"] == "cuda"
    check(lambda i, j: (i // j, i % j, i << 2), RNG.integers(1, 9, (5, 4)), RNG.integers(1, 4, 4))


def test_reductions_and_a_scalar_result_as_a_0d_tensor():
    check(example_1_1, X, W, exact=False)
    check(lambda x: (x.max(0), x.argmin(-1), np.mean(x, axis=0)), X, exact=False)
    got = cuda(lambda x: x.sum())(*tensors(X))
    assert isinstance(got, torch.Tensor) and got.shape == () and got.dtype == torch.float64
    np.testing.assert_allclose(got.item(), X.sum(), rtol=1e-12)


def test_softmax_is_one_native_version():
    cf = check(softmax, X, exact=False)
    assert cf.versions()[0].native and not cf.versions()[0].artifact.externs


def test_numpy_steps_sort_and_matmul():
    cf = check(lambda x: np.sort(x, -1) * 2, X)
    assert [e.target for e in cf.versions()[0].artifact.externs] == ["numpy.sort"]
    check(lambda x, m: np.tanh(x @ m), X, RNG.standard_normal((10, 3)), exact=False)


def test_layouts_transposed_sliced_and_broadcast_inputs():
    base = torch.from_numpy(RNG.standard_normal((8, 16)))
    cf = cuda(lambda x, w: x * 2 + w)
    w = torch.from_numpy(W[:8].copy())
    for x in (base[:, :8].T, base[::2, 1::2], base[:1, :8].expand(8, 8)):
        np.testing.assert_array_equal(cf(x, w).numpy(), x.numpy() * 2 + w.numpy())
    assert len(cf.versions()) == 3  # one per layout: strides are in the key


def test_in_place_update_of_an_argument_on_the_device():
    def add_into(x, y):
        x += y
        return x

    x, y = tensors(X, X * 3)
    cf = cuda(add_into)
    out = cf(x, y)
    assert out is x and cf.versions()[0].native
    np.testing.assert_array_equal(x.numpy(), X + X * 3)
    out = cf(x, y)  # a hit: the compiled version writes back
    np.testing.assert_array_equal(x.numpy(), X + X * 3 + X * 3)


def test_a_data_gate_replays_on_the_device_and_keys_the_branch(monkeypatch):
    """The replay runs on the inputs' device views (NumPy's here, CuPy's on a GPU) and only the
    gate values are read back (``devices.host_values``)."""
    read_back = []
    real = devices.host_values
    monkeypatch.setattr(devices, "host_values", lambda *a: read_back.append(a[0]) or real(*a))

    def gated(x):
        if float(x.sum()) > 0:
            return x * 2
        return x - 1

    cf = cuda(gated)
    pos, neg = tensors(np.abs(X), -np.abs(X))
    np.testing.assert_array_equal(cf(pos).numpy(), np.abs(X) * 2)
    np.testing.assert_array_equal(cf(neg).numpy(), -np.abs(X) - 1)
    assert len(cf.versions()) == 2 and all(v.gates is not None for v in cf.versions())
    np.testing.assert_array_equal(cf(pos).numpy(), np.abs(X) * 2)
    assert cf.cache_info().versions == 2  # the third call replayed the gate: a hit
    assert read_back and all(len(values) == 1 for values in read_back)


def test_device_is_in_the_key_numpy_then_torch_two_versions(monkeypatch, caplog):
    """Without device= the device follows the data: a NumPy call makes a CPU version, a tensor
    call (a CPU tensor standing for a CUDA one under the interpreter) a CUDA version; the
    recompile line and explain() name the device slot of sigma."""
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    cf = stax.compile(example_1_1)
    np.testing.assert_allclose(cf(X, W), example_1_1(X, W))
    with caplog.at_level(logging.INFO, logger="stax"):
        got = cf(*tensors(X, W))
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), example_1_1(X, W), rtol=1e-12)
    cpu, gpu = cf.versions()
    assert cpu.artifact.target["device"] == "cpu" and gpu.artifact.target["device"] == "cuda"
    assert cpu.sigma[0][0][1] == "cpu" and gpu.sigma[0][0][1] == "torch:cpu"
    lines = [r.getMessage() for r in caplog.records if r.name == "stax.recompiles"]
    assert lines and "inputs[0][0][1] == 'cpu' (got 'torch:cpu')" in lines[0]
    reports = cf.explain(X, W)
    assert reports[0].matches and "inputs[0][0][1] == 'torch:cpu' (got 'cpu')" in \
        [str(f) for f in reports[1].failures]
    assert isinstance(cf(X, W), np.ndarray) and isinstance(cf(*tensors(X, W)), torch.Tensor)
    assert cf.cache_info().compiles == 2


def test_a_dtype_change_on_the_device_recompiles_with_a_line(monkeypatch, caplog):
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    cf = cuda(lambda x: x * 2)
    x = torch.from_numpy(X.copy())
    cf(x)
    with caplog.at_level(logging.INFO, logger="stax"):
        assert cf(x.float()).dtype == torch.float32
    assert len(cf.versions()) == 2
    lines = [r.getMessage() for r in caplog.records if r.name == "stax.recompiles"]
    assert lines and "inputs[0][0][3] == float64 (got float32)" in lines[0]


def test_numpy_arrays_given_to_a_cuda_function_say_how_to_move_them():
    cf = cuda(lambda x: x + 1)
    with pytest.raises(stax.StaxError, match=r"device='cuda'.*NumPy array.*cupy\.asarray\(x\) or "
                                             r"torch\.as_tensor\(x, device='cuda'\)"):
        cf(X)
    assert cf.cache_info().compiles == 0


def test_mixed_kinds_devices_grad_and_cpu_devices_are_clear_errors():
    cf = cuda(lambda x, y: x + y)
    x, = tensors(X)
    with pytest.raises(stax.StaxError, match=r"argument leaf 1 is a NumPy array.*one device"):
        cf(x, X)
    with pytest.raises(stax.StaxError, match=r"torch:meta.*one device"):
        cf(x, torch.empty((6, 10), dtype=torch.float64, device="meta"))
    with pytest.raises(stax.StaxError, match=r"requires grad.*x\.detach\(\)"):
        cf(x, x.clone().requires_grad_())
    with pytest.raises(stax.StaxError, match="has no NumPy dtype"):
        cf(x, x.to(torch.bfloat16))
    with pytest.raises(stax.StaxError, match="compiled with device='cpu'"):
        stax.compile(lambda x: x + 1, device="cpu")(x)
    assert cf.cache_info().compiles == 0


def test_cpu_tensors_outside_the_interpreter_are_an_error(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(stax.StaxError, match=r"torch CPU tensor.*x\.numpy\(\)"):
        stax.compile(lambda x: x + 1)(*tensors(X))


def test_a_global_numpy_array_read_by_a_device_call_is_named():
    table = np.arange(10.0)

    def f(x):
        return x + table

    with pytest.raises(stax.StaxError, match="reads the NumPy array 'table'"):
        cuda(f)(*tensors(X))


def test_fallback_after_capture_returns_the_captures_result_on_the_device(monkeypatch, caplog):
    def broken(capture, examples, device="cpu", **options):
        raise UnsupportedError("no kernels today")

    monkeypatch.setitem(stax.BACKENDS, "broken", broken)

    def add_into(x, y):
        x += y
        return x, x.sum(0)

    x, y = tensors(X, X * 3)
    cf = cuda(add_into, backend="broken")
    with caplog.at_level(logging.WARNING, logger="stax"):
        out, total = cf(x, y)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "through CuPy on torch:cpu" in lines[0] and "no kernels" in lines[0]
    assert isinstance(out, torch.Tensor) and isinstance(total, torch.Tensor)
    np.testing.assert_array_equal(x.numpy(), X + X * 3)  # the capture's update, copied back
    np.testing.assert_array_equal(out.numpy(), X + X * 3)
    np.testing.assert_allclose(total.numpy(), (X + X * 3).sum(0))
    out, total = cf(x, y)  # the fallback version: eager through NumPy views (CuPy on a GPU)
    assert out is x and isinstance(total, torch.Tensor) and not cf.versions()[0].native
    np.testing.assert_array_equal(x.numpy(), X + X * 3 + X * 3)
    np.testing.assert_allclose(total.numpy(), (X + X * 3 + X * 3).sum(0))
    assert cf.cache_info().fallbacks == 2


def test_kernels_failing_on_their_first_call_fall_back_with_one_line(monkeypatch, caplog):
    """The capture ran the first call in NumPy without an error: an error from the compiled code
    on that call is a compiler defect, so the version falls back instead of failing the call."""
    def crashing(capture, examples, device="cpu", **options):
        def run(*arrays):
            raise RuntimeError("kernel crashed")
        return run

    monkeypatch.setitem(stax.BACKENDS, "crashing", crashing)
    with pytest.raises(RuntimeError, match="kernel crashed"):
        cuda(lambda x: x * 3, backend="crashing", strict_native=True)(*tensors(X))
    cf = cuda(lambda x: x * 3, backend="crashing")
    with caplog.at_level(logging.WARNING, logger="stax"):
        first = cf(*tensors(X))
        second = cf(*tensors(X))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "internal error running the CUDA kernels: RuntimeError" in lines[0]
    for got in (first, second):
        assert isinstance(got, torch.Tensor)
        np.testing.assert_array_equal(got.numpy(), X * 3)
    assert not cf.versions()[0].native and cf.cache_info().fallbacks == 2


def test_unsupported_function_falls_back_and_strict_raises():
    counter = []

    def rebinding(x):
        global _SEEN
        _SEEN = 1
        counter.append(1)
        return np.cumsum(x, 0) * 2

    with pytest.raises(UnsupportedError, match="assigns"):
        cuda(rebinding, strict_native=True)(*tensors(X))
    cf = cuda(rebinding)
    got = cf(*tensors(X))
    assert isinstance(got, torch.Tensor) and not cf.versions()[0].native
    np.testing.assert_array_equal(got.numpy(), np.cumsum(X, 0) * 2)
    assert len(counter) == 1  # the strict call ran nothing; the fallback ran once


def test_a_failed_bounds_check_raises_numpys_index_error():
    cf = cuda(lambda x, i: x[i] * 2)
    x, i = tensors(X, np.array([1, 2]))
    np.testing.assert_array_equal(cf(x, i).numpy(), X[[1, 2]] * 2)
    with pytest.raises(IndexError):
        cf(x, torch.tensor([1, 60]))


def test_cpu_path_imports_no_torch_cupy_or_triton():
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import stax.runtime as stax
        f = stax.compile(lambda x, w: (np.maximum(x + w, 0) * 2).sum(-1))
        x = np.ones((4, 8)); w = np.ones(8)
        assert f(x, w).tolist() == [32.0] * 4
        f(x, w)
        f.explain(x, w)
        loaded = sorted(m for m in ("torch", "cupy", "triton") if m in sys.modules)
        print("loaded:", loaded)
    """)
    env = {**os.environ, "STAX_CACHE_DIR": "off"}
    env.pop("TRITON_INTERPRET", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "loaded: []" in done.stdout


def test_a_cuda_plan_comes_back_from_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STAX_CACHE_DIR", str(tmp_path))
    first = cuda(softmax)
    first(*tensors(X))
    again = cuda(softmax)
    got = again(*tensors(X))
    stats = again.versions()[0].stats
    assert "plan (disk cache)" in stats and again.versions()[0].native
    np.testing.assert_allclose(got.numpy(), softmax(X), rtol=1e-12)
    assert again.versions()[0].artifact.target["device"] == "cuda"


def test_host_copies_keep_the_device_layout():
    base = torch.from_numpy(np.arange(24.0).reshape(4, 6))
    library = devices.library_of(base)
    for t in (base.T, base[::2, 1::3], base[:1].expand(4, 6)):
        copy = devices.host_copy(t, library)
        assert copy.strides == tuple(s * 8 for s in t.stride())
        np.testing.assert_array_equal(copy, t.numpy())
        assert copy.flags.writeable == (0 not in t.stride())


def test_scalars_and_keywords_beside_device_arrays():
    cf = cuda(lambda x, scale, *, shift: x * scale + shift)
    x, shift = tensors(X, W)
    for scale in (2.0, 2.0, 3.0):
        got = cf(x, scale, shift=shift)
        assert isinstance(got, torch.Tensor)
        np.testing.assert_array_equal(got.numpy(), X * scale + W)
    assert cf.cache_info().compiles == 2  # the scalar is in the key, by value


@pytest.mark.parametrize("low, high", [(0.2, 0.7), (np.nan, 0.7), (-np.inf, np.nan)])
def test_maximum_and_minimum_with_a_constant_side(low, high):
    """np.clip's bounds are constants: NaN or not is decided when the kernel is written (a 0-d
    NaN test broke Triton's interpreter: np.clip was a CUDA fallback in the coverage table)."""
    x = RNG.random((5, 7))
    x[1, 2], x[3, 4] = np.nan, -0.0
    cf = check(lambda x: np.clip(x, low, high), x, strict_native=True)
    assert all(v.native for v in cf.versions())


def test_autotune_option_times_launches_and_keeps_the_winner(tmp_path, monkeypatch, capsys):
    """options={"autotune": True}: a progress line per kernel, NumPy's result, the winner kept on
    disk (a new function over the same program reads it instead of timing again)."""
    monkeypatch.setenv("STAX_CACHE_DIR", str(tmp_path / "cache"))

    def f(x):
        return np.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1)

    x = RNG.random((16, 64)).astype(np.float32)
    got = host(cuda(f, options={"autotune": True}, strict_native=True)(*tensors(x)))
    np.testing.assert_allclose(got, f(x), rtol=1e-5)
    assert "stax: autotune f.kernel_0:" in capsys.readouterr().err
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path / "dumps"))  # plans made, not loaded
    host(cuda(f, options={"autotune": True})(*tensors(x)))
    assert "(disk cache)" in capsys.readouterr().err
