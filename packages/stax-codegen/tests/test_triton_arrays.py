"""The array adapters of the CUDA path (``stax.codegen.triton.arrays``) and the executable on
them, without a GPU: torch CPU tensors under ``TRITON_INTERPRET=1``, NumPy standing in for CuPy.
``library_of`` recognises an array without importing torch or CuPy; layouts, allocation, byte
blocks and DLPack-style views round-trip; the executable returns the inputs' kind, runs NumPy
steps as the call of ``numpy_module`` (CuPy on a GPU) on views of its operands, goes through the
host only where that module lacks the function, and checks inputs."""

import os
import subprocess
import sys

os.environ["TRITON_INTERPRET"] = "1"  # before Triton reads it: kernels run as NumPy code

import numpy as np
import pytest

from stax.codegen.triton import arrays


def test_library_of_imports_nothing():
    """A NumPy array, a Python object and an object whose type only claims to come from torch
    (torch not imported) are no library's; torch stays unimported."""
    code = ("import sys, numpy as np\n"
            "from stax.codegen.triton.arrays import library_of\n"
            "Fake = type('Tensor', (), {'__module__': 'torch'})\n"
            "assert library_of(np.zeros(3)) is None and library_of(3.0) is None\n"
            "assert library_of(Fake()) is None\n"
            "assert 'torch' not in sys.modules and 'cupy' not in sys.modules, sorted(sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


torch = pytest.importorskip("torch")
pytest.importorskip("triton")


def test_torch_library_layouts_and_allocation():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    lib = arrays.library_of(t)
    assert lib is not None and lib.name == "torch" and lib is arrays.library("torch")
    assert arrays.library_of(torch.nn.Parameter(t)) is lib  # a subclass (torch.nn.parameter)
    assert lib.device_of(t) == "cpu" and lib.device_index(t) is None
    assert lib.layout(t.T) == ((4, 3), (1, 4), "float32")
    assert lib.data_ptr(t[1]) == t.data_ptr() + 16
    out = lib.empty_strided((3, 4), (1, 3), "uint16", t)
    assert out.dtype == torch.uint16 and out.stride() == (1, 3) and out.device == t.device
    block = lib.empty_bytes(64, t)
    view = lib.view_strided(block, (2, 3), (1, 2), "int32")
    assert view.stride() == (1, 2) and view.data_ptr() == block.data_ptr()
    view.fill_(7)
    assert (block[:4].view(torch.int32) == 7).all()
    np.testing.assert_array_equal(lib.to_numpy(t), np.arange(12, dtype=np.float32).reshape(3, 4))
    back = lib.from_numpy(np.arange(3, dtype=np.int8), t)
    assert back.dtype == torch.int8 and back.tolist() == [0, 1, 2]


def test_cupy_views_share_memory():
    """On the CPU NumPy stands in for CuPy: ``as_cupy`` is a view (same memory, same strides),
    ``from_cupy`` takes it back without a copy; read-only or negatively strided results are
    copied (torch takes neither)."""
    t = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    lib = arrays.library_of(t)
    assert lib.numpy_module(t) is np
    c = lib.as_cupy(t.T)
    assert isinstance(c, np.ndarray) and c.strides == (8, 24)
    c[0, 0] = 42.0
    assert t[0, 0] == 42.0
    back = lib.from_cupy(c, t)
    assert back.data_ptr() == t.data_ptr() and back.stride() == (1, 3)
    flipped = lib.from_cupy(np.arange(4.0)[::-1], t)
    assert flipped.tolist() == [3.0, 2.0, 1.0, 0.0]
    assert lib.from_cupy(np.broadcast_to(np.ones(2), (3, 2)), t).shape == (3, 2)


import types  # noqa: E402

from stax.codegen import InputMismatch, TritonExecutable, generate_triton, triton_target  # noqa: E402
from stax.codegen.triton import launcher  # noqa: E402


def captured(fn, *arrays):
    """The CUDA artifact of ``fn`` captured from NumPy code (``stax.trace``, when installed)."""
    trace = pytest.importorskip("stax.trace").trace
    from stax.ir import lower_capture
    from stax.ir.passes import DEFAULT_PIPELINE, decompose_to_basis, run_pipeline
    from stax.loop import lower_opgraph

    capture = trace(fn, arrays)
    run_pipeline(capture.graph, DEFAULT_PIPELINE)
    opgraph = lower_capture(capture)
    target = triton_target()
    decompose_to_basis(opgraph.graph, basis=target.basis)
    return generate_triton(lower_opgraph(opgraph, materialize=target.materialize,
                                         options=target.loop_options), target)


def sort_matmul(x, w):
    return np.sort(x, axis=1) @ w + 1


def fake_cupy(calls, lacking=(), broken=None):
    """A module standing in for CuPy: NumPy's functions, each call recorded with whether its
    array operands share memory with ``calls['input']``; the names in ``lacking`` missing, those
    in ``broken`` replaced (a call CuPy refuses, a result of another dtype)."""
    module = types.ModuleType("fakecupy")
    module.ndarray = np.ndarray
    module.asarray = np.asarray
    module.ascontiguousarray = np.ascontiguousarray

    def lookup(name):
        if name in lacking or name.startswith("__"):
            raise AttributeError(name)
        fn = (broken or {}).get(name) or getattr(np, name)

        def call(*args, **kwargs):
            shared = [np.shares_memory(a, calls["input"]) for a in args if isinstance(a, np.ndarray)]
            calls.setdefault("made", []).append((name, shared))
            return fn(*args, **kwargs)
        return call
    module.__getattr__ = lookup
    return module


def refuses(*args, **kwargs):
    raise NotImplementedError("kind is not supported")


def float64_sort(*args, **kwargs):
    return np.sort(*args, **kwargs).astype(np.float64)


@pytest.mark.parametrize("lacking, broken", [((), None), (("sort",), None), ((), {"sort": refuses}),
                                             ((), {"sort": float64_sort})],
                         ids=["in-module", "lacking", "refused", "other-dtype"])
def test_numpy_steps_run_in_the_arrays_module(monkeypatch, lacking, broken):
    """np.sort and a matrix product between kernels: called as the arrays' module's function on
    views of the operands (no copy), which on a GPU is CuPy's call (cuBLAS for the product);
    where that module lacks the function, refuses the call or returns another dtype, through
    the host from then on (named in ``host_steps``). Results NumPy's either way, returned as
    torch tensors."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    w = rng.standard_normal((6, 5)).astype(np.float32)
    artifact = captured(sort_matmul, x, w)
    assert [e.target for e in artifact.externs] == ["numpy.sort", "operator.matmul"]
    tx, tw = torch.from_numpy(x.copy()), torch.from_numpy(w)
    calls = {"input": tx.numpy()}
    monkeypatch.setattr(arrays.TorchArrays, "numpy_module",
                        lambda self, like: fake_cupy(calls, lacking, broken))
    run = TritonExecutable(artifact)
    for _ in range(2):
        (got,) = run(tx, tw)
        assert isinstance(got, torch.Tensor) and got.device == tx.device
        assert got.dtype == torch.float32
        np.testing.assert_allclose(got.numpy(), sort_matmul(x, w), rtol=1e-5, atol=1e-5)
    if lacking:
        assert calls.get("made") is None and run.host_steps == ["numpy.sort"]
    elif broken:  # tried once, then the host
        assert calls["made"] == [("sort", [True])] and run.host_steps == ["numpy.sort"]
    else:
        assert calls["made"] == [("sort", [True])] * 2 and run.host_steps == []


def test_a_disallowed_step_is_refused_when_loaded():
    """The allow-list is checked when an executable is made, whatever module runs the step."""
    import dataclasses

    x = np.ones((4, 6), np.float32)
    artifact = captured(sort_matmul, x, np.ones((6, 5), np.float32))
    bad = dataclasses.replace(artifact.externs[0], target="os.system")
    from stax.ir.interpreter import DisallowedExternError

    with pytest.raises(DisallowedExternError):
        TritonExecutable(dataclasses.replace(artifact, externs=[bad, *artifact.externs[1:]]))


def test_inputs_are_checked_for_kind_and_device(tmp_path):
    """A NumPy array is refused with how to move it; a tensor on another device than the
    executable's (a meta tensor here, under the interpreter) is refused; a cache directory does
    no harm under the interpreter (nothing compiled, nothing written)."""
    x = np.ones((4, 6), np.float32)
    w = np.ones((6, 5), np.float32)
    run = TritonExecutable(captured(sort_matmul, x, w), cache_dir=tmp_path / "cache")
    with pytest.raises(InputMismatch, match=r"torch tensor or a CuPy array, got ndarray \(move it"):
        run(x, torch.from_numpy(w))
    with pytest.raises(InputMismatch, match="runs on the CPU"):
        run(torch.ones((4, 6), device="meta"), torch.ones((6, 5), device="meta"))
    (got,) = run(torch.from_numpy(x), torch.from_numpy(w))
    np.testing.assert_allclose(got.numpy(), sort_matmul(x, w))
    assert run.cache is None and run.launch_path == "interpreter"
    assert not (tmp_path / "cache").exists()


class FakeCompiled:
    """A compiled kernel whose launcher records its calls."""

    def __init__(self, aligned, calls):
        self.aligned, self.function, self.packed_metadata = aligned, 0xF00, ("meta",)
        self.run = lambda *args: calls.append((aligned, args))


def test_compiled_launcher_binds_once_and_respecializes_misaligned_pointers(monkeypatch):
    """Each launch is one call of the compiled kernel's launcher: grid, stream, function,
    packed metadata, no launch metadata or hooks, the raw pointers, then the constants. The
    binary is got once per device; a pointer off 16-byte alignment gets its own binary (compiled
    without that assumption), and aligned calls go back to the first."""
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver

    got, calls = [], []

    def compiled_kernel(spec, fn, target, cache):
        got.append((spec.aligned, target.arch))
        return FakeCompiled(spec.aligned, calls)
    monkeypatch.setattr(launcher, "compiled_kernel", compiled_kernel)
    monkeypatch.setattr(driver, "_active", types.SimpleNamespace(
        get_current_target=lambda: GPUTarget("cuda", 90, 32)))
    fn = types.SimpleNamespace(__name__="kernel_0", arg_names=["x_ptr", "out_ptr", "XBLOCK"])
    k = launcher.KernelLauncher("src", fn, ["float32", "float32"], {"XBLOCK": 64}, {"num_warps": 4},
                                (3,), cache=None)
    k.launch([4096, 8192], 7, 0)
    k.launch([4112, 8192], 7, 0)
    k.launch([4100, 8192], 7, 0)
    k.launch([4096, 8192], 7, 0)
    assert got == [((0, 1), 90), ((1,), 90)]
    assert calls[0] == ((0, 1), (3, 1, 1, 7, 0xF00, ("meta",), None, None, None, 4096, 8192, 64))
    assert [a for a, _ in calls] == [(0, 1), (0, 1), (1,), (0, 1)]
    empty = launcher.KernelLauncher("src", fn, ["float32", "float32"], {"XBLOCK": 64}, {}, (0,), None)
    empty.launch([4096, 8192], 7, 0)
    assert len(calls) == 4
