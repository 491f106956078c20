import os
import shutil
from pathlib import Path

# Triton reads this when it is first imported: the CUDA path of these tests (test_cuda_dispatch.py,
# the coverage table's CUDA column) runs kernels in Triton's interpreter on torch CPU tensors.
os.environ.setdefault("TRITON_INTERPRET", "1")
# Which kernels run on the thread pool is measured once per machine (parallel_work.py); tests
# that check a split take the fixed default, not a measurement made while tests load the machine.
os.environ.setdefault("STAX_PARALLEL_WORK", str(1 << 20))

import numpy as np
import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def example_1_1(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Every test compiles into a cache directory of this test session, not the user's. The
    automatic-dynamic decisions stored there (``dynamic_memory.py``) are each test's own: a
    function another test made dynamic would otherwise start generic."""
    cache = tmp_path_factory.getbasetemp() / "stax-cache"
    shutil.rmtree(cache / "dynamic", ignore_errors=True)
    monkeypatch.setenv("STAX_CACHE_DIR", str(cache))


@pytest.fixture
def kernels_doc_path() -> Path:
    return FIXTURES / "example_1_1.kernels.v0.1.0.json"


def sum_tolerance(x: np.ndarray, axis: int = -1) -> float:
    """Spec §13: a reordered float sum differs by at most about n * eps * sum|x| (worst case)."""
    n = x.shape[axis] if x.ndim else 1
    eps = np.finfo(x.dtype).eps if x.dtype.kind == "f" else 0.0
    return float(4 * n * eps * np.abs(x).sum(axis=axis).max()) if x.size else 0.0


@pytest.fixture
def test_module(monkeypatch):
    """``load(name)``: the module ``name``.py beside the tests, executed afresh and registered
    in ``sys.modules`` for the test (its functions compiled there have a module of their own)."""
    import importlib.util
    import sys

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        monkeypatch.setitem(sys.modules, name, module)
        return module
    return load
