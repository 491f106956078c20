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
